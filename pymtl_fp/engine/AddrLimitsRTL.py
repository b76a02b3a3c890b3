"""Loop limits (RTL, combinational) of :class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`: the last
value of each of the seven loop counters for the command's operation.

Per operation (levels 0-3 outer, 4-6 inner; the loop nests are listed in
:mod:`pymtl_fp.engine.AddrGenRTL`)::

    fwd         n-1  kt-1  ho-1  wo-1 | ct-1  r-1  s-1     (bp: nt-1 at level 0, c-1 at level 4)
    bwd_data    n-1  ct-1  h-1   w-1  | kt-1  0    0       (levels 5, 6 end by their taps)
    bwd_weight  kt-1 ct-1  r-1   s-1  | n-1   ho-1 wo-1
    pool_*      n-1  ct-1  ho-1  wo-1 | pk-1  pk-1 0
    update      kt-1 ct-1  r-1   s-1  | P-1   0    0

Levels 5 and 6 of ``fwd``, ``bwd_data`` and ``bwd_weight`` end where their valid taps do (the tap
units' ``at5``/``at6``), not at these limits.
"""

from pymtl3 import Bits16, Component, InPort, OutPort, update, zext

from pymtl_fp.engine import msgs
from pymtl_fp.engine.addr_layout import NL
from pymtl_fp.engine.msgs import cmd_type


class AddrLimitsRTL(Component):
    def construct(s, P=2):
        s.params = dict(P=P)
        Z16, ONE16, PM1 = Bits16(0), Bits16(1), Bits16(P - 1)
        OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT
        OP_POOL_FWD, OP_POOL_BWD, OP_UPDATE = msgs.OP_POOL_FWD, msgs.OP_POOL_BWD, msgs.OP_UPDATE

        s.cmd = InPort(cmd_type())
        s.lim = [OutPort(16) for _ in range(NL)]

        @update
        def up_limits():
            for lv in range(NL):
                s.lim[lv] @= Z16
            if s.cmd.op == OP_FWD:
                s.lim[0] @= s.cmd.n - ONE16
                s.lim[1] @= s.cmd.kt - ONE16
                s.lim[2] @= s.cmd.ho - ONE16
                s.lim[3] @= s.cmd.wo - ONE16
                s.lim[4] @= s.cmd.ct - ONE16
                s.lim[5] @= s.cmd.r - ONE16
                s.lim[6] @= s.cmd.s - ONE16
                if s.cmd.bp:  # image tiles outermost, every input channel innermost
                    s.lim[0] @= s.cmd.nt - ONE16
                    s.lim[4] @= s.cmd.c - ONE16
            elif s.cmd.op == OP_BWD_DATA:
                s.lim[0] @= s.cmd.n - ONE16
                s.lim[1] @= s.cmd.ct - ONE16
                s.lim[2] @= s.cmd.h - ONE16
                s.lim[3] @= s.cmd.w - ONE16
                s.lim[4] @= s.cmd.kt - ONE16
            elif s.cmd.op == OP_BWD_WEIGHT:
                s.lim[0] @= s.cmd.kt - ONE16
                s.lim[1] @= s.cmd.ct - ONE16
                s.lim[2] @= s.cmd.r - ONE16
                s.lim[3] @= s.cmd.s - ONE16
                s.lim[4] @= s.cmd.n - ONE16
                s.lim[5] @= s.cmd.ho - ONE16
                s.lim[6] @= s.cmd.wo - ONE16
            elif (s.cmd.op == OP_POOL_FWD) | (s.cmd.op == OP_POOL_BWD):
                s.lim[0] @= s.cmd.n - ONE16
                s.lim[1] @= s.cmd.ct - ONE16
                s.lim[2] @= s.cmd.ho - ONE16
                s.lim[3] @= s.cmd.wo - ONE16
                s.lim[4] @= zext(s.cmd.pk, Bits16) - ONE16
                s.lim[5] @= zext(s.cmd.pk, Bits16) - ONE16
            elif s.cmd.op == OP_UPDATE:
                s.lim[0] @= s.cmd.kt - ONE16
                s.lim[1] @= s.cmd.ct - ONE16
                s.lim[2] @= s.cmd.r - ONE16
                s.lim[3] @= s.cmd.s - ONE16
                s.lim[4] @= PM1

    def line_trace(s):
        return "lim[" + ",".join(str(int(v)) for v in s.lim) + "]"
