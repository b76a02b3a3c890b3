"""The router/DMA of a node, modelled at CL (Python behaviour behind val/rdy ports) at every level.

It joins the node's four link ports to its engine's streams and runs the node program of
:mod:`cluster.compile`, one micro-operation after the other:

* ``cmd`` micro-ops are pushed on the engine's ``cmd`` port;
* ``move`` micro-ops forward elements between a source (engine ``dout``, a link input, the
  scratch FIFO) and a destination (engine ``din``, a link output, the scratch FIFO, the host side
  channel), one element per cycle at full rate; towards ``din`` through a 2-entry skid FIFO,
  towards a link through that link's **output buffer** (``out_depth`` elements, default 4096),
  which drains on its own: a send completes when its last element is buffered, so the engine
  goes on computing while a slow link drains (the report gives each buffer's peak occupancy);
* ``host_data`` (initial weights from the host side channel) and ``call`` (the scalar unit: bias
  SGD) act on the scratch FIFO in one cycle.

``timed=True`` (used when the engine is the untimed FL model): after a compute command the
router waits the engine timing model's cycle count before issuing anything else, so an FL
cluster has the RTL's compute timing to first order ("FL with timed compute").

Statistics per cycle: ``compute`` (a compute command is executing: the engine is busy, or the
timed wait), ``io`` (elements moved), ``stall_in`` (waiting for a link input), ``stall_out``
(a link output is not ready), ``engine`` (waiting for the engine to accept a command or stream),
``done``.
"""

from __future__ import annotations

from collections import deque

from pymtl3 import Component, InPort, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.engine.msgs import cmd_type, data_type, from_word, to_word

LINK_IN = ("fwd_in", "bwd_in")
LINK_OUT = ("fwd_out", "bwd_out")
STATES = ("compute", "io", "stall_in", "stall_out", "engine", "done")


class RouterCL(Component):
    def construct(s, ecfg, ops, timed=False, name="node", stall=None, out_depth=4096):
        s.ecfg = ecfg
        s.DataT = data_type(ecfg)
        s.bits = ecfg.stream_bits
        # engine side
        s.cmd = SendIfcRTL(cmd_type())
        s.din = SendIfcRTL(s.DataT)
        s.dout = RecvIfcRTL(s.DataT)
        s.busy = InPort()
        # link side
        s.fwd_in = RecvIfcRTL(s.DataT)
        s.bwd_in = RecvIfcRTL(s.DataT)
        s.fwd_out = SendIfcRTL(s.DataT)
        s.bwd_out = SendIfcRTL(s.DataT)
        s.ops = ops
        s.timed = timed
        s.node_name = name
        s.stall = stall  # (probability, seed): random cycles with every val/rdy low
        s.out_depth = out_depth  # elements each link output buffer holds
        s._reset_state()

        @update_ff
        def up_router():
            if s.reset:
                s._reset_state()
                s.cmd.val <<= 0
                s.din.val <<= 0
                s.dout.rdy <<= 0
                s.fwd_in.rdy <<= 0
                s.bwd_in.rdy <<= 0
                s.fwd_out.val <<= 0
                s.bwd_out.val <<= 0
                return
            fired = {
                "cmd": bool(s.cmd.val & s.cmd.rdy), "din": bool(s.din.val & s.din.rdy),
                "fwd_out": bool(s.fwd_out.val & s.fwd_out.rdy), "bwd_out": bool(s.bwd_out.val & s.bwd_out.rdy),
                "dout": bool(s.dout.val & s.dout.rdy), "fwd_in": bool(s.fwd_in.val & s.fwd_in.rdy),
                "bwd_in": bool(s.bwd_in.val & s.bwd_in.rdy),
            }
            ins = {"dout": s.dout.msg, "fwd_in": s.fwd_in.msg, "bwd_in": s.bwd_in.msg}
            o = s._step(fired, ins, bool(s.busy))
            if s.stall_gen is not None and next(s.stall_gen):
                o = s._quiet()
            s.cmd.val <<= o["cmd_val"]
            if o["cmd_val"]:
                s.cmd.msg <<= o["cmd_msg"]
            s.din.val <<= o["val"]["din"]
            s.din.msg <<= s.DataT(o["msg"]["din"])
            s.fwd_out.val <<= o["val"]["fwd_out"]
            s.fwd_out.msg <<= s.DataT(o["msg"]["fwd_out"])
            s.bwd_out.val <<= o["val"]["bwd_out"]
            s.bwd_out.msg <<= s.DataT(o["msg"]["bwd_out"])
            s.dout.rdy <<= o["rdy"]["dout"]
            s.fwd_in.rdy <<= o["rdy"]["fwd_in"]
            s.bwd_in.rdy <<= o["rdy"]["bwd_in"]

    # ---- state -----------------------------------------------------------------------------
    def _quiet(s):
        return {"cmd_val": 0, "cmd_msg": None, "val": {"din": 0, "fwd_out": 0, "bwd_out": 0},
                "msg": {"din": 0, "fwd_out": 0, "bwd_out": 0}, "rdy": {"dout": 0, "fwd_in": 0, "bwd_in": 0}}

    def _reset_state(s):
        from tb.stream import stall_pattern

        s.stall_gen = stall_pattern(s.stall[1], s.stall[0]) if s.stall and s.stall[0] > 0 else None
        s.pc = 0
        s.cycle = 0
        s.scratch = deque()
        s.skid = deque()
        s.outq = {p: deque() for p in LINK_OUT}  # the DMA's output buffers towards the links
        s.outq_max = {p: 0 for p in LINK_OUT}
        s.moved_in = 0   # elements accepted from the source of the current move
        s.moved_out = 0  # elements delivered to its destination
        s.cmd_pending = False
        s.wait = 0
        s.last_compute = False
        s.host = {}
        s.marks = []
        s.mark_stats = []  # (label, copy of ``stats`` when the mark was passed): per-phase breakdowns
        s.stats = {k: 0 for k in STATES}
        s.sent = {p: 0 for p in LINK_OUT}
        s.received = {p: 0 for p in LINK_IN}
        s.macs = 0
        s.done_cycle = None
        s.scratch_max = 0
        s.op_counts = {}

    def is_done(s) -> bool:
        return s.pc >= len(s.ops) and not s.outq["fwd_out"] and not s.outq["bwd_out"]

    def _progress(s):
        return (s.pc, s.moved_in, s.moved_out, s.sent["fwd_out"], s.sent["bwd_out"])

    def describe(s) -> str:
        if s.is_done():
            return f"{s.node_name}: done"
        if s.pc >= len(s.ops):
            return (f"{s.node_name}: program done, sending {len(s.outq['fwd_out'])} fwd_out / "
                    f"{len(s.outq['bwd_out'])} bwd_out elements")
        op = s.ops[s.pc]
        if op[0] == "move":
            return (f"{s.node_name}: op {s.pc}/{len(s.ops)} move {op[1]}->{op[2]} "
                    f"{s.moved_out}/{op[3]} (in {s.moved_in})")
        if op[0] == "cmd":
            return f"{s.node_name}: op {s.pc}/{len(s.ops)} engine command {op[2]['op']}"
        return f"{s.node_name}: op {s.pc}/{len(s.ops)} {op[0]}"

    # ---- one clock edge ----------------------------------------------------------------------
    def _step(s, fired, ins, busy):
        s.cycle += 1
        o = s._quiet()
        state = None
        # 1. account for the handshakes of the cycle that just ended
        for port in LINK_OUT:  # the output queues drain on their own
            if fired[port]:
                s.outq[port].popleft()
                s.sent[port] += 1
        if s.pc < len(s.ops):
            op = s.ops[s.pc]
            if op[0] == "cmd" and fired["cmd"]:
                info = op[2]
                s.op_counts[info["op"]] = s.op_counts.get(info["op"], 0) + 1
                s.macs += info.get("macs", 0)
                s.last_compute = "cycles" in info
                if s.timed and "cycles" in info:
                    s.wait = max(0, info["cycles"] - 1)
                s.pc += 1
                state = "compute" if s.last_compute else "engine"
            elif op[0] == "move":
                _, src, dst, n = op
                if dst == "din" and fired["din"]:
                    s.skid.popleft()
                    s.moved_out += 1
                    state = "io"
                if src in ("dout", "fwd_in", "bwd_in") and fired[src]:
                    v = from_word(int(ins[src]), s.bits)
                    s.moved_in += 1
                    if src in LINK_IN:
                        s.received[src] += 1
                    state = "io"
                    if dst == "din":
                        s.skid.append(v)
                    elif dst in LINK_OUT:
                        s.outq[dst].append(v)
                        s.outq_max[dst] = max(s.outq_max[dst], len(s.outq[dst]))
                        s.moved_out += 1
                    elif dst == "scratch":
                        s.scratch.append(v)
                        s.moved_out += 1
                    else:  # ("host", key)
                        s.host.setdefault(dst[1], []).append(v)
                        s.moved_out += 1
                if s.moved_out >= n:
                    s.pc += 1
                    s.moved_in = s.moved_out = 0
        # 2. run the micro-ops that take no handshake, then drive the ports for the current one
        while s.pc < len(s.ops):
            op = s.ops[s.pc]
            kind = op[0]
            if kind == "mark":
                s.marks.append((op[1], s.cycle))
                s.mark_stats.append((op[1], dict(s.stats)))
                s.pc += 1
                continue
            if kind == "host_data":
                s.scratch.extend(op[1])
                s.scratch_max = max(s.scratch_max, len(s.scratch))
                s.pc += 1
                continue
            if kind == "call":
                vals = list(s.scratch)
                s.scratch = deque(op[1](vals))
                s.pc += 1
                continue
            break
        for port in LINK_OUT:
            if s.outq[port]:
                o["val"][port] = 1
                o["msg"][port] = to_word(s.outq[port][0], s.bits)
        if s.pc >= len(s.ops):
            if s.is_done():
                if s.done_cycle is None:
                    s.done_cycle = s.cycle
                s.stats["done"] += 1
            else:
                s.stats["stall_out"] += 1  # the program is over, its last sends are draining
            return o
        op = s.ops[s.pc]
        if s.wait > 0:
            s.wait -= 1
            s.stats["compute"] += 1
            return o
        if op[0] == "cmd":
            o["cmd_val"] = 1
            o["cmd_msg"] = op[1]
            if state is None:
                state = "compute" if (s.last_compute and busy) else "engine"
        else:  # move
            _, src, dst, n = op
            want = n - s.moved_in
            if src == "scratch":
                # scratch -> din: feed the skid buffer directly
                while len(s.skid) < 2 and want > 0:
                    s.skid.append(s.scratch.popleft())
                    s.moved_in += 1
                    want -= 1
            elif want > 0:
                if dst == "din":
                    room = len(s.skid) < 2
                elif dst in LINK_OUT:
                    room = len(s.outq[dst]) < s.out_depth
                else:
                    room = True
                o["rdy"][src] = 1 if room else 0
            if dst == "din" and s.skid:
                o["val"]["din"] = 1
                o["msg"]["din"] = to_word(s.skid[0], s.bits)
            if state is None:
                if src in LINK_IN and not s.skid:
                    state = "stall_in"
                elif dst in LINK_OUT and len(s.outq[dst]) >= s.out_depth:
                    state = "stall_out"
                elif s.last_compute and busy:
                    state = "compute"
                else:
                    state = "engine"
        s.scratch_max = max(s.scratch_max, len(s.scratch))
        s.stats[state] += 1
        return o

    def line_trace(s):
        return f"{s.node_name}:{s.pc}"
