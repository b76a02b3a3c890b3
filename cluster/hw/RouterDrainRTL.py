"""The router's drainer (RTL): the STORE side of the DMA, from the engine's ``dout`` to the output
buffers (``fwd_out``, ``bwd_out``, host) and the scratch FIFO.

A queue of two STORE moves ``(destination mask, count)`` (the sequencer pushes one when the engine
accepts a STORE); ``dout.rdy`` is high while a move is queued and none of its output buffers is
full; each element taken goes to every destination of the head move (``deliver``/``mask``/
``data``), which retires at the edge of its last beat (``done``).  A beat carries ``lanes`` (``E``) elements;
``n`` is the number of the beat's elements (``E``, fewer in a move's last beat), the scratch
FIFO takes those.  ``idle``: no move queued;
``blocked``: a move is queued but ``dout.rdy`` is low (a full output buffer).  Cycle for cycle the
drainer of :class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`.  Elaboration parameters: ``bits`` (element
width), ``lanes``.
"""

from pymtl3 import Bits2, Bits4, Bits24, Component, InPort, OutPort, Wire, mk_bits, update, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL

from pymtl_fp.cluster import isa

M_FWD, M_BWD, M_HOST = Bits4(isa.DST_FWD_OUT), Bits4(isa.DST_BWD_OUT), Bits4(isa.DST_HOST)


class RouterDrainRTL(Component):
    def construct(s, bits=32, lanes=1):
        E = lanes
        NB = E.bit_length()
        BW = E * bits
        T = mk_bits(BW)
        N0 = Bits24(0)
        NE = Bits24(E)
        s.params = dict(bits=bits, lanes=lanes)

        s.push = InPort()
        s.push_mask = InPort(4)
        s.push_n = InPort(24)
        s.dout = RecvIfcRTL(T)
        s.full = [InPort() for _ in range(3)]  # output buffers fwd_out, bwd_out, host_out
        s.deliver = OutPort()
        s.mask = OutPort(4)
        s.data = OutPort(BW)
        s.n = OutPort(NB)
        s.idle = OutPort()
        s.done = OutPort()
        s.blocked = OutPort()

        s.q_mask = [Wire(4) for _ in range(2)]
        s.q_n = [Wire(24) for _ in range(2)]
        s.q_cnt = Wire(2)
        s.taken = Wire(24)  # elements delivered
        s.rem = Wire(24)
        s.ln = Wire(24)
        s.room = Wire()

        @update
        def up_drain_comb():
            s.idle @= s.q_cnt == Bits2(0)
            s.room @= ~(((s.q_mask[0] & M_FWD) != Bits4(0)) & s.full[0]
                        | ((s.q_mask[0] & M_BWD) != Bits4(0)) & s.full[1]
                        | ((s.q_mask[0] & M_HOST) != Bits4(0)) & s.full[2])
            s.dout.rdy @= (s.q_cnt != Bits2(0)) & s.room
            s.blocked @= (s.q_cnt != Bits2(0)) & ~s.room
            s.deliver @= s.dout.val & s.dout.rdy
            s.mask @= s.q_mask[0]
            s.data @= s.dout.msg
            s.rem @= s.q_n[0] - s.taken
            if s.rem < NE:
                s.ln @= s.rem
            else:
                s.ln @= NE
            s.n @= s.ln[0:NB]
            s.done @= s.deliver & (s.taken + s.ln == s.q_n[0])

        @update_ff
        def up_drain_queue():
            if s.reset:
                s.q_cnt <<= Bits2(0)
                s.taken <<= N0
            elif s.done:
                s.taken <<= N0
                s.q_mask[0] <<= s.q_mask[1]
                s.q_n[0] <<= s.q_n[1]
                if s.push:
                    if s.q_cnt == Bits2(1):
                        s.q_mask[0] <<= s.push_mask
                        s.q_n[0] <<= s.push_n
                    else:
                        s.q_mask[1] <<= s.push_mask
                        s.q_n[1] <<= s.push_n
                else:
                    s.q_cnt <<= s.q_cnt - Bits2(1)
            else:
                if s.deliver:
                    s.taken <<= s.taken + s.ln
                if s.push:
                    if s.q_cnt == Bits2(0):
                        s.q_mask[0] <<= s.push_mask
                        s.q_n[0] <<= s.push_n
                    else:
                        s.q_mask[1] <<= s.push_mask
                        s.q_n[1] <<= s.push_n
                    s.q_cnt <<= s.q_cnt + Bits2(1)

    def line_trace(s):
        return f"D{int(s.q_cnt)}:{int(s.taken)}"
