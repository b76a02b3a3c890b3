"""Engine, cycle level: the ports and messages of :class:`EngineFL`/:class:`EngineRTL`, the values
of the golden model, the cycle timing of the RTL.

Values: a compute command is evaluated by :class:`~pymtl_fp.engine.EngineFL.EngineFL`'s own
golden-model code (this class inherits ``_compute`` and the buffer layout from it; EngineFL's
``construct`` is not used), so FL and CL cannot differ in a single bit.

Timing (the three units of :class:`~pymtl_fp.engine.EngineRTL.EngineRTL`, with the compute
datapath replaced by a countdown from the closed form of :mod:`pymtl_fp.timing`)::

    accept  cmd.rdy = 1 when the command may start (below); accepted in a cycle cmd.val is high
    LD      din.rdy = 1; one beat (E = stream_lanes elements) per cycle in which din.val is
            high; idle after the last
    ST      per word: one cycle reading the buffer (dout.val = 0), then dout.val = 1 and one
            beat of E elements (fewer at the end of the command) per cycle in which dout.rdy is
            high; idle after the last element
    EX      busy for timing.compute_cycles(P, op, fields, DR, cfg.wb_latency) - 1 cycles after the
            acceptance, then idle

With ``cfg.pipelined_cmd`` a command register sits in front of the acceptance, as in
:class:`~pymtl_fp.engine.EngineAcceptRTL.EngineAcceptRTL`: the handshake takes the offered command
into it (``cmd.rdy`` = the register is empty or its command starts at this edge, from registered
state only), the acceptance below is decided on the held command, and a held command counts as
``busy``.

A command with ``ovl = 0`` is accepted only when all units are idle (the serial engine); one with
``ovl = 1`` when its own unit is idle and its :func:`~pymtl_fp.engine.msgs.access_ranges`
conflict with no busy unit's (:func:`~pymtl_fp.engine.msgs.ranges_conflict`, captured at
acceptance).  Results of a compute command are written into the buffers at its acceptance: the
hazard rule guarantees that no LOAD or STORE running or accepted while it is busy touches a word
it reads or writes, so no port can observe the difference.

``cmd.rdy`` is combinational (registered state and ``cmd.msg``, as in the RTL; registered state
only with the command register); every other
output (``din.rdy``, ``dout.val``, ``dout.msg``, ``busy``) is registered, as the RTL's are
functions of its registers only.  Back-pressure is therefore modelled exactly: a stalled ``din``
or ``dout`` holds the LOAD/STORE exactly as it holds the RTL, and compute commands never touch
the streams.  A test (``tests/test_engine_cl.py``, ``tests/test_engine_overlap.py``) checks that
CL and RTL handshake on every port in the same cycles under random stall patterns.
"""

from __future__ import annotations

from pymtl3 import update, update_ff

from pymtl_fp import timing
from pymtl_fp.direct import QUIET_FOREVER
from pymtl_fp.engine import msgs
from pymtl_fp.engine.encoding import pack_beat, unpack_beat
from pymtl_fp.engine.EngineFL import EngineFL
from pymtl_fp.engine.msgs import UNIT_EX, UNIT_LD, UNIT_ST, cmd_fields, from_word, to_word


class _Stream:
    """LD or ST: the command being streamed (element position, remaining count)."""

    def __init__(s, f, nlanes, ranges):
        s.target, s.addr, s.lane, s.left, s.nlanes = f["target"], f["addr"], 0, f["count"], nlanes
        s.phase = 0  # ST: 1 = the current word has been read
        s.ranges = ranges

    def advance(s, n=1):
        """``n`` elements moved (one beat: ``n <= E``, never past the end of a word, since ``E``
        divides the lanes); returns True after the last."""
        s.left -= n
        s.lane += n
        if s.lane == s.nlanes:
            s.lane = 0
            s.addr += 1
            s.phase = 0
        return s.left <= 0


class EngineCL(EngineFL):
    def construct(s, cfg):
        s._ports_and_buffers(cfg)
        s.ops_done = 0
        s.cycle = 0
        #: (op name, accepted cycle, occupancy in cycles) of every compute command
        s.compute_log = []
        s._reset_state()
        s._decoded = (None, None)  # direct scheduler: (command object, its fields)
        s._rdy_key = None  # direct scheduler: (command, LD, ST, EX state, held command, cmd.rdy)
        s.held = cfg.pipelined_cmd  # a command register in front of the acceptance

        @update
        def up_cl_rdy():
            if s.held:
                s.cmd.rdy @= s._held_rdy()
            else:
                s.cmd.rdy @= s._can_accept(s.cmd.msg)

        @update_ff
        def up_cl():
            if s.reset:
                s._reset_state()
            else:
                # cmd.rdy: this cycle's, from up_cl_rdy; the port's value object may be updated
                # in place, so it is decoded here, not cached
                go = bool(s.cmd.val & s.cmd.rdy)
                s._edge(go, cmd_fields(s.cmd.msg) if go else None, bool(s.din.val & s.din.rdy), s.din.msg,
                        bool(s.dout.val & s.dout.rdy))
            _, din_rdy, busy, dval, dword = s._drive()
            s.din.rdy <<= din_rdy
            s.busy <<= busy
            s.dout.val <<= dval
            if dval:
                s.dout.msg <<= s.DataT(dword)

    # ---- one clock edge (shared by the PyMTL3 blocks and the direct scheduler) ---------------
    def _edge(s, go, f, din_fire, din_msg, dout_fire):
        """``f``: the fields of the command handshaken at this edge (``go``): accepted, or taken
        into the command register (which starts the held one if it may start, decided on the
        state before the edge)."""
        if s.held:
            start = s.q if s.q is not None and s._accepts(s.q) else None
            if go:
                s.q = f
            elif start is not None:
                s.q = None
            go, f = start is not None, start
        if s.ld is not None and din_fire:
            if s.ld.advance(s._write_beat(s.ld, din_msg)):
                s.ld = None
        st = s.st
        if st is not None:
            if not st.phase:
                st.phase = 1
            elif dout_fire:
                if st.advance(min(s.E, st.left)):
                    s.st = None
        if s.ex is not None:
            s.ex_left -= 1
            if s.ex_left == 0:
                s.ex = None
        if go:
            s._accept(f)
        s.cycle += 1

    def _drive(s) -> tuple:
        """The registered outputs after the edge: (None: cmd.rdy is combinational, din.rdy, busy,
        dout.val, dout word)."""
        st = s.st
        busy = 1 if (s.ld is not None or st is not None or s.ex is not None or s.q is not None) else 0
        if st is not None and st.phase:
            return None, 1 if s.ld is not None else 0, busy, 1, s._read_beat(st)
        return None, 1 if s.ld is not None else 0, busy, 0, 0

    # ---- the direct protocol (pymtl_fp.direct; ports and bind from EngineFL) ----------------
    def _fields(s, msg):
        """The fields of a command object of the direct scheduler (immutable: the router builds
        one per instruction), decoded once."""
        m, f = s._decoded
        if m is not msg:
            f = cmd_fields(msg)
            s._decoded = (msg, f)
        return f

    def direct_reset(s):
        s._reset_state()
        _, din, dout, busy = s._dc
        din.rdy = dout.val = busy.value = 0

    def direct_edge(s):
        cmd, din, dout, _ = s._dc
        go = cmd.val and cmd.rdy
        s._edge(go, s._fields(cmd.msg) if go else None, din.val and din.rdy, din.msg, dout.val and dout.rdy)

    def direct_drive(s):
        _, din, dout, busy = s._dc
        _, din.rdy, busy.value, dout.val, w = s._drive()
        if dout.val:
            dout.msg = w

    def direct_comb(s):
        cmd = s._dc[0]
        if s.held:
            k = s._rdy_key
            if k is None or k[0] is not None or k[1] is not s.ld or k[2] is not s.st or k[3] is not s.ex \
                    or k[4] is not s.q:
                s._rdy_key = k = (None, s.ld, s.st, s.ex, s.q, s._held_rdy())
            cmd.rdy = k[5]
            return
        if not cmd.val:
            cmd.rdy = 0
            return
        msg, k = cmd.msg, s._rdy_key  # the answer changes only with the command or a unit's state
        if k is None or k[0] is not msg or k[1] is not s.ld or k[2] is not s.st or k[3] is not s.ex:
            s._rdy_key = k = (msg, s.ld, s.st, s.ex, None, 1 if s._accepts(s._fields(msg)) else 0)
        cmd.rdy = k[5]

    def direct_quiet(s):
        cmd = s._dc[0]
        if s.ld is not None or s.st is not None or (cmd.val and cmd.rdy):
            return 0
        if s.q is not None and (s.ex is None or s._held_rdy()):
            return 0  # (the held command starts at this edge)
        # (a held command that waits for EX alone waits as an offered one does: until EX ends)
        return QUIET_FOREVER if s.ex is None else s.ex_left - 1

    def direct_skip(s, n):
        s.cycle += n
        if s.ex is not None:
            s.ex_left -= n

    # ---- state ---------------------------------------------------------------------------
    def _reset_state(s):
        s.ld = s.st = None  # _Stream of the running LOAD / STORE
        s.ex = None  # access ranges of the running compute command
        s.ex_left = 0
        s.q = None  # the fields of the command held in the command register (cfg.pipelined_cmd)
        s._ranges_of = (None, None)  # (fields, their access ranges) last asked by _accepts

    def _busy(s):
        return s.ld is not None or s.st is not None or s.ex is not None

    def _held_rdy(s):
        """``cmd.rdy`` with the command register: it is empty, or its command starts now."""
        return 1 if s.q is None or s._accepts(s.q) else 0

    def _can_accept(s, msg):
        if not s._busy():
            return True
        running = s._running()
        if not msg.ovl or running[msgs.unit_of(int(msg.op))]:
            return False  # (decided before the whole command is decoded: this runs every cycle)
        return s._accepts(cmd_fields(msg), running)

    def _running(s) -> dict:
        """What each unit runs (falsy when idle; a load or store by its address ranges)."""
        return {UNIT_LD: s.ld and s.ld.ranges, UNIT_ST: s.st and s.st.ranges, UNIT_EX: s.ex}

    def _accepts(s, f, running=None):
        """May the command with fields ``f`` be accepted now?  (``running``: :meth:`_running`, when
        the caller has it.)"""
        if not s._busy():
            return True
        if not f["ovl"]:
            return False
        running = running or s._running()
        if running[msgs.unit_of(f["op"])]:
            return False
        if s._ranges_of[0] is not f:  # (a held command asks every cycle: its ranges once)
            s._ranges_of = (f, msgs.access_ranges(f, s.cfg))
        mine = s._ranges_of[1]
        return not any(r and msgs.ranges_conflict(mine, r) for r in running.values())

    def _accept(s, f):
        op = f["op"]
        if op in (msgs.OP_LOAD, msgs.OP_STORE):
            if f["count"] == 0:
                return
            unit = _Stream(f, s.lanes[f["target"]], msgs.access_ranges(f, s.cfg))
            if op == msgs.OP_LOAD:
                s.ld = unit
            else:
                s.st = unit
            return
        s._compute(f)  # EngineFL's golden-model evaluation, into the buffers
        s.ops_done += 1
        occ = timing.compute_cycles(s.cfg.P, msgs.OP_NAMES[op], f, s.cfg.drain_rows, s.cfg.wb_latency)
        s.compute_log.append((msgs.OP_NAMES[op], s.cycle, occ))
        if occ > 1:
            s.ex, s.ex_left = msgs.access_ranges(f, s.cfg) or [(-1, 0, 0, False)], occ - 1

    def _write_elem(s, u, value):
        s.bufs[u.target][u.addr, u.lane] = value

    def _read_elem(s, u):
        return int(s.bufs[u.target][u.addr, u.lane])

    def _write_beat(s, u, word) -> int:
        """The beat LD takes: its first ``min(E, elements left)`` lanes from its lane on; returns
        how many."""
        if s.E == 1:
            s._write_elem(u, from_word(int(word), s.SB))
            return 1
        vals = unpack_beat(int(word), s.E, s.SB)[:u.left]
        s.bufs[u.target][u.addr, u.lane:u.lane + len(vals)] = vals
        return len(vals)

    def _read_beat(s, u):
        """The beat ST offers: up to ``E`` elements from its lane on, surplus lanes zero."""
        if s.E == 1:
            return to_word(s._read_elem(u), s.SB)
        return pack_beat(s.bufs[u.target][u.addr, u.lane:u.lane + min(s.E, u.left)], s.SB)

    def line_trace(s):
        ld = f"L{s.ld.left:<4}" if s.ld else "L.   "
        st = f"S{s.st.left:<4}" if s.st else "S.   "
        ex = f"X{s.ex_left:<5}" if s.ex else "X.    "
        held = ("h" if s.q is not None else ".") if s.held else ""
        return f"{s.cmd}|{s.din}|{s.dout} {held}{ld} {st} {ex}"
