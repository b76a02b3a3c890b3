"""FPGA-to-FPGA link models at three levels with one interface.

``LinkFL``, ``LinkCL`` and ``LinkRTL`` are all built as ``Link*(MsgType, cfg)`` from a
:class:`~pymtl_fp.link.config.LinkConfig` and all have two val/rdy stream ports: ``recv``
(``RecvIfcRTL(MsgType)``, into the sender) and ``send`` (``SendIfcRTL(MsgType)``, out of the
receiver).  Each delivers exactly the sequence it receives: nothing lost, duplicated, reordered
or corrupted, whatever the back-pressure (and, for the RTL with CRC on, whatever the bit errors
and lost flits on the channel).

Cycle-level behaviour (what ``LinkCL`` and fault-free ``LinkRTL`` both implement)
--------------------------------------------------------------------------------------
Cycle numbers count ticks after reset; "handshake in cycle t" means ``val & rdy`` in cycle t.
``F = cfg.flits``, ``L = cfg.latency``, ``Lr = cfg.credit_latency``, ``W = cfg.window``,
``C = cfg.credits``.  All port outputs come from registers (no combinational path through
the link).

1. ``recv.rdy`` in cycle t is ``occupancy(t) < W``: messages accepted and not yet acknowledged
   (the retransmission buffer).  A message accepted in cycle t can be serialized from t+1.
2. The serializer starts a frame in cycle t when it is idle (the previous frame's last flit left
   in t-1 or earlier), a message is waiting, and ``credits(t) > 0``; the credit is spent in t.
   Flit k of the frame enters the channel in cycle t+k (k = 0 .. F-1): frames go back to back.
3. A flit entering the channel in cycle t reaches the receiver in cycle t+L.
4. In the cycle a frame's last flit arrives (t+F-1+L) the message enters the receive buffer
   (C entries) and an ACK enters the return path.  The buffer offers its head on ``send`` from
   the next cycle (``send.val`` = buffer not empty).
5. Each handshake on ``send`` in cycle d sends a credit back; it arrives in cycle d+Lr and can be
   spent from d+Lr+1.  An ACK entering the return path in cycle a arrives in a+Lr and frees its
   retransmission-buffer entry: ``recv.rdy`` may rise again in a+Lr+1.

Consequences: zero-load latency (handshake on ``recv`` to handshake on ``send``) is
``1 + F + L`` cycles; a credit (and a window entry) cycles in ``round_trip = F + L + Lr + 1``;
steady-state throughput is ``min(1/F, min(C, W)/round_trip)`` messages per cycle, so full
bandwidth needs ``C >= ceil(round_trip / F)`` (= round trip x message rate) and as many window
entries.  ``LinkFL`` only promises order and ``arrival >= handshake + L``.

RTL with faults: go-back-N over the forward channel (CRC-32 per message, flit index and sequence
number per flit; NAK on the first error, timeout otherwise); the return path is assumed
reliable.  A retransmission spends no new credit (its receive-buffer entry was reserved by its
first transmission), so lost frames never leak credits.

Files: ``config.py`` (LinkConfig, presets, transceiver helper), ``crc.py`` (CRC-32 reference),
``LinkFL.py``, ``LinkCL.py``, ``LinkRTL.py`` (top) with ``LinkTxRTL``/``LinkRxRTL`` and the
submodules ``RetransmitBufferRTL``, ``SerializerRTL``, ``CreditCounterRTL``, ``CrcRTL``,
``ChannelRTL`` (forward channel and return path), ``DeserializerRTL``, ``RxBufferRTL``.
Test-bench side: :mod:`pymtl_fp.tb.link_faults` (fault injection), :mod:`pymtl_fp.tb.link_harness`,
:mod:`pymtl_fp.tb.scoreboard`.
"""

from pymtl_fp.link.config import (
    PRESETS,
    LinkConfig,
    LinkConfigError,
    phit_bits_from_transceivers,
    preset,
    transceiver_bits_per_cycle,
)
from pymtl_fp.link.LinkCL import LinkCL
from pymtl_fp.link.LinkFL import LinkFL
from pymtl_fp.link.LinkRTL import LinkRTL

#: level name -> component class (``"verilator"`` is LinkRTL translated and imported)
LINK_LEVELS = {"fl": LinkFL, "cl": LinkCL, "rtl": LinkRTL}

__all__ = [
    "LINK_LEVELS",
    "PRESETS",
    "LinkCL",
    "LinkConfig",
    "LinkConfigError",
    "LinkFL",
    "LinkRTL",
    "phit_bits_from_transceivers",
    "preset",
    "transceiver_bits_per_cycle",
]
