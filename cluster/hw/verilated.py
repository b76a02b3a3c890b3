"""The whole RTL cluster Verilated, driven by a compiled C++ bench (:mod:`pymtl_fp.cxxsim`): Python
crosses into C++ once per image (to answer its logits with the loss gradient), not once per cycle.

Two builds of the same cluster, with the same ports, cycles and results: ``joined`` (the default)
Verilates each distinct node and link module once and joins the instances in C++
(:mod:`pymtl_fp.cluster.hw.verilated_split`): a build costs one small bench once its modules are
built, whatever the node count; ``flat`` Verilates the whole
:class:`~pymtl_fp.cluster.hw.ClusterNet.ClusterRTL` as one model (the Verilog a vendor flow gets),
and is the one that writes a VCD.

:func:`cluster_verilog` translates :class:`~pymtl_fp.cluster.hw.ClusterNet.ClusterRTL` once per
configuration and source tree (cached in a directory every process shares: the key is the module
name, which encodes every elaboration parameter, and a hash of the RTL sources);
:class:`VerilatedCluster` builds (or finds) the bench, writes the node programs through the program
bus while reset is high, streams the images and every node's initial weights, and runs training
steps with the same host behaviour as the PyMTL3 host
(:class:`~pymtl_fp.cluster.hw.host.HostModel`), so its cycles equal the CL cluster's.
"""

from __future__ import annotations

from pathlib import Path

from pymtl_fp import cxxsim
from pymtl_fp.cluster import isa
from pymtl_fp.cluster.config import ClusterError, link_plan
from pymtl_fp.cluster.hw.ClusterNet import cluster_module_name
from pymtl_fp.cluster.hw.host_side import side_beats
from pymtl_fp.cluster.hw.observe import make_log
from pymtl_fp.cluster.hw.router_config import BOOT_EDGES, STATES, status_ports
from pymtl_fp.cluster.hw.verilated_split import translated_once
from pymtl_fp.cxxsim import Ports, Sig
from pymtl_fp.engine.encoding import unpack_beat


def cluster_verilog(ccfg, rcfgs, faults: bool = False) -> tuple[Path, str, Path]:
    """``(verilog file, top module name, waivers file)`` of the RTL cluster, translated once."""
    from pymtl_fp.cluster.hw.ClusterNet import ClusterRTL
    from pymtl_fp.cluster.hw.lint import CLUSTER_WAIVERS

    top = cluster_module_name(ccfg, rcfgs, faults)
    v, vlt = translated_once(top, lambda: ClusterRTL(ccfg, rcfgs, faults), CLUSTER_WAIVERS)
    return v, top, vlt


def cluster_ports(ccfg, rcfgs, faults: bool) -> Ports:
    N = ccfg.n
    sb = ccfg.engines[0].beat_bits  # one beat of E elements per stream message
    p = Ports()
    p.in_streams = [("img", sb, None), ("grad", sb, None)] + [("host_in", sb, j) for j in range(N)]
    p.out_streams = [("logit", sb, None), ("up", sb, None)] + [("host_out", sb, j) for j in range(N)]
    p.inputs = [Sig("reset", 1), Sig("prog_node", 8), Sig("prog_we", 1), Sig("prog_sel", 1), Sig("prog_addr", 16),
                Sig("prog_data", isa.INSTR_BITS), Sig("tab_data", 32)]
    if faults:
        p.inputs += [Sig("f_seed", 32), Sig("f_drop", 16), Sig("f_burst", 16), Sig("f_flip", 16)]
    for j in range(N):
        for name, bits, count in status_ports(rcfgs[j]):
            short = f"n{j}_{name[3:]}"
            p.outputs += [Sig(short, bits)] if count is None else [Sig(short, bits, i) for i in range(count)]
        cnt = [Sig(f"n{j}_cnt", 32, i) for i in range(len(STATES))]
        p.events.append((Sig(f"n{j}_mark_val", 1), [Sig(f"n{j}_mark_id", isa.MARK_BITS), Sig(f"n{j}_cycle", 32)] + cnt))
        p.events.append((Sig(f"n{j}_done_val", 1), [Sig(f"n{j}_done_id", isa.DONE_BITS), Sig(f"n{j}_cycle", 32)]))
        p.done.append(Sig(f"n{j}_halted", 1))
        p.progress += ([Sig(f"n{j}_pc", isa.PC_BITS), Sig(f"n{j}_iter", 16)]
                       + [Sig(f"n{j}_sent", 32, i) for i in range(3)] + [Sig(f"n{j}_recv", 32, i) for i in range(3)])
    nlinks = len(link_plan(N, ccfg.topology))
    from pymtl_fp.link.status import LinkStatus

    p.outputs += [Sig("lk_status", LinkStatus.nbits, i) for i in range(nlinks)]
    if faults:
        p.outputs += [Sig("lk_dropped", 32, i) for i in range(nlinks)] + [Sig("lk_flipped", 32, i) for i in range(nlinks)]
    return p


#: the router memories :func:`shared_depths` deepens to the deepest of their nodes
SHARED_DEPTHS = ("prog_depth", "table_depth", "scratch_depth")


def shared_depths(ccfg, rcfgs) -> list:
    """``rcfgs`` with each router memory of :data:`SHARED_DEPTHS` as deep as the deepest among the
    nodes of the same engine and otherwise the same router, so that identical nodes are one
    Verilated module (translated and compiled once: a third of the build of a 4-node lenet5-mnist
    cluster whose programs need three sizes; running one copy of the node's code also keeps it in
    the caches).  A deeper program memory, gather table or scratch FIFO than the program needs
    changes no cycle: the depths are powers of two at least what the program holds at its peak."""
    import dataclasses

    def key(j):
        r = rcfgs[j]
        return ccfg.engines[j], tuple(getattr(r, f.name) for f in dataclasses.fields(r) if f.name not in SHARED_DEPTHS)

    deepest: dict = {}
    for j, r in enumerate(rcfgs):
        k = key(j)
        deepest[k] = {f: max(getattr(r, f), deepest.get(k, {}).get(f, 0)) for f in SHARED_DEPTHS}
    return [r.replace(**deepest[key(j)]) for j, r in enumerate(rcfgs)]


#: how a Verilated cluster is built (see the module docstring), and the build used without a VCD
MODES = ("joined", "flat")
DEFAULT_MODE = "joined"


class VerilatedCluster:
    """One Verilated RTL cluster with its compiled bench (see the module docstring)."""

    def __init__(self, ccfg, rcfgs, *, faults=None, vcd: str | None = None, mode: str | None = None):
        self.ccfg, self.rcfgs = ccfg, shared_depths(ccfg, rcfgs)
        self.faults = faults  # None, or dict(seed=, drop=, burst=, flip=) rates per flit in 2**-16
        self.mode = mode or ("flat" if vcd else DEFAULT_MODE)
        if self.mode not in MODES:
            raise ClusterError(f"unknown Verilated cluster build {self.mode!r}; choose one of {', '.join(MODES)}")
        if vcd and self.mode != "flat":
            raise ClusterError("a VCD of the Verilated cluster needs the flat build")
        fault_ports = faults is not None
        self.ports = cluster_ports(ccfg, self.rcfgs, fault_ports)
        if self.mode == "flat":
            v, self.top, vlt = cluster_verilog(ccfg, self.rcfgs, fault_ports)
            self.lib = cxxsim.build(v, self.top, self.ports, trace=bool(vcd), vlt=vlt)
        else:
            from pymtl_fp import joined_top
            from pymtl_fp.cluster.hw.verilated_split import joined_cluster, quiet_models

            joined, models = joined_cluster(ccfg, self.rcfgs, self.ports, fault_ports)
            self.top = joined.top
            self.ports.outputs += [Sig("joined_unsettled", 32), Sig("joined_edges", 64),
                                   Sig("joined_quiet_skipped", 64), Sig("joined_quiet_wrong", 32)]
            self.instances = len(joined.instances)
            self.instance_names = [i.name for i in joined.instances]
            self.ports.outputs += [Sig("joined_quiet_each", 64, k) for k in range(self.instances)]
            objs = [cxxsim.build_model(v, top, vlt=vlt) for v, top, vlt in models]
            joined.quiet = quiet_models([top for _, top, _ in models], objs)
            self.lib = cxxsim.build_bench(cxxsim.generate(self.top, self.ports, False), self.top, objs,
                                          header=joined_top.header(joined))
        self.sim = cxxsim.StreamSim(self.lib, self.ports, vcd)

    def unsettled(self) -> int:
        """Settles of the joined build that did not converge (0 for the flat build)."""
        return self.sim.get("joined_unsettled") if self.mode == "joined" else 0

    def quiet(self) -> tuple[int, float, int]:
        """``(node and link cycles skipped while quiet, their share of all the instances' cycles, those
        not as predicted)`` of the joined build (:mod:`pymtl_fp.joined_quiet`; the last counts only
        with ``PYMTL_FP_SIM_QUIET=check``); ``(0, 0.0, 0)`` for the flat build."""
        if self.mode != "joined":
            return 0, 0.0, 0
        skipped = self.sim.get("joined_quiet_skipped")
        return skipped, skipped / max(1, self.sim.get("joined_edges") * self.instances), self.sim.get("joined_quiet_wrong")

    def quiet_each(self) -> dict:
        """``{instance: share of the clock's edges it was skipped while quiet}`` of the joined build
        (``node<j>``, ``link<i>``; :mod:`pymtl_fp.joined_quiet`), ``{}`` for the flat build: what is
        left of each share is what that instance cost the simulation."""
        if self.mode != "joined":
            return {}
        edges = max(1, self.sim.get("joined_edges"))
        return {name: self.sim.get("joined_quiet_each", k) / edges for k, name in enumerate(self.instance_names)}

    def load(self, cprog) -> None:
        """Reset, write every node's program and gather table through the program bus, set the
        fault injectors, release reset (cycle 0 is the first cycle after it)."""
        s = self.sim
        s.set("reset", 1)
        s.tick(2)
        for j, prog in enumerate(cprog.nodes):
            if len(prog.ops) > self.rcfgs[j].prog_depth or len(prog.table) > self.rcfgs[j].table_depth:
                raise ClusterError(f"node {j}: the program does not fit the router's memories")
            s.set("prog_node", j)
            s.set("prog_sel", 0)
            for addr, ins in enumerate(prog.ops):
                s.set("prog_we", 1)
                s.set("prog_addr", addr)
                s.set("prog_data", isa.encode(ins))
                s.tick(1)
            s.set("prog_sel", 1)
            for addr, w in enumerate(prog.table):
                s.set("prog_we", 1)
                s.set("prog_addr", addr)
                s.set("tab_data", w)
                s.tick(1)
        s.set("prog_we", 0)
        if self.faults is not None:
            f = self.faults
            s.set("f_seed", f.get("seed", 0))
            s.set("f_drop", f.get("drop", 0))
            s.set("f_burst", f.get("burst", 0))
            s.set("f_flip", f.get("flip", 0))
        s.tick(BOOT_EDGES)  # (the bus idle: a pipelined sequencer's first reads)
        s.set("reset", 0)

    def train(self, cprog, host, *, max_cycles: int, idle_limit: int, describe=None) -> int:
        """Run the programs to their end with ``host`` (a :class:`~pymtl_fp.cluster.hw.host.HostModel`)
        answering each image's logits; returns the cycles run."""
        from pymtl_fp.sim import SimulationHang

        s, ecfg = self.sim, self.ccfg.engines[0]
        s.push("img", host.image_beats())
        for j, prog in enumerate(cprog.nodes):
            s.push("host_in", side_beats(prog.host_in, ecfg.stream_lanes, ecfg.stream_bits), j)
        total = 0
        while True:
            target = host.logit_elems * (host.done_images() + 1) // ecfg.stream_lanes  # (beats)
            n, why = s.run(max_cycles - total, until=("logit", None, target), idle_limit=idle_limit)
            total += n
            for value, cyc in s.pop("logit"):
                s.push("grad", host.logit_beat(value, cyc + 1))
            host.unexpected += len(s.pop("up"))
            if why == "done":
                return total
            if why == "max_cycles":
                raise SimulationHang(f"simulation hang: not done after {max_cycles} cycles; stuck: "
                                     f"{self.describe(cprog)}")
            if why == "idle":
                raise SimulationHang(f"simulation hang: no progress for {idle_limit} cycles at cycle "
                                     f"{s.cycle}; stuck: {self.describe(cprog)}")

    def host_streams(self) -> list:
        e = self.ccfg.engines[0]
        return [[x for v, _ in self.sim.pop("host_out", j) for x in unpack_beat(v, e.stream_lanes, e.stream_bits)]
                for j in range(self.ccfg.n)]

    def describe(self, cprog) -> str:
        parts = []
        for j, prog in enumerate(cprog.nodes):
            if self.sim.get(f"n{j}_halted"):
                continue
            pc = self.sim.get(f"n{j}_pc")
            ins = prog.ops[pc] if pc < len(prog.ops) else None
            parts.append(f"node{j}: instruction {pc}/{len(prog.ops)} (iteration {self.sim.get(f'n{j}_iter')}) "
                         + (ins.describe() if ins else "?"))
        return "; ".join(parts) or "nothing (all nodes done)"

    def logs(self, cprog, steps: int, cycles: int) -> list:
        """One :class:`~pymtl_fp.cluster.hw.observe.RouterLog` per node."""
        s = self.sim
        out = []
        for j, prog in enumerate(cprog.nodes):
            marks = [(r[1], r[2], tuple(r[3:])) for r in s.events(2 * j)]
            done = [(r[1], r[2]) for r in s.events(2 * j + 1)]
            cnt = [s.get(f"n{j}_cnt", i) for i in range(len(STATES))]
            # the node's state has been "done" since cycle `cycles - ndone` if it is "done" now
            ndone = cnt[STATES.index("done")]
            now_done = s.get(f"n{j}_state") == STATES.index("done")
            out.append(make_log(f"node{j}", steps, marks, done, cnt, cycles - ndone if now_done else None,
                                s.get(f"n{j}_scratch_peak"), [s.get(f"n{j}_out_peak", i) for i in range(3)],
                                [s.get(f"n{j}_sent", i) for i in range(3)], [s.get(f"n{j}_recv", i) for i in range(3)],
                                prog))
        return out

    def errors(self) -> list:
        return [j for j in range(self.ccfg.n) if self.sim.get(f"n{j}_error")]

    def link_status(self) -> list:
        from pymtl_fp.link.status import STATUS_FIELDS, LinkStatus

        out = []
        names = [nm for nm, _, _ in link_plan(self.ccfg.n, self.ccfg.topology)]
        for i, name in enumerate(names):
            raw = self.sim.get("lk_status", i)
            st = LinkStatus.from_bits(__import__("pymtl3").mk_bits(LinkStatus.nbits)(raw))
            d = {"link": name, **{f: int(getattr(st, f)) for f in STATUS_FIELDS}}
            if self.faults is not None:
                d["dropped"] = self.sim.get("lk_dropped", i)
                d["flipped"] = self.sim.get("lk_flipped", i)
            out.append(d)
        return out

    def close(self):
        self.sim.close()
