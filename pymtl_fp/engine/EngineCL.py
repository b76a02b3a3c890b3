"""Engine, cycle level: the ports and messages of :class:`EngineFL`/:class:`EngineRTL`, the values
of the golden model, the cycle timing of the RTL.

Values: a compute command is evaluated by :class:`~pymtl_fp.engine.EngineFL.EngineFL`'s own
golden-model code (this class inherits ``_compute`` and the buffer layout from it; EngineFL's
``construct`` is not used), so FL and CL cannot differ in a single bit.

Timing (the same state machine as :class:`~pymtl_fp.engine.EngineRTL.EngineRTL`'s controller,
with the compute datapath replaced by a countdown from the closed form of :mod:`pymtl_fp.timing`)::

    IDLE    cmd.rdy = 1; a command is accepted in the cycle cmd.val is high
    LOAD    din.rdy = 1; one element per cycle in which din.val is high; IDLE after the last
    STORE   per word: one cycle reading the buffer (dout.val = 0), then dout.val = 1 and one
            element per cycle in which dout.rdy is high; IDLE after the last element
    COMP    busy for timing.compute_cycles(...) - 1 cycles after the acceptance, then IDLE
            (results are written into the buffers at acceptance: no port can observe them
            before the engine is idle again)

Every output (``cmd.rdy``, ``din.rdy``, ``dout.val``, ``dout.msg``, ``busy``) is registered, as
the RTL's are functions of its registers only.  Back-pressure is therefore modelled exactly: a
stalled ``din`` or ``dout`` holds the LOAD/STORE exactly as it holds the RTL, and compute
commands never touch the streams (the RTL's compute time does not depend on stalls).  A test
(``tests/test_engine_cl.py``) checks that CL and RTL handshake on every port in the same
cycles under random stall patterns.
"""

from __future__ import annotations

from pymtl3 import update_ff

from pymtl_fp import timing
from pymtl_fp.engine import msgs
from pymtl_fp.engine.EngineFL import EngineFL
from pymtl_fp.engine.msgs import cmd_fields, from_word, to_word

IDLE, LOAD, STORE, COMP = range(4)


class EngineCL(EngineFL):
    def construct(s, cfg):
        s._ports_and_buffers(cfg)
        s.ops_done = 0
        s.cycle = 0
        #: (op name, accepted cycle, occupancy in cycles) of every compute command
        s.compute_log = []
        s._reset_state()
        sb = cfg.stream_bits
        DataT = s.DataT

        @update_ff
        def up_cl():
            if s.reset:
                s._reset_state()
                s.cmd.rdy <<= 1
                s.din.rdy <<= 0
                s.dout.val <<= 0
                s.busy <<= 0
                return
            st = s.state
            if st == IDLE:
                if s.cmd.val:
                    s._accept(cmd_fields(s.cmd.msg))
            elif st == LOAD:
                if s.din.val:
                    s._write_elem(from_word(int(s.din.msg), sb))
                    s._advance()
            elif st == STORE:
                if not s.phase:
                    s.phase = 1
                elif s.dout.rdy:
                    s._advance()
            else:  # COMP
                s.left -= 1
                if s.left == 0:
                    s.state = IDLE
            s.cycle += 1
            # registered outputs of the next cycle
            st = s.state
            s.cmd.rdy <<= st == IDLE
            s.din.rdy <<= st == LOAD
            s.busy <<= st != IDLE
            if st == STORE and s.phase:
                s.dout.val <<= 1
                s.dout.msg <<= DataT(to_word(s._read_elem(), sb))
            else:
                s.dout.val <<= 0

    # ---- state ---------------------------------------------------------------------------
    def _reset_state(s):
        s.state = IDLE
        s.phase = 0  # STORE: 1 = the current word has been read
        s.target = s.addr = s.lane = s.left = s.nlanes = 0

    def _accept(s, f):
        op = f["op"]
        if op in (msgs.OP_LOAD, msgs.OP_STORE):
            if f["count"] == 0:
                return
            s.state = LOAD if op == msgs.OP_LOAD else STORE
            s.target, s.addr, s.lane, s.left = f["target"], f["addr"], 0, f["count"]
            s.nlanes = s.lanes[f["target"]]
            s.phase = 0
            return
        s._compute(f)  # EngineFL's golden-model evaluation, into the buffers
        s.ops_done += 1
        occ = timing.compute_cycles(s.cfg.P, msgs.OP_NAMES[op], f)
        s.compute_log.append((msgs.OP_NAMES[op], s.cycle, occ))
        s.state, s.left = COMP, occ - 1

    def _write_elem(s, value):
        s.bufs[s.target][s.addr, s.lane] = value

    def _read_elem(s):
        return int(s.bufs[s.target][s.addr, s.lane])

    def _advance(s):
        """One element moved (LOAD or STORE): next lane/word; IDLE after the last."""
        s.left -= 1
        if s.lane == s.nlanes - 1:
            s.lane = 0
            s.addr += 1
            s.phase = 0
        else:
            s.lane += 1
        if s.left == 0:
            s.state = IDLE

    def line_trace(s):
        st = "ILSC"[s.state]
        return f"{s.cmd}|{s.din}|{s.dout} {st} left={s.left}"
