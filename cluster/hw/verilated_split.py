"""The RTL cluster as separately Verilated nodes and links joined in C++ (:mod:`pymtl_fp.joined_top`):
the same ports, cycles and results as the flat Verilated :class:`~pymtl_fp.cluster.hw.ClusterNet.ClusterRTL`,
with each distinct node and link module translated and compiled once.

A flat cluster is one Verilog top; Verilator emits every node's C++ again, so its build grows with
the node count (about 3 s of PyMTL3 translation and 3 s of C++ per node at the tests' -O1) and
two clusters of the same nodes share nothing.  Here :func:`node_verilog` and :func:`link_verilog`
translate :class:`~pymtl_fp.cluster.hw.node.NodeRTL` and :class:`~pymtl_fp.link.LinkRTL.LinkRTL`
per configuration (cached like the flat cluster, by module name and RTL sources),
:func:`pymtl_fp.cxxsim.build_model` compiles each once, and :func:`joined_cluster` describes the
wiring of :class:`~pymtl_fp.cluster.hw.ClusterNet.ClusterNet` between the instances: a cluster of
any size then costs one small bench.  The links' fault injectors take their index from a port
(``f_index``) so that one link module serves every link.

Evaluation order: nodes, then links.  A link's outputs (``send``, ``recv.rdy``) are registers, so
a node sees its links' final outputs; the joined top checks at every settle that every wire is
settled, and :class:`~pymtl_fp.cluster.hw.verilated.VerilatedCluster` raises if one was not.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from pymtl_fp.build_dirs import build_once, shared_build_dir
from pymtl_fp.cluster.config import link_plan
from pymtl_fp.cluster.hw.node import BUS, node_module_name, router_config_for
from pymtl_fp.cluster.hw.router_config import STATES, status_ports
from pymtl_fp.joined_quiet import Counter, Quiet
from pymtl_fp.joined_top import Instance, Joined, Port

_SOURCE_DIRS = ("cluster", "engine", "link", "primitives")


def source_files() -> list:
    """The RTL's Python sources, sub-packages included (what a cached translation depends on)."""
    import pymtl_fp
    import pymtl_fp.cluster

    roots = [Path(pymtl_fp.__file__).parent / d for d in _SOURCE_DIRS[1:]] + [Path(pymtl_fp.cluster.__file__).parent]
    return [(root, f) for root in roots for f in sorted(root.rglob("*.py"))]


@functools.cache
def sources_hash() -> str:
    """A hash of the RTL's Python sources (a translation is reused only for the same sources; read
    once per process)."""
    h = hashlib.sha256()
    for root, f in source_files():
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def translated_once(name: str, component, waivers: dict | None) -> tuple[Path, Path | None]:
    """``(Verilog file, waivers file or None)`` of ``component()`` translated as top ``name``, once per
    name and RTL sources (:func:`sources_hash`) in a directory every process shares."""
    from pymtl_fp.lint import lint_waiver_file, translate_verilog

    def translate(tmp):
        translate_verilog(component(), name, tmp)
        if waivers is not None:
            lint_waiver_file(tmp / f"{name}_waivers.vlt", waivers)

    out = build_once(shared_build_dir("verilog") / f"{name}_{sources_hash()}", translate)
    return out / f"{name}.v", (out / f"{name}_waivers.vlt" if waivers is not None else None)


def node_verilog(ecfg, rcfg) -> tuple[Path, str, Path]:
    """``(Verilog file, top, waivers file)`` of one node, translated once per configuration."""
    from pymtl_fp.cluster.hw.lint import CLUSTER_WAIVERS
    from pymtl_fp.cluster.hw.node import NodeRTL

    rcfg = router_config_for(ecfg, rcfg)
    name = node_module_name(ecfg, rcfg)
    v, vlt = translated_once(name, lambda: NodeRTL(ecfg, rcfg), CLUSTER_WAIVERS)
    return v, name, vlt


def link_verilog(MsgType, lcfg, faults: bool) -> tuple[Path, str]:
    """``(Verilog file, top)`` of one link, translated once per configuration (faults: the index
    from the ``f_index`` port)."""
    from pymtl_fp.link.LinkRTL import LinkRTL, link_module_name

    name = link_module_name(lcfg, MsgType, faults, None)[0]
    v, _ = translated_once(name, lambda: LinkRTL(MsgType, lcfg, faults=faults, fault_index=None), None)
    return v, name


def fields_of(ports) -> list:
    """The joined top's fields for a :class:`pymtl_fp.cxxsim.Ports` (as the flat top declares them)."""
    out: dict = {}

    def add(name, width, index):
        count = None if index is None else max(index + 1, out.get(name, (0, 0))[1] or 0)
        out[name] = (width, count)

    for p, w, idx in ports.in_streams + ports.out_streams:
        add(f"{p}__val", 1, idx)
        add(f"{p}__rdy", 1, idx)
        add(f"{p}__msg", w, idx)
    for sig in ports.inputs + ports.outputs:
        add(sig.name, sig.width, sig.index)
    return [(name, w, n) for name, (w, n) in out.items()]


def joined_cluster(ccfg, rcfgs, ports, faults: bool) -> tuple[Joined, list]:
    """The joined top of the cluster whose flat ports are ``ports``
    (:func:`~pymtl_fp.cluster.hw.verilated.cluster_ports`) and the models it joins, ``[(Verilog,
    top, waivers or None)]`` once each."""
    from pymtl_fp.cluster.hw.ClusterNet import cluster_module_name
    from pymtl_fp.engine.msgs import data_type
    from pymtl_fp.link.status import LinkStatus

    N = ccfg.n
    sb = ccfg.engines[0].beat_bits
    T = data_type(ccfg.engines[0])
    j = Joined(top=cluster_module_name(ccfg, rcfgs, faults) + "_joined")
    models: dict = {}  # configuration -> (Verilog, top, waivers)
    for n in range(N):
        key = (ccfg.engines[n], rcfgs[n])
        if key not in models:
            models[key] = node_verilog(*key)
        j.instances.append(Instance(f"node{n}", models[key][1], 0, group=n))
    plan = link_plan(N, ccfg.topology)
    delivered = {"fwd": 0, "bwd": 0}  # a link shares the thread of the node it delivers to (fwd k, bwd k: node k)
    for i, (name, d, _) in enumerate(plan):
        key = ccfg.link_cfg(name)
        if key not in models:
            models[key] = (*link_verilog(T, key, faults), None)
        j.instances.append(Instance(f"link{i}", models[key][1], 1, group=min(delivered[d], N - 1)))
        delivered[d] += 1
    j.fields = fields_of(ports)

    def top(name, width, index=None):
        return Port(None, name, width, index)

    def stream(src: str, sp: str, dst: str, dp: str):  # src.sp (send side) -> dst.dp (recv side)
        j.wires += [(Port(dst, f"{dp}__val", 1), Port(src, f"{sp}__val", 1)),
                    (Port(dst, f"{dp}__msg", sb), Port(src, f"{sp}__msg", sb)),
                    (Port(src, f"{sp}__rdy", 1), Port(dst, f"{dp}__rdy", 1))]

    def from_top(name, owner, prefix, index=None):  # a host stream into an instance's recv side
        j.inputs += [(Port(owner, f"{prefix}__val", 1), top(f"{name}__val", 1, index).cxx()),
                     (Port(owner, f"{prefix}__msg", sb), top(f"{name}__msg", sb, index).cxx())]
        j.outputs.append((top(f"{name}__rdy", 1, index), Port(owner, f"{prefix}__rdy", 1)))

    def to_top(name, owner, prefix, index=None):  # an instance's send side out to the host
        j.outputs += [(top(f"{name}__val", 1, index), Port(owner, f"{prefix}__val", 1)),
                      (top(f"{name}__msg", sb, index), Port(owner, f"{prefix}__msg", sb))]
        j.inputs.append((Port(owner, f"{prefix}__rdy", 1), top(f"{name}__rdy", 1, index).cxx()))

    fwd = [f"link{i}" for i, (_, d, _) in enumerate(plan) if d == "fwd"]
    bwd = [f"link{i}" for i, (_, d, _) in enumerate(plan) if d == "bwd"]
    from_top("img", fwd[0], "recv")
    stream(fwd[0], "send", "node0", "fwd_in")
    for n in range(N):
        stream(f"node{n}", "fwd_out", fwd[n + 1], "recv")
        if n + 1 < N:
            stream(fwd[n + 1], "send", f"node{n + 1}", "fwd_in")
    for n in range(1, N):
        stream(f"node{n}", "bwd_out", bwd[n - 1], "recv")
        stream(bwd[n - 1], "send", f"node{n - 1}", "bwd_in")
    for i in range(N, len(fwd) - 1):  # a ring: the ring link and node 0's host link back to back
        stream(fwd[i], "send", fwd[i + 1], "recv")
    to_top("logit", fwd[-1], "send")
    from_top("grad", bwd[N - 1], "recv")
    for i in range(N - 1, len(bwd) - 1):
        stream(bwd[i], "send", bwd[i + 1], "recv")
    stream(bwd[-1], "send", f"node{N - 1}", "bwd_in")
    to_top("up", "node0", "bwd_out")
    for n in range(N):
        from_top("host_in", f"node{n}", "host_in", n)
        to_top("host_out", f"node{n}", "host_out", n)
    for inst in j.instances:
        j.inputs.append((Port(inst.name, "reset", 1), "reset"))
    from pymtl_fp.cluster import isa

    widths = {"prog_we": 1, "prog_sel": 1, "prog_addr": 16, "prog_data": isa.INSTR_BITS, "tab_data": 32}
    for n in range(N):
        j.inputs.append((Port(f"node{n}", "prog_we", 1), f"(CData)(prog_we && prog_node == {n})"))
        j.inputs += [(Port(f"node{n}", b, widths[b]), b) for b in BUS[1:]]
        for name, bits, count in status_ports(router_config_for(ccfg.engines[n], rcfgs[n])):
            for i in [None] if count is None else range(count):
                j.outputs.append((top(f"n{n}_{name[3:]}", bits, i), Port(f"node{n}", name, bits, i)))
    for i in range(len(plan)):
        j.outputs.append((top("lk_status", LinkStatus.nbits, i), Port(f"link{i}", "status", LinkStatus.nbits)))
        if faults:
            j.inputs += [(Port(f"link{i}", f, w), f) for f, w in (("f_seed", 32), ("f_drop", 16), ("f_burst", 16),
                                                                   ("f_flip", 16))]
            j.inputs.append((Port(f"link{i}", "f_index", 8), str(i & 0xFF)))
            j.outputs += [(top("lk_dropped", 32, i), Port(f"link{i}", "n_dropped", 32)),
                          (top("lk_flipped", 32, i), Port(f"link{i}", "n_flipped", 32))]
    return j, list({m[1]: m for m in models.values()}.values())


#: the router's statistics counters (:class:`~pymtl_fp.cluster.hw.RouterStatusRTL.RouterStatusRTL`:
#: ``cycle`` counts every cycle, ``cnt[k]`` the cycles in state ``k``), as a node's Verilated root
#: names them: the status outputs and the status unit's registers (``stat__cycle`` in the router)
_CYCLE = re.compile(r"^(st_cycle|\w+__DOT__stat(___05F|__DOT__)cycle)$")
_PER_STATE = re.compile(r"^(st_cnt|\w+__DOT__stat(___05F|__DOT__)cnt)$")


def status_counters(q: Quiet) -> list:
    """The statistics counters of a node's root (:class:`~pymtl_fp.joined_quiet.Counter`): nothing
    else reads them, so a node that only counts is quiet (:mod:`pymtl_fp.joined_quiet`)."""
    names = [n for n, _ in q.members]
    out = [Counter(n) for n in names if _CYCLE.match(n)]
    for n in names:
        if _PER_STATE.match(n):
            out += [Counter(n, k, f"r->st_state == {k}") for k in range(len(STATES))]
    return out


def quiet_models(tops: list, objs: list) -> dict:
    """:attr:`~pymtl_fp.joined_top.Joined.quiet` of a joined cluster: every node and link model, from
    the headers in its object directory (``objs``, as :func:`pymtl_fp.cxxsim.build_model` gave
    them), with its statistics counters (a node's; a link has none).  A model whose symbol table
    does not read as expected (no root in it) is left out: always evaluated."""
    out = {}
    for top, obj in zip(tops, objs):
        q = Quiet(top, {f.name: f.read_text() for f in Path(obj).glob(f"V{top}*.h")})
        if ("V" + top + "___024root", "TOP") in q.instances():
            q.counters = status_counters(q)
            out[top] = q
    return out
