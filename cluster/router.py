"""The router/DMA of a node, modelled at CL (Python behaviour behind val/rdy ports) at every level.

It joins the node's four link ports to its engine's streams and runs the node program of
:mod:`pymtl_fp.cluster.compile`.  Like a DMA with separate read and write channels, it has three parts
that run concurrently:

* the **issue stream** walks the program in order: ``cmd`` micro-ops are pushed on the engine's
  ``cmd`` port; a LOAD's data ``move`` (the micro-op right after it) is handed to the *feeder*
  and a STORE's to the *drainer* when the engine accepts the command, so the next command is
  offered at once (an engine that overlaps LOAD/STORE with compute takes it; a serial engine
  takes it when idle); ``host_data`` (initial weights from the host side channel) and ``call``
  (the scalar unit: bias SGD) act on the scratch FIFO, after every earlier LOAD/STORE is done;
  a ``move`` that is not a LOAD's or STORE's (link to link, e.g. ``bwd_in -> bwd_out``) runs in
  the issue stream, after every earlier LOAD/STORE is done;
* the **feeder** feeds ``din`` from each LOAD's source (a link input, the scratch FIFO), in
  LOAD order, through a 2-entry skid FIFO, one element per cycle at full rate;
* the **drainer** takes each STORE's elements from ``dout``, in STORE order, to its destination
  (a link's **output buffer** of ``out_depth`` elements, default 4096, which drains on its own,
  so the engine goes on while a slow link drains — the report gives each buffer's peak
  occupancy; the scratch FIFO; the host side channel; or several of them at once,
  ``("multi", (dst, ...))``, e.g. a pooled output copied to the next layer and sent on);

``timed=True`` (used when the engine is the untimed FL model): after a compute command the
issue stream waits the engine timing model's cycle count before issuing anything else, so an FL
cluster has the RTL's compute timing to first order ("FL with timed compute").

Statistics, one state per cycle: ``compute`` (a compute command is executing: the engine is
busy after one, or the timed wait), else ``io`` (an element moved on ``din``/``dout`` or between
links), else ``stall_in`` (waiting for a link input), ``stall_out`` (a link output buffer is
full, or the program is over and its last sends are draining), ``engine`` (waiting for the
engine to accept a command or stream), ``done``.  ``mark_stats`` keeps a copy of the counters at
every program mark.  A ``("done_mark", label)`` micro-op records in ``done_marks`` the cycle in
which every LOAD and STORE issued before it has moved its last element (an image leaving or
arriving at a node), without holding the issue stream.
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
        from pymtl_fp.sim import stall_pattern

        s.stall_gen = stall_pattern(s.stall[1], s.stall[0]) if s.stall and s.stall[0] > 0 else None
        s.pc = 0
        s.cycle = 0
        s.scratch = deque()
        s.skid = deque()
        s.outq = {p: deque() for p in LINK_OUT}  # the DMA's output buffers towards the links
        s.outq_max = {p: 0 for p in LINK_OUT}
        s.feed = deque()   # LOAD data moves, in order: [src, n, taken from src, given to din]
        s.drain = deque()  # STORE data moves, in order: [dst, n, taken from dout]
        s.moved = 0        # elements of the issue stream's own link-to-link move
        s.wait = 0
        s.last_compute = False
        s.host = {}
        s.marks = []
        s.mark_stats = []  # (label, copy of ``stats`` when the mark was passed): per-phase breakdowns
        s.done_marks = []  # (label, cycle when the LOADs/STOREs before the mark had completed)
        s.pending_marks = deque()  # (label, feeds issued, drains issued) before a done_mark
        s.n_feed = s.n_drain = 0            # LOAD / STORE data moves handed over
        s.n_feed_done = s.n_drain_done = 0  # ... and completed
        s.stats = {k: 0 for k in STATES}
        s.sent = {p: 0 for p in LINK_OUT}
        s.received = {p: 0 for p in LINK_IN}
        s.macs = 0
        s.done_cycle = None
        s.scratch_max = 0
        s.op_counts = {}

    def is_done(s) -> bool:
        return (s.pc >= len(s.ops) and not s.feed and not s.drain and not s.outq["fwd_out"]
                and not s.outq["bwd_out"])

    def _progress(s):
        return (s.pc, s.moved, tuple(m[2] for m in s.feed), tuple(m[3] for m in s.feed),
                tuple(m[2] for m in s.drain), s.sent["fwd_out"], s.sent["bwd_out"])

    def describe(s) -> str:
        if s.is_done():
            return f"{s.node_name}: done"
        parts = []
        if s.pc < len(s.ops):
            op = s.ops[s.pc]
            if op[0] == "move":
                parts.append(f"op {s.pc}/{len(s.ops)} move {op[1]}->{op[2]} {s.moved}/{op[3]}")
            elif op[0] == "cmd":
                parts.append(f"op {s.pc}/{len(s.ops)} engine command {op[2]['op']}")
            else:
                parts.append(f"op {s.pc}/{len(s.ops)} {op[0]}")
        else:
            parts.append("program done")
        for src, n, taken, given in s.feed:
            parts.append(f"move {src}->din {given}/{n} (in {taken})")
        for dst, n, taken in s.drain:
            parts.append(f"move dout->{dst if isinstance(dst, str) else 'host'} {taken}/{n}")
        for port in LINK_OUT:
            if s.outq[port]:
                parts.append(f"sending {len(s.outq[port])} {port} elements")
        return f"{s.node_name}: " + ", ".join(parts)

    def _deliver(s, dst, v):
        """One element from ``dout`` to its destination (``("multi", (d0, d1, ...))``: to each)."""
        if dst[0] == "multi":
            for d in dst[1]:
                s._deliver(d, v)
        elif dst in LINK_OUT:
            s.outq[dst].append(v)
            s.outq_max[dst] = max(s.outq_max[dst], len(s.outq[dst]))
        elif dst == "scratch":
            s.scratch.append(v)
        else:  # ("host", key)
            s.host.setdefault(dst[1], []).append(v)

    # ---- one clock edge ----------------------------------------------------------------------
    def _step(s, fired, ins, busy):
        s.cycle += 1
        o = s._quiet()
        io = fired["din"] or fired["dout"]
        compute_fired = False
        # 1. account for the handshakes of the cycle that just ended
        for port in LINK_OUT:  # the output buffers drain on their own
            if fired[port]:
                s.outq[port].popleft()
                s.sent[port] += 1
        if fired["cmd"]:
            op = s.ops[s.pc]
            info = op[2]
            s.op_counts[info["op"]] = s.op_counts.get(info["op"], 0) + 1
            s.macs += info.get("macs", 0)
            s.last_compute = compute_fired = "cycles" in info
            if s.timed and compute_fired:
                s.wait = max(0, info["cycles"] - 1)
            s.pc += 1
            if info["op"] in ("load", "store"):  # hand its data move to the feeder / drainer
                _, src, dst, n = s.ops[s.pc]
                s.pc += 1
                if n > 0:
                    if dst == "din":
                        s.feed.append([src, n, 0, 0])
                        s.n_feed += 1
                    else:
                        s.drain.append([dst, n, 0])
                        s.n_drain += 1
        if fired["din"]:
            s.skid.popleft()
            head = s.feed[0]
            head[3] += 1
            if head[3] == head[1]:
                s.feed.popleft()
                s.n_feed_done += 1
        for src in LINK_IN:
            if fired[src]:
                v = from_word(int(ins[src]), s.bits)
                s.received[src] += 1
                io = True
                if s.feed and s.feed[0][0] == src and s.feed[0][2] < s.feed[0][1]:
                    s.skid.append(v)
                    s.feed[0][2] += 1
                else:  # the issue stream's link-to-link move
                    s.outq[s.ops[s.pc][2]].append(v)
                    port = s.ops[s.pc][2]
                    s.outq_max[port] = max(s.outq_max[port], len(s.outq[port]))
                    s.moved += 1
                    if s.moved == s.ops[s.pc][3]:
                        s.pc += 1
                        s.moved = 0
        if fired["dout"]:
            head = s.drain[0]
            s._deliver(head[0], from_word(int(ins["dout"]), s.bits))
            head[2] += 1
            if head[2] == head[1]:
                s.drain.popleft()
                s.n_drain_done += 1
        # 2. the issue stream: micro-ops that take no handshake, then the current one
        quiet = not s.feed and not s.drain  # every earlier LOAD/STORE is done
        while s.pc < len(s.ops) and s.wait == 0:
            op = s.ops[s.pc]
            kind = op[0]
            if kind == "mark":
                s.marks.append((op[1], s.cycle))
                s.mark_stats.append((op[1], dict(s.stats)))
                s.pc += 1
                continue
            if kind == "done_mark":
                s.pending_marks.append((op[1], s.n_feed, s.n_drain))
                s.pc += 1
                continue
            if kind in ("host_data", "call") and quiet:
                if kind == "host_data":
                    s.scratch.extend(op[1])
                else:
                    s.scratch = deque(op[1](list(s.scratch)))
                s.scratch_max = max(s.scratch_max, len(s.scratch))
                s.pc += 1
                continue
            break
        while s.pending_marks and s.n_feed_done >= s.pending_marks[0][1] \
                and s.n_drain_done >= s.pending_marks[0][2]:
            s.done_marks.append((s.pending_marks.popleft()[0], s.cycle))
        # 3. drive the ports
        for port in LINK_OUT:
            if s.outq[port]:
                o["val"][port] = 1
                o["msg"][port] = to_word(s.outq[port][0], s.bits)
        state = None
        if s.wait > 0:
            s.wait -= 1
            state = "compute"
        elif s.pc < len(s.ops):
            op = s.ops[s.pc]
            if op[0] == "cmd":
                o["cmd_val"] = 1
                o["cmd_msg"] = op[1]
            elif op[0] == "move" and quiet:  # link to link
                _, src, dst, n = op
                room = len(s.outq[dst]) < s.out_depth
                o["rdy"][src] = 1 if room else 0
                state = "stall_in" if room else "stall_out"
        if s.feed:
            src, n, taken, _ = s.feed[0]
            if src == "scratch":
                while len(s.skid) < 2 and taken < n and s.scratch:
                    s.skid.append(s.scratch.popleft())
                    taken += 1
                s.feed[0][2] = taken
            elif taken < n and len(s.skid) < 2:
                o["rdy"][src] = 1
        if s.skid:
            o["val"]["din"] = 1
            o["msg"]["din"] = to_word(s.skid[0], s.bits)
        if s.drain:
            dst = s.drain[0][0]
            dsts = dst[1] if dst[0] == "multi" else (dst,)
            o["rdy"]["dout"] = 0 if any(d in LINK_OUT and len(s.outq[d]) >= s.out_depth for d in dsts) else 1
        # 4. what this cycle was
        if state is None:
            if compute_fired or (s.last_compute and busy):
                state = "compute"
            elif io:
                state = "io"
            elif s.feed and s.feed[0][0] in LINK_IN and not s.skid:
                state = "stall_in"
            elif s.drain and not o["rdy"]["dout"]:
                state = "stall_out"
            elif s.pc < len(s.ops) or s.feed or s.drain:
                state = "engine"
            elif s.is_done():
                state = "done"
                if s.done_cycle is None:
                    s.done_cycle = s.cycle
            else:
                state = "stall_out"  # the program is over, its last sends are draining
        s.scratch_max = max(s.scratch_max, len(s.scratch))
        s.stats[state] += 1
        return o

    def line_trace(s):
        return f"{s.node_name}:{s.pc}"
