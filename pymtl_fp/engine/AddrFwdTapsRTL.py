"""Valid taps of a ``fwd`` output (RTL, combinational), for
:class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`.

Output ``(oh, ow)`` (counters ``u2``, ``u3``) reads input rows ``oh*st + r - pt`` for taps
``r < R``; only the taps inside the input window are walked: ``r`` runs from
``rlo = max(0, pt - oh*st)`` to ``rhi = min(R, H + pt - oh*st)`` (exclusive), as ``r_f = rlo + u5``,
and level 5 is at its end (``at5``) where ``r_f + 1 >= rhi``; columns (``s_f``, ``at6``) likewise
with ``pad``, ``W`` and ``S``.  ``hh``/``ww`` are the input coordinates of the step,
``oh*st + r_f - pt`` and ``ow*st + s_f - pad``.  Strides are powers of two (``lgst``): shifts.

:class:`AddrFwdTapsRegRTL` gives the same outputs from the bounds the address generator keeps in
registers for the step's output (:class:`~pymtl_fp.engine.AddrTapRegsRTL.AddrTapRegsRTL`: ``rv =
(rlo, oh*st + rlo - pt)``, ``rlast = rhi - rlo - 1``, and the columns' ``cv``, ``clast``): one
add per output and a compare per end flag.
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, update, zext

from pymtl_fp.engine.msgs import cmd_type


class AddrFwdTapsRTL(Component):
    def construct(s):
        s.params = {}
        B32 = Bits32
        ONE, ZERO = B32(1), B32(0)

        s.cmd = InPort(cmd_type())
        s.u2, s.u3, s.u5, s.u6 = (InPort(32) for _ in range(4))  # oh, ow and the tap counters
        s.r_f, s.s_f = OutPort(32), OutPort(32)  # the tap (r, s)
        s.hh, s.ww = OutPort(32), OutPort(32)  # the input coordinates it reads
        s.at5, s.at6 = OutPort(), OutPort()  # the last valid tap row / column

        s.H, s.W, s.R, s.S, s.PAD, s.PT, s.LG = (Wire(32) for _ in range(7))
        s.t_h, s.t_w, s.rlo, s.slo, s.rhi, s.shi = (Wire(32) for _ in range(6))

        @update
        def up_fwd_views():
            s.H @= zext(s.cmd.h, B32)
            s.W @= zext(s.cmd.w, B32)
            s.R @= zext(s.cmd.r, B32)
            s.S @= zext(s.cmd.s, B32)
            s.PAD @= zext(s.cmd.pad, B32)
            s.PT @= zext(s.cmd.pt, B32)
            s.LG @= zext(s.cmd.lgst, B32)

        @update
        def up_fwd_taps():
            s.t_h @= s.u2 << s.LG
            s.t_w @= s.u3 << s.LG
            if s.PT > s.t_h:
                s.rlo @= s.PT - s.t_h
            else:
                s.rlo @= ZERO
            if s.PAD > s.t_w:
                s.slo @= s.PAD - s.t_w
            else:
                s.slo @= ZERO
            if (s.H + s.PT - s.t_h) < s.R:
                s.rhi @= s.H + s.PT - s.t_h
            else:
                s.rhi @= s.R
            if (s.W + s.PAD - s.t_w) < s.S:
                s.shi @= s.W + s.PAD - s.t_w
            else:
                s.shi @= s.S
            s.r_f @= s.rlo + s.u5
            s.s_f @= s.slo + s.u6
            s.at5 @= (s.r_f + ONE) >= s.rhi
            s.at6 @= (s.s_f + ONE) >= s.shi
            s.hh @= s.t_h + s.r_f - s.PT
            s.ww @= s.t_w + s.s_f - s.PAD

    def line_trace(s):
        return f"fwd[r{int(s.r_f)} s{int(s.s_f)} @{int(s.hh)},{int(s.ww)}]"


class AddrFwdTapsRegRTL(Component):
    """``fwd``'s taps from the registered bounds (see the module docstring); ``u5``/``u6`` the tap
    counters."""

    def construct(s):
        s.params = {}
        s.rv, s.cv = [InPort(32) for _ in range(3)], [InPort(32) for _ in range(3)]
        s.rlast, s.clast = InPort(16), InPort(16)
        s.u5, s.u6 = InPort(32), InPort(32)
        s.r_f, s.s_f = OutPort(32), OutPort(32)
        s.hh, s.ww = OutPort(32), OutPort(32)
        s.at5, s.at6 = OutPort(), OutPort()

        @update
        def up_fwd_taps_reg():
            s.r_f @= s.rv[0] + s.u5
            s.s_f @= s.cv[0] + s.u6
            s.hh @= s.rv[1] + s.u5
            s.ww @= s.cv[1] + s.u6
            s.at5 @= s.u5[0:16] == s.rlast
            s.at6 @= s.u6[0:16] == s.clast

    line_trace = AddrFwdTapsRTL.line_trace  # the same trace as the combinational unit's
