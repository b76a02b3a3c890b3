"""The router's residual unit (RTL): ``ADD`` (a residual add, a fork's gradient sum), ``MASK`` (the ReLU
derivative on a gradient), ``GAP`` (global average pool) and ``GAPB`` (its backward) over the scratch FIFO, bit for bit as
:func:`~pymtl_fp.cluster.isa.residual.apply_residual` defines them (the golden
:mod:`pymtl_fp.golden.residual` for values in their formats).

Started by the sequencer at an edge (``start`` with ``is_add`` / ``is_mask`` / ``is_gap`` / ``is_gapb``;
the feeder and drainer are idle), it reads one scratch element (ADD, MASK: a pair) an edge for ``n``
edges, at addresses relative to the FIFO's head: ADD / MASK ``a[i]`` and ``b[i]`` (``i`` and ``n + i``); GAP the map's
elements in the order of a
:class:`~pymtl_fp.cluster.hw.RouterUnitResWalkRTL.RouterUnitResWalkRTL` (each channel's pixels in a
row); GAPB dy's element of each dx position and, with ``relu``, x at ``dyn + i``.  Each read (GAP: a
channel's last pixel) yields one result, appended to the FIFO's tail ``latency`` edges later; at the
edge after the last result the unit drops its input from the head (``drop_n``) and retires::

    value   ADD: a + b;  MASK: a;  GAP: acc + x (acc: the channel's pixels so far);  GAPB: dy
            (on stream_bits + 17 bits: exact for any element values)
    product ADD / MASK: the value;  GAP / GAPB: M * value (stream_bits + 35 bits, exact)
    result  requantize(product, F) to stream_bits (ADD / MASK: F = 0, the value saturated; ADD: ReLU
            if relu), saturated to sat_bits; 0 for a padding lane (GAP / GAPB) or where x <= 0
            (MASK: x = b; GAPB with relu)

``pipelined`` (``RouterConfig.pipelined_units``, for the 200 MHz clock): the reads, the value and the
product are registered stages, the requantizer is :class:`~pymtl_fp.primitives.RequantPipeRTL.RequantPipeRTL`
and the saturation another registered stage: ``latency`` =
:data:`~pymtl_fp.cost.latency.UNIT_PIPE_LATENCY` (as BIAS and REQUANT); without, everything is
combinational from the read to the push (:class:`~pymtl_fp.primitives.RequantRTL.RequantRTL`) and
``latency`` = 0.  Either way an instruction of ``n`` reads holds the sequencer ``n + 2 + latency`` edges
(:func:`~pymtl_fp.cluster.isa.unit_cycles`).  Elaboration parameters: ``bits`` (element width),
``count_bits`` (the scratch FIFO's count width), ``pipelined``.
"""

from pymtl3 import Bits6, Bits24, Component, InPort, OutPort, Wire, mk_bits, sext, trunc, update, update_ff, zext

from pymtl_fp.cluster.hw.RouterUnitResWalkRTL import RouterUnitResWalkRTL
from pymtl_fp.cost.latency import PIPELINE_LATENCY, UNIT_PIPE_LATENCY
from pymtl_fp.primitives.DelayLineRTL import delayed
from pymtl_fp.primitives.RequantPipeRTL import RequantPipeRTL
from pymtl_fp.primitives.RequantRTL import RequantRTL

RQ = PIPELINE_LATENCY["requant"]


class RouterUnitResRTL(Component):
    def construct(s, bits=32, count_bits=12, pipelined=False):
        SW = bits + 17      # a sum of up to 2**16 elements
        PW = SW + 18        # M (< 2**17, unsigned) times it
        S, PT, T = mk_bits(SW), mk_bits(PW), mk_bits(bits)
        AT, CT = mk_bits(count_bits - 1), mk_bits(count_bits)
        DW = max(bits, 64) + 2  # the runtime saturation (sat_bits up to 64) on sign-flipped values
        D = mk_bits(DW)
        ONE_D, SIGN_D = D(1), D(1 << (DW - 1))
        B7_1 = mk_bits(7)(1)
        ZERO_T = T(0)
        N1 = Bits24(1)
        SIGN = bits - 1
        LAT = UNIT_PIPE_LATENCY if pipelined else 0
        TAIL = mk_bits(5)
        TAIL_END = TAIL(LAT)
        s.params = dict(bits=bits, count_bits=count_bits, pipelined=pipelined)
        s.latency = LAT

        s.start = InPort()
        s.is_add, s.is_mask, s.is_gap, s.is_gapb = InPort(), InPort(), InPort(), InPort()
        s.n = InPort(24)
        s.relu = InPort()
        s.lanes = InPort(8)
        s.ct, s.c = InPort(16), InPort(16)
        s.area = InPort(17)
        s.chw = InPort(24)
        s.m = InPort(17)
        s.dyn = InPort(24)
        s.shift = InPort(6)
        s.stoch = InPort()
        s.seed = InPort(32)
        s.tid = InPort(8)
        s.sat_bits = InPort(7)
        s.raddr0 = OutPort(count_bits - 1)
        s.raddr1 = OutPort(count_bits - 1)
        s.rdata0 = InPort(bits)
        s.rdata1 = InPort(bits)
        s.push = OutPort()
        s.push_data = OutPort(bits)
        s.drop_n = OutPort(count_bits)
        s.busy = OutPort()
        s.retire = OutPort()

        s.run, s.add, s.msk, s.gap = Wire(), Wire(), Wire(), Wire()  # (none of them: GAPB)
        s.pair = Wire()       # ADD or MASK: element pairs
        s.cnt, s.idx, s.drop = Wire(24), Wire(24), Wire(count_bits)
        s.r_relu, s.r_stoch = Wire(), Wire()
        s.r_m, s.r_dyn = Wire(17), Wire(24)
        s.r_shift, s.r_seed, s.r_tid, s.r_bits = Wire(6), Wire(32), Wire(8), Wire(7)
        s.tail = Wire(5)
        s.more = Wire()       # a read at this edge
        s.issue = Wire()      # ... that yields a result
        s.flag = Wire()       # the result is real (not padding, not masked)
        s.pos1 = Wire()       # the second operand is positive
        s.acc = Wire(SW)      # GAP: the channel's sum so far
        s.walk = RouterUnitResWalkRTL(count_bits - 1)
        s.walk.start //= s.start
        s.walk.gap //= s.is_gap
        s.walk.lanes //= s.lanes
        s.walk.ct //= s.ct
        s.walk.c //= s.c
        s.walk.area //= s.area
        s.walk.chw //= s.chw

        @update
        def up_res_ctrl():
            s.busy @= s.run
            s.more @= s.run & (s.idx < s.cnt)
            s.walk.step @= s.more & ~s.pair & ~s.reset
            s.retire @= s.run & (s.idx == s.cnt) & (s.tail == TAIL_END)
            s.drop_n @= s.drop
            if s.pair:
                s.issue @= s.more
                s.raddr0 @= trunc(s.idx, AT)
                s.raddr1 @= trunc(s.idx + s.cnt, AT)
            else:
                s.issue @= s.more & (~s.gap | s.walk.last)
                s.raddr0 @= s.walk.addr
                s.raddr1 @= trunc(s.r_dyn + s.idx, AT)

        @update_ff
        def up_res_state():
            if s.reset:
                s.run <<= 0
            elif s.start:
                s.run <<= 1
                s.add <<= s.is_add
                s.msk <<= s.is_mask
                s.pair <<= s.is_add | s.is_mask
                s.gap <<= s.is_gap
                s.cnt <<= s.n
                s.idx <<= Bits24(0)
                s.tail <<= TAIL(0)
                s.r_relu <<= s.relu
                s.r_stoch <<= s.stoch & ~s.is_add & ~s.is_mask
                s.r_m <<= s.m
                s.r_dyn <<= s.dyn
                if s.is_add | s.is_mask:
                    s.r_shift <<= Bits6(0)
                else:
                    s.r_shift <<= s.shift
                s.r_seed <<= s.seed
                s.r_tid <<= s.tid
                s.r_bits <<= s.sat_bits
                if s.is_add | s.is_mask:
                    s.drop <<= trunc(s.n + s.n, CT)
                elif s.is_gapb & s.relu:
                    s.drop <<= trunc(s.dyn + s.n, CT)
                elif s.is_gapb:
                    s.drop <<= trunc(s.dyn, CT)
                else:
                    s.drop <<= trunc(s.n, CT)
            elif s.retire:
                s.run <<= 0
            elif s.more:
                s.idx <<= s.idx + N1
            elif s.run & (s.tail != TAIL_END):
                s.tail <<= s.tail + TAIL(1)

        # ---- the datapath: value, product, requantizer, saturation -------------------------------
        s.x0, s.x1 = Wire(SW), Wire(SW)
        s.val = Wire(SW)
        s.prod = Wire(PW)
        s.q = Wire(bits)      # the requantizer's result
        s.f_out = Wire()      # its flag, aligned with it
        s.bm1 = Wire(7)
        s.qd_f, s.hi_f, s.lo_f = Wire(DW), Wire(DW), Wire(DW)
        s.hi, s.lo = Wire(bits), Wire(bits)
        s.sat = Wire(bits)
        s.rq = RequantPipeRTL(acc_bits=PW, out_bits=bits) if pipelined else RequantRTL(acc_bits=PW, out_bits=bits)
        s.rq.shift //= s.r_shift
        s.rq.stochastic //= s.r_stoch
        s.rq.seed //= s.r_seed
        s.rq.tensor_id //= s.r_tid
        s.rq.out //= s.q

        @update
        def up_res_flag():
            s.pos1 @= ~s.rdata1[SIGN] & (s.rdata1 != ZERO_T)  # (x > 0, signed: sign clear, not zero)
            if s.add:
                s.flag @= 1
            elif s.msk:
                s.flag @= s.pos1
            else:  # GAPB with relu: x > 0
                s.flag @= s.walk.in_tensor & (s.gap | ~s.r_relu | s.pos1)

        @update
        def up_res_sat():  # the runtime saturation of q to r_bits
            s.bm1 @= s.r_bits - B7_1
            s.hi @= trunc((ONE_D << zext(s.bm1, D)) - ONE_D, T)
            s.lo @= trunc(~((ONE_D << zext(s.bm1, D)) - ONE_D), T)
            s.hi_f @= ((ONE_D << zext(s.bm1, D)) - ONE_D) ^ SIGN_D
            s.lo_f @= ~((ONE_D << zext(s.bm1, D)) - ONE_D) ^ SIGN_D
            s.qd_f @= sext(s.q, D) ^ SIGN_D
            if s.qd_f > s.hi_f:
                s.sat @= s.hi
            elif s.qd_f < s.lo_f:
                s.sat @= s.lo
            else:
                s.sat @= s.q

        if pipelined:
            _pipeline(s, S, PT, T, ZERO_T)
        else:
            @update
            def up_res_comb():
                s.x0 @= sext(s.rdata0, S)
                s.x1 @= sext(s.rdata1, S)
                if s.add:
                    s.val @= s.x0 + s.x1
                elif s.gap & ~s.walk.first:
                    s.val @= s.acc + s.x0
                else:
                    s.val @= s.x0
                if s.pair:
                    s.prod @= sext(s.val, PT)
                else:
                    s.prod @= sext(s.val, PT) * zext(s.r_m, PT)
                s.rq.acc @= s.prod
                s.rq.index @= s.walk.flat
                s.rq.relu @= s.add & s.r_relu
                s.f_out @= s.flag
                s.push @= s.issue
                if s.f_out:
                    s.push_data @= s.sat
                else:
                    s.push_data @= ZERO_T

            @update_ff
            def up_res_acc():
                if s.more & s.gap:
                    s.acc <<= s.val

    def line_trace(s):
        k = "a" if s.add else "m" if s.msk else "p" if s.gap else "b"
        return f"R{k}{int(s.idx)}" if s.run else "R."


def _pipeline(s, S, PT, T, ZERO_T):
    """The pipelined datapath: the reads (stage 1), the value (2), the product (3), the requantizer's
    stages, the saturation (the last).  ``v*``: a result in that stage; ``rd1``: a read in stage 1."""
    s.d0, s.d1 = Wire(T.nbits), Wire(T.nbits)           # stage 1
    s.rd1, s.v1, s.f1, s.first1, s.idx1 = Wire(), Wire(), Wire(), Wire(), Wire(32)
    s.v2, s.f2, s.idx2 = Wire(), Wire(), Wire(32)       # stage 2 (val)
    s.v3, s.f3, s.idx3 = Wire(), Wire(), Wire(32)       # stage 3 (prod)
    s.val_in = Wire(S.nbits)
    s.push_r, s.data_r = Wire(), Wire(T.nbits)
    s.f_rq, s.v_rq = Wire(), Wire()                     # stage 3 + RQ, beside the requantizer

    @update
    def up_res_pipe_in():
        s.x0 @= sext(s.d0, S)
        s.x1 @= sext(s.d1, S)
        if s.add:
            s.val_in @= s.x0 + s.x1
        elif s.gap & ~s.first1:
            s.val_in @= s.acc + s.x0
        else:
            s.val_in @= s.x0
        s.rq.acc @= s.prod
        s.rq.index @= s.idx3
        s.rq.relu @= s.add & s.r_relu
        s.f_out @= s.f_rq
        s.push @= s.push_r
        s.push_data @= s.data_r

    @update_ff
    def up_res_pipe_valid():
        if s.reset:
            s.rd1 <<= 0
            s.v1 <<= 0
            s.v2 <<= 0
            s.v3 <<= 0
            s.push_r <<= 0
        else:
            s.rd1 <<= s.more
            s.v1 <<= s.issue
            s.v2 <<= s.v1
            s.v3 <<= s.v2
            s.push_r <<= s.v_rq

    @update_ff
    def up_res_pipe_data():
        s.d0 <<= s.rdata0
        s.d1 <<= s.rdata1
        s.f1 <<= s.flag
        s.first1 <<= s.walk.first
        s.idx1 <<= s.walk.flat
        if s.rd1 & s.gap:
            s.acc <<= s.val_in
        s.val <<= s.val_in
        s.f2 <<= s.f1
        s.idx2 <<= s.idx1
        if s.pair:
            s.prod <<= sext(s.val, PT)
        else:
            s.prod <<= sext(s.val, PT) * zext(s.r_m, PT)
        s.f3 <<= s.f2
        s.idx3 <<= s.idx2
        if s.f_out:
            s.data_r <<= s.sat
        else:
            s.data_r <<= ZERO_T

    s.f_rq //= delayed(s, "dl_res_f", s.f3, RQ)
    s.v_rq //= delayed(s, "dl_res_v", s.v3, RQ, valid=True)
