"""Receiver side of the link (RTL): deserializer + CRC-32 check + go-back-N acceptance +
receive buffer + return-path generation.

A frame is **accepted** in the cycle its last flit arrives if its framing is intact, its CRC-32
matches (with CRC on) and its sequence number is the one expected; it then enters the receive
buffer and an ACK with its sequence number goes onto the return path in the same cycle.  Any
other frame or flit is dropped; the first such error after an accepted frame sends one NAK with
the expected sequence number (no more NAKs until a frame is accepted again: the sender's timeout
covers a lost retransmission).  A frame left incomplete by a new frame's first flit is counted
as a framing error but sends no NAK by itself: the new frame is often the retransmission (after a
timeout), and if it is not, its own sequence check fails and NAKs.  Each message leaving the
receive buffer returns one credit.  Return word (``ret_msg``): bit 0 credit, bit 1 ACK,
bit 2 NAK, bits 3.. sequence number.

``out_bits`` (default ``msg_bits``) is the width delivered on ``send_msg`` when the message type
is narrower than the link (the upper bits are zero padding; the CRC covers them all).

Statistics (status registers, 32-bit): ``n_crc_errors``, ``n_frame_errors`` (framing),
``n_seq_errors`` (intact frame, unexpected sequence number), ``n_naks``; ``overflow``
is sticky and should never rise (it means the credit protocol was violated).
Synthesizable; elaboration parameter: the :class:`~pymtl_fp.link.config.LinkConfig`.
"""

from pymtl3 import Component, InPort, OutPort, Wire, concat, mk_bits, update, update_ff

from pymtl_fp.link.CrcRTL import CrcRTL
from pymtl_fp.link.DeserializerRTL import DeserializerRTL
from pymtl_fp.link.RxBufferRTL import RxBufferRTL


class LinkRxRTL(Component):
    def construct(s, cfg, out_bits=None):
        s.params = cfg.elab_params()
        M, S = cfg.msg_bits, cfg.seq_bits
        N = M if out_bits is None else out_bits  # width delivered (<= M: the rest is padding)
        if not (isinstance(N, int) and 1 <= N <= M):
            raise ValueError(f"LinkRxRTL: out_bits must be in [1, {M}], got {out_bits!r}")
        SeqT = mk_bits(S)
        s.in_val = InPort()
        s.in_flit = InPort(cfg.flit_bits)
        s.send_val = OutPort()
        s.send_rdy = InPort()
        s.send_msg = OutPort(N)
        s.ret_val = OutPort()
        s.ret_msg = OutPort(cfg.ret_bits)
        s.n_crc_errors = OutPort(32)
        s.n_frame_errors = OutPort(32)
        s.n_seq_errors = OutPort(32)
        s.n_naks = OutPort(32)
        s.overflow = OutPort()

        s.des = DeserializerRTL(cfg)
        s.rxq = RxBufferRTL(N, cfg.credits)
        s.des.in_val //= s.in_val
        s.des.in_flit //= s.in_flit
        s.rxq.enq_msg //= s.des.out_msg[0:N]
        s.send_val //= s.rxq.deq_val
        s.send_msg //= s.rxq.deq_msg
        s.rxq.deq_rdy //= s.send_rdy

        s.expected = Wire(S)
        s.nak_sent = Wire()
        s.crc_ok = Wire()
        s.seq_ok = Wire()
        s.accept = Wire()
        s.bad = Wire()
        s.nak = Wire()
        s.credit = Wire()

        if cfg.crc:
            s.crc = CrcRTL(M + S)
            s.crc_in = Wire(M + S)
            s.crc.in_ //= s.crc_in

            @update
            def up_crc_check():
                s.crc_in @= concat(s.des.out_seq, s.des.out_msg)
                s.crc_ok @= s.crc.out == s.des.out_crc
        else:
            s.crc_ok //= 1

        @update
        def up_rx_ctl():
            s.seq_ok @= s.des.out_seq == s.expected
            s.accept @= s.des.out_val & s.seq_ok & s.crc_ok
            s.bad @= s.des.err | (s.des.out_val & ~s.accept)
            s.nak @= s.bad & ~s.nak_sent
            s.rxq.enq_val @= s.accept
            s.credit @= s.rxq.deq_val & s.send_rdy
            s.ret_val @= s.credit | s.accept | s.nak
            if s.accept:
                s.ret_msg @= concat(s.des.out_seq, s.nak, s.accept, s.credit)
            else:
                s.ret_msg @= concat(s.expected, s.nak, s.accept, s.credit)

        @update_ff
        def up_rx_regs():
            if s.reset:
                s.expected <<= 0
                s.nak_sent <<= 0
                s.n_crc_errors <<= 0
                s.n_frame_errors <<= 0
                s.n_seq_errors <<= 0
                s.n_naks <<= 0
                s.overflow <<= 0
            else:
                if s.accept:
                    s.expected <<= s.expected + SeqT(1)
                    s.nak_sent <<= 0
                elif s.nak:
                    s.nak_sent <<= 1
                if s.nak:
                    s.n_naks <<= s.n_naks + 1
                if s.des.out_val & ~s.crc_ok:
                    s.n_crc_errors <<= s.n_crc_errors + 1
                if s.des.err | s.des.abandon:
                    s.n_frame_errors <<= s.n_frame_errors + 1
                if s.des.out_val & s.crc_ok & ~s.seq_ok:
                    s.n_seq_errors <<= s.n_seq_errors + 1
                if s.accept & ~s.rxq.enq_rdy:
                    s.overflow <<= 1

    def line_trace(s):
        tag = "A" if s.accept else ("N" if s.nak else ("x" if s.bad else " "))
        return f"{s.des.line_trace()}{tag}{s.rxq.line_trace()}"
