"""Activity of a simulated node: what the energy model prices, counted per training phase.

Two kinds of counts, both identical at every level (FL, CL, RTL, Verilator) because every level
executes the same node program cycle for cycle (``tests/test_cluster_verilated.py`` compares
them):

* **from the executed instruction stream** (the program's loop body ``steps`` times, the rest
  once): per engine command, useful MACs at the engine's operand width
  (:func:`pymtl_fp.timing.useful_macs`), clocked MAC-lane cycles (``P*P`` x the command's compute
  cycles: :func:`pymtl_fp.timing.compute_cycles` with the engine's ``drain_rows``) and the
  engine's compute cycles, and buffer traffic by the engine's dataflow
  (:func:`command_traffic`), by phase and by buffer;
* **measured by the simulation** (the router's status counters, the same at CL and RTL):
  elements each node sent on its link outputs and to the host, cycles in each router state
  (busy: ``compute``, ``io``, ``engine``; waiting: ``stall_in``, ``stall_out``; ``done``), and
  the run's cycles.

Phases (the split the report gives): ``forward`` (``fwd``, ``pool_fwd``), ``backward_data``
(``bwd_data``, ``pool_bwd``), ``weight_gradient`` (``bwd_weight``), ``update`` (``update`` and
the router's ``BIAS`` scalar unit), ``communication`` (LOAD/STORE buffer traffic, ``MOVE``,
``GATHER`` and every link bit).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pymtl_fp import timing
from pymtl_fp.cluster import isa
from pymtl_fp.engine.encoding import BUF, BUF_NAMES, OP_NAMES

PHASES = ("forward", "backward_data", "weight_gradient", "update", "communication")
OP_PHASE = {"fwd": "forward", "pool_fwd": "forward", "bwd_data": "backward_data", "pool_bwd": "backward_data",
            "bwd_weight": "weight_gradient", "update": "update", "load": "communication",
            "store": "communication"}
#: router states in which the node does work (the rest wait)
BUSY_STATES = ("compute", "io", "engine")


def buffer_bits(ecfg, buf: str) -> int:
    """Bits of one element of engine buffer ``buf``: X activations, D gradients, O results (the
    wider of the two), W weights, G weight gradients and B bias sums (accumulator width)."""
    return {"X": ecfg.act_bits, "D": ecfg.grad_bits, "O": max(ecfg.act_bits, ecfg.grad_bits),
            "W": ecfg.weight_bits, "G": ecfg.acc_bits, "B": ecfg.acc_bits}[buf]


def command_traffic(ecfg, op: str, f: dict) -> tuple:
    """``({buffer: read bits}, {buffer: write bits})`` of the engine's buffers (``X``, ``D``,
    ``O``, ``W``, ``G``, ``B``) for one command with fields ``f``.

    The dataflow model (one operand word of each source per loop step, results written once):
    ``fwd`` reads an X word (``P`` elements) and a W word (``P*P``) per step and writes its
    ``N*KT*Ho*Wo`` output words to O; ``bwd_data`` the same with D for X, writing ``N*CT*H*W``
    words; ``bwd_weight`` reads an X and a D word per accumulation step and drains the
    ``KT*CT*R*S`` weight-gradient tiles (``P*P`` each) to G and the bias sums to B; ``update``
    reads a W row and a G row and writes the W row (``KT*CT*R*S*P`` rows); pooling reads one X
    (forward) or D (backward) word per window tap and writes the pooled or unpooled map to O;
    LOAD writes and STORE reads ``count`` elements of the target buffer."""
    P = ecfg.rows
    b = {k: buffer_bits(ecfg, k) for k in BUF}
    g = {k: int(f.get(k, 0)) for k in ("n", "ct", "kt", "h", "w", "ho", "wo", "r", "s", "pk", "count")}
    if op in ("load", "store"):
        buf = BUF_NAMES[int(f.get("target", 0))]
        moved = {buf: g["count"] * b[buf]}
        return ({}, moved) if op == "load" else (moved, {})
    if op in ("fwd", "bwd_data"):
        steps = timing.conv_steps(P, op, f)
        src = "X" if op == "fwd" else "D"
        outs = g["n"] * (g["kt"] * g["ho"] * g["wo"] if op == "fwd" else g["ct"] * g["h"] * g["w"])
        return {src: steps * P * b[src], "W": steps * P * P * b["W"]}, {"O": outs * P * b["O"]}
    if op == "bwd_weight":
        steps = g["kt"] * g["ct"] * sum(map(sum, timing.bwd_weight_tile_lengths(f)))  # accumulation steps
        tiles = g["kt"] * g["ct"] * g["r"] * g["s"]
        return ({"X": steps * P * b["X"], "D": steps * P * b["D"]},
                {"G": tiles * P * P * b["G"], "B": g["kt"] * P * b["B"]})
    if op in ("pool_fwd", "pool_bwd"):
        windows = g["n"] * g["ct"] * g["ho"] * g["wo"]
        src = "X" if op == "pool_fwd" else "D"
        outs = windows if op == "pool_fwd" else g["n"] * g["ct"] * g["h"] * g["w"]
        return {src: windows * g["pk"] * g["pk"] * P * b[src]}, {"O": outs * P * b["O"]}
    if op == "update":
        rows = g["kt"] * g["ct"] * g["r"] * g["s"] * P
        return {"W": rows * P * b["W"], "G": rows * P * b["G"]}, {"W": rows * P * b["W"]}
    raise ValueError(f"unknown engine operation {op!r}")


@dataclass
class NodeActivity:
    """One node's activity over a run (per-phase dicts keyed by :data:`PHASES`)."""

    node: int
    P: int
    mac_bits: int                                        #: the MAC operands' width
    macs: dict = field(default_factory=dict)             #: useful multiply-accumulates
    lane_cycles: dict = field(default_factory=dict)      #: P*P x compute cycles (clocked MAC lanes)
    read_bits: dict = field(default_factory=dict)        #: engine buffer reads (by phase)
    write_bits: dict = field(default_factory=dict)       #: engine buffer writes (by phase)
    buffer_reads: dict = field(default_factory=dict)     #: engine buffer reads in bits, by buffer
    buffer_writes: dict = field(default_factory=dict)    #: engine buffer writes in bits, by buffer
    scalar_elems: dict = field(default_factory=dict)     #: elements through the router's BIAS / GATHER / MOVE
    link_bits: int = 0                                   #: bits sent on this node's link outputs (measured)
    host_bits: int = 0                                   #: bits sent to the host side channel (measured)
    busy_cycles: int = 0                                 #: cycles in a busy router state (measured)
    engine_cycles: int = 0                               #: cycles the engine computes (MAC array clocked)
    cycles: int = 0                                      #: the run's cycles

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _add(d: dict, key: str, v: int) -> None:
    d[key] = d.get(key, 0) + int(v)


def node_activity(j: int, ecfg, prog, log, steps: int, cycles: int, msg_bits: int, host_bits: int) -> NodeActivity:
    """The activity of node ``j`` (engine ``ecfg``, :class:`~pymtl_fp.cluster.compiler.program.NodeProgram`
    ``prog``, :class:`~pymtl_fp.cluster.hw.observe.RouterLog` ``log``) over a run of ``steps`` steps
    and ``cycles`` cycles; ``msg_bits``: bits of one link message (one element), ``host_bits``:
    bits of one element on the host channel."""
    P = ecfg.rows
    a = NodeActivity(j, P, max(ecfg.act_bits, ecfg.weight_bits, ecfg.grad_bits))
    for d in (a.macs, a.lane_cycles, a.read_bits, a.write_bits, a.scalar_elems):
        d.update(dict.fromkeys(PHASES, 0))
    for d in (a.buffer_reads, a.buffer_writes):
        d.update(dict.fromkeys(BUF, 0))
    lo, hi = prog.loop
    for i, ins in enumerate(prog.ops):
        times = steps if lo <= i <= hi else 1
        if ins.kind in (isa.ENG, isa.LOAD, isa.STORE):
            op = OP_NAMES[ins.field("op")]
            f = {name: ins.field(name) for name, _ in isa.CMD_FIELDS}
            ph = OP_PHASE[op]
            rd, wr = command_traffic(ecfg, op, f)
            _add(a.read_bits, ph, sum(rd.values()) * times)
            _add(a.write_bits, ph, sum(wr.values()) * times)
            for buf, v in rd.items():
                _add(a.buffer_reads, buf, v * times)
            for buf, v in wr.items():
                _add(a.buffer_writes, buf, v * times)
            if op in timing.COMPUTE_OPS:
                _add(a.macs, ph, prog.useful_macs.get(i, timing.useful_macs(op, f)) * times)
                _add(a.lane_cycles, ph, P * P * timing.engine_compute_cycles(ecfg, op, f) * times)
        elif ins.kind in (isa.BIAS, isa.GATHER, isa.MOVE):
            if ins.kind == isa.BIAS:  # [b, db] in, b out
                _add(a.scalar_elems, "update", 3 * ins.count * times)
            else:
                _add(a.scalar_elems, "communication", ins.count * times)
    a.link_bits = (log.sent.get("fwd_out", 0) + log.sent.get("bwd_out", 0)) * msg_bits
    a.host_bits = log.sent.get("host_out", 0) * host_bits
    a.busy_cycles = sum(log.stats.get(s, 0) for s in BUSY_STATES)
    a.engine_cycles = sum(a.lane_cycles.values()) // (P * P)
    a.cycles = int(cycles)
    return a
