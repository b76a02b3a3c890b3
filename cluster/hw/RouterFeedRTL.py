"""The router's feeder (RTL): the LOAD side of the DMA, from a link input, the host side channel
or the scratch FIFO to the engine's ``din``.

A queue of two LOAD moves ``(source, count)`` (the sequencer pushes one when the engine accepts a
LOAD); the head move takes elements from its source into a 2-entry skid FIFO, which offers them
on ``din``:

* a link/host input is ready (``feed_rdy``) while the head move reads it, has elements left to
  take and the skid FIFO has room (all from registers);
* from the scratch FIFO, one beat per edge while the skid FIFO, after this edge's ``din``
  transfer, has room and the FIFO holds the beat's elements (``s_pop_n`` of them);
* the head move retires (``done``) at the edge of its last ``din`` transfer.

A beat carries ``lanes`` (``E``) elements: a move of ``n`` elements is ``ceil(n / E)`` beats, the
last with ``n - (beats - 1) * E`` elements; the feeder counts elements taken and beats given.  A
link or host beat passes as it is; a beat from the scratch FIFO has its surplus lanes zero.

Outputs for the sequencer's statistics: ``idle`` (no move queued) and ``wait_in`` (the head move
waits for a link or the host with nothing in the skid FIFO).  Cycle for cycle the feeder of
:class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`.  Elaboration parameters: ``bits`` (element width),
``count_bits`` (the scratch FIFO's count width), ``lanes`` (elements per beat, a power of two).
"""

from pymtl3 import Bits2, Bits24, Component, InPort, OutPort, Wire, mk_bits, update, update_ff, zext
from pymtl3.stdlib.stream.ifcs import SendIfcRTL

from pymtl_fp.cluster import isa
from pymtl_fp.primitives.FifoRTL import FifoRTL

SRC_FWD, SRC_BWD, SRC_SCRATCH, SRC_HOST = (Bits2(isa.SRC_FWD_IN), Bits2(isa.SRC_BWD_IN), Bits2(isa.SRC_SCRATCH),
                                           Bits2(isa.SRC_HOST))


class RouterFeedRTL(Component):
    def construct(s, bits=32, count_bits=12, lanes=1):
        E = lanes
        LB = E.bit_length() - 1
        NB = E.bit_length()
        BW = E * bits
        T = mk_bits(BW)
        NT = mk_bits(NB)
        N0 = Bits24(0)
        N1 = Bits24(1)
        NE = Bits24(E)
        NE1 = Bits24(E - 1)
        ZB = mk_bits(bits)(0)
        s.params = dict(bits=bits, count_bits=count_bits, lanes=lanes)

        s.push = InPort()
        s.push_src = InPort(2)
        s.push_n = InPort(24)
        s.din = SendIfcRTL(T)
        # link inputs (0 fwd_in, 1 bwd_in, 2 host_in)
        s.in_val = [InPort() for _ in range(3)]
        s.in_msg = [InPort(BW) for _ in range(3)]
        s.feed_rdy = [OutPort() for _ in range(3)]
        # the scratch FIFO
        s.s_head = [InPort(bits) for _ in range(E)]
        s.s_count = InPort(count_bits)
        s.s_pop_n = OutPort(NB)
        # to the sequencer
        s.idle = OutPort()
        s.done = OutPort()
        s.wait_in = OutPort()
        s.din_fire = OutPort()
        s.error = OutPort()    # (sticky) a move that found the queue full, a beat the skid FIFO

        # the move queue: (source, count) moves, the head one in progress
        s.queue = FifoRTL(26, 2, peak=False)
        s.q_src = Wire(2)
        s.q_n = Wire(24)
        s.q_src //= s.queue.head[24:26]
        s.q_n //= s.queue.head[0:24]
        s.queue.push //= s.push
        s.queue.push_data[24:26] //= s.push_src
        s.queue.push_data[0:24] //= s.push_n
        s.queue.pop //= s.done
        # the skid FIFO: beats taken from the source, offered on din
        s.skid = FifoRTL(BW, 2, peak=False)
        s.din.msg //= s.skid.head
        s.skid.pop //= s.din_fire

        s.taken = Wire(24)     # elements taken from the source
        s.given = Wire(24)     # beats given on din
        s.rem = Wire(24)
        s.ln = Wire(24)        # elements of the next beat to take
        s.beats = Wire(24)     # beats of the head move
        s.queued = Wire()      # a move is queued
        s.room = Wire()
        s.wants = Wire()       # the head move has elements left to take
        s.in_fire = Wire()     # an input beat taken this cycle
        s.in_data = Wire(BW)
        s.s_take = Wire()      # a beat taken from the scratch FIFO this cycle
        s.s_beat = Wire(BW)    # the scratch FIFO's head, lanes past the beat's elements zero
        s.s_beat_l = [Wire(bits) for _ in range(E)]
        for j in range(E):
            s.s_beat[j * bits:(j + 1) * bits] //= s.s_beat_l[j]

        @update
        def up_feed_comb():
            s.queued @= s.queue.count != Bits2(0)
            s.error @= s.queue.error | s.skid.error
            s.idle @= ~s.queued
            s.rem @= s.q_n - s.taken
            if s.rem < NE:
                s.ln @= s.rem
            else:
                s.ln @= NE
            s.beats @= (s.q_n + NE1) >> LB
            s.wants @= s.queued & (s.taken < s.q_n)
            s.room @= s.skid.count < Bits2(2)
            s.feed_rdy[0] @= s.wants & s.room & (s.q_src == SRC_FWD)
            s.feed_rdy[1] @= s.wants & s.room & (s.q_src == SRC_BWD)
            s.feed_rdy[2] @= s.wants & s.room & (s.q_src == SRC_HOST)
            s.din.val @= s.skid.count != Bits2(0)
            s.din_fire @= s.din.val & s.din.rdy
            s.in_fire @= ((s.in_val[0] & s.feed_rdy[0]) | (s.in_val[1] & s.feed_rdy[1])
                          | (s.in_val[2] & s.feed_rdy[2]))
            if s.in_val[0] & s.feed_rdy[0]:
                s.in_data @= s.in_msg[0]
            elif s.in_val[1] & s.feed_rdy[1]:
                s.in_data @= s.in_msg[1]
            else:
                s.in_data @= s.in_msg[2]
            s.s_take @= (s.wants & (s.q_src == SRC_SCRATCH) & (zext(s.s_count, 24) >= s.ln)
                         & ((s.skid.count == Bits2(0)) | ((s.skid.count == Bits2(1)) & s.din_fire)
                            | ((s.skid.count == Bits2(2)) & s.din_fire)))
            if s.s_take:
                s.s_pop_n @= s.ln[0:NB]
            else:
                s.s_pop_n @= NT(0)
            for j in range(E):
                if s.ln > j:
                    s.s_beat_l[j] @= s.s_head[j]
                else:
                    s.s_beat_l[j] @= ZB
            s.skid.push @= s.in_fire | s.s_take
            if s.in_fire:
                s.skid.push_data @= s.in_data
            else:
                s.skid.push_data @= s.s_beat
            s.done @= s.din_fire & (s.given + N1 == s.beats)
            s.wait_in @= s.queued & (s.q_src != SRC_SCRATCH) & (s.skid.count == Bits2(0))

        @update_ff
        def up_feed_counts():
            if s.reset | s.done:
                s.taken <<= N0
                s.given <<= N0
            else:
                if s.skid.push:
                    s.taken <<= s.taken + s.ln
                if s.din_fire:
                    s.given <<= s.given + N1

    def line_trace(s):
        return f"F{int(s.queue.count)}:{int(s.taken)}/{int(s.given)}"
