"""FPGA-to-FPGA link, register-transfer level: synthesizable PyMTL3, translatable to Verilog.

``LinkRTL(MsgType, cfg)`` has the ports of every link level: ``recv`` (val/rdy stream of
``MsgType`` into the sender) and ``send`` (val/rdy stream out of the receiver).  Inside:

    recv -> LinkTxRTL [retransmission buffer, CRC-32, serializer, credit counter]
         -> channel (``cfg.latency`` stages) -> LinkRxRTL [deserializer, CRC-32 check,
            sequence check, receive buffer] -> send
         LinkRxRTL -> return path (``cfg.credit_latency`` stages: credit, ACK/NAK) -> LinkTxRTL

Cycle behaviour without faults: exactly the one specified in :mod:`pymtl_fp.link` and modelled
by :class:`~pymtl_fp.link.LinkCL.LinkCL`.  With faults on the forward channel (bit flips, lost
flits) the CRC, the framing and sequence checks, NAKs and the timeout make the sender go back to
the first message not received intact (go-back-N), so ``send`` still carries exactly the
``recv`` sequence.  The return path is assumed reliable.

``status`` (a :class:`~pymtl_fp.link.status.LinkStatus`, at every level) counts
retransmissions, timeouts, NAKs and CRC/framing/sequence errors.

``channel`` is the type of the forward channel, called as ``channel(nbits, latency)``
(pymtl3-net style); the default :class:`~pymtl_fp.link.ChannelRTL.ChannelRTL` is fault-free.
``faults=True`` (translatable) puts a :class:`~pymtl_fp.link.FaultyChannelRTL.FaultyChannelRTL`
there instead and exposes its configuration (``f_seed``, ``f_drop``, ``f_burst``, ``f_flip``) and
counters (``n_dropped``, ``n_flipped``) as ports; ``fault_index`` tells the links of one design
apart (each draws its own faults); ``fault_index=None`` makes it an input port ``f_index`` (8 bits).
Test benches pass :func:`pymtl_fp.tb.link_faults.faulty_channel` to inject faults (that variant is not
translatable).  ``MsgType`` may be narrower than ``cfg.msg_bits`` (zero-extended on the wire),
never wider.
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, zext
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.link.ChannelRTL import ChannelRTL
from pymtl_fp.link.config import LinkConfig
from pymtl_fp.link.FaultyChannelRTL import FaultyChannelRTL
from pymtl_fp.link.LinkRxRTL import LinkRxRTL
from pymtl_fp.link.LinkTxRTL import LinkTxRTL
from pymtl_fp.link.status import LinkStatus, status_dict


def check_msg_type(MsgType, cfg, where: str) -> int:
    """Validate the (MsgType, cfg) pair every link level takes; return the type's width."""
    if not isinstance(cfg, LinkConfig):
        raise TypeError(f"{where}: cfg must be a LinkConfig, got {type(cfg).__name__}")
    nbits = getattr(MsgType, "nbits", None)
    if not isinstance(nbits, int) or nbits < 1:
        raise TypeError(f"{where}: MsgType must be a PyMTL3 Bits type or bitstruct, got {MsgType!r}")
    if nbits > cfg.msg_bits:
        raise ValueError(f"{where}: message type {getattr(MsgType, '__name__', MsgType)} is {nbits} "
                         f"bits wide but the link is declared for msg_bits={cfg.msg_bits}")
    return nbits


def link_module_name(cfg, MsgType=None, faults=False, fault_index=0) -> tuple[str, dict]:
    """The Verilog module name of ``LinkRTL(MsgType, cfg, faults=faults, fault_index=fault_index)``
    (every elaboration parameter encoded, via :func:`pymtl_fp.verilate.module_name`) and those
    parameters (``LinkRTL.params``).  ``MsgType`` defaults to ``Bits<msg_bits>``."""
    from pymtl_fp.verilate import module_name

    MsgType = MsgType if MsgType is not None else mk_bits(cfg.msg_bits)
    params = dict(cfg.elab_params(), type=getattr(MsgType, "__name__", "T"), tbits=MsgType.nbits)
    if faults:
        params.update(faults=1, findex="port" if fault_index is None else fault_index)
    return module_name("LinkRTL", params), params


class LinkRTL(Component):
    def construct(s, MsgType, cfg, channel=ChannelRTL, faults=False, fault_index=0):
        nbits = check_msg_type(MsgType, cfg, "LinkRTL")
        M = cfg.msg_bits
        s.cfg = cfg
        s.params = link_module_name(cfg, MsgType, faults, fault_index)[1]
        s.recv = RecvIfcRTL(MsgType)
        s.send = SendIfcRTL(MsgType)
        s.status = OutPort(LinkStatus)

        s.tx = LinkTxRTL(cfg)
        if faults:
            s.chan = FaultyChannelRTL(cfg.flit_bits, cfg.latency, fault_index)
            s.f_seed = InPort(32)
            s.f_drop = InPort(16)
            s.f_burst = InPort(16)
            s.f_flip = InPort(16)
            if fault_index is None:
                s.f_index = InPort(8)
                s.chan.f_index //= s.f_index
            s.n_dropped = OutPort(32)
            s.n_flipped = OutPort(32)
            s.chan.f_seed //= s.f_seed
            s.chan.f_drop //= s.f_drop
            s.chan.f_burst //= s.f_burst
            s.chan.f_flip //= s.f_flip
            s.n_dropped //= s.chan.n_dropped
            s.n_flipped //= s.chan.n_flipped
        else:
            s.chan = channel(cfg.flit_bits, cfg.latency)
        s.rx = LinkRxRTL(cfg, nbits)
        s.ret = ChannelRTL(cfg.ret_bits, cfg.credit_latency)

        s.tx.out_val //= s.chan.in_val
        s.tx.out_flit //= s.chan.in_msg
        s.chan.out_val //= s.rx.in_val
        s.chan.out_msg //= s.rx.in_flit
        s.rx.ret_val //= s.ret.in_val
        s.rx.ret_msg //= s.ret.in_msg
        s.ret.out_val //= s.tx.ret_val
        s.ret.out_msg //= s.tx.ret_msg

        s.recv.val //= s.tx.recv_val
        s.recv.rdy //= s.tx.recv_rdy
        s.send.val //= s.rx.send_val
        s.send.rdy //= s.rx.send_rdy

        s.recv_bits = Wire(nbits)
        s.send_bits = Wire(nbits)
        s.send_bits //= s.rx.send_msg
        if nbits == M:
            s.tx.recv_msg //= s.recv_bits
        else:
            MT = mk_bits(M)

            @update
            def up_widen():
                s.tx.recv_msg @= zext(s.recv_bits, MT)

        s.status.retransmissions //= s.tx.n_retx
        s.status.timeouts //= s.tx.n_timeouts
        s.status.naks //= s.rx.n_naks
        s.status.crc_errors //= s.rx.n_crc_errors
        s.status.frame_errors //= s.rx.n_frame_errors
        s.status.seq_errors //= s.rx.n_seq_errors
        s.status.overflow //= s.rx.overflow

        @update
        def up_recv_bits():
            s.recv_bits @= s.recv.msg

        @update
        def up_send_msg():
            s.send.msg @= s.send_bits

    def stats(s) -> dict:
        """The status port as a dict of ints."""
        return status_dict(s.status)

    def line_trace(s):
        return (f"{s.recv}>{s.tx.line_trace()}{s.chan.line_trace()}"
                f"{s.rx.line_trace()}{s.ret.line_trace()}>{s.send}")
