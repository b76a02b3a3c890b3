"""Elaboration parameters of one FPGA-to-FPGA link (:class:`LinkConfig`), its derived timing
figures, named presets, and a helper that turns transceiver figures into bits per cycle.

Every level (``LinkFL``, ``LinkCL``, ``LinkRTL``) is built from one :class:`LinkConfig`.  The
cycle-level behaviour that ``LinkCL`` and ``LinkRTL`` both implement (and the closed forms below
describe) is specified in :mod:`pymtl_fp.link` (package docstring).

Units: widths in bits, times in cycles of the link clock.  The *phit* (``phit_bits``) is the
payload the physical channel moves per cycle: the bandwidth.  A message of ``msg_bits`` is sent
as ``flits = ceil(msg_bits / phit_bits)`` flits, one per cycle.  Link-layer control (flit index,
sequence number, CRC-32) travels in a per-flit sideband of ``ctl_bits`` next to the phit, like the
sync headers and control words a transceiver protocol adds outside its payload; it costs wires,
not payload cycles, so enabling the CRC does not change the timing.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

from pymtl_fp.cost.link import LINE_64B66B

#: hard limits: PyMTL3's Bits stop at 1023 bits; latencies/credits beyond these are not useful
MAX_BITS = 1023
MAX_LATENCY = 4096
MAX_CREDITS = 1024
MAX_WINDOW = 1024
CRC_BITS = 32


class LinkConfigError(ValueError):
    """A link configuration value is out of range or inconsistent."""


def clog2(n: int) -> int:
    """Bits needed to index ``n`` things (``clog2(1) == 0``)."""
    return max(0, (int(n) - 1).bit_length())


def transceiver_bits_per_cycle(lanes: int, gbps_per_lane: float, clock_mhz: float,
                               encoding: tuple[int, int] = LINE_64B66B) -> float:
    """Payload bits per link-clock cycle of ``lanes`` serial transceivers.

    ``lanes x line rate x encoding efficiency / clock``; ``encoding`` is (payload bits, line bits),
    e.g. ``(64, 66)`` for 64b/66b (Aurora 64B/66B, 10GBASE-R) or ``(8, 10)`` for 8b/10b.
    Example: 6 transceivers of 10 Gb/s with 64b/66b at 200 MHz give 290.9 bits/cycle."""
    for name, v in (("lanes", lanes), ("gbps_per_lane", gbps_per_lane), ("clock_mhz", clock_mhz)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise LinkConfigError(f"{name} must be a positive number, got {v!r}")
    if (not isinstance(encoding, tuple) or len(encoding) != 2
            or not all(isinstance(x, int) and x > 0 for x in encoding) or encoding[0] > encoding[1]):
        raise LinkConfigError(f"encoding must be (payload bits, line bits) with 0 < payload <= line, "
                              f"got {encoding!r}")
    return lanes * gbps_per_lane * 1e9 * encoding[0] / encoding[1] / (clock_mhz * 1e6)


def phit_bits_from_transceivers(lanes: int, gbps_per_lane: float, clock_mhz: float,
                                encoding: tuple[int, int] = LINE_64B66B) -> int:
    """:func:`transceiver_bits_per_cycle` rounded down to whole bits (the phit width a link
    clocked at ``clock_mhz`` can sustain)."""
    return math.floor(transceiver_bits_per_cycle(lanes, gbps_per_lane, clock_mhz, encoding))


def _check_int(name, value, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int):
        raise LinkConfigError(f"LinkConfig.{name} must be an int, got {type(value).__name__} {value!r}")
    if not lo <= value <= hi:
        raise LinkConfigError(f"LinkConfig.{name} must be in [{lo}, {hi}], got {value}")


@dataclasses.dataclass(frozen=True)
class LinkConfig:
    """One FPGA-to-FPGA link: widths, latencies, flow control, error protection.

    ``window`` and ``timeout`` default (``None``) to the smallest values that keep full bandwidth
    and never time out without faults; both are resolved in ``__post_init__``."""

    msg_bits: int = 32  #: width of a message at the link's stream ports
    phit_bits: int = 8  #: payload bits the channel moves per cycle (the bandwidth)
    latency: int = 4  #: channel latency: a flit sent in cycle t reaches the receiver in t+latency
    credits: int = 8  #: receiver buffer entries (whole messages) = flow-control credits
    crc: bool = True  #: append and check a CRC-32 per message (corrupted frames are retransmitted)
    window: int | None = None  #: retransmission buffer entries (power of two >= 2); None: auto
    credit_latency: int = 4  #: latency of the return path (credits, ACK/NAK), cycles
    timeout: int | None = None  #: go-back-N retransmission timeout, cycles; None: auto
    name: str = ""  #: label only (presets); not an elaboration parameter

    def __post_init__(self):
        _check_int("msg_bits", self.msg_bits, 1, MAX_BITS)
        _check_int("phit_bits", self.phit_bits, 1, MAX_BITS)
        _check_int("latency", self.latency, 1, MAX_LATENCY)
        _check_int("credit_latency", self.credit_latency, 1, MAX_LATENCY)
        _check_int("credits", self.credits, 1, MAX_CREDITS)
        if not isinstance(self.crc, bool):
            raise LinkConfigError(f"LinkConfig.crc must be True or False, got {self.crc!r}")
        if not isinstance(self.name, str):
            raise LinkConfigError(f"LinkConfig.name must be a string, got {self.name!r}")
        if self.window is None:
            need = max(2, self.min_credits)
            object.__setattr__(self, "window", 1 << clog2(need))
        _check_int("window", self.window, 2, MAX_WINDOW)
        if self.window & (self.window - 1):
            raise LinkConfigError(f"LinkConfig.window must be a power of two (it indexes the "
                                  f"retransmission buffer with sequence-number bits), got {self.window}")
        if self.timeout is None:
            object.__setattr__(self, "timeout", 2 * self.min_timeout + 8)
        _check_int("timeout", self.timeout, self.min_timeout, 1 << 20)
        for what, bits in (("a flit (phit + flit index + sequence number + CRC)", self.flit_bits),
                           ("the CRC input (message + sequence number)", self.msg_bits + self.seq_bits)):
            if bits > MAX_BITS:
                raise LinkConfigError(f"{what} would be {bits} bits; PyMTL3 supports at most "
                                      f"{MAX_BITS}: use a narrower message or phit")

    # ---- derived figures --------------------------------------------------------------------
    @property
    def flits(self) -> int:
        """Flits (cycles of the channel) per message: ``ceil(msg_bits / phit_bits)``."""
        return -(-self.msg_bits // self.phit_bits)

    @property
    def round_trip(self) -> int:
        """Cycles from spending a credit (first flit sent) until it can be spent again, with a
        ready sink: ``flits + latency + credit_latency + 1`` (the +1 is the receive buffer's
        register).  The retransmission-window slot of a message cycles in the same time."""
        return self.flits + self.latency + self.credit_latency + 1

    @property
    def zero_load_latency(self) -> int:
        """Cycles from a message's handshake at ``recv`` to its handshake at ``send`` on an idle
        link with a ready sink: ``1 (retransmission buffer) + flits + latency`` ."""
        return 1 + self.flits + self.latency

    @property
    def min_credits(self) -> int:
        """Fewest credits that sustain full bandwidth: ``ceil(round_trip / flits)`` (round trip
        x message rate)."""
        return -(-self.round_trip // self.flits)

    @property
    def min_window(self) -> int:
        """Smallest power-of-two retransmission window that sustains full bandwidth."""
        return 1 << clog2(max(2, self.min_credits))

    @property
    def min_timeout(self) -> int:
        """Smallest allowed timeout: a retransmission timer shorter than the ACK round trip
        would fire without faults."""
        return self.flits + self.latency + self.credit_latency + 2

    @property
    def throughput_msgs(self) -> float:
        """Analytical steady-state messages per cycle with an always-valid source and an
        always-ready sink: ``min(1/flits, min(credits, window)/round_trip)``."""
        return float(self._throughput())

    def _throughput(self) -> Fraction:
        return min(Fraction(1, self.flits), Fraction(min(self.credits, self.window), self.round_trip))

    @property
    def throughput_bits(self) -> float:
        """:attr:`throughput_msgs` in payload bits per cycle."""
        return float(self.msg_bits * self._throughput())

    @property
    def peak_bits(self) -> float:
        """Payload bits per cycle with unlimited credits: ``msg_bits / flits`` (<= phit_bits)."""
        return self.msg_bits / self.flits

    # ---- wire formats ------------------------------------------------------------------------
    @property
    def idx_bits(self) -> int:
        """Flit-index field width (at least 1)."""
        return max(1, clog2(self.flits))

    @property
    def seq_bits(self) -> int:
        """Sequence-number width: ``log2(window) + 1`` (go-back-N needs more than ``window``
        sequence numbers)."""
        return clog2(self.window) + 1

    @property
    def crc_bits(self) -> int:
        return CRC_BITS if self.crc else 0

    @property
    def ctl_bits(self) -> int:
        """Per-flit sideband bits: flit index + sequence number (+ CRC-32)."""
        return self.idx_bits + self.seq_bits + self.crc_bits

    @property
    def flit_bits(self) -> int:
        """Wires of the forward channel: ``phit_bits + ctl_bits``."""
        return self.phit_bits + self.ctl_bits

    @property
    def ret_bits(self) -> int:
        """Wires of the return path: credit, ACK, NAK flags and a sequence number."""
        return 3 + self.seq_bits

    def flit_fields(self) -> dict[str, tuple[int, int]]:
        """Bit ranges ``[lo, hi)`` of the flit fields: data, idx, seq and (with CRC) crc."""
        p, i, q = self.phit_bits, self.idx_bits, self.seq_bits
        fields = {"data": (0, p), "idx": (p, p + i), "seq": (p + i, p + i + q)}
        if self.crc:
            fields["crc"] = (p + i + q, p + i + q + CRC_BITS)
        return fields

    def elab_params(self) -> dict:
        """Every elaboration parameter (for Verilog module names), auto values resolved."""
        return dict(msg=self.msg_bits, phit=self.phit_bits, lat=self.latency, cred=self.credits,
                    crc=self.crc, win=self.window, clat=self.credit_latency, to=self.timeout)

    def params(self) -> dict:
        """Every elaboration parameter (the same method as every unit's configuration)."""
        return self.elab_params()

    def module_name(self) -> str:
        """The Verilog module name of ``LinkRTL(Bits<msg_bits>, self)``."""
        from pymtl_fp.verilate import module_name

        return module_name("LinkRTL", dict(self.elab_params(), type=f"Bits{self.msg_bits}", tbits=self.msg_bits))

    def describe(self) -> str:
        return (f"{self.msg_bits}b msg / {self.phit_bits}b phit ({self.flits} flits), L={self.latency}, "
                f"credits={self.credits}, window={self.window}, credit L={self.credit_latency}, "
                f"crc={'on' if self.crc else 'off'}, timeout={self.timeout}")

    def replace(self, **changes) -> LinkConfig:
        """A copy with ``changes``; auto fields (window, timeout) are re-derived unless given."""
        base = dataclasses.asdict(self)
        base.update(window=None, timeout=None)
        base.update(changes)
        return LinkConfig(**base)


def _preset(name, **kw):
    return LinkConfig(name=name, **kw)


#: Named presets.  Latencies are cycles of the link clock; a 10G-class transceiver pair plus a
#: few metres of cable is a few hundred ns (~60 cycles at 200 MHz).
PRESETS: dict[str, LinkConfig] = {
    # tiny: unit tests and waveforms
    "tiny": _preset("tiny", msg_bits=16, phit_bits=8, latency=2, credits=4, credit_latency=2),
    # FPDeep's cluster: 6 transceivers x 10 Gb/s (64b/66b) per FPGA at 200 MHz -> 290 bits/cycle
    "fpdeep_6x10g": _preset("fpdeep_6x10g", msg_bits=512,
                            phit_bits=phit_bits_from_transceivers(6, 10.0, 200.0),
                            latency=60, credits=64, credit_latency=60),
    # one Aurora 64B/66B lane of 10 Gb/s at 200 MHz -> 48 bits/cycle
    "aurora_1x10g": _preset("aurora_1x10g", msg_bits=256,
                            phit_bits=phit_bits_from_transceivers(1, 10.0, 200.0),
                            latency=40, credits=16, credit_latency=40),
    # a QSFP28 port: 4 x 25.78125 Gb/s (64b/66b) at 250 MHz -> 402 bits/cycle
    "qsfp28_100g": _preset("qsfp28_100g", msg_bits=512,
                           phit_bits=phit_bits_from_transceivers(4, 25.78125, 250.0),
                           latency=80, credits=128, credit_latency=80),
}


def preset(name: str) -> LinkConfig:
    """A named preset (``tiny``, ``fpdeep_6x10g``, ``aurora_1x10g``, ``qsfp28_100g``)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise LinkConfigError(f"unknown link preset {name!r}; known: {', '.join(PRESETS)}") from None
