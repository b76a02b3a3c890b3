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

With ``registered`` (``EngineConfig.pipelined_cmd``, for a 200 MHz clock) the offered command is
first taken into a command register, with its ranges and op-code decode computed on the way in
(``c_*``), and the acceptance above is decided on the held command one cycle later or after; the
units take the held command (``msg``).  ``cmd.rdy = ~c_val | go`` is then a function of
registers only (no path from ``cmd.msg`` to a unit's register enables), a command held counts as
``busy``, and the register takes the next command in the cycle the held one starts: every command
of a stream offered back to back starts one cycle later than without the register, so the stream
takes one cycle more in all.
"""

from pymtl3 import Component, InPort, OutPort, Wire, update, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL

from pymtl_fp.engine import msgs
from pymtl_fp.engine.EngineCmdRangesRTL import NSLOT, EngineCmdRangesRTL
from pymtl_fp.engine.msgs import cmd_type


class EngineAcceptRTL(Component):
    def construct(s, P=2, registered=False):
        s.params = dict(P=P, registered=registered)
        OP_LOAD, OP_STORE = msgs.OP_LOAD, msgs.OP_STORE

        s.cmd = RecvIfcRTL(cmd_type())
        s.msg = OutPort(cmd_type())  # the command the unit started by go_* takes
        s.ld_busy, s.st_busy, s.ex_busy = InPort(), InPort(), InPort()
        s.ld_tgt, s.st_tgt = InPort(3), InPort(3)  # the buffers LD / ST are working on
        s.go_ld, s.go_st, s.go_ex = OutPort(), OutPort(), OutPort()
        s.busy = OutPort()

        s.rng = EngineCmdRangesRTL(P)
        s.rng.cmd //= s.cmd.msg

        s.is_load, s.is_store, s.is_compute = Wire(), Wire(), Wire()
        s.any_busy, s.own_busy, s.conf, s.ok, s.go = Wire(), Wire(), Wire(), Wire(), Wire()
        # the candidate: the offered command, or (registered) the held one, with its ranges
        s.c_val, s.c_msg = Wire(), Wire(cmd_type())
        s.c_load, s.c_store, s.c_compute = Wire(), Wire(), Wire()
        s.c_buf = [Wire(3) for _ in range(NSLOT)]
        s.c_lo = [Wire(32) for _ in range(NSLOT)]
        s.c_hi = [Wire(32) for _ in range(NSLOT)]
        s.c_wr = [Wire() for _ in range(NSLOT)]
        s.c_v = [Wire() for _ in range(NSLOT)]
        # the ranges of the busy units, captured at acceptance
        s.ex_buf = [Wire(3) for _ in range(NSLOT)]
        s.ex_lo = [Wire(32) for _ in range(NSLOT)]
        s.ex_hi = [Wire(32) for _ in range(NSLOT)]
        s.ex_wr = [Wire() for _ in range(NSLOT)]
        s.ex_v = [Wire() for _ in range(NSLOT)]
        s.ld_lo, s.ld_hi, s.st_lo, s.st_hi = Wire(32), Wire(32), Wire(32), Wire(32)
        s.msg //= s.c_msg

        @update
        def up_decode():
            s.is_load @= s.cmd.msg.op == OP_LOAD
            s.is_store @= s.cmd.msg.op == OP_STORE
            s.is_compute @= (s.cmd.msg.op != OP_LOAD) & (s.cmd.msg.op != OP_STORE)

        if registered:
            s.enter = Wire()

            @update_ff
            def up_cmd_reg():
                if s.reset:
                    s.c_val <<= 0
                elif s.enter:
                    s.c_val <<= 1
                elif s.go:
                    s.c_val <<= 0
                if s.enter:
                    s.c_msg <<= s.cmd.msg
                    s.c_load <<= s.is_load
                    s.c_store <<= s.is_store
                    s.c_compute <<= s.is_compute
                    for i in range(NSLOT):
                        s.c_buf[i] <<= s.rng.buf_id[i]
                        s.c_lo[i] <<= s.rng.lo[i]
                        s.c_hi[i] <<= s.rng.hi[i]
                        s.c_wr[i] <<= s.rng.wr[i]
                        s.c_v[i] <<= s.rng.v[i]

            @update
            def up_handshake_held():  # (names unique: PyMTL3 translates a block by its name)
                s.cmd.rdy @= ~s.c_val | s.go
                s.enter @= s.cmd.val & s.cmd.rdy
                s.busy @= s.any_busy | s.c_val
        else:
            s.c_val //= s.cmd.val
            s.c_msg //= s.cmd.msg
            s.c_load //= s.is_load
            s.c_store //= s.is_store
            s.c_compute //= s.is_compute
            for i in range(NSLOT):
                s.c_buf[i] //= s.rng.buf_id[i]
                s.c_lo[i] //= s.rng.lo[i]
                s.c_hi[i] //= s.rng.hi[i]
                s.c_wr[i] //= s.rng.wr[i]
                s.c_v[i] //= s.rng.v[i]

            @update
            def up_handshake():
                s.cmd.rdy @= s.ok
                s.busy @= s.any_busy

        @update
        def up_conflict():
            # a conflict with a busy unit: same buffer, and the same port or intersecting ranges
            s.conf @= 0
            for i in range(NSLOT):
                if s.c_v[i] & (s.c_lo[i] < s.c_hi[i]):
                    if (s.ld_busy & (s.c_buf[i] == s.ld_tgt) & (s.c_lo[i] < s.ld_hi)
                            & (s.ld_lo < s.c_hi[i])):
                        s.conf @= 1
                    if (s.st_busy & (s.c_buf[i] == s.st_tgt) & (s.c_lo[i] < s.st_hi)
                            & (s.st_lo < s.c_hi[i])):
                        s.conf @= 1
                    for j in range(NSLOT):
                        if (s.ex_busy & s.ex_v[j] & (s.c_buf[i] == s.ex_buf[j]) & (s.ex_lo[j] < s.ex_hi[j])
                                & (s.c_lo[i] < s.ex_hi[j]) & (s.ex_lo[j] < s.c_hi[i])):
                            s.conf @= 1
                if s.c_v[i]:
                    if s.ld_busy & (s.c_buf[i] == s.ld_tgt) & s.c_wr[i]:
                        s.conf @= 1
                    if s.st_busy & (s.c_buf[i] == s.st_tgt) & ~s.c_wr[i]:
                        s.conf @= 1
                    for j in range(NSLOT):
                        if s.ex_busy & s.ex_v[j] & (s.c_buf[i] == s.ex_buf[j]) & (s.c_wr[i] == s.ex_wr[j]):
                            s.conf @= 1

        @update
        def up_accept():
            s.any_busy @= s.ld_busy | s.st_busy | s.ex_busy
            s.own_busy @= (s.c_load & s.ld_busy) | (s.c_store & s.st_busy) | (s.c_compute & s.ex_busy)
            s.ok @= ~s.any_busy | (s.c_msg.ovl & ~s.own_busy & ~s.conf)
            s.go @= s.c_val & s.ok
            s.go_ld @= s.go & s.c_load
            s.go_st @= s.go & s.c_store
            s.go_ex @= s.go & s.c_compute

        @update_ff
        def up_range_regs():
            if s.go_ex:
                for i in range(NSLOT):
                    s.ex_buf[i] <<= s.c_buf[i]
                    s.ex_lo[i] <<= s.c_lo[i]
                    s.ex_hi[i] <<= s.c_hi[i]
                    s.ex_wr[i] <<= s.c_wr[i]
                    s.ex_v[i] <<= s.c_v[i]
            if s.go_ld:
                s.ld_lo <<= s.c_lo[0]
                s.ld_hi <<= s.c_hi[0]
            if s.go_st:
                s.st_lo <<= s.c_lo[0]
                s.st_hi <<= s.c_hi[0]

    def line_trace(s):
        state = "".join(c if b else "." for c, b in (("L", s.ld_busy), ("S", s.st_busy), ("X", s.ex_busy)))
        go = "go" if s.go else ("cf" if s.conf & s.c_val else "  ")
        held = ("h" if s.c_val else ".") if s.params["registered"] else ""
        return f"{s.cmd}|{held}{state} {go}"
