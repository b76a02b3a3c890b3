"""Tap bounds in registers (RTL), for the registered tap units of
:class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRegRTL` (``EngineConfig.registered_taps``, ``--pipeline taps``).

The combinational tap units compute, in every step, their outer position's first tap and the
inner count at which the walk ends from the loop counters, through carry chains in series (the
shift by the stride, clamped ranges, a ceiling division); that is the engine's longest routed
path.  Here those values (:class:`~pymtl_fp.engine.AddrTapBoundsRTL.AddrTapBoundsRTL`: ``v0..v2``
and ``last``) are registers that follow the outer counters as the address units' terms do: rows
(``rv``, ``rlast``) follow level 2 and columns (``cv``, ``clast``) level 3, loaded with the bounds
of position 0 where the level restarts and of ``u + 1`` where it counts up, so the bounds of the
step's positions are in the registers from the step's first cycle on.  One
:class:`~pymtl_fp.engine.AddrTapBoundsRTL.AddrTapBoundsRTL` per dimension computes them: while the
generator is idle (``running`` low) for position 0 of ``cmd_in``, the command EX's command
register takes when the generator starts, loaded into the registers and into ``rv0``/``cv0``,
which keep them for the restarts; while it runs for ``u + 1`` of the held command (``cmd``),
loaded where the level counts up.  So nothing decided in the cycle reaches the bounds' arithmetic:
``running`` is a register, and ``start`` (which the acceptance logic decides late in the cycle) is
not used.  (Position 0's bounds are kept in registers for the restarts rather than computed by a
second bounds unit a dimension: about 470 LUTs a dimension fewer, Yosys on this unit alone.)
"""

from pymtl3 import Bits4, Bits32, Component, InPort, OutPort, Wire, connect, mk_bits, update, update_ff, zext

from pymtl_fp.engine.AddrTapBoundsRTL import BW, AddrTapBoundsRTL
from pymtl_fp.engine.msgs import cmd_type

#: the command fields of a dimension's bounds (AddrTapBoundsRTL's size, osize, k, pad, lg)
ROW_FIELDS = ("h", "ho", "r", "pt", "lgst")
COL_FIELDS = ("w", "wo", "s", "pad", "lgst")


class AddrTapRegsRTL(Component):
    def construct(s):
        s.params = {}
        B = mk_bits(BW)
        ONE_B, ZERO = B(1), Bits32(0)

        s.cmd = InPort(cmd_type())  # the command being executed
        s.cmd_in = InPort(cmd_type())  # the command the generator's next start starts
        s.advance, s.running, s.all_at = InPort(), InPort(), InPort()
        s.carry2, s.at2, s.carry3, s.at3 = InPort(), InPort(), InPort(), InPort()
        s.u2, s.u3 = InPort(16), InPort(16)  # the level 2 and 3 counters
        s.rv, s.cv = [OutPort(32) for _ in range(3)], [OutPort(32) for _ in range(3)]
        s.rlast, s.clast = OutPort(16), OutPort(16)

        # the fields the bounds take (BW bits, lgst 3): of the command to start while the generator is
        # idle, of the held command while it runs; and the outer positions they are for
        s.view = {f: Wire(3 if f == "lgst" else BW) for f in sorted(set(ROW_FIELDS + COL_FIELDS))}
        for f, wire in s.view.items():
            setattr(s, f"view_{f}", wire)
        s.view_op = Wire(Bits4)
        s.u2n, s.u3n = Wire(BW), Wire(BW)
        # position 0's bounds of the command being executed (loaded with rv, cv while idle)
        s.rv0, s.cv0 = [Wire(32) for _ in range(3)], [Wire(32) for _ in range(3)]
        s.rlast0, s.clast0 = Wire(16), Wire(16)

        @update
        def up_views():
            if s.running:
                s.view_op @= s.cmd.op
                s.view_h @= zext(s.cmd.h, B)
                s.view_ho @= zext(s.cmd.ho, B)
                s.view_r @= zext(s.cmd.r, B)
                s.view_pt @= zext(s.cmd.pt, B)
                s.view_w @= zext(s.cmd.w, B)
                s.view_wo @= zext(s.cmd.wo, B)
                s.view_s @= zext(s.cmd.s, B)
                s.view_pad @= zext(s.cmd.pad, B)
                s.view_lgst @= s.cmd.lgst
                s.u2n @= zext(s.u2, B) + ONE_B
                s.u3n @= zext(s.u3, B) + ONE_B
            else:
                s.view_op @= s.cmd_in.op
                s.view_h @= zext(s.cmd_in.h, B)
                s.view_ho @= zext(s.cmd_in.ho, B)
                s.view_r @= zext(s.cmd_in.r, B)
                s.view_pt @= zext(s.cmd_in.pt, B)
                s.view_w @= zext(s.cmd_in.w, B)
                s.view_wo @= zext(s.cmd_in.wo, B)
                s.view_s @= zext(s.cmd_in.s, B)
                s.view_pad @= zext(s.cmd_in.pad, B)
                s.view_lgst @= s.cmd_in.lgst
                s.u2n @= 0
                s.u3n @= 0

        # bounds[dim]: dim 0 rows, 1 columns
        s.bounds = [AddrTapBoundsRTL() for _ in range(2)]
        for b, names, u_next in ((s.bounds[0], ROW_FIELDS, s.u2n), (s.bounds[1], COL_FIELDS, s.u3n)):
            b.op //= s.view_op
            for port, f in zip(("size", "osize", "k", "pad", "lg"), names):
                connect(getattr(b, port), s.view[f])
            b.u //= u_next

        @update_ff
        def up_tap_regs():
            if s.reset:
                for j in range(3):
                    s.rv[j] <<= ZERO
                    s.cv[j] <<= ZERO
                    s.rv0[j] <<= ZERO
                    s.cv0[j] <<= ZERO
                s.rlast <<= 0
                s.clast <<= 0
                s.rlast0 <<= 0
                s.clast0 <<= 0
            elif ~s.running:  # idle: position 0 of the command to start
                for j in range(3):
                    s.rv[j] <<= s.bounds[0].v[j]
                    s.cv[j] <<= s.bounds[1].v[j]
                    s.rv0[j] <<= s.bounds[0].v[j]
                    s.cv0[j] <<= s.bounds[1].v[j]
                s.rlast <<= s.bounds[0].last
                s.clast <<= s.bounds[1].last
                s.rlast0 <<= s.bounds[0].last
                s.clast0 <<= s.bounds[1].last
            elif s.advance:
                if s.all_at | (s.carry2 & s.at2):
                    for j in range(3):
                        s.rv[j] <<= s.rv0[j]
                    s.rlast <<= s.rlast0
                elif s.carry2:
                    for j in range(3):
                        s.rv[j] <<= s.bounds[0].v[j]
                    s.rlast <<= s.bounds[0].last
                if s.all_at | (s.carry3 & s.at3):
                    for j in range(3):
                        s.cv[j] <<= s.cv0[j]
                    s.clast <<= s.clast0
                elif s.carry3:
                    for j in range(3):
                        s.cv[j] <<= s.bounds[1].v[j]
                    s.clast <<= s.bounds[1].last

    def line_trace(s):
        return (f"taps[{int(s.rv[0])},{int(s.rv[1])},{int(s.rv[2])}/{int(s.rlast)} "
                f"{int(s.cv[0])},{int(s.cv[1])},{int(s.cv[2])}/{int(s.clast)}]")
