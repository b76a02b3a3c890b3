"""Tap bounds in registers (RTL), for the registered tap units of
:class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRegRTL` (``EngineConfig.registered_taps``, ``--pipeline taps``).

The combinational tap units compute, in every step, their outer position's first tap and the
inner count at which the walk ends from the loop counters, through carry chains in series (the
shift by the stride, clamped ranges, a ceiling division); that is the engine's longest routed
path.  Here those values (:class:`~pymtl_fp.engine.AddrTapBoundsRTL.AddrTapBoundsRTL`: ``v0..v2``
and ``last``) are registers that follow the outer counters as the address units' terms do: rows
(``rv``, ``rlast``) follow level 2 and columns (``cv``, ``clast``) level 3, loaded with the bounds
of position 0 where the level restarts and of ``u + 1`` where it counts up, so the bounds of the
step's positions are in the registers from the step's first cycle on.  Two
:class:`~pymtl_fp.engine.AddrTapBoundsRTL.AddrTapBoundsRTL` per dimension compute them: ``pos0``
for position 0 of ``cmd_in``, the command EX's command register takes when the generator starts,
loaded while the generator is idle (``running`` low) into the registers and into ``rv0``/``cv0``,
which keep them for the restarts; ``bounds`` for position ``u + 1`` of the held command (``cmd``),
loaded where the level counts up.  So nothing decided in the cycle reaches the bounds' arithmetic:
``running`` is a register, ``start`` (which the acceptance logic decides late in the cycle) is not
used, ``bounds`` takes the command register's fields and ``u + 1`` from registers of the counter
nest (:class:`~pymtl_fp.engine.AddrCounterNestRTL.AddrCounterNestPlusOneRTL`) rather than
through a select between the two commands and the counter's increment, and ``pos0``'s position is
the constant 0.
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, connect, mk_bits, update, update_ff, zext

from pymtl_fp.engine.AddrTapBoundsRTL import BW, AddrTapBoundsRTL
from pymtl_fp.engine.msgs import cmd_type

#: the command fields of a dimension's bounds (AddrTapBoundsRTL's size, osize, k, pad, lg)
ROW_FIELDS = ("h", "ho", "r", "pt", "lgst")
COL_FIELDS = ("w", "wo", "s", "pad", "lgst")


class AddrTapRegsRTL(Component):
    def construct(s):
        s.params = {}
        B = mk_bits(BW)
        ZERO = Bits32(0)

        s.cmd = InPort(cmd_type())  # the command being executed
        s.cmd_in = InPort(cmd_type())  # the command the generator's next start starts
        s.advance, s.running, s.all_at = InPort(), InPort(), InPort()
        s.carry2, s.at2, s.carry3, s.at3 = InPort(), InPort(), InPort(), InPort()
        s.u2n, s.u3n = InPort(17), InPort(17)  # the level 2 and 3 counters plus one (registers of the nest)
        s.rv, s.cv = [OutPort(32) for _ in range(3)], [OutPort(32) for _ in range(3)]
        s.rlast, s.clast = OutPort(16), OutPort(16)

        # the fields the bounds take (BW bits, lgst 3): of the held command (``run``: for its next
        # outer positions) and of the command to start (``idle``: for its position 0)
        fields = sorted(set(ROW_FIELDS + COL_FIELDS))
        s.view = {(w, f): Wire(3 if f == "lgst" else BW) for w in ("run", "idle") for f in fields}
        for (w, f), wire in s.view.items():
            setattr(s, f"{w}_{f}", wire)
        s.un2, s.un3 = Wire(BW), Wire(BW)
        # position 0's bounds of the command being executed (loaded with rv, cv while idle)
        s.rv0, s.cv0 = [Wire(32) for _ in range(3)], [Wire(32) for _ in range(3)]
        s.rlast0, s.clast0 = Wire(16), Wire(16)

        @update
        def up_views():
            s.run_h @= zext(s.cmd.h, B)
            s.run_ho @= zext(s.cmd.ho, B)
            s.run_r @= zext(s.cmd.r, B)
            s.run_pt @= zext(s.cmd.pt, B)
            s.run_w @= zext(s.cmd.w, B)
            s.run_wo @= zext(s.cmd.wo, B)
            s.run_s @= zext(s.cmd.s, B)
            s.run_pad @= zext(s.cmd.pad, B)
            s.run_lgst @= s.cmd.lgst
            s.idle_h @= zext(s.cmd_in.h, B)
            s.idle_ho @= zext(s.cmd_in.ho, B)
            s.idle_r @= zext(s.cmd_in.r, B)
            s.idle_pt @= zext(s.cmd_in.pt, B)
            s.idle_w @= zext(s.cmd_in.w, B)
            s.idle_wo @= zext(s.cmd_in.wo, B)
            s.idle_s @= zext(s.cmd_in.s, B)
            s.idle_pad @= zext(s.cmd_in.pad, B)
            s.idle_lgst @= s.cmd_in.lgst
            s.un2 @= zext(s.u2n, B)
            s.un3 @= zext(s.u3n, B)

        # bounds[dim] (dim 0 rows, 1 columns): of position u + 1 of the held command; pos0[dim]: of
        # position 0 of the command to start
        s.bounds = [AddrTapBoundsRTL() for _ in range(2)]
        s.pos0 = [AddrTapBoundsRTL() for _ in range(2)]
        for dim, names in enumerate((ROW_FIELDS, COL_FIELDS)):
            for unit, w, cmd, u in ((s.bounds[dim], "run", s.cmd, (s.un2, s.un3)[dim]),
                                    (s.pos0[dim], "idle", s.cmd_in, None)):
                unit.op //= cmd.op
                for port, f in zip(("size", "osize", "k", "pad", "lg"), names):
                    connect(getattr(unit, port), s.view[w, f])
                unit.u //= u if u is not None else 0

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
                    s.rv[j] <<= s.pos0[0].v[j]
                    s.cv[j] <<= s.pos0[1].v[j]
                    s.rv0[j] <<= s.pos0[0].v[j]
                    s.cv0[j] <<= s.pos0[1].v[j]
                s.rlast <<= s.pos0[0].last
                s.clast <<= s.pos0[1].last
                s.rlast0 <<= s.pos0[0].last
                s.clast0 <<= s.pos0[1].last
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
