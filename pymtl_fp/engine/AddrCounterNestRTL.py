"""Counter nest (RTL) of :class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`: seven loop counters that
count like an odometer from 0 to their limits.

``start`` clears every counter and sets ``running``; ``advance`` (while running) moves to the next
step: level ``lv`` counts up where every inner level (``lv+1 .. 6``) is at its end (``carry[lv]``)
and restarts at 0 where it is itself at its end too; the step where every level is at its end
(``all_at``) is the last, after which the nest stops (``running`` low).  A level is at its end
where its counter equals its limit ``lim[lv]``; levels 5 and 6 instead end where the tap unit says
(``tap_at`` with ``at5``/``at6``: ``fwd``, ``bwd_data`` and ``bwd_weight`` walk only valid taps).

Flags of the current step: ``first`` / ``last`` (the first / last inner step of an output: levels
4-6 at 0 / at their ends), and for ``bwd_weight``'s bias gradient ``db_first`` (levels 1-3 at 0:
the first tile of kt's db sum) and ``db_end`` (level 1 at 0, levels 2 and 3 at their ends: the
tile that completes it).  Registers: the counters and ``running``; the rest is combinational.

:class:`AddrCounterNestPlusOneRTL` (for the registered tap bounds,
:class:`~pymtl_fp.engine.AddrTapRegsRTL.AddrTapRegsRTL`) also keeps ``cnt1[k]`` = ``cnt[lv] + 1``
(17 bits, no wrap) for each level ``lv`` of :data:`PLUS_ONE` in registers of their own, which
count beside the counters (1 where a counter is cleared, their own increment where it counts up):
the bounds of the next position then start at a register instead of behind the counter's
increment.
"""

from pymtl3 import Bits1, Bits16, Bits17, Component, InPort, OutPort, update, update_ff

from pymtl_fp.engine.addr_layout import NL

#: the levels whose ``cnt + 1`` :class:`AddrCounterNestPlusOneRTL` keeps in registers (the outer
#: positions of the tap bounds: rows, columns; ``up_nest_plus_one`` spells them out)
PLUS_ONE = (2, 3)


class AddrCounterNestRTL(Component):
    def construct(s):
        s.build_nest(plus_one=False)

    def build_nest(s, plus_one):
        """The nest's ports, counters and flags (``plus_one``: and the registers ``cnt1``)."""
        s.params = {}
        Z16, ONE16, ONE17 = Bits16(0), Bits16(1), Bits17(1)

        s.start, s.advance = InPort(), InPort()
        s.lim = [InPort(16) for _ in range(NL)]
        s.tap_at = InPort()  # levels 5 and 6 end where at5 / at6 say
        s.at5, s.at6 = InPort(), InPort()
        s.running = OutPort()
        s.cnt = [OutPort(16) for _ in range(NL)]
        s.at = [OutPort() for _ in range(NL)]
        s.carry = [OutPort() for _ in range(NL)]  # all inner levels at their ends
        s.all_at = OutPort()
        s.first, s.last = OutPort(), OutPort()
        s.db_first, s.db_end = OutPort(), OutPort()
        s.cnt1 = [OutPort(17) for _ in (PLUS_ONE if plus_one else ())]  # cnt[lv] + 1 of the levels PLUS_ONE

        @update
        def up_nest_at():
            for lv in range(NL):
                s.at[lv] @= s.cnt[lv] == s.lim[lv]
            if s.tap_at:
                s.at[5] @= s.at5
                s.at[6] @= s.at6
            s.carry[6] @= Bits1(1)
            s.carry[5] @= s.at[6]
            s.carry[4] @= s.at[6] & s.at[5]
            s.carry[3] @= s.at[6] & s.at[5] & s.at[4]
            s.carry[2] @= s.at[6] & s.at[5] & s.at[4] & s.at[3]
            s.carry[1] @= s.at[6] & s.at[5] & s.at[4] & s.at[3] & s.at[2]
            s.carry[0] @= s.at[6] & s.at[5] & s.at[4] & s.at[3] & s.at[2] & s.at[1]
            s.all_at @= s.carry[0] & s.at[0]

        @update
        def up_nest_flags():
            s.db_first @= (s.cnt[1] == Z16) & (s.cnt[2] == Z16) & (s.cnt[3] == Z16)
            s.db_end @= (s.cnt[1] == Z16) & s.at[2] & s.at[3]
            s.first @= (s.cnt[4] == Z16) & (s.cnt[5] == Z16) & (s.cnt[6] == Z16)
            s.last @= s.at[4] & s.at[5] & s.at[6]

        @update_ff
        def up_nest_counters():
            if s.reset:
                s.running <<= 0
                for lv in range(NL):
                    s.cnt[lv] <<= Z16
            elif s.start:
                s.running <<= 1
                for lv in range(NL):
                    s.cnt[lv] <<= Z16
            elif s.advance & s.running:
                if s.all_at:
                    for lv in range(NL):
                        s.cnt[lv] <<= Z16
                    s.running <<= 0
                else:
                    for lv in range(NL):
                        if s.carry[lv]:
                            if s.at[lv]:
                                s.cnt[lv] <<= Z16
                            else:
                                s.cnt[lv] <<= s.cnt[lv] + ONE16

        if plus_one:
            @update_ff
            def up_nest_plus_one():  # cnt1[0] = cnt[2] + 1, cnt1[1] = cnt[3] + 1 (PLUS_ONE)
                if s.reset | s.start | (s.advance & s.running & s.all_at):
                    s.cnt1[0] <<= ONE17
                    s.cnt1[1] <<= ONE17
                elif s.advance & s.running:
                    if s.carry[2]:
                        if s.at[2]:
                            s.cnt1[0] <<= ONE17
                        else:
                            s.cnt1[0] <<= s.cnt1[0] + ONE17
                    if s.carry[3]:
                        if s.at[3]:
                            s.cnt1[1] <<= ONE17
                        else:
                            s.cnt1[1] <<= s.cnt1[1] + ONE17

    def line_trace(s):
        c = ",".join(str(int(v)) for v in s.cnt)
        return f"{'R' if s.running else '.'}[{c}]{'f' if s.first else ' '}{'l' if s.last else ' '}"


class AddrCounterNestPlusOneRTL(AddrCounterNestRTL):
    """:class:`AddrCounterNestRTL` that also keeps ``cnt1`` (levels :data:`PLUS_ONE` plus one) in
    registers, for :class:`~pymtl_fp.engine.AddrTapRegsRTL.AddrTapRegsRTL`."""

    def construct(s):
        s.build_nest(plus_one=True)
