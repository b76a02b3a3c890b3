"""A timeline of a simulated cluster run as a Chrome / Perfetto trace-event file (JSON), which
opens in ui.perfetto.dev or chrome://tracing.

Recorded by the CL routers and CL links of a run (``train_on_cluster(..., trace=True)``; nodes at
``fl`` or ``cl``, links at ``cl``), turned into trace events here:

* one process per node, with the tracks
  ``engine`` (each compute command a slice named ``op layer``, from the cycle the engine took it
  for the engine timing model's cycles), ``load`` and ``store`` (each LOAD / STORE a slice from
  the cycle the engine took the command to the cycle its last element moved; a residual skip's,
  or its gradient share's, named ``skip of <add>``), and ``router``
  (the router's state in every cycle -- compute, io, stall_in, stall_out, engine, done -- as
  consecutive slices: the same states the report counts);
* one process ``links`` with a track per link: transfers as slices (messages whose flight times
  overlap form one burst; ``args.elements`` and ``args.bytes``), and a counter per link of the
  messages in flight;
* one process ``host``: an instant event when each image's logits are in, and the step marks of
  node 0.

Time stamps are microseconds at the cluster's clock (``ts = cycle / clock_mhz``); every event
carries its cycle in ``args`` too.
"""

from __future__ import annotations

import json
from pathlib import Path

from pymtl_fp import timing
from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.router_config import STATES
from pymtl_fp.engine import msgs

LINKS_PID = 1000
HOST_PID = 0


def chrome_trace(routers, cprog, links, link_names, host_logit_cycles, cycles: int, clock_mhz: float, msg_bits: int,
                 marks=None) -> dict:
    """The trace-event document.  ``routers``: each node's recorded events (RouterCL.trace) and its
    engine's ``EngineConfig``, ``(events, ecfg)``; a compute slice starts ``ecfg.cmd_latency`` cycles
    after the command's handshake (exact unless a command register held it longer, behind a busy
    unit) and lasts the timing model's occupancy; ``links``: each
    link's recorded ``(taken cycles, arrival cycles)`` in ``link_names`` order; ``marks``: node 0's
    labelled marks ``[(label, cycle)]``."""
    us = 1.0 / clock_mhz
    ev = []

    def meta(pid, name, tid=None, tname=None):
        ev.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}})
        if tid is not None:
            ev.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": tname}})

    def slice_(pid, tid, name, cat, start, end, **args):
        ev.append({"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat, "ts": start * us,
                   "dur": (end - start) * us, "args": dict(args, cycle=start, cycles=end - start)})

    for j, ((events, ecfg), prog) in enumerate(zip(routers, cprog.nodes)):
        pid = j + 1
        meta(pid, f"node{j}")
        for tid, name in ((1, "engine"), (2, "load"), (3, "store"), (4, "router")):
            ev.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}})
        loads, stores = [], []
        state_at = None
        for e in events:
            kind = e[0]
            if kind == "S":
                if state_at is not None and e[1] > state_at[0]:
                    slice_(pid, 4, STATES[state_at[1]], "state", state_at[0], e[1])
                state_at = (e[1], e[2])
            elif kind == "C":
                _, cyc, pc, it = e
                ins = prog.ops[pc]
                if ins.kind == isa.ENG:
                    f = {name: int(ins.cmd.get(name, 0)) for name, _ in msgs.CMD_FIELDS}
                    op = msgs.OP_NAMES[f["op"]]
                    occ = timing.engine_compute_cycles(ecfg, op, f)
                    layer = prog.notes.get(pc, "")
                    start = cyc + ecfg.cmd_latency
                    slice_(pid, 1, f"{op} {layer}".strip(), "compute", start, start + max(1, occ), op=op, layer=layer,
                           instruction=pc, iteration=it)
                elif ins.count > 0:
                    (loads if ins.kind == isa.LOAD else stores).append((cyc, ins, pc, it))
            elif kind in ("F", "D"):
                q = loads if kind == "F" else stores
                cyc, ins, pc, it = q.pop(0)
                note = prog.notes.get(pc, "")  # (a residual skip's move is named by its add)
                slice_(pid, 2 if kind == "F" else 3, f"{ins.describe()} {note}".strip(),
                       "load" if kind == "F" else "store", cyc, e[1] + 1, elements=ins.count, instruction=pc,
                       iteration=it, **({"note": note} if note else {}))
        if state_at is not None and cycles > state_at[0]:
            slice_(pid, 4, STATES[state_at[1]], "state", state_at[0], cycles)
    meta(LINKS_PID, "links")
    nbytes = msg_bits / 8
    for tid, (name, (taken, arrived)) in enumerate(zip(link_names, links), start=1):
        ev.append({"ph": "M", "pid": LINKS_PID, "tid": tid, "name": "thread_name", "args": {"name": name}})
        # bursts: messages whose flights overlap or touch
        start = end = None
        n = 0
        for t, a in zip(taken, arrived):
            if start is not None and t <= end:
                end, n = max(end, a + 1), n + 1
                continue
            if start is not None:
                slice_(LINKS_PID, tid, "transfer", "link", start, end, elements=n, bytes=n * nbytes, link=name)
            start, end, n = t, a + 1, 1
        if start is not None:
            slice_(LINKS_PID, tid, "transfer", "link", start, end, elements=n, bytes=n * nbytes, link=name)
        # messages in flight (taken, not yet arrived), at every cycle it changes
        delta = {}
        for t in taken:
            delta[t] = delta.get(t, 0) + 1
        for a in arrived:
            delta[a + 1] = delta.get(a + 1, 0) - 1
        level = 0
        for cyc in sorted(delta):
            if delta[cyc]:
                level += delta[cyc]
                ev.append({"ph": "C", "pid": LINKS_PID, "name": f"{name} in flight", "ts": cyc * us,
                           "args": {"messages": level}})
    meta(HOST_PID, "host", 1, "images")
    for b, cyc in enumerate(host_logit_cycles):
        ev.append({"ph": "i", "s": "t", "pid": HOST_PID, "tid": 1, "name": f"logits of image {b}", "ts": cyc * us,
                   "args": {"cycle": cyc, "image": b}})
    for label, cyc in marks or ():
        if label[0] in ("step", "end"):
            ev.append({"ph": "i", "s": "g", "pid": HOST_PID, "tid": 1, "name": f"{label[0]} {label[1]}",
                       "ts": cyc * us, "args": {"cycle": cyc}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"clock_mhz": clock_mhz, "cycles": cycles, "generator": "pymtl-fp"}}


def write_trace(doc: dict, path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    return path
