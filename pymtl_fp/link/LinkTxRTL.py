"""Sender side of the link (RTL): retransmission buffer + CRC-32 + serializer + credit counter.

Accepts messages (as ``msg_bits``-wide Bits) on a val/rdy port, keeps each in the go-back-N
retransmission buffer until acknowledged, and serializes it into flits on the forward channel
(``out_val``/``out_flit``) when a credit is available (first transmission) or without one
(retransmission).  Decodes the return path (``ret_val``/``ret_msg``: credit, ACK, NAK flags and
a sequence number).  Synthesizable; elaboration parameter: the
:class:`~pymtl_fp.link.config.LinkConfig`.
"""

from pymtl3 import Component, InPort, OutPort, Wire, concat, update

from pymtl_fp.link.CrcRTL import CrcRTL
from pymtl_fp.link.CreditCounterRTL import CreditCounterRTL
from pymtl_fp.link.RetransmitBufferRTL import RetransmitBufferRTL
from pymtl_fp.link.SerializerRTL import SerializerRTL


class LinkTxRTL(Component):
    def construct(s, cfg):
        s.params = cfg.elab_params()
        M, S = cfg.msg_bits, cfg.seq_bits
        s.recv_val = InPort()
        s.recv_rdy = OutPort()
        s.recv_msg = InPort(M)
        s.out_val = OutPort()
        s.out_flit = OutPort(cfg.flit_bits)
        s.ret_val = InPort()
        s.ret_msg = InPort(cfg.ret_bits)
        s.n_retx = OutPort(32)
        s.n_timeouts = OutPort(32)

        s.rbuf = RetransmitBufferRTL(M, cfg.window, cfg.timeout)
        s.ser = SerializerRTL(cfg)
        s.credits = CreditCounterRTL(cfg.credits)

        s.rbuf.enq_val //= s.recv_val
        s.rbuf.enq_rdy //= s.recv_rdy
        s.rbuf.enq_msg //= s.recv_msg
        s.ser.in_val //= s.rbuf.rd_val
        s.ser.in_msg //= s.rbuf.rd_msg
        s.ser.in_seq //= s.rbuf.rd_seq
        s.rbuf.take //= s.ser.take
        s.out_val //= s.ser.out_val
        s.out_flit //= s.ser.out_flit
        s.n_retx //= s.rbuf.n_retx
        s.n_timeouts //= s.rbuf.n_timeouts
        s.rbuf.ack_seq //= s.ret_msg[3:3 + S]
        s.rbuf.nak_seq //= s.ret_msg[3:3 + S]

        if cfg.crc:
            s.crc = CrcRTL(M + S)
            s.crc_in = Wire(M + S)
            s.crc.in_ //= s.crc_in
            s.ser.in_crc //= s.crc.out

            @update
            def up_crc_in():
                s.crc_in @= concat(s.rbuf.rd_seq, s.rbuf.rd_msg)

        @update
        def up_can_go():
            s.ser.can_go @= ~s.rbuf.rd_new | s.credits.avail

        @update
        def up_consume():
            s.credits.consume @= s.ser.take & s.rbuf.rd_new

        @update
        def up_ret_decode():
            s.credits.ret @= s.ret_val & s.ret_msg[0]
            s.rbuf.ack_val @= s.ret_val & s.ret_msg[1]
            s.rbuf.nak_val @= s.ret_val & s.ret_msg[2]

    def line_trace(s):
        return f"{s.rbuf.line_trace()} {s.credits.line_trace()} {s.ser.line_trace()}"
