"""The router's deliveries (RTL): the three output buffers towards ``fwd_out``, ``bwd_out`` and the
host, and what enters and leaves the scratch FIFO at an edge.

* Output buffer ``i`` (a :class:`~pymtl_fp.primitives.FifoRTL.FifoRTL` of ``out_beats`` beats)
  takes the drainer's beat (``deliver``, for the destinations of ``mask``) or a MOVE / REDUCE's
  (``mv_fire``, for those of ``dmask``; never both at once), or a RELAY's: its sum to ``fwd_out``
  (``rl_red``), its broadcast beat (``bwd_msg``) to ``bwd_out`` (``rl_bc``); it offers its head on
  ``out[i]`` (``out_fire[i]``: taken at this edge); ``out_full[i]``: it is full; ``out_empty``: all
  three are empty.
* The scratch FIFO takes (``sc_push_n`` elements, ``sc_push_data``) a scalar unit's element
  (``unit_push``, lane 0), a MOVE / REDUCE's beat to the scratch (``dmask``), a RELAY's broadcast
  beat or the drainer's beat to the scratch (``mask``), never two of them at once; it gives
  (``sc_pop_n``) a REDUCE's or a RELAY's beat, else what the feeder takes (``feed_pop_n``).

Elaboration parameters: ``bits`` (element width), ``lanes`` (``E``, elements per beat),
``out_beats`` (beats of each output buffer, a power of two).  :class:`RouterDeliverWregRTL` (a
pipelined router's) is the same with output buffers that register their writes
(:class:`~pymtl_fp.primitives.FifoRTL.FifoWregRTL`): no path from the engine's ``dout`` or a link's
input into a buffer's memory, the same values at every port in every cycle.
"""

from pymtl3 import Bits4, Component, InPort, OutPort, Wire, mk_bits, update
from pymtl3.stdlib.stream.ifcs import SendIfcRTL

from pymtl_fp.cluster import isa
from pymtl_fp.primitives.FifoRTL import FifoRTL, FifoWregRTL

D_FWD, D_BWD, D_HOST = Bits4(isa.DST_FWD_OUT), Bits4(isa.DST_BWD_OUT), Bits4(isa.DST_HOST)
D_SCRATCH = Bits4(isa.DST_SCRATCH)


class RouterDeliverRTL(Component):
    def construct(s, bits=32, lanes=1, out_beats=16):
        s._build(bits, lanes, out_beats, False)

    def _build(s, bits, lanes, out_beats, wreg):
        E = lanes
        BW = E * bits
        NB = E.bit_length()
        NT = mk_bits(NB)
        OCB = out_beats.bit_length()
        OCT = mk_bits(OCB)
        OUT_FULL = OCT(out_beats)
        Z4 = Bits4(0)
        ZSB = mk_bits(bits)(0)
        s.params = dict(bits=bits, lanes=lanes, out_beats=out_beats)
        if wreg:
            s.params["wreg"] = True

        # the drainer's beat
        s.deliver = InPort()
        s.mask = InPort(4)
        s.data = InPort(BW)
        s.n = InPort(NB)
        # a MOVE / REDUCE's beat, a RELAY's two
        s.mv_fire = InPort()
        s.dmask = InPort(4)
        s.red = InPort()
        s.mv_val = InPort(BW)
        s.mv_n = InPort(NB)      # elements in a MOVE / REDUCE's or a RELAY reduce's beat
        s.rl_red = InPort()
        s.rl_red_val = InPort(BW)
        s.rl_bc = InPort()
        s.rl_n2 = InPort(NB)     # ... in a RELAY's broadcast beat
        s.bwd_msg = InPort(BW)
        # a scalar unit's element, the feeder's pop
        s.unit_push = InPort()
        s.unit_data = InPort(bits)
        s.feed_pop_n = InPort(NB)
        # the output buffers
        s.out = [SendIfcRTL(mk_bits(BW)) for _ in range(3)]
        s.out_fire = [OutPort() for _ in range(3)]
        s.out_full = [OutPort() for _ in range(3)]
        s.out_empty = OutPort()
        s.out_peak = [OutPort(OCB) for _ in range(3)]
        s.out_error = OutPort()
        # the scratch FIFO's ports
        s.sc_push_n = OutPort(NB)
        s.sc_push_data = [OutPort(bits) for _ in range(E)]
        s.sc_pop_n = OutPort(NB)

        s.outs = [(FifoWregRTL if wreg else FifoRTL)(BW, out_beats) for _ in range(3)]
        s.push_out = [Wire() for _ in range(3)]
        s.push_val = Wire(BW)
        s.drn_l, s.mv_val_l, s.bwd_l = ([Wire(bits) for _ in range(E)] for _ in range(3))
        for j in range(E):
            lo, hi = j * bits, (j + 1) * bits
            s.drn_l[j] //= s.data[lo:hi]
            s.mv_val_l[j] //= s.mv_val[lo:hi]
            s.bwd_l[j] //= s.bwd_msg[lo:hi]
        for i in range(3):
            s.out[i].msg //= s.outs[i].head
            s.out_peak[i] //= s.outs[i].peak

        @update
        def up_deliver_outs():
            # the drainer's deliveries or a MOVE's elements (never both at once)
            s.push_out[0] @= ((s.deliver & ((s.mask & D_FWD) != Z4)) | (s.mv_fire & ((s.dmask & D_FWD) != Z4)))
            s.push_out[1] @= ((s.deliver & ((s.mask & D_BWD) != Z4)) | (s.mv_fire & ((s.dmask & D_BWD) != Z4)))
            s.push_out[2] @= ((s.deliver & ((s.mask & D_HOST) != Z4)) | (s.mv_fire & ((s.dmask & D_HOST) != Z4)))
            if s.deliver:
                s.push_val @= s.data
            else:
                s.push_val @= s.mv_val
            s.outs[0].push @= s.push_out[0] | s.rl_red
            s.outs[1].push @= s.push_out[1] | s.rl_bc
            s.outs[2].push @= s.push_out[2]
            if s.rl_red:  # (a RELAY: the sum forward, the broadcast element back)
                s.outs[0].push_data @= s.rl_red_val
            else:
                s.outs[0].push_data @= s.push_val
            if s.rl_bc:
                s.outs[1].push_data @= s.bwd_msg
            else:
                s.outs[1].push_data @= s.push_val
            s.outs[2].push_data @= s.push_val
            for i in range(3):
                s.out[i].val @= s.outs[i].count != OCT(0)
                s.out_fire[i] @= s.out[i].val & s.out[i].rdy
                s.outs[i].pop @= s.out_fire[i]
                s.out_full[i] @= s.outs[i].count == OUT_FULL
            s.out_empty @= ((s.outs[0].count == OCT(0)) & (s.outs[1].count == OCT(0))
                            & (s.outs[2].count == OCT(0)))
            s.out_error @= s.outs[0].error | s.outs[1].error | s.outs[2].error

        @update
        def up_deliver_scratch():
            s.sc_push_n @= NT(0)
            if s.unit_push:
                s.sc_push_n @= NT(1)
            elif s.mv_fire:
                if (s.dmask & D_SCRATCH) != Z4:
                    s.sc_push_n @= s.mv_n
            elif s.rl_bc:
                s.sc_push_n @= s.rl_n2
            elif s.deliver & ((s.mask & D_SCRATCH) != Z4):
                s.sc_push_n @= s.n
            # a scalar unit appends one element (lane 0)
            if s.unit_push:
                s.sc_push_data[0] @= s.unit_data
            elif s.mv_fire:
                s.sc_push_data[0] @= s.mv_val_l[0]
            elif s.rl_bc:
                s.sc_push_data[0] @= s.bwd_l[0]
            else:
                s.sc_push_data[0] @= s.drn_l[0]
            for j in range(1, E):
                if s.unit_push:
                    s.sc_push_data[j] @= ZSB
                elif s.mv_fire:
                    s.sc_push_data[j] @= s.mv_val_l[j]
                elif s.rl_bc:
                    s.sc_push_data[j] @= s.bwd_l[j]
                else:
                    s.sc_push_data[j] @= s.drn_l[j]
            if (s.mv_fire & s.red) | s.rl_red:
                s.sc_pop_n @= s.mv_n
            else:
                s.sc_pop_n @= s.feed_pop_n

    def line_trace(s):
        return "".join(q.line_trace() for q in s.outs)


class RouterDeliverWregRTL(RouterDeliverRTL):
    """:class:`RouterDeliverRTL` whose output buffers register their writes (the module docstring)."""

    def construct(s, bits=32, lanes=1, out_beats=16):
        s._build(bits, lanes, out_beats, True)
