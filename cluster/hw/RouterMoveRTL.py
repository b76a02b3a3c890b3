"""The router's link-to-link mover (RTL): the ``MOVE``, ``REDUCE`` and ``RELAY`` instructions of the
sequencer, from the link and host inputs (and the scratch FIFO's head) to the output buffers and
the scratch FIFO.

For the current instruction (``count`` elements; ``stream``: a MOVE or a REDUCE, ``red``: a REDUCE,
``relay``: a RELAY; ``quiet``: the feeder and the drainer are idle):

* a MOVE / REDUCE may move (``mv``) while quiet, every output buffer of ``dmask`` has room
  (``mv_room``, from ``out_full``) and, for a REDUCE, the scratch FIFO holds the beat's elements;
  its source input (``src``) is then ready; a beat of ``mv_n`` elements moves at an edge where
  that input is valid (``mv_fire``), carrying ``mv_val`` (a REDUCE adds the scratch FIFO's head,
  lane by lane, modulo ``2**bits``, lanes past the beat's elements zero); ``mv_last``: its last beat;
* a RELAY (quiet) takes its reduce stream on ``fwd_in`` (adds the scratch FIFO's head: ``rl_red``,
  ``rl_red_val`` to ``fwd_out``) and its broadcast stream on ``bwd_in`` (``rl_bc``, ``rl_n2``
  elements to ``bwd_out`` and the scratch FIFO), each while its buffer has room; ``rl_done``: both
  streams are complete at this edge;
* ``in_rdy``: the feeder's ready (``feed_rdy``) or the mover's, per input; ``in_fire`` its transfer.

The elements moved so far (``moved``; a RELAY's broadcast: ``moved2``) are registers here; with
``running`` (a pipelined sequencer's, ``RouterConfig.pipelined_seq``) the elements left instead
(``left``, ``left2``), loaded with the next instruction's count (``load``, ``load_count``) when the
sequencer loads it and counted down by each beat, so no wide difference or comparison of the count
lies between the registers and the handshakes.  Cycle for cycle the moves of
:class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`.  Elaboration parameters: ``bits`` (element width),
``count_bits`` (the scratch FIFO's count width), ``lanes`` (``E``, elements per beat), ``running``.
"""

from pymtl3 import Bits2, Bits4, Bits24, Component, InPort, OutPort, Wire, mk_bits, update, update_ff, zext

from pymtl_fp.cluster import isa


class RouterMoveRTL(Component):
    def construct(s, bits=32, count_bits=12, lanes=1, running=False):
        E = lanes
        BW = E * bits
        NB = E.bit_length()
        NE = Bits24(E)
        ZSB = mk_bits(bits)(0)
        s.params = dict(bits=bits, count_bits=count_bits, lanes=lanes)
        if running:
            s.params["running"] = True

        # the current instruction
        s.stream = InPort()
        s.red = InPort()
        s.relay = InPort()
        s.quiet = InPort()
        if running:
            s.load = InPort()
            s.load_count = InPort(24)
        else:
            s.count = InPort(24)
        s.src = InPort(2)
        s.dmask = InPort(4)
        # the output buffers (0 fwd_out, 1 bwd_out, 2 host) and the scratch FIFO
        s.out_full = [InPort() for _ in range(3)]
        s.s_count = InPort(count_bits)
        s.s_head = [InPort(bits) for _ in range(E)]
        # the link and host inputs (0 fwd_in, 1 bwd_in, 2 host_in) and the feeder's readies
        s.in_val = [InPort() for _ in range(3)]
        s.in_msg = [InPort(BW) for _ in range(3)]
        s.feed_rdy = [InPort() for _ in range(3)]
        s.in_rdy = [OutPort() for _ in range(3)]
        s.in_fire = [OutPort() for _ in range(3)]
        # what moves
        s.mv_room = OutPort()
        s.mv_fire = OutPort()
        s.mv_last = OutPort()
        s.mv_n = OutPort(NB)       # elements in the beat (a RELAY's reduce beat too)
        s.mv_val = OutPort(BW)
        s.rl_red = OutPort()
        s.rl_red_val = OutPort(BW)
        s.rl_bc = OutPort()
        s.rl_n2 = OutPort(NB)      # ... in a RELAY's broadcast beat
        s.rl_done = OutPort()

        s.mv_ln = Wire(24)
        s.rl_ln2 = Wire(24)
        s.mv_n //= s.mv_ln[0:NB]
        s.rl_n2 //= s.rl_ln2[0:NB]
        s.mv = Wire()
        s.rl = Wire()
        s.rl_red_ok, s.rl_bc_ok = Wire(), Wire()
        s.mv_data = Wire(BW)
        s.fwd_l, s.mvd_l, s.mv_val_l, s.rl_red_l = ([Wire(bits) for _ in range(E)] for _ in range(4))
        for j in range(E):
            lo, hi = j * bits, (j + 1) * bits
            s.fwd_l[j] //= s.in_msg[0][lo:hi]
            s.mvd_l[j] //= s.mv_data[lo:hi]
            s.mv_val[lo:hi] //= s.mv_val_l[j]
            s.rl_red_val[lo:hi] //= s.rl_red_l[j]

        if running:
            _running(s, E, NE, NB, ZSB, count_bits)
        else:
            s.moved = Wire(24)
            s.moved2 = Wire(24)
            s.mv_need = Wire(24)   # elements a REDUCE needs in the scratch FIFO

            @update
            def up_move_ready():
                # room in every output buffer of dmask (the scratch FIFO: sized for the program)
                s.mv_room @= ~((((s.dmask & Bits4(isa.DST_FWD_OUT)) != Bits4(0)) & s.out_full[0])
                               | (((s.dmask & Bits4(isa.DST_BWD_OUT)) != Bits4(0)) & s.out_full[1])
                               | (((s.dmask & Bits4(isa.DST_HOST)) != Bits4(0)) & s.out_full[2]))
                if s.count - s.moved < NE:
                    s.mv_ln @= s.count - s.moved
                else:
                    s.mv_ln @= NE
                if s.count - s.moved2 < NE:
                    s.rl_ln2 @= s.count - s.moved2
                else:
                    s.rl_ln2 @= NE
                if s.red:
                    s.mv_need @= s.mv_ln
                else:
                    s.mv_need @= Bits24(0)
                s.mv @= s.stream & s.quiet & s.mv_room & (zext(s.s_count, Bits24) >= s.mv_need)
                s.rl @= s.relay & s.quiet
                s.rl_red_ok @= (s.rl & (s.moved < s.count) & (zext(s.s_count, Bits24) >= s.mv_ln)
                                & ~s.out_full[0])
                s.rl_bc_ok @= s.rl & (s.moved2 < s.count) & ~s.out_full[1]
                s.in_rdy[0] @= s.feed_rdy[0] | (s.mv & (s.src == Bits2(isa.SRC_FWD_IN))) | s.rl_red_ok
                s.in_rdy[1] @= s.feed_rdy[1] | (s.mv & (s.src == Bits2(isa.SRC_BWD_IN))) | s.rl_bc_ok
                s.in_rdy[2] @= s.feed_rdy[2] | (s.mv & (s.src == Bits2(isa.SRC_HOST)))
                for i in range(3):
                    s.in_fire[i] @= s.in_val[i] & s.in_rdy[i]

            @update
            def up_move_data():
                s.mv_fire @= s.mv & (s.in_fire[0] | s.in_fire[1] | s.in_fire[2])
                if s.src == Bits2(isa.SRC_FWD_IN):
                    s.mv_data @= s.in_msg[0]
                elif s.src == Bits2(isa.SRC_BWD_IN):
                    s.mv_data @= s.in_msg[1]
                else:
                    s.mv_data @= s.in_msg[2]
                # the adder, lane by lane (modulo 2**bits); lanes past the beat's elements zero
                for j in range(E):
                    if s.mv_ln > j:
                        s.rl_red_l[j] @= s.fwd_l[j] + s.s_head[j]
                    else:
                        s.rl_red_l[j] @= ZSB
                    if s.red:
                        if s.mv_ln > j:
                            s.mv_val_l[j] @= s.mvd_l[j] + s.s_head[j]
                        else:
                            s.mv_val_l[j] @= ZSB
                    else:
                        s.mv_val_l[j] @= s.mvd_l[j]
                s.mv_last @= s.mv_fire & (s.moved + s.mv_ln == s.count)
                s.rl_red @= s.rl_red_ok & s.in_val[0]
                s.rl_bc @= s.rl_bc_ok & s.in_val[1]
                s.rl_done @= (s.rl & ((s.moved == s.count) | (s.rl_red & (s.moved + s.mv_ln == s.count)))
                              & ((s.moved2 == s.count) | (s.rl_bc & (s.moved2 + s.rl_ln2 == s.count))))

            @update_ff
            def up_move_regs():
                if s.reset:
                    s.moved <<= Bits24(0)
                    s.moved2 <<= Bits24(0)
                else:
                    if s.mv_fire:
                        if s.mv_last:
                            s.moved <<= Bits24(0)
                        else:
                            s.moved <<= s.moved + s.mv_ln
                    if s.rl_done:
                        s.moved <<= Bits24(0)
                        s.moved2 <<= Bits24(0)
                    else:
                        if s.rl_red:
                            s.moved <<= s.moved + s.mv_ln
                        if s.rl_bc:
                            s.moved2 <<= s.moved2 + s.rl_ln2

    def line_trace(s):
        if hasattr(s, "left"):
            return f"L{int(s.left)}/{int(s.left2)}"
        return f"M{int(s.moved)}/{int(s.moved2)}"


def _running(s, E, NE, NB, ZSB, CB):
    """The moves with running counts: ``left`` / ``left2`` elements left of the instruction's count."""
    s.left = Wire(24)
    s.left2 = Wire(24)
    s.mv_need = Wire(CB)   # elements a REDUCE needs in the scratch FIFO

    @update
    def up_move_ready_run():
        s.mv_room @= ~((((s.dmask & Bits4(isa.DST_FWD_OUT)) != Bits4(0)) & s.out_full[0])
                       | (((s.dmask & Bits4(isa.DST_BWD_OUT)) != Bits4(0)) & s.out_full[1])
                       | (((s.dmask & Bits4(isa.DST_HOST)) != Bits4(0)) & s.out_full[2]))
        if s.left < NE:
            s.mv_ln @= s.left
        else:
            s.mv_ln @= NE
        if s.left2 < NE:
            s.rl_ln2 @= s.left2
        else:
            s.rl_ln2 @= NE
        if s.red:
            s.mv_need @= s.mv_ln[0:CB]
        else:
            s.mv_need @= 0
        s.mv @= s.stream & s.quiet & s.mv_room & (s.s_count >= s.mv_need)
        s.rl @= s.relay & s.quiet
        s.rl_red_ok @= s.rl & (s.left != Bits24(0)) & (s.s_count >= s.mv_ln[0:CB]) & ~s.out_full[0]
        s.rl_bc_ok @= s.rl & (s.left2 != Bits24(0)) & ~s.out_full[1]
        s.in_rdy[0] @= s.feed_rdy[0] | (s.mv & (s.src == Bits2(isa.SRC_FWD_IN))) | s.rl_red_ok
        s.in_rdy[1] @= s.feed_rdy[1] | (s.mv & (s.src == Bits2(isa.SRC_BWD_IN))) | s.rl_bc_ok
        s.in_rdy[2] @= s.feed_rdy[2] | (s.mv & (s.src == Bits2(isa.SRC_HOST)))
        for i in range(3):
            s.in_fire[i] @= s.in_val[i] & s.in_rdy[i]

    @update
    def up_move_data_run():
        s.mv_fire @= s.mv & (s.in_fire[0] | s.in_fire[1] | s.in_fire[2])
        if s.src == Bits2(isa.SRC_FWD_IN):
            s.mv_data @= s.in_msg[0]
        elif s.src == Bits2(isa.SRC_BWD_IN):
            s.mv_data @= s.in_msg[1]
        else:
            s.mv_data @= s.in_msg[2]
        for j in range(E):
            if s.mv_ln > j:
                s.rl_red_l[j] @= s.fwd_l[j] + s.s_head[j]
            else:
                s.rl_red_l[j] @= ZSB
            if s.red:
                if s.mv_ln > j:
                    s.mv_val_l[j] @= s.mvd_l[j] + s.s_head[j]
                else:
                    s.mv_val_l[j] @= ZSB
            else:
                s.mv_val_l[j] @= s.mvd_l[j]
        s.mv_last @= s.mv_fire & (s.left <= NE)
        s.rl_red @= s.rl_red_ok & s.in_val[0]
        s.rl_bc @= s.rl_bc_ok & s.in_val[1]
        s.rl_done @= (s.rl & ((s.left == Bits24(0)) | (s.rl_red & (s.left <= NE)))
                      & ((s.left2 == Bits24(0)) | (s.rl_bc & (s.left2 <= NE))))

    @update_ff
    def up_move_regs_run():
        if s.load:
            s.left <<= s.load_count
            s.left2 <<= s.load_count
        elif ~s.reset:
            if s.mv_fire | s.rl_red:
                s.left <<= s.left - s.mv_ln
            if s.rl_bc:
                s.left2 <<= s.left2 - s.rl_ln2
