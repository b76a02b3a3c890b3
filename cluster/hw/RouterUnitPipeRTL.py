"""The BIAS / REQUANT result of the router's pipelined scalar units (RTL): the function of
:class:`~pymtl_fp.primitives.RequantRTL.RequantRTL` followed by
:class:`~pymtl_fp.cluster.hw.RouterUnitSatRTL.RouterUnitSatRTL`, bit for bit, as a pipeline that takes an
element every cycle and gives its result :data:`LATENCY` cycles later, for a 200 MHz clock.

An element enters with ``issue`` high (its sum ``acc`` = ``db``, its ``b`` for BIAS, its flat ``index``
for the stochastic hash, ``inflag``: a real element, not padding); ``push`` is ``issue`` delayed by
:data:`LATENCY` cycles and ``val`` its result::

    stages 1-13   the engine's pipelined requantizer (RequantPipeRTL) of acc at index
                  (beside it, in shift-register delay lines: db, b, inflag)
    stage 14      the step q: db << lshift when lshift > 0 (a learning rate above one), else the
                  requantized value; sign-extended to DW = max(bits, 63) + 2 bits
    stage 15      BIAS: b - q; REQUANT (req): q
    stage 16      saturated to sat_bits bits (its limits registered from sat_bits), 0 for padding

``req``, ``shift``, ``stoch``, ``seed``, ``tid``, ``lshift`` and ``sat_bits`` are the instruction's
registers, constant while the unit runs.  Elaboration parameter: ``bits`` (element width).
"""

from pymtl3 import Bits1, Bits6, Component, InPort, OutPort, Wire, mk_bits, sext, trunc, update, update_ff, zext

from pymtl_fp.cost.latency import PIPELINE_LATENCY
from pymtl_fp.primitives.DelayLineRTL import delayed
from pymtl_fp.primitives.RequantPipeRTL import RequantPipeRTL

RQ = PIPELINE_LATENCY["requant"]
#: cycles from ``issue`` to ``push``: the requantizer's, then the step, the subtraction and the saturation
LATENCY = RQ + 3


class RouterUnitPipeRTL(Component):
    def construct(s, bits=32):
        T = mk_bits(bits)
        DW = max(bits, 63) + 2
        D = mk_bits(DW)
        ZERO_T = T(0)
        ONE_D = D(1)
        SIGN_D = D(1 << (DW - 1))
        B7_1 = mk_bits(7)(1)
        s.params = dict(bits=bits)

        s.issue = InPort()
        s.acc = InPort(bits)
        s.b = InPort(bits)
        s.index = InPort(32)
        s.inflag = InPort()
        s.req = InPort()
        s.shift = InPort(6)
        s.stoch = InPort()
        s.seed = InPort(32)
        s.tid = InPort(8)
        s.lshift = InPort(6)
        s.sat_bits = InPort(7)
        s.push = OutPort()
        s.val = OutPort(bits)

        s.rq = RequantPipeRTL(acc_bits=bits, out_bits=bits)
        s.rq.acc //= s.acc
        s.rq.shift //= s.shift
        s.rq.stochastic //= s.stoch
        s.rq.relu //= Bits1(0)
        s.rq.seed //= s.seed
        s.rq.tensor_id //= s.tid
        s.rq.index //= s.index
        # beside the requantizer (plain wires: PyMTL3 mistranslates sext of a list element)
        s.db_d, s.b_d, s.in_d = Wire(bits), Wire(bits), Wire()
        s.db_d //= delayed(s, "dl_db", s.acc, RQ)
        s.b_d //= delayed(s, "dl_b", s.b, RQ + 1)
        s.in_d //= delayed(s, "dl_in", s.inflag, RQ + 2)
        s.push //= delayed(s, "dl_val", s.issue, LATENCY, valid=True)

        s.q = Wire(DW)         # stage 14
        s.diff = Wire(DW)      # stage 15
        s.hi = Wire(bits)      # the saturation's limits (registered from sat_bits)
        s.lo = Wire(bits)
        s.hi_f = Wire(DW)
        s.lo_f = Wire(DW)
        s.diff_f = Wire(DW)
        s.bm1 = Wire(7)

        @update
        def up_unit_pipe_flip():
            s.bm1 @= s.sat_bits - B7_1
            s.diff_f @= s.diff ^ SIGN_D

        @update_ff
        def up_unit_pipe_limits():
            s.hi <<= trunc((ONE_D << zext(s.bm1, D)) - ONE_D, T)
            s.lo <<= trunc(~((ONE_D << zext(s.bm1, D)) - ONE_D), T)
            s.hi_f <<= ((ONE_D << zext(s.bm1, D)) - ONE_D) ^ SIGN_D
            s.lo_f <<= ~((ONE_D << zext(s.bm1, D)) - ONE_D) ^ SIGN_D

        @update_ff
        def up_unit_pipe_stages():
            if s.lshift != Bits6(0):
                s.q <<= sext(s.db_d, D) << zext(s.lshift, D)
            else:
                s.q <<= sext(s.rq.out, D)
            if s.req:
                s.diff <<= s.q
            else:
                s.diff <<= sext(s.b_d, D) - s.q
            if ~s.in_d:
                s.val <<= ZERO_T
            elif s.diff_f > s.hi_f:
                s.val <<= s.hi
            elif s.diff_f < s.lo_f:
                s.val <<= s.lo
            else:
                s.val <<= trunc(s.diff, T)

    def line_trace(s):
        return f"{'p' if s.push else '.'}{int(s.val):x}"
