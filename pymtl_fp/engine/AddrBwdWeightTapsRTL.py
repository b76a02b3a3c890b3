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
