"""Valid outputs of a ``bwd_weight`` tap (RTL, combinational), for
:class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`.

``dw[r, s]`` (counters ``u2``, ``u3``) sums ``dy[oh, ow] * x[oh*st + r - pt, ow*st + s - pad]``
over the outputs whose input lies inside the map: ``oh`` runs from
``ohlo = ceil(max(0, pt - r) / st)`` as ``ohs = ohlo + u5`` and level 5 is at its end (``at5``)
where the next output's input row leaves the map (``(ohs+1)*st + r >= H + pt``) or the map of
outputs (``ohs + 1 >= Ho``); columns likewise (``ows``, ``at6``).  ``hh``/``ww`` are the input
coordinates ``ohs*st + r - pt`` and ``ows*st + s - pad``; ``out_inside``: the output exists
(``ohs < Ho``, ``ows < Wo``).  For the bias gradient, ``first_tap``: ``(r, s)`` is the first valid
tap of output ``(ohs, ows)`` (``r = max(0, pt - ohs*st)``, likewise ``s``), where its ``dy`` is
counted once.  Strides are powers of two (``lgst``): shifts.

:class:`AddrBwdWeightTapsRegRTL` gives the same outputs from the bounds the address generator keeps
in registers for the step's tap (:class:`~pymtl_fp.engine.AddrTapRegsRTL.AddrTapRegsRTL`: ``rv =
(ohlo, ohlo*st, ohlo*st + r - pt)``, ``rlast``: the last ``u5``; the columns' ``cv``, ``clast``):
``t_oh = rv[1] + u5*st``, ``hh = rv[2] + u5*st``, and ``r == rfirst`` is ``hh == 0`` where ``pt >
t_oh``, else ``r == 0``.
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, update, zext

from pymtl_fp.engine.msgs import cmd_type


class AddrBwdWeightTapsRTL(Component):
    def construct(s):
        s.params = {}
        B32 = Bits32
        ONE, ZERO = B32(1), B32(0)

        s.cmd = InPort(cmd_type())
        s.u2, s.u3, s.u5, s.u6 = (InPort(32) for _ in range(4))  # r, s and the output counters
        s.ohs, s.ows = OutPort(32), OutPort(32)  # the output (oh, ow)
        s.hh, s.ww = OutPort(32), OutPort(32)  # the input coordinates it reads
        s.at5, s.at6 = OutPort(), OutPort()  # the last valid output row / column
        s.out_inside = OutPort()
        s.first_tap = OutPort()

        s.H, s.W, s.HO, s.WO, s.PAD, s.PT, s.LG, s.ST = (Wire(32) for _ in range(8))
        s.ohlo, s.owlo, s.t_oh, s.t_ow, s.rfirst, s.sfirst = (Wire(32) for _ in range(6))

        @update
        def up_bwd_weight_views():
            s.H @= zext(s.cmd.h, B32)
            s.W @= zext(s.cmd.w, B32)
            s.HO @= zext(s.cmd.ho, B32)
            s.WO @= zext(s.cmd.wo, B32)
            s.PAD @= zext(s.cmd.pad, B32)
            s.PT @= zext(s.cmd.pt, B32)
            s.LG @= zext(s.cmd.lgst, B32)
            s.ST @= ONE << s.LG

        @update
        def up_bwd_weight_taps():
            if s.PT > s.u2:
                s.ohlo @= (s.PT - s.u2 + s.ST - ONE) >> s.LG
            else:
                s.ohlo @= ZERO
            if s.PAD > s.u3:
                s.owlo @= (s.PAD - s.u3 + s.ST - ONE) >> s.LG
            else:
                s.owlo @= ZERO
            s.ohs @= s.ohlo + s.u5
            s.ows @= s.owlo + s.u6
            s.t_oh @= s.ohs << s.LG
            s.t_ow @= s.ows << s.LG
            if s.PT > s.t_oh:
                s.rfirst @= s.PT - s.t_oh
            else:
                s.rfirst @= ZERO
            if s.PAD > s.t_ow:
                s.sfirst @= s.PAD - s.t_ow
            else:
                s.sfirst @= ZERO
            s.at5 @= ((((s.ohs + ONE) << s.LG) + s.u2) >= (s.H + s.PT)) | ((s.ohs + ONE) >= s.HO)
            s.at6 @= ((((s.ows + ONE) << s.LG) + s.u3) >= (s.W + s.PAD)) | ((s.ows + ONE) >= s.WO)
            s.hh @= s.t_oh + s.u2 - s.PT
            s.ww @= s.t_ow + s.u3 - s.PAD
            s.out_inside @= (s.ohs < s.HO) & (s.ows < s.WO)
            s.first_tap @= (s.u2 == s.rfirst) & (s.u3 == s.sfirst)

    def line_trace(s):
        return f"bwd_weight[@{int(s.ohs)},{int(s.ows)}{' f' if s.first_tap else ''}]"


class AddrBwdWeightTapsRegRTL(Component):
    """``bwd_weight``'s outputs from the registered bounds (see the module docstring)."""

    def construct(s):
        s.params = {}
        B32 = Bits32
        ZERO = B32(0)

        s.cmd = InPort(cmd_type())
        s.rv, s.cv = [InPort(32) for _ in range(3)], [InPort(32) for _ in range(3)]
        s.rlast, s.clast = InPort(16), InPort(16)
        s.u2, s.u3, s.u5, s.u6 = (InPort(32) for _ in range(4))
        s.ohs, s.ows = OutPort(32), OutPort(32)
        s.hh, s.ww = OutPort(32), OutPort(32)
        s.at5, s.at6 = OutPort(), OutPort()
        s.out_inside = OutPort()
        s.first_tap = OutPort()
        s.HO, s.WO, s.PAD, s.PT, s.LG = (Wire(32) for _ in range(5))
        s.t_oh, s.t_ow, s.u5s, s.u6s = (Wire(32) for _ in range(4))
        s.rfirst, s.sfirst = Wire(), Wire()

        @update
        def up_bwd_weight_taps_reg():
            s.HO @= zext(s.cmd.ho, B32)
            s.WO @= zext(s.cmd.wo, B32)
            s.PAD @= zext(s.cmd.pad, B32)
            s.PT @= zext(s.cmd.pt, B32)
            s.LG @= zext(s.cmd.lgst, B32)
            s.u5s @= s.u5 << s.LG
            s.u6s @= s.u6 << s.LG
            s.ohs @= s.rv[0] + s.u5
            s.ows @= s.cv[0] + s.u6
            s.t_oh @= s.rv[1] + s.u5s
            s.t_ow @= s.cv[1] + s.u6s
            s.hh @= s.rv[2] + s.u5s
            s.ww @= s.cv[2] + s.u6s
            s.at5 @= s.u5[0:16] == s.rlast
            s.at6 @= s.u6[0:16] == s.clast
            s.out_inside @= (s.ohs < s.HO) & (s.ows < s.WO)
            if s.PT > s.t_oh:
                s.rfirst @= s.hh == ZERO
            else:
                s.rfirst @= s.u2 == ZERO
            if s.PAD > s.t_ow:
                s.sfirst @= s.ww == ZERO
            else:
                s.sfirst @= s.u3 == ZERO
            s.first_tap @= s.rfirst & s.sfirst

    line_trace = AddrBwdWeightTapsRTL.line_trace  # the same trace as the combinational unit's
