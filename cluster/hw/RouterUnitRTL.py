"""The router's scalar units (RTL): the bias SGD step (``BIAS``), the relayout between array
sides (``GATHER``), the requantizer of all-reduced sums (``REQUANT``) and the residual unit (``ADD``,
``MASK``, ``GAP``, ``GAPB``: a :class:`~pymtl_fp.cluster.hw.RouterUnitResRTL.RouterUnitResRTL`, whose scratch
reads, pushes, drop and retire this unit passes on while it runs), all working on the scratch FIFO.

Started by the sequencer at an edge (``start``; the feeder and drainer are idle, so nothing else
touches the scratch FIFO), a unit appends one result element per edge to the scratch FIFO's tail,
then, at the edge after its last element, drops its input from the FIFO's head and retires
(``retire``):

* ``BIAS`` (``n`` biases; the FIFO holds ``[b[0..n), db[0..n)]``): element ``i`` is
  ``saturate(b[i] - requantize(db[i], shift, stoch, seed, tid, index=i), bits)`` for ``i < k``
  (the golden ``sgd_update``; with ``lshift > 0``, a learning rate above one, ``db[i] << lshift``
  instead of the requantization) and 0 for the padding ``k <= i < n``; it drops ``2n``;
* ``GATHER`` (the FIFO holds ``n`` elements): for each gather-table entry ``[tbase, tbase +
  tlen)`` (:mod:`pymtl_fp.cluster.isa`: zero flag, run length, offset from the head) the run's
  elements, or zeros; it drops ``n``;
* ``REQUANT`` (the FIFO holds the ``n`` un-rounded sums of a ``(k, c, r, s)`` tensor in the
  engine's G layout, or B's with ``glayout`` low): counters walk the layout (``kt``, ``ct``, ``r``,
  ``s``, row ``i``, lane ``j`` of ``lanes = P``; B: no ``j``), element ``(kt*P + i, ct*P + j, r, s)``
  is ``saturate(requantize(v, shift, stoch, seed, tid, index=flat), bits)`` at its flat C-order
  index, 0 in padding lanes; it drops ``n``.  The walk is a
  :class:`~pymtl_fp.cluster.hw.RouterUnitWalkRTL.RouterUnitWalkRTL`; the step and the saturation
  of BIAS and REQUANT a :class:`~pymtl_fp.cluster.hw.RouterUnitSatRTL.RouterUnitSatRTL`.

So a unit holds the sequencer :func:`~pymtl_fp.cluster.isa.unit_cycles` edges.  Elaboration parameters: ``bits`` (stream
width), ``count_bits`` (the scratch FIFO's count width), ``table_bits`` (table address width), ``pipelined``
(``RouterConfig.pipelined_units``).

With ``pipelined``, BIAS and REQUANT compute in a pipeline, for a 200 MHz clock: the edge after ``start``
computes the walk's strides (a :class:`~pymtl_fp.cluster.hw.RouterUnitWalkSumRTL.RouterUnitWalkSumRTL`, its
flat index as running sums); from the next edge on the unit issues one element an edge (its scratch reads,
its index) into a :class:`~pymtl_fp.cluster.hw.RouterUnitPipeRTL.RouterUnitPipeRTL` and appends each result
when it leaves the pipeline, :data:`~pymtl_fp.cluster.hw.RouterUnitPipeRTL.LATENCY` edges later; it retires at
the edge after the last one: :data:`~pymtl_fp.cost.latency.UNIT_PIPE_LATENCY` edges more than without.  GATHER
is the same either way.
"""

from pymtl3 import (
    Bits1,
    Bits8,
    Bits16,
    Bits24,
    Bits32,
    Component,
    InPort,
    OutPort,
    Wire,
    connect,
    mk_bits,
    trunc,
    update,
    update_ff,
    zext,
)

from pymtl_fp.cluster.hw.RouterUnitPipeRTL import LATENCY as PIPE_LATENCY
from pymtl_fp.cluster.hw.RouterUnitPipeRTL import RouterUnitPipeRTL
from pymtl_fp.cluster.hw.RouterUnitResRTL import RouterUnitResRTL
from pymtl_fp.cluster.hw.RouterUnitSatRTL import RouterUnitSatRTL
from pymtl_fp.cluster.hw.RouterUnitWalkRTL import RouterUnitWalkRTL
from pymtl_fp.cluster.hw.RouterUnitWalkSumRTL import RouterUnitWalkSumRTL
from pymtl_fp.primitives.RequantRTL import RequantRTL


class RouterUnitRTL(Component):
    def construct(s, bits=32, count_bits=12, table_bits=8, pipelined=False, residual=False):
        T = mk_bits(bits)
        CT = mk_bits(count_bits)
        AT = mk_bits(count_bits - 1)  # scratch addresses (count_bits = address bits + 1)
        TT = mk_bits(table_bits)
        N1 = Bits24(1)
        T1 = Bits16(1)
        ZERO_T = T(0)
        s.params = dict(bits=bits, count_bits=count_bits, table_bits=table_bits, pipelined=pipelined, residual=residual)
        TAIL = mk_bits(5)
        TAIL_END = TAIL(PIPE_LATENCY)

        s.start = InPort()
        s.is_bias = InPort()
        s.is_requant = InPort()
        s.is_add, s.is_mask, s.is_gap, s.is_gapb = InPort(), InPort(), InPort(), InPort()
        if residual:
            s.relu = InPort()     # the residual unit's (and its area, C*A, M, dy's elements)
            s.area, s.chw, s.m, s.dyn = InPort(17), InPort(24), InPort(17), InPort(24)
        s.lanes = InPort(8)  # REQUANT: the engine's P; glayout: G's layout (else B's); the tensor
        s.glayout = InPort()
        s.ct, s.c, s.r, s.sw = InPort(16), InPort(16), InPort(16), InPort(16)
        s.n = InPort(24)
        s.k = InPort(16)
        if pipelined:  # REQUANT: the flat index's strides r*s and c*r*s
            s.rs = InPort(17)
            s.crs = InPort(24)
        s.shift = InPort(6)
        s.lshift = InPort(6)
        s.stoch = InPort()
        s.seed = InPort(32)
        s.tid = InPort(8)
        s.sat_bits = InPort(7)
        s.tbase = InPort(16)
        s.tlen = InPort(16)
        s.t_addr = OutPort(table_bits)
        s.t_data = InPort(32)
        # the scratch FIFO
        s.raddr0 = OutPort(count_bits - 1)
        s.raddr1 = OutPort(count_bits - 1)
        s.rdata0 = InPort(bits)
        s.rdata1 = InPort(bits)
        s.push = OutPort()
        s.push_data = OutPort(bits)
        s.drop = OutPort()
        s.drop_n = OutPort(count_bits)
        s.busy = OutPort()
        s.retire = OutPort()

        s.residual = residual
        if residual:
            s.res = RouterUnitResRTL(bits, count_bits, pipelined)
            _wire_res(s)
        s.own_start = Wire()  # a BIAS / GATHER / REQUANT starts
        s.own_push, s.own_data, s.own_retire = Wire(), Wire(bits), Wire()
        s.own_raddr0, s.own_raddr1, s.own_drop_n = Wire(count_bits - 1), Wire(count_bits - 1), Wire(count_bits)

        s.run = Wire()
        s.bias = Wire()
        s.cnt = Wire(24)      # n
        s.idx = Wire(24)      # BIAS: element; GATHER: -
        s.tidx = Wire(16)     # GATHER: table entry
        s.roff = Wire(8)      # GATHER: element within the run
        s.r_k = Wire(16)
        s.r_shift = Wire(6)
        s.r_lshift = Wire(6)
        s.r_stoch = Wire()
        s.r_seed = Wire(32)
        s.r_tid = Wire(8)
        s.r_bits = Wire(7)
        s.r_tbase = Wire(16)
        s.r_tlen = Wire(16)
        s.req = Wire()        # REQUANT (bias is also set: it shares BIAS's element loop)

        if pipelined:
            s.pipe = RouterUnitPipeRTL(bits)
            s.walk = RouterUnitWalkSumRTL()
            s.ready = Wire()  # the walk's strides are in place (from the second edge of a run on)
            s.tail = Wire(5)  # edges since the last element was issued
            s.last_out = Wire()
            _wire_pipe(s)
        else:
            s.rq = RequantRTL(acc_bits=bits, out_bits=bits)
            s.walk = RouterUnitWalkRTL()
            s.sat = RouterUnitSatRTL(bits)
            _wire_parts(s)
        _wire_walk(s)

        s.zero_run = Wire()
        s.run_len = Wire(8)
        s.run_off = Wire(23)
        s.more = Wire()       # the unit pushes an element at this edge
        s.last_run_elem = Wire()

        @update
        def up_unit_decode():  # (both structures: the gather table's runs, the buffers' reads, the drop)
            s.zero_run @= s.t_data[31]
            s.run_len @= s.t_data[23:31]
            s.run_off @= s.t_data[0:23]
            s.t_addr @= trunc(s.r_tbase + s.tidx, TT)
            s.last_run_elem @= zext(s.roff, Bits8) + Bits8(1) == s.run_len
            if s.req:
                s.own_raddr0 @= trunc(s.idx, AT)
                s.own_raddr1 @= trunc(s.idx, AT)
            elif s.bias:
                s.own_raddr0 @= trunc(s.idx, AT)
                s.own_raddr1 @= trunc(s.idx + s.cnt, AT)
            else:
                s.own_raddr0 @= trunc(zext(s.run_off, Bits24) + zext(s.roff, Bits24), AT)
                s.own_raddr1 @= AT(0)
            if s.bias & ~s.req:
                s.own_drop_n @= trunc(s.cnt + s.cnt, CT)
            else:
                s.own_drop_n @= trunc(s.cnt, CT)

        if residual:
            @update
            def up_unit_select():  # the residual unit's, while it runs
                s.own_start @= s.start & ~s.is_add & ~s.is_mask & ~s.is_gap & ~s.is_gapb
                s.res.start @= s.start & (s.is_add | s.is_mask | s.is_gap | s.is_gapb)
                s.busy @= s.run | s.res.busy
                s.retire @= s.own_retire | s.res.retire
                s.drop @= s.retire
                if s.res.busy:
                    s.raddr0 @= s.res.raddr0
                    s.raddr1 @= s.res.raddr1
                    s.drop_n @= s.res.drop_n
                    s.push @= s.res.push
                    s.push_data @= s.res.push_data
                else:
                    s.raddr0 @= s.own_raddr0
                    s.raddr1 @= s.own_raddr1
                    s.drop_n @= s.own_drop_n
                    s.push @= s.own_push
                    s.push_data @= s.own_data
        else:
            @update
            def up_unit_select_own():  # no residual unit: a residual kind retires at once, doing nothing
                s.own_start @= s.start & ~s.is_add & ~s.is_mask & ~s.is_gap & ~s.is_gapb
                s.busy @= s.run
                s.retire @= s.own_retire | (s.start & (s.is_add | s.is_mask | s.is_gap | s.is_gapb))
                s.drop @= s.own_retire
                s.raddr0 @= s.own_raddr0
                s.raddr1 @= s.own_raddr1
                s.drop_n @= s.own_drop_n
                s.push @= s.own_push
                s.push_data @= s.own_data

        if pipelined:
            @update
            def up_unit_issue_pipe():
                if s.req:
                    s.pipe.index @= s.walk.flat
                    s.pipe.inflag @= s.walk.in_tensor
                else:
                    s.pipe.index @= zext(s.idx, Bits32)
                    s.pipe.inflag @= s.idx < zext(s.r_k, Bits24)
                s.last_out @= s.tail == TAIL_END
                if s.bias:
                    s.more @= s.run & s.ready & (s.idx < s.cnt)
                    s.own_retire @= s.run & s.ready & (s.idx == s.cnt) & s.last_out
                else:
                    s.more @= s.run & (s.tidx < s.r_tlen)
                    s.own_retire @= s.run & (s.tidx == s.r_tlen)

            @update
            def up_unit_out_pipe():
                s.pipe.issue @= s.more & s.bias
                s.walk.step @= s.more & s.req & ~s.reset
                if s.bias:
                    s.own_push @= s.pipe.push
                    s.own_data @= s.pipe.val
                else:
                    s.own_push @= s.more
                    if s.zero_run:
                        s.own_data @= ZERO_T
                    else:
                        s.own_data @= s.rdata0

            @update_ff
            def up_unit_pipe_ctrl():
                if s.reset | s.own_start:
                    s.ready <<= 0
                    s.tail <<= TAIL(0)
                else:
                    s.ready <<= s.run
                    if s.run & s.ready & s.bias & (s.idx == s.cnt) & ~s.last_out:
                        s.tail <<= s.tail + TAIL(1)
        else:
            @update
            def up_unit_issue():
                if s.req:
                    s.rq.index @= s.walk.flat
                else:
                    s.rq.index @= zext(s.idx, Bits32)
                if s.bias:
                    s.more @= s.run & (s.idx < s.cnt)
                    s.own_retire @= s.run & (s.idx == s.cnt)
                else:
                    s.more @= s.run & (s.tidx < s.r_tlen)
                    s.own_retire @= s.run & (s.tidx == s.r_tlen)

            @update
            def up_unit_step():
                s.sat.in_k @= s.idx < zext(s.r_k, Bits24)
                s.walk.step @= s.more & s.req & ~s.reset

            @update
            def up_unit_out():
                s.own_push @= s.more
                if s.bias:
                    s.own_data @= s.sat.val
                elif s.zero_run:
                    s.own_data @= ZERO_T
                else:
                    s.own_data @= s.rdata0

        @update_ff
        def up_unit_state():
            if s.reset:
                s.run <<= 0
            elif s.own_start:
                s.run <<= 1
                s.bias <<= s.is_bias | s.is_requant
                s.req <<= s.is_requant
                s.cnt <<= s.n
                s.idx <<= Bits24(0)
                s.tidx <<= Bits16(0)
                s.roff <<= Bits8(0)
                s.r_k <<= s.k
                s.r_shift <<= s.shift
                s.r_lshift <<= s.lshift
                s.r_stoch <<= s.stoch
                s.r_seed <<= s.seed
                s.r_tid <<= s.tid
                s.r_bits <<= s.sat_bits
                s.r_tbase <<= s.tbase
                s.r_tlen <<= s.tlen
            elif s.own_retire:
                s.run <<= 0
            elif s.more:
                if s.bias:
                    s.idx <<= s.idx + N1
                if ~s.req:  # (REQUANT: the walk steps)
                    if s.last_run_elem:
                        s.tidx <<= s.tidx + T1
                        s.roff <<= Bits8(0)
                    else:
                        s.roff <<= s.roff + Bits8(1)

    def line_trace(s):
        if s.residual and s.res.busy:
            return s.res.line_trace()
        return f"U{'q' if s.req else 'b' if s.bias else 'g'}{int(s.idx) if s.bias else int(s.tidx)}" if s.run else "U."


def _wire_res(s):
    """The residual unit's connections (its outputs: ``up_unit_select``)."""
    for name in ("is_add", "is_mask", "is_gap", "is_gapb", "n", "relu", "lanes", "ct", "c", "area", "chw", "m", "dyn",
                 "shift", "stoch", "seed", "tid", "sat_bits", "rdata0", "rdata1"):
        connect(getattr(s.res, name), getattr(s, name))


def _wire_pipe(s):
    """The pipelined units' result's connections (its issue, index and flag: ``up_unit_issue_pipe``)."""
    s.pipe.acc //= s.rdata1
    s.pipe.b //= s.rdata0
    s.pipe.req //= s.req
    s.pipe.shift //= s.r_shift
    s.pipe.stoch //= s.r_stoch
    s.pipe.seed //= s.r_seed
    s.pipe.tid //= s.r_tid
    s.pipe.lshift //= s.r_lshift
    s.pipe.sat_bits //= s.r_bits
    s.walk.rs //= s.rs
    s.walk.crs //= s.crs


def _wire_walk(s):
    """The layout walk's connections (either walk)."""
    s.walk.start //= s.start
    s.walk.lanes //= s.lanes
    s.walk.glayout //= s.glayout
    s.walk.ct //= s.ct
    s.walk.c //= s.c
    s.walk.r //= s.r
    s.walk.sw //= s.sw
    s.walk.k //= s.r_k


def _wire_parts(s):
    """The requantizer's and the saturation's connections."""
    s.rq.acc //= s.rdata1
    s.rq.shift //= s.r_shift
    s.rq.stochastic //= s.r_stoch
    s.rq.relu //= Bits1(0)
    s.rq.seed //= s.r_seed
    s.rq.tensor_id //= s.r_tid
    s.sat.rdata0 //= s.rdata0
    s.sat.rdata1 //= s.rdata1
    s.sat.rq_out //= s.rq.out
    s.sat.lshift //= s.r_lshift
    s.sat.sat_bits //= s.r_bits
    s.sat.req //= s.req
    s.sat.in_tensor //= s.walk.in_tensor
