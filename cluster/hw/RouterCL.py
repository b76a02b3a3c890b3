"""The router/DMA of a node, cycle level: the program sequencer, feeder, drainer, output buffers,
scratch FIFO and scalar units of :class:`~pymtl_fp.cluster.hw.RouterRTL.RouterRTL`, as Python
behaviour behind the same ports, cycle for cycle.

It runs a node program of the ISA in :mod:`pymtl_fp.cluster.isa` (given at construction, or
written through the program bus like the RTL's) and joins the node's link ports and host side
channel to its engine's streams.  Behaviour at each rising clock edge (``X`` = a register before
the edge; every output is a function of the registers after it, as in the RTL):

1. **observe** (registers before the edge): if the current instruction is *fresh* (``pc`` reached
   it at the previous edge, or reset), record its ``mark`` (label, ``cycle``) and queue its
   ``done`` mark with the LOAD/STORE moves issued so far; if the oldest queued done mark's moves
   have all completed, record it (one per edge).
2. **handshakes of the cycle that ended**: output buffers pop what their port took; a fired
   ``cmd`` retires the current ENG/LOAD/STORE (a LOAD's move joins the feeder's queue, a
   STORE's the drainer's); ``din`` takes the skid FIFO's head; an element taken from a link
   input or the host goes to the skid FIFO (the feeder's move) or, for a MOVE, to its
   destinations (an output buffer and/or the scratch FIFO's tail), for a REDUCE added to the
   scratch FIFO's head (which it pops; modulo ``2**stream_bits``) first; an element from
   ``dout`` goes to every destination of the drainer's head move (link or host output buffers of
   ``out_beats`` beats, ``out_depth`` elements; the scratch FIFO).
3. **feeder from the scratch FIFO**: one beat per edge into the skid FIFO (2 entries) if the
   feeder's head move reads the scratch FIFO, there is room and the FIFO held the beat's
   elements before the edge.

Every stream carries beats of ``E = cfg.stream_lanes`` elements: a move of ``n`` elements is
``ceil(n / E)`` beats, the last with the remaining elements (surplus lanes: zero from the scratch
FIFO and the adder, as they came from a link or ``dout`` otherwise); the scratch FIFO holds
elements (a beat pushes or pops only its elements), and the scalar units work element by element.
The counters (``sent``, ``received``, output buffer depths) count beats.
4. **sequencer**: a MOVE / REDUCE retires after its last element; a scalar unit's instruction
   (BIAS / GATHER / REQUANT / ADD / MASK / GAP / GAPB) starts when the feeder and drainer are idle and
   retires :func:`~pymtl_fp.cluster.isa.unit_cycles` edges later (its result is applied to the scratch
   FIFO when it starts: nothing can read the FIFO while it runs); a NOP retires.  Retiring moves
   ``pc`` on (or back to the loop start: ``lend``), and the next instruction is fresh.
5. **outputs**: ``cmd`` offers the current ENG/LOAD/STORE (its seed plus the loop iteration when
   ``seedstep``); ``din`` the skid head; each output buffer its head; link/host inputs are ready
   when the feeder's head move reads them and the skid FIFO has room, or for a MOVE / REDUCE with
   room in its output buffers (a REDUCE: and an element in the scratch FIFO); ``dout`` is ready
   unless a destination of the drainer's head is full.
6. **statistics**: the cycle is ``compute`` (a compute command accepted, or the engine busy
   after one), ``io`` (an element moved on din/dout/a link/host input, or a scalar unit ran),
   ``stall_in`` (the feeder waits for a link or the host), ``stall_out`` (an output buffer is
   full, or the program is over and the last sends drain), ``engine`` (waiting for the engine),
   or ``done``; the RTL exposes the same code on its ``st_state`` port.

With ``cfg.pipelined_seq`` (the RTL's instruction register) every instruction takes the same cycles;
only the program memory's first two reads are modelled: they take the last two edges of reset with the
program bus idle (a reset's first edge and every program write restart them), and the edges missing
when reset falls are cycles with no current instruction (state ``engine``, nothing offered) before
the first.

CL-only options: ``timed`` (an untimed FL engine: after a compute command the sequencer waits
the engine timing model's cycles) and ``stall`` (random cycles with every val/rdy low).

The behaviour is in four parts: this module (ports, program, state, the edge's order of events, the
sequencer, the outputs), :mod:`~pymtl_fp.cluster.hw.router_cl_streams` (beats, feeder, drainer, link and
host moves, output buffers), :mod:`~pymtl_fp.cluster.hw.router_cl_units` (the scalar units) and
:mod:`~pymtl_fp.cluster.hw.router_cl_direct` (the direct scheduler's protocol).
"""

from __future__ import annotations

from collections import deque

from pymtl3 import Component, InPort, OutPort, mk_bits, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.router_cl_direct import RouterDirectCL
from pymtl_fp.cluster.hw.router_cl_streams import RouterStreamsCL
from pymtl_fp.cluster.hw.router_cl_units import RouterUnitsCL, bias_update
from pymtl_fp.cluster.hw.router_config import STATES, RouterConfig, declare_status_ports
from pymtl_fp.engine import program
from pymtl_fp.engine.msgs import cmd_type, make_cmd
from pymtl_fp.sim import stall_pattern

__all__ = ["RouterCL", "bias_update"]

S_COMPUTE, S_IO, S_STALL_IN, S_STALL_OUT, S_ENGINE, S_DONE = range(6)
_OUT = ("fwd_out", "bwd_out", "host_out")
_SRC_INDEX = {isa.SRC_FWD_IN: 0, isa.SRC_BWD_IN: 1, isa.SRC_HOST: 2}
#: the input streams in the order of their handshakes (fwd_in, bwd_in, host_in) -> the ISA's source
_INPUT_SRC = (isa.SRC_FWD_IN, isa.SRC_BWD_IN, isa.SRC_HOST)
#: the kind of "no instruction yet" (a pipelined sequencer's first reads)
_NONE = -1


class RouterCL(RouterStreamsCL, RouterUnitsCL, RouterDirectCL, Component):
    def construct(s, cfg: RouterConfig, prog=None, table=None, *, timed=False, name="node", stall=None,
                  ecfg=None, status_ports=True):
        s.cfg = cfg
        s.bits = cfg.stream_bits
        s.E = cfg.stream_lanes  # elements per beat on every stream
        s.DataT = mk_bits(s.E * cfg.stream_bits)
        s.ecfg = ecfg  # the engine's EngineConfig (timed: the FL engine's compute commands)
        if timed and ecfg is None:
            raise ValueError("RouterCL(timed=True) needs the engine's EngineConfig (ecfg) to time compute commands")
        # engine side
        s.cmd = SendIfcRTL(cmd_type())
        s.din = SendIfcRTL(s.DataT)
        s.dout = RecvIfcRTL(s.DataT)
        s.busy = InPort()
        # links and the host side channel
        s.fwd_in = RecvIfcRTL(s.DataT)
        s.bwd_in = RecvIfcRTL(s.DataT)
        s.host_in = RecvIfcRTL(s.DataT)
        s.fwd_out = SendIfcRTL(s.DataT)
        s.bwd_out = SendIfcRTL(s.DataT)
        s.host_out = SendIfcRTL(s.DataT)
        # program bus (written while reset is high) and status, as the RTL's
        s.prog_we = InPort()
        s.prog_sel = InPort()
        s.prog_addr = InPort(16)
        s.prog_data = InPort(isa.instr_type())
        s.tab_data = InPort(32)
        declare_status_ports(s, cfg, OutPort)

        s.prog = list(prog) if prog is not None else []
        s.table = list(table) if table is not None else []
        s.timed = timed
        s.status_ports = status_ports  # drive the st_mark/st_done/st_halted ports (tests compare them)
        s.node_name = name
        s.stall = stall
        s.tracing = False  # record a timeline (cluster/run/trace.py) from the next reset on
        s._msgs, s._msgs_prog, s._last_msg = {}, None, None
        s.boot = 2         # pipelined_seq: the program memory's first reads done (0, 1: to do)
        s.rst_q = False    # reset at the previous edge
        s._reset_state()

        @update_ff
        def up_router():
            if s.prog_we:
                s._program_write()
            if s.reset:
                if s.cfg.pipelined_seq:  # (the first reads restart at reset's first edge and at a program write)
                    s.boot = 0 if not s.rst_q or (s.prog_we and not s.prog_sel) else min(2, s.boot + 1)
                s._reset_state()
                o = s._outputs(in_reset=True)
            else:
                fired = (bool(s.cmd.val & s.cmd.rdy), bool(s.din.val & s.din.rdy), bool(s.dout.val & s.dout.rdy),
                         bool(s.fwd_in.val & s.fwd_in.rdy), bool(s.bwd_in.val & s.bwd_in.rdy),
                         bool(s.host_in.val & s.host_in.rdy),
                         bool(s.fwd_out.val & s.fwd_out.rdy), bool(s.bwd_out.val & s.bwd_out.rdy),
                         bool(s.host_out.val & s.host_out.rdy))
                s._edge(fired, s.dout.msg, (s.fwd_in.msg, s.bwd_in.msg, s.host_in.msg), bool(s.busy))
                o = s._outputs()
            s.rst_q = bool(s.reset)
            cmd_val, cmd_msg, din, outs, dout_rdy, rdy, status = o
            s.cmd.val <<= cmd_val
            if cmd_val and cmd_msg is not s._last_msg:  # (written only when it changes)
                s.cmd.msg <<= cmd_msg
                s._last_msg = cmd_msg
            DataT = s.DataT
            s.din.val <<= din[0]
            s.din.msg <<= DataT(din[1])
            s.fwd_out.val <<= outs[0][0]
            s.fwd_out.msg <<= DataT(outs[0][1])
            s.bwd_out.val <<= outs[1][0]
            s.bwd_out.msg <<= DataT(outs[1][1])
            s.host_out.val <<= outs[2][0]
            s.host_out.msg <<= DataT(outs[2][1])
            s.dout.rdy <<= dout_rdy
            s.fwd_in.rdy <<= rdy[0]
            s.bwd_in.rdy <<= rdy[1]
            s.host_in.rdy <<= rdy[2]
            s.st_state <<= s.state
            s.st_mark_val <<= status[0]
            s.st_mark_id <<= status[1]
            s.st_done_val <<= status[2]
            s.st_done_id <<= status[3]
            s.st_halted <<= status[4]
            s.st_error <<= 0  # (the CL model raises instead of flagging)
            if s.status_ports:
                s.st_cycle <<= s.cycle
                s.st_pc <<= s.pc
                s.st_iter <<= s.iter
                s.st_scratch_peak <<= s.scratch_max
                for i in range(6):
                    s.st_cnt[i] <<= s.stats[i]
                for i in range(3):
                    s.st_sent[i] <<= s.sent[i]
                    s.st_recv[i] <<= s.received[i]
                    s.st_out_peak[i] <<= s.outq_max[i]

    # ---- program ---------------------------------------------------------------------------
    def _program_write(s):
        sel, addr = int(s.prog_sel), int(s.prog_addr)
        data = int(s.tab_data) if sel else int(s.prog_data.to_bits())
        mem = s.table if sel else s.prog
        while len(mem) <= addr:
            mem.append(0 if sel else isa.Instr(isa.HALT))
        mem[addr] = data if sel else isa.decode(data)

    def load_program(s, prog, table=()):
        """Replace the program and gather table (CL: what the program bus would write)."""
        s.prog, s.table = list(prog), list(table)

    # ---- state -----------------------------------------------------------------------------
    def _reset_state(s):
        s.stall_gen = stall_pattern(s.stall[1], s.stall[0]) if s.stall and s.stall[0] > 0 else None
        s.pc = 0
        s.iter = 0
        s.fresh = True
        s.cycle = 0
        s.scratch = deque()
        s.skid = deque()
        s.outq = [deque(), deque(), deque()]  # fwd_out, bwd_out, host_out
        s.outq_max = [0, 0, 0]
        s.feed = deque()   # LOAD moves in order: [src, n elements, elements taken, beats given, beats]
        s.drain = deque()  # STORE moves in order: [dmask, n elements, elements taken]
        s.moved = 0        # elements of the current MOVE / REDUCE (a RELAY's reduce)
        s.moved2 = 0       # a RELAY's broadcast elements
        s.unit_left = 0    # edges until a running BIAS / GATHER retires (0: none running)
        s.wait = 0         # timed (FL) compute wait
        s.last_compute = False
        s.n_feed = s.n_drain = 0
        s.n_feed_done = s.n_drain_done = 0
        s.pending = deque()  # queued done marks: (id, n_feed, n_drain)
        s.marks = []         # (mark id, cycle, iteration, stats at the mark)
        s.done_marks = []    # (done id, cycle)
        s.stats = [0] * len(STATES)
        s.q_compute = s.q_io = s.q_unit = s.q_busy = False
        s.sent = [0, 0, 0]
        s.received = [0, 0, 0]  # fwd_in, bwd_in, host_in
        s.done_cycle = None
        s.scratch_max = 0
        s.state = s._state()
        #: timeline records (tracing): ("S", cycle, state) from that cycle on; ("C", cycle, pc,
        #: iteration) an ENG/LOAD/STORE handed to the engine; ("F"/"D", cycle) the next LOAD/STORE
        #: move done (its last element on din/dout in that cycle)
        s.trace = [("S", 0, s.state)] if s.tracing else None

    def is_done(s) -> bool:
        return (s._kind() == isa.HALT and not s.feed and not s.drain and not any(s.outq)
                and s.unit_left == 0)

    def _kind(s):
        if s.boot < 2:
            return _NONE
        return s.prog[s.pc].kind if s.pc < len(s.prog) else isa.HALT

    def _progress(s):
        return (s.pc, s.iter, s.moved, s.moved2, s.unit_left, tuple(m[2] for m in s.feed), tuple(m[3] for m in s.feed),
                tuple(m[2] for m in s.drain), tuple(s.sent))

    def describe(s) -> str:
        if s.is_done():
            return f"{s.node_name}: done"
        parts = []
        if s._kind() == _NONE:
            parts.append("reading its first instruction")
        elif s._kind() != isa.HALT:
            ins = s.prog[s.pc]
            what = ins.describe()
            if ins.kind in isa.STREAM_KINDS:
                what += f" ({s.moved} moved)"
            if ins.kind == isa.RELAY:
                what += f" ({s.moved} reduced, {s.moved2} passed back)"
            parts.append(f"instruction {s.pc}/{len(s.prog)} (iteration {s.iter}) {what}")
        else:
            parts.append("program done")
        for src, n, taken, given, beats in s.feed:
            parts.append(f"move {isa.SRC_NAMES[src]}->din {given}/{beats} beats (in {taken}/{n})")
        for dmask, n, taken in s.drain:
            parts.append(f"move dout->{_dst_names(dmask)} {taken}/{n}")
        for i, q in enumerate(s.outq):
            if q:
                parts.append(f"sending {len(q)} {_OUT[i]} elements")
        return f"{s.node_name}: " + ", ".join(parts)

    # ---- one clock edge ----------------------------------------------------------------------
    def _edge(s, fired, dout_msg, in_msgs, busy):
        if s.boot < 2:  # a cycle of the program memory's first reads: nothing offered, nothing moves
            s._boot_edge(busy)
            return
        f_cmd, f_din, f_dout, f_fin, f_bin, f_hin, f_fout, f_bout, f_hout = fired
        cyc = s.cycle
        s.cycle += 1
        prog = s.prog
        # 1. observe the registers before the edge
        if s.pending:  # (a done mark queued at this edge is checked from the next one)
            mid, nf, nd = s.pending[0]
            if s.n_feed_done >= nf and s.n_drain_done >= nd:
                s.pending.popleft()
                s.done_marks.append((mid, cyc))
        if s.fresh:
            s.fresh = False
            ins = prog[s.pc] if s.pc < len(prog) else None
            if ins is not None and ins.mark:
                s.marks.append((ins.mark, cyc, s.iter, tuple(s.stats)))
            if ins is not None and ins.done:
                s.pending.append((ins.done, s.n_feed, s.n_drain))
        s.stats[s.state] += 1  # the cycle that ended
        head_pre = s.feed[0] if s.feed else None  # the feeder's head move before the edge
        quiet_pre = not s.feed and not s.drain
        scratch_take = s._scratch_beat_ready(len(s.skid) - f_din)
        # 2. handshakes of the cycle that ended
        for i, f in enumerate((f_fout, f_bout, f_hout)):
            if f:
                s.outq[i].popleft()
                s.sent[i] += 1
        io = f_din or f_dout
        compute_fired = False
        retire = False
        tr = s.trace
        if f_cmd:
            ins = prog[s.pc]
            retire = True
            if tr is not None:
                tr.append(("C", cyc, s.pc, s.iter))
            if ins.kind == isa.ENG:
                compute_fired = True
                if s.timed:  # the timing model's occupancy, from the start (cmd_latency after it)
                    e = s.ecfg
                    s.wait = max(0, program.command_cycles(e.P, s._cmd_fields(ins), drain_rows=e.drain_rows,
                                                           wb_latency=e.wb_latency) - 1 + e.cmd_latency)
            elif ins.count > 0:
                if ins.kind == isa.LOAD:
                    s.feed.append([ins.src, ins.count, 0, 0, -(-ins.count // s.E)])
                    s.n_feed += 1
                else:
                    s.drain.append([ins.dmask, ins.count, 0])
                    s.n_drain += 1
            s.last_compute = compute_fired
        if f_din:
            s._din_taken(cyc)
        for i, f in enumerate((f_fin, f_bin, f_hin)):  # fwd_in, bwd_in, host_in
            if f:
                s.received[i] += 1
                io = True
                if s._input_taken(_INPUT_SRC[i], int(in_msgs[i])):
                    retire = True
        if f_dout:
            s._dout_taken(int(dout_msg), cyc)
        # 3. the feeder from the scratch FIFO (one beat per edge)
        if scratch_take:  # (from the head move before the edge, which cannot have retired)
            s._feed_from_scratch(head_pre)
        # 4. the sequencer
        unit = False
        if s.wait > 0:
            s.wait -= 1
        kind = prog[s.pc].kind if s.pc < len(prog) else isa.HALT
        if not retire:
            if s.unit_left:
                unit = True
                retire = s._unit_step()
            elif kind in isa.UNIT_KINDS and quiet_pre:
                unit = True
                s._start_unit(prog[s.pc])
            elif kind == isa.NOP:
                retire = True
        if retire:
            ins = prog[s.pc]
            if ins.lend and s.iter + 1 < ins.lcount:
                s.pc = ins.ltarget
                s.iter += 1
            else:
                s.pc += 1
            s.fresh = True
        if not unit:  # (a running unit accounts for its own appends)
            s.scratch_max = max(s.scratch_max, len(s.scratch))
        # 6. the state of the next cycle (from the registers after the edge, as the RTL's st_state)
        s.q_compute, s.q_io, s.q_unit, s.q_busy = compute_fired, io, unit, busy
        state = s._state()
        if tr is not None and state != s.state:
            tr.append(("S", s.cycle, state))
        s.state = state
        if s.state == S_DONE and s.done_cycle is None:
            s.done_cycle = s.cycle

    def _boot_edge(s, busy):
        s.cycle += 1
        s.stats[s.state] += 1
        s.boot += 1
        s.q_compute, s.q_io, s.q_unit, s.q_busy = False, False, False, busy
        state = s._state()
        if s.trace is not None and state != s.state:
            s.trace.append(("S", s.cycle, state))
        s.state = state

    def _state(s) -> int:
        prog = s.prog
        kind = s._kind()
        quiet = not s.feed and not s.drain
        if s.wait > 0:
            return S_COMPUTE
        if s.q_unit or s.unit_left:
            return S_IO
        if kind in isa.STREAM_KINDS + (isa.RELAY,) and quiet:
            return S_STALL_IN if s._stream_room(prog[s.pc].dmask) else S_STALL_OUT
        if s.q_compute or (s.last_compute and s.q_busy):
            return S_COMPUTE
        if s.q_io:
            return S_IO
        if s.feed and s.feed[0][0] != isa.SRC_SCRATCH and not s.skid:
            return S_STALL_IN
        if s.drain and not s._dout_room():
            return S_STALL_OUT
        if kind != isa.HALT or s.feed or s.drain:
            return S_ENGINE
        if s.is_done():
            return S_DONE
        return S_STALL_OUT

    # ---- the command of the current instruction ------------------------------------------------
    def _cmd_msg(s, ins):
        """The command message of the current instruction (built once per instruction and step
        seed: building a 33-field struct every cycle dominated the CL cluster's time)."""
        key = (s.pc, s.iter if ins.seedstep else 0)
        msg = s._msgs.get(key)
        if msg is None or s._msgs_prog is not s.prog:
            if s._msgs_prog is not s.prog:
                s._msgs, s._msgs_prog = {}, s.prog
            msg = s._msgs[key] = make_cmd(**s._cmd_fields(ins))
        return msg

    def _cmd_fields(s, ins):
        f = dict(ins.cmd)
        if ins.seedstep:
            f["seed"] = s._seed(ins)
        return f

    # ---- outputs -----------------------------------------------------------------------------
    def _outputs(s, in_reset=False) -> tuple:
        """Every output for the next cycle, from the state after the edge."""
        quiet = not s.feed and not s.drain
        kind = s._kind()
        ins = None if kind == _NONE or s.pc >= len(s.prog) else s.prog[s.pc]
        cmd_val = kind in (isa.ENG, isa.LOAD, isa.STORE) and s.wait == 0
        rdy = [0, 0, 0]
        if s.feed:
            src, n, taken, _, _ = s.feed[0]
            if src != isa.SRC_SCRATCH and taken < n and len(s.skid) < 2:
                rdy[_SRC_INDEX[src]] = 1
        if (kind in isa.STREAM_KINDS and quiet and s._stream_room(ins.dmask)
                and (kind == isa.MOVE or len(s.scratch) >= s._lanes(ins.count, s.moved))):
            rdy[_SRC_INDEX[ins.src]] = 1
        if kind == isa.RELAY and quiet:
            n = ins.count
            rdy[0] = int(s.moved < n and len(s.scratch) >= s._lanes(n, s.moved) and len(s.outq[0]) < s.cfg.out_beats)
            rdy[1] = int(s.moved2 < n and len(s.outq[1]) < s.cfg.out_beats)
        dout_rdy = 1 if s.drain and s._dout_room() else 0
        on = 1
        if s.stall_gen is not None and not in_reset and next(s.stall_gen):
            cmd_val, dout_rdy, rdy, on = False, 0, [0, 0, 0], 0
        msg = s._cmd_msg(ins) if cmd_val else None
        din = (on if s.skid else 0, s.skid[0] if s.skid else 0)
        outs = [(on if q else 0, q[0] if q else 0) for q in s.outq]
        if s.status_ports:
            mark = ins.mark if (ins is not None and s.fresh) else 0
            ready = bool(s.pending) and s.n_feed_done >= s.pending[0][1] and s.n_drain_done >= s.pending[0][2]
            status = (int(mark != 0), mark, int(ready), s.pending[0][0] if s.pending else 0, int(s.is_done()))
        else:
            status = (0, 0, 0, 0, 0)
        return int(cmd_val), msg, din, outs, dout_rdy, rdy, status

    def line_trace(s):
        return f"{s.node_name}:{s.pc}.{s.iter}"


def _dst_names(dmask: int) -> str:
    return "+".join(n for b, n in isa.DST_NAMES.items() if dmask & b)
