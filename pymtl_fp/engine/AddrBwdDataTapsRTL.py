"""Taps of a ``bwd_data`` input position (RTL, combinational), for
:class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`.

``dx[h]`` gathers ``dy[oh] * w[r]`` over ``oh*st + r = h + pt``: with ``th = h + pt`` (counter
``u2``), ``r = th % st + mr*st`` and ``oh = th // st - mr`` for ``mr = mrlo + u5``, where ``mr``
starts where ``oh < Ho`` (``mrlo``) and stops where ``r + st >= R`` or ``mr >= th // st`` (``at5``);
columns likewise (``u3``, ``u6``, ``pad``, ``S``, ``Wo``).  So no step is spent on a tap that hits
no output, for any stride.  ``tap_ok``: the step's tap and output exist (``r < R``, ``s < S``,
``oh < Ho``, ``ow < Wo``); a position with no valid tap at all still takes one step, outside.
Strides are powers of two (``lgst``): no divider.

:class:`AddrBwdDataTapsRegRTL` gives the same outputs from the bounds the address generator keeps
in registers for the step's input position (:class:`~pymtl_fp.engine.AddrTapRegsRTL.AddrTapRegsRTL`:
``rv = (mrlo, th%st + mrlo*st, th//st - mrlo)``, ``rlast``: the last ``u5``; the columns' ``cv``,
``clast``): ``r = rv[1] + u5*st``, ``oh = rv[2] - u5``.
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, update, zext

from pymtl_fp.engine.msgs import cmd_type


class AddrBwdDataTapsRTL(Component):
    def construct(s):
        s.params = {}
        B32 = Bits32
        ONE, ZERO = B32(1), B32(0)

        s.cmd = InPort(cmd_type())
        s.u2, s.u3, s.u5, s.u6 = (InPort(32) for _ in range(4))  # h, w and the tap counters
        s.r_d, s.s_d = OutPort(32), OutPort(32)  # the tap (r, s)
        s.oh_d, s.ow_d = OutPort(32), OutPort(32)  # the output it pairs with
        s.at5, s.at6 = OutPort(), OutPort()  # the last tap row / column
        s.tap_ok = OutPort()

        s.HO, s.WO, s.R, s.S, s.PAD, s.PT, s.LG, s.ST = (Wire(32) for _ in range(8))
        s.th, s.tw, s.qh, s.qw, s.mrlo, s.mslo, s.mr, s.ms = (Wire(32) for _ in range(8))

        @update
        def up_bwd_data_views():
            s.HO @= zext(s.cmd.ho, B32)
            s.WO @= zext(s.cmd.wo, B32)
            s.R @= zext(s.cmd.r, B32)
            s.S @= zext(s.cmd.s, B32)
            s.PAD @= zext(s.cmd.pad, B32)
            s.PT @= zext(s.cmd.pt, B32)
            s.LG @= zext(s.cmd.lgst, B32)
            s.ST @= ONE << s.LG

        @update
        def up_bwd_data_taps():
            s.th @= s.u2 + s.PT
            s.tw @= s.u3 + s.PAD
            s.qh @= s.th >> s.LG
            s.qw @= s.tw >> s.LG
            if s.qh >= s.HO:
                s.mrlo @= s.qh + ONE - s.HO
            else:
                s.mrlo @= ZERO
            if s.qw >= s.WO:
                s.mslo @= s.qw + ONE - s.WO
            else:
                s.mslo @= ZERO
            s.mr @= s.mrlo + s.u5
            s.ms @= s.mslo + s.u6
            s.r_d @= (s.th & (s.ST - ONE)) + (s.mr << s.LG)
            s.s_d @= (s.tw & (s.ST - ONE)) + (s.ms << s.LG)
            s.oh_d @= s.qh - s.mr
            s.ow_d @= s.qw - s.ms
            s.at5 @= ((s.r_d + s.ST) >= s.R) | (s.mr >= s.qh)
            s.at6 @= ((s.s_d + s.ST) >= s.S) | (s.ms >= s.qw)
            s.tap_ok @= (s.r_d < s.R) & (s.s_d < s.S) & (s.oh_d < s.HO) & (s.ow_d < s.WO)

    def line_trace(s):
        return f"bwd_data[r{int(s.r_d)} s{int(s.s_d)} @{int(s.oh_d)},{int(s.ow_d)}{'' if s.tap_ok else ' z'}]"


class AddrBwdDataTapsRegRTL(Component):
    """``bwd_data``'s taps from the registered bounds (see the module docstring)."""

    def construct(s):
        s.params = {}
        B32 = Bits32

        s.cmd = InPort(cmd_type())
        s.rv, s.cv = [InPort(32) for _ in range(3)], [InPort(32) for _ in range(3)]
        s.rlast, s.clast = InPort(16), InPort(16)
        s.u5, s.u6 = InPort(32), InPort(32)
        s.r_d, s.s_d = OutPort(32), OutPort(32)
        s.oh_d, s.ow_d = OutPort(32), OutPort(32)
        s.at5, s.at6 = OutPort(), OutPort()
        s.tap_ok = OutPort()
        s.HO, s.WO, s.R, s.S, s.LG = (Wire(32) for _ in range(5))

        @update
        def up_bwd_data_taps_reg():
            s.HO @= zext(s.cmd.ho, B32)
            s.WO @= zext(s.cmd.wo, B32)
            s.R @= zext(s.cmd.r, B32)
            s.S @= zext(s.cmd.s, B32)
            s.LG @= zext(s.cmd.lgst, B32)
            s.r_d @= s.rv[1] + (s.u5 << s.LG)
            s.s_d @= s.cv[1] + (s.u6 << s.LG)
            s.oh_d @= s.rv[2] - s.u5
            s.ow_d @= s.cv[2] - s.u6
            s.at5 @= s.u5[0:16] == s.rlast
            s.at6 @= s.u6[0:16] == s.clast
            s.tap_ok @= (s.r_d < s.R) & (s.s_d < s.S) & (s.oh_d < s.HO) & (s.ow_d < s.WO)

    line_trace = AddrBwdDataTapsRTL.line_trace  # the same trace as the combinational unit's
