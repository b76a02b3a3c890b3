"""Window offsets of a pooling step (RTL), for :class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`.

``pool_fwd`` / ``pool_bwd`` walk ``n, ct, oh, ow | di, dj`` and touch input ``(oh*k + di,
ow*k + dj)`` (``k`` = command field ``pk``): ``hh``/``ww``.  ``oh*k`` and ``ow*k`` are registers
(``ohk``, ``owk``) that add ``k`` when levels 2 and 3 count up and clear when they restart (the
counter nest's ``carry``/``at``/``all_at``), so no multiplier.  ``tap = di*k + dj`` numbers the
step's tap in its window (the argmax pool_fwd writes, pool_bwd compares).
"""

from pymtl3 import Bits16, Bits32, Component, InPort, OutPort, Wire, update, update_ff, zext

from pymtl_fp.engine.msgs import cmd_type


class AddrPoolOffsetsRTL(Component):
    def construct(s):
        s.params = {}
        Z16 = Bits16(0)

        s.cmd = InPort(cmd_type())
        s.start, s.advance, s.running, s.all_at = InPort(), InPort(), InPort(), InPort()
        s.carry2, s.at2, s.carry3, s.at3 = InPort(), InPort(), InPort(), InPort()
        s.u4, s.u5 = InPort(32), InPort(32)  # di, dj
        s.hh, s.ww = OutPort(32), OutPort(32)
        s.tap = OutPort(8)
        s.ohk, s.owk = Wire(16), Wire(16)

        @update
        def up_pool_coords():
            s.hh @= zext(s.ohk, Bits32) + s.u4  # oh*pk + di
            s.ww @= zext(s.owk, Bits32) + s.u5
            s.tap @= s.u4[0:8] * s.cmd.pk + s.u5[0:8]

        @update_ff
        def up_pool_offsets():
            if s.reset | s.start:
                s.ohk <<= Z16
                s.owk <<= Z16
            elif s.advance & s.running:
                if s.all_at:
                    s.ohk <<= Z16
                    s.owk <<= Z16
                else:
                    if s.carry2:
                        if s.at2:
                            s.ohk <<= Z16
                        else:
                            s.ohk <<= s.ohk + zext(s.cmd.pk, Bits16)
                    if s.carry3:
                        if s.at3:
                            s.owk <<= Z16
                        else:
                            s.owk <<= s.owk + zext(s.cmd.pk, Bits16)

    def line_trace(s):
        return f"pool[{int(s.ohk)},{int(s.owk)} t{int(s.tap)}]"
