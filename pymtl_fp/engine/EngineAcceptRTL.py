"""Command acceptance (RTL): in-order issue to the three units with the address-range hazard check.

Three units execute commands, one each at a time: LD (LOAD), ST (STORE) and EX (compute).  The
offered command (``cmd``) is accepted (``cmd.rdy``, combinational in ``cmd.msg``) when all units
are idle, or when it has ``ovl = 1``, its own unit is idle and none of its address ranges
conflicts with a range of a busy unit: same buffer and either the same port (both read or both
write) or a write intersecting a read (the rule and the proof of in-order semantics:
:mod:`pymtl_fp.engine.msgs`, :func:`~pymtl_fp.engine.msgs.ranges_conflict`).  The ranges of the
offered command come from :class:`EngineCmdRangesRTL` (in elements); on acceptance they are kept
in registers while the command's unit is busy: five slots for EX (``ex_*``), one range each for
LD and ST (``ld_lo/hi``, ``st_lo/hi``; their buffers are the units' own ``ld_tgt``/``st_tgt``).
``go_ld`` / ``go_st`` / ``go_ex`` start the unit that takes the accepted command; ``busy`` is high
while any unit is busy.

The op-code decode is its own block, fed only by ``cmd.msg``: the ranges depend on it and the
acceptance on the ranges, with no path back (no combinational loop through ``cmd.rdy``).
"""

from pymtl3 import Component, InPort, OutPort, Wire, update, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL

from pymtl_fp.engine import msgs
from pymtl_fp.engine.EngineCmdRangesRTL import NSLOT, EngineCmdRangesRTL
from pymtl_fp.engine.msgs import cmd_type


class EngineAcceptRTL(Component):
    def construct(s, P=2):
        s.params = dict(P=P)
        OP_LOAD, OP_STORE = msgs.OP_LOAD, msgs.OP_STORE

        s.cmd = RecvIfcRTL(cmd_type())
        s.ld_busy, s.st_busy, s.ex_busy = InPort(), InPort(), InPort()
        s.ld_tgt, s.st_tgt = InPort(3), InPort(3)  # the buffers LD / ST are working on
        s.go_ld, s.go_st, s.go_ex = OutPort(), OutPort(), OutPort()
        s.busy = OutPort()

        s.rng = EngineCmdRangesRTL(P)
        s.rng.cmd //= s.cmd.msg

        s.is_load, s.is_store, s.is_compute = Wire(), Wire(), Wire()
        s.any_busy, s.own_busy, s.conf, s.go = Wire(), Wire(), Wire(), Wire()
        # the ranges of the busy units, captured at acceptance
        s.ex_buf = [Wire(3) for _ in range(NSLOT)]
        s.ex_lo = [Wire(32) for _ in range(NSLOT)]
        s.ex_hi = [Wire(32) for _ in range(NSLOT)]
        s.ex_wr = [Wire() for _ in range(NSLOT)]
        s.ex_v = [Wire() for _ in range(NSLOT)]
        s.ld_lo, s.ld_hi, s.st_lo, s.st_hi = Wire(32), Wire(32), Wire(32), Wire(32)

        @update
        def up_decode():
            s.is_load @= s.cmd.msg.op == OP_LOAD
            s.is_store @= s.cmd.msg.op == OP_STORE
            s.is_compute @= (s.cmd.msg.op != OP_LOAD) & (s.cmd.msg.op != OP_STORE)

        @update
        def up_conflict():
            # a conflict with a busy unit: same buffer, and the same port or intersecting ranges
            s.conf @= 0
            for i in range(NSLOT):
                if s.rng.v[i] & (s.rng.lo[i] < s.rng.hi[i]):
                    if (s.ld_busy & (s.rng.buf_id[i] == s.ld_tgt) & (s.rng.lo[i] < s.ld_hi)
                            & (s.ld_lo < s.rng.hi[i])):
                        s.conf @= 1
                    if (s.st_busy & (s.rng.buf_id[i] == s.st_tgt) & (s.rng.lo[i] < s.st_hi)
                            & (s.st_lo < s.rng.hi[i])):
                        s.conf @= 1
                    for j in range(NSLOT):
                        if (s.ex_busy & s.ex_v[j] & (s.rng.buf_id[i] == s.ex_buf[j]) & (s.ex_lo[j] < s.ex_hi[j])
                                & (s.rng.lo[i] < s.ex_hi[j]) & (s.ex_lo[j] < s.rng.hi[i])):
                            s.conf @= 1
                if s.rng.v[i]:
                    if s.ld_busy & (s.rng.buf_id[i] == s.ld_tgt) & s.rng.wr[i]:
                        s.conf @= 1
                    if s.st_busy & (s.rng.buf_id[i] == s.st_tgt) & ~s.rng.wr[i]:
                        s.conf @= 1
                    for j in range(NSLOT):
                        if s.ex_busy & s.ex_v[j] & (s.rng.buf_id[i] == s.ex_buf[j]) & (s.rng.wr[i] == s.ex_wr[j]):
                            s.conf @= 1

        @update
        def up_accept():
            s.any_busy @= s.ld_busy | s.st_busy | s.ex_busy
            s.own_busy @= (s.is_load & s.ld_busy) | (s.is_store & s.st_busy) | (s.is_compute & s.ex_busy)
            s.cmd.rdy @= ~s.any_busy | (s.cmd.msg.ovl & ~s.own_busy & ~s.conf)
            s.go @= s.cmd.val & s.cmd.rdy
            s.go_ld @= s.go & s.is_load
            s.go_st @= s.go & s.is_store
            s.go_ex @= s.go & s.is_compute
            s.busy @= s.any_busy

        @update_ff
        def up_range_regs():
            if s.go_ex:
                for i in range(NSLOT):
                    s.ex_buf[i] <<= s.rng.buf_id[i]
                    s.ex_lo[i] <<= s.rng.lo[i]
                    s.ex_hi[i] <<= s.rng.hi[i]
                    s.ex_wr[i] <<= s.rng.wr[i]
                    s.ex_v[i] <<= s.rng.v[i]
            if s.go_ld:
                s.ld_lo <<= s.rng.lo[0]
                s.ld_hi <<= s.rng.hi[0]
            if s.go_st:
                s.st_lo <<= s.rng.lo[0]
                s.st_hi <<= s.rng.hi[0]

    def line_trace(s):
        state = "".join(c if b else "." for c, b in (("L", s.ld_busy), ("S", s.st_busy), ("X", s.ex_busy)))
        go = "go" if s.go else ("cf" if s.conf else "  ")
        return f"{s.cmd}|{state} {go}"
