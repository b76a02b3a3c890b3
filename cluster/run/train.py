"""Run training steps on a simulated cluster and report where the cycles go.

:func:`train_on_cluster` partitions and compiles as its :class:`~pymtl_fp.cluster.compiler.mapping.Mapping`
says (:func:`compile_run`), builds the cluster top at the requested levels,
simulates ``steps`` mini-batches with a watchdog (a hang raises
:class:`pymtl_fp.sim.SimulationHang` naming the stuck node), reassembles the weights the nodes store
back to the host and returns them with a report.  :func:`golden_steps` is the reference:
:func:`pymtl_fp.golden.train.train_step` applied ``steps`` times (or, for the ``cp`` schedule,
:func:`pymtl_fp.golden.per_image.train_step_per_image` with the partition's staleness).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from pymtl_fp.cluster.compiler.bands import choose_bands
from pymtl_fp.cluster.compiler.buffers import DEPTH_BUFFERS, pow2_at_least
from pymtl_fp.cluster.compiler.collectives import collective_chunk
from pymtl_fp.cluster.compiler.compile import choose_partition, compile_pipeline, host_out_params, params_equal
from pymtl_fp.cluster.compiler.mapping import DEFAULT, Mapping
from pymtl_fp.cluster.compiler.replicas import (
    check_replica_cluster,
    compile_replicas,
    replica_params,
    replicas_for,
    whole_partition,
)
from pymtl_fp.cluster.compiler.schedule import PER_IMAGE, layer_versions, split_allowed
from pymtl_fp.cluster.compiler.weights_home import place_weights
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.cluster.hw.node import node_module_name, node_params, router_config_for
from pymtl_fp.cluster.hw.observe import StatusPoller, log_from_cl
from pymtl_fp.cluster.hw.router_config import RouterConfig
from pymtl_fp.cluster.hw.top import ClusterTop, load_programs
from pymtl_fp.cluster.run.limits import cycle_cap, watchdog_limit
from pymtl_fp.cluster.run.report import format_report, make_report
from pymtl_fp.golden.per_image import train_step_per_image
from pymtl_fp.golden.train import TrainConfig, train_step
from pymtl_fp.levels import RTL_LEVELS
from pymtl_fp.sim import run_until
from pymtl_fp.sim_passes import default_passes


def golden_steps(net, params, images, labels, tcfg: TrainConfig, steps: int, batch: int,
                 fwd_versions: dict | None = None):
    """``train_step`` applied ``steps`` times on consecutive batches; returns (params, losses).
    With ``fwd_versions`` (a per-image schedule: :func:`cp_versions`), each step is
    :func:`~pymtl_fp.golden.per_image.train_step_per_image` instead."""
    losses = []
    for s in range(steps):
        sl = slice(s * batch, (s + 1) * batch)
        cfg = replace(tcfg, step=tcfg.step + s)
        if fwd_versions is None:
            params, loss = train_step(net, params, images[sl], labels[sl], cfg)
        else:
            params, loss = train_step_per_image(net, params, images[sl], labels[sl], cfg, fwd_versions)
        losses.append(loss)
    return params, losses


def cp_versions(net, ccfg, batch: int, mapping: Mapping = DEFAULT, tcfg=None) -> dict | None:
    """The staleness of ``mapping``'s per-image schedule on this cluster (``None`` for a mini-batch
    one): the golden model's ``fwd_versions`` for the partition :func:`train_on_cluster` makes
    (whole layers per node; ``mapping``'s ``cuts``, ``pack`` and ``overlap`` and the run's ``tcfg``
    as the run's: they decide ``--tap-pack auto``)."""
    if mapping.schedule not in PER_IMAGE:
        return None
    part = choose_partition(net, ccfg, batch, mapping.replace(split=False, wgrad="batch"), tcfg=tcfg)
    return layer_versions(net, part, mapping.schedule)


@dataclass
class ClusterRun:
    params: dict
    losses: list
    cycles: int
    report: dict = field(default_factory=dict)
    logits: list = field(default_factory=list)
    trace: dict | None = None  #: the Chrome / Perfetto trace-event document (``trace=True``)


#: the smallest program, gather-table and scratch depths a run's routers get
MIN_ROUTER = RouterConfig(prog_depth=256, table_depth=64, scratch_depth=256)


def router_configs(ccfg, cprog, base: RouterConfig | None = None) -> list:
    """Each node's router config: its program, gather table and scratch peak fit, each depth a power
    of two and at least ``base``'s (default :data:`MIN_ROUTER`), so that similar runs share one
    Verilator build (a deeper ``base`` makes more runs share it); the residual unit where the
    node's program uses it (only there: a chain's node keeps its resources and module name)."""
    base = base or MIN_ROUTER
    out = []
    for e, prog in zip(ccfg.engines, cprog.nodes):
        if prog.collective_chunk > base.out_depth:
            raise ClusterError(f"node {prog.node}'s all-reduce sends chunks of {prog.collective_chunk} elements; its "
                               f"router's output buffers hold {base.out_depth} (out_depth): compile the run for "
                               "those routers")
        out.append(router_config_for(e, base).replace(
            prog_depth=max(base.prog_depth, pow2_at_least(len(prog.ops))),
            table_depth=max(base.table_depth, pow2_at_least(len(prog.table))),
            scratch_depth=max(base.scratch_depth, pow2_at_least(prog.scratch_peak)),
            residual=base.residual or prog.residual))
    return out


def _build(ccfg, rcfgs, cprog, levels, link_level, net, fmt, images, labels, stall, kernel="pymtl", skip=True,
           trace=False):
    """The simulated cluster, reset and released: ticked by PyMTL3 (``kernel="pymtl"``: any mix of
    levels) or directly (``"direct"``: every node at fl/cl, links at cl; :mod:`pymtl_fp.direct`)."""
    top = ClusterTop(ccfg, rcfgs, cprog, levels, link_level, net, fmt, images, labels, stall=stall)
    top.elaborate()
    if trace:  # (recorded from the reset on)
        for node in top.cnet.nodes:
            node.router.tracing = True
        for lk in top.cnet.links:
            lk.tracing = True
    if kernel == "direct":
        from pymtl_fp.cluster.hw.ClusterNet import ClusterNet
        from pymtl_fp.direct import DirectSim

        for j, prog in enumerate(cprog.nodes):
            top.cnet.nodes[j].router.load_program(prog.ops, prog.table)
        sim = DirectSim(top, ignore=(ClusterNet,), skip=skip)  # (ClusterNet: the RTL program-bus select)
        sim.reset()
        sim.host, sim.side, sim.cnet = top.host, top.side, top.cnet
        return sim
    if "verilator" in levels:
        from pymtl_fp.verilate import translate_import_units

        units = {top.cnet.nodes[j]: (node_module_name(ccfg.engines[j], rcfgs[j]),
                                     node_params(ccfg.engines[j], rcfgs[j]))
                 for j, lv in enumerate(levels) if lv == "verilator"}
        top = translate_import_units(top, units)
    else:
        top.apply(default_passes(linetrace=False))
    load_programs(top, cprog, levels)
    top.sim_tick()
    top.reset @= 0
    top.sim_eval_combinational()
    return top


def direct_possible(levels, link_level) -> bool:
    """Can the direct scheduler tick this cluster (behavioural nodes and links only)?"""
    return all(lv in ("fl", "cl") for lv in levels) and link_level == "cl"


def compile_run(net, ccfg, params, tcfg: TrainConfig, mapping: Mapping = DEFAULT, *, steps: int, batch: int,
                router: RouterConfig | None = None):
    """Partition and compile a run as :func:`train_on_cluster` does (the same ``mapping``; replicas'
    all-reduces in chunks that fit the output buffers of ``router``, default :data:`MIN_ROUTER`); returns
    ``(ccfg, part, parts, cprog)``: the cluster with its engines' B deepened where the programs
    need it, the partition (the replicas' whole one), each replica's partition (or None) and the
    :class:`~pymtl_fp.cluster.compiler.program.ClusterProgram`."""
    rep = replicas_for(mapping.parallel, ccfg.n, batch, mapping.groups)
    if rep is not None:  # (the mapping refused what replicas cannot run; bands "auto": whole layers)
        if net.residual:
            raise ClusterError(f"{net.name} is a residual net: the cluster trains it as one pipeline "
                               "(--parallel pipeline)")
        check_replica_cluster(ccfg)
        chunk = collective_chunk((router or MIN_ROUTER).out_depth, ccfg.P, ccfg.lanes)
        ccfg, cprog, parts = compile_replicas(net, ccfg, rep, params, tcfg, steps, mapping, chunk)
        return ccfg, whole_partition(rep, parts), parts, cprog
    bands = mapping.bands
    if bands == "auto" and not (mapping.bands_backward or mapping.bands_all) and (ccfg.mixed_p or net.residual):
        bands = 0  # (auto: whole layers where bands cannot run: nodes of different array sides, a residual net)
    split = split_allowed(mapping.schedule, mapping.split) and not mapping.bands_backward  # (backward bands: whole layers)
    part = choose_partition(net, ccfg, batch, mapping.replace(split=split), tcfg=tcfg)  # (refuses misfits first)
    if bands == "auto" and place_weights(net, ccfg, part, schedule=mapping.schedule, mode=mapping.weight_home):
        bands = 0  # (weights kept by a neighbour stream in for whole layers)
    if bands == "auto":  # (its compiles refuse what bands cannot run)
        bands = choose_bands(lambda r: compile_pipeline(net, ccfg, part, params, tcfg, 1, mapping.with_bands(r))[1])
    ccfg, cprog = compile_pipeline(net, ccfg, part, params, tcfg, steps, mapping.with_bands(bands))
    return ccfg, part, None, cprog


def fit_buffers(net, ccfg, params, tcfg: TrainConfig, mapping: Mapping = DEFAULT, *, steps: int, batch: int):
    """``ccfg`` with every engine's A, W and B depths the power of two the run needs (at least 2; the
    largest need over the nodes, so that identical nodes stay one Verilated module): the run is
    compiled once against the deepest buffers an engine takes and its buffer plan read.  A run that
    does not fit even those is refused by that compile."""
    from pymtl_fp.cluster.compiler.compile import fit_bias, roomy_bias

    _, _, _, cprog = compile_run(net, roomy_bias(ccfg, DEPTH_BUFFERS), params, tcfg, mapping, steps=steps, batch=batch)
    return fit_bias(ccfg, cprog, DEPTH_BUFFERS, keep=False)


def train_on_cluster(net, params, images, labels, tcfg: TrainConfig, ccfg, mapping: Mapping = DEFAULT, *, steps: int,
                     batch: int, levels: list, link_level: str | None = None, stall=None,
                     max_cycles: int | None = None, idle_limit: int | None = None, progress_cb=None,
                     router: RouterConfig | None = None, fast: bool = True, faults: dict | None = None,
                     kernel: str | None = None, skip: bool = True, trace: bool = False,
                     compiled: tuple | None = None) -> ClusterRun:
    """Train ``steps`` mini-batches of ``batch`` images on a simulated cluster, mapped as
    ``mapping`` says (:class:`~pymtl_fp.cluster.compiler.mapping.Mapping`: how the nodes share the
    work, the schedule, weight gradients, row bands, tap packing, weights kept by a neighbour,
    overlap, cuts); return the weights the nodes send back, the losses, the cycles and the report.
    The other options say how the cluster is simulated (``max_cycles``: default
    :func:`~pymtl_fp.cluster.run.limits.cycle_cap`; ``idle_limit``: default
    :func:`~pymtl_fp.cluster.run.limits.watchdog_limit`).

    ``levels``: one engine level per node (``fl``, ``cl``, ``rtl``, ``verilator``).  With every
    node at ``verilator`` (and ``fast``), the whole RTL cluster is Verilated and run by a compiled
    bench (:mod:`pymtl_fp.cluster.hw.verilated`); otherwise PyMTL3 simulates the cluster,
    ``verilator`` nodes imported one by one.  ``faults`` (compiled cluster only): link fault
    injection, ``dict(seed=, drop=, burst=, flip=)`` in units of ``2**-16`` per flit.

    ``progress_cb(images_done, cycle)``: called as the watchdog checks progress (every few
    hundred cycles at most; PyMTL3-ticked clusters every cycle).

    ``kernel``: what ticks a PyMTL3-built cluster: ``direct`` (default where every node is fl/cl
    and the links cl: :mod:`pymtl_fp.direct`, the same models without PyMTL3's signals) or
    ``pymtl`` (PyMTL3's simulator; any mix of levels).  ``skip``: the direct scheduler skips
    quiet spans (cycle-identical; off to compare).  ``trace``: record a timeline
    (:mod:`pymtl_fp.cluster.run.trace`; fl/cl nodes and cl links) into ``ClusterRun.trace``.

    With replicas (``mapping.parallel`` ``data`` or ``hybrid``) the engines' B buffers are deepened
    to hold the replicas' un-rounded partial sums, as they are for per-image weight gradients
    (reported).  ``mapping.bands`` ``auto`` runs whole layers where bands cannot run (replicas,
    nodes of different array sides, weights kept by a neighbour).  ``compiled``: what
    :func:`compile_run` returned for these arguments, when the caller compiled first (to refuse a
    misfit before it prints anything)."""
    if len(levels) != ccfg.n:
        raise ClusterError(f"{len(levels)} levels for {ccfg.n} nodes")
    if link_level is None:
        link_level = "rtl" if all(lv in RTL_LEVELS for lv in levels) else "cl"
    images, labels = np.asarray(images), np.asarray(labels)
    if len(images) < steps * batch:
        raise ClusterError(f"{steps} steps of batch {batch} need {steps * batch} images, got {len(images)}")
    images, labels = images[: steps * batch], labels[: steps * batch]
    ccfg, part, parts, cprog = compiled or compile_run(net, ccfg, params, tcfg, mapping, steps=steps, batch=batch,
                                                       router=router)
    rcfgs = router_configs(ccfg, cprog, router)
    if idle_limit is None:
        idle_limit = watchdog_limit(ccfg, cprog, stall)
    if max_cycles is None:
        max_cycles = cycle_cap(cprog, steps, stall, faults)
    fmt = net.precision(tcfg.precision)
    if fast and all(lv == "verilator" for lv in levels):
        return _train_verilated(net, params, images, labels, ccfg, part, parts, cprog, rcfgs, fmt, steps, batch,
                                levels, max_cycles, idle_limit, faults)
    kernel = _choose_kernel(kernel, levels, link_level, faults, trace)
    t0 = time.time()
    top = _build(ccfg, rcfgs, cprog, levels, link_level, net, fmt, images, labels, stall, kernel, skip, trace)
    t_build = time.time() - t0
    sim = _simulate(top, cprog, levels, kernel, max_cycles, idle_limit, progress_cb)
    cycles, cl = sim["cycles"], sim["cl"]
    logs = [log_from_cl(cl[j], steps, cprog.nodes[j]) if j in cl else sim["pollers"][j].log(steps, cprog.nodes[j])
            for j in range(ccfg.n)]
    new_params = _params_back(net, ccfg, part, parts, cprog, top.side.received, params)
    if top.host.model.unexpected:
        raise ClusterError(f"node 0 sent {top.host.model.unexpected} unexpected elements upstream to the host")
    report = make_report(net, ccfg, part, cprog, top.host.model, logs, levels, link_level, cycles, steps, batch,
                         t_build, sim["t_sim"], sim["cpu_sim"], rcfgs=rcfgs)
    if kernel == "direct":
        _note_direct(report, top, cycles, skip)
    doc = None
    if trace:
        from pymtl_fp.cluster.run.trace import chrome_trace

        doc = chrome_trace([(cl[j].trace, ccfg.engines[j]) for j in range(ccfg.n)], cprog,
                           [lk.trace for lk in top.cnet.links], top.cnet.link_names, top.host.model.logit_cycles,
                           cycles, ccfg.clock.mhz, ccfg.link.msg_bits, logs[0].marks)
    return ClusterRun(new_params, list(top.host.model.losses), cycles, report, list(top.host.model.logits), doc)


def _choose_kernel(kernel, levels, link_level, faults, trace) -> str:
    """The kernel that ticks a PyMTL3-built cluster (``None``: direct where it can), refusing what
    it cannot run."""
    if faults is not None:
        raise ClusterError("link faults need every node at level verilator (the compiled cluster)")
    if kernel is None:
        kernel = "direct" if direct_possible(levels, link_level) else "pymtl"
    if kernel not in ("direct", "pymtl"):
        raise ClusterError(f"unknown simulation kernel {kernel!r}; choose direct or pymtl")
    if kernel == "direct" and not direct_possible(levels, link_level):
        raise ClusterError("the direct kernel needs every node at fl or cl and cl links")
    if trace and not direct_possible(levels, link_level):
        raise ClusterError("a trace is recorded by the CL routers and links: every node at fl or cl, cl links")
    return kernel


def _simulate(top, cprog, levels, kernel, max_cycles, idle_limit, progress_cb) -> dict:
    """Run the built cluster until every node halts, under the watchdog: ``{"cycles", "cl"`` (the
    fl/cl nodes' routers), ``"pollers"`` (the RTL nodes' status pollers), ``"t_sim", "cpu_sim"}``."""
    nodes = top.cnet.nodes
    cl = {j: nodes[j].router for j, lv in enumerate(levels) if lv in ("fl", "cl")}
    pollers = {j: StatusPoller(nodes[j], f"node{j}") for j, lv in enumerate(levels) if lv not in ("fl", "cl")}

    def done():
        return (all(r.is_done() for r in cl.values()) and all(bool(nodes[j].st_halted) for j in pollers))

    first_cl = next(iter(cl.values()), None)

    def progress():
        for p in pollers.values():
            p.poll()
        if progress_cb is not None:
            progress_cb(top.host.done_images(), first_cl.cycle if first_cl is not None else None)
        return (tuple(r._progress() for r in cl.values())
                + tuple((int(nodes[j].st_pc), int(nodes[j].st_iter), tuple(int(x) for x in nodes[j].st_sent),
                         tuple(int(x) for x in nodes[j].st_recv)) for j in pollers)
                + (top.host.done_images(),))

    def stuck():
        parts = [r.describe() for r in cl.values() if not r.is_done()]
        for j in pollers:
            if not nodes[j].st_halted:
                pc = int(nodes[j].st_pc)
                ins = cprog.nodes[j].ops[pc] if pc < len(cprog.nodes[j].ops) else None
                parts.append(f"node{j}: instruction {pc} (iteration {int(nodes[j].st_iter)}) "
                             + (ins.describe() if ins else "?"))
        return "; ".join(parts) or "nothing (all nodes done)"

    progress()  # the first cycle after reset
    t0, c0 = time.time(), time.process_time()
    cycles = run_until(top, done, max_cycles=max_cycles, progress=progress, idle_limit=idle_limit,
                       describe_stuck=stuck, check_every=64 if kernel == "direct" else 1)
    return {"cycles": cycles, "cl": cl, "pollers": pollers, "t_sim": time.time() - t0,
            "cpu_sim": time.process_time() - c0}


def _note_direct(report: dict, top, cycles: int, skip: bool) -> None:
    """What the direct scheduler skipped, into the report."""
    report["simulator"] = ("direct scheduler (the CL/FL models without PyMTL3's signals), quiet-cycle skipping "
                           + (f"on ({top.skipped:,} cycles in {top.skips:,} quiet spans, "
                              f"{top.quiet_edges / max(1, (cycles - top.skipped) * len(top.comps)):.0%} of the "
                              "other component edges quiet)" if skip else "off"))
    report["skipped_cycles"] = top.skipped
    report["skipped_component_edges"] = top.quiet_edges


def _params_back(net, ccfg, part, parts, cprog, streams, like) -> dict:
    """The trained weights from every node's host stream (replicas: each replica's, checked equal)."""
    if cprog.replicas is None:
        return host_out_params(net, part, cprog, [e.P for e in ccfg.engines], streams, like)
    return replica_params(net, cprog.replicas, parts, cprog, ccfg.P, streams, like)


def _train_verilated(net, params, images, labels, ccfg, part, parts, cprog, rcfgs, fmt, steps, batch, levels,
                     max_cycles, idle_limit, faults) -> ClusterRun:
    from pymtl_fp.cluster.hw.host import HostModel
    from pymtl_fp.cluster.hw.verilated import VerilatedCluster

    t0 = time.time()
    vc = VerilatedCluster(ccfg, rcfgs, faults=faults)
    vc.load(cprog)
    t_build = time.time() - t0
    host = HostModel(ccfg.engines[0], net, fmt, images, labels, batch, ccfg.P_out, cprog.image_pack)
    t0, c0 = time.time(), time.process_time()
    try:
        cycles = vc.train(cprog, host, max_cycles=max_cycles, idle_limit=idle_limit)
        t_sim, cpu_sim = time.time() - t0, time.process_time() - c0
        if vc.errors():
            raise ClusterError(f"router overflow flagged on node(s) {vc.errors()}: the program does not fit")
        if vc.unsettled():
            raise ClusterError(f"the joined Verilated cluster did not settle in {vc.unsettled()} cycle(s): a "
                               "combinational path across nodes and links")
        quiet_skipped, quiet_share, quiet_wrong = vc.quiet()
        quiet_each = vc.quiet_each()
        if quiet_wrong:
            raise ClusterError(f"{quiet_wrong} node or link cycle(s) skipped as quiet were not what the model "
                               "computes (PYMTL_FP_SIM_QUIET=check; run with PYMTL_FP_SIM_QUIET=0 to skip nothing)")
        logs = vc.logs(cprog, steps, cycles)
        new_params = _params_back(net, ccfg, part, parts, cprog, vc.host_streams(), params)
        links = vc.link_status()
    finally:
        vc.close()
    if host.unexpected:
        raise ClusterError(f"node 0 sent {host.unexpected} unexpected elements upstream to the host")
    report = make_report(net, ccfg, part, cprog, host, logs, levels, "rtl", cycles, steps, batch, t_build, t_sim,
                         cpu_sim, rcfgs=rcfgs)
    report["simulator"] = "verilated cluster (compiled C++ bench)" + (
        f", quiet nodes and links skipped in {quiet_share:.0%} of their cycles" if vc.mode == "joined" else "")
    report["link_status"] = links
    report["quiet_skipped"], report["quiet_share"] = quiet_skipped, quiet_share
    report["quiet_each"] = quiet_each
    if faults is not None:
        report["faults"] = dict(faults)
    return ClusterRun(new_params, list(host.losses), cycles, report, list(host.logits))


__all__ = ["ClusterRun", "cp_versions", "fit_buffers", "format_report", "golden_steps", "make_report", "params_equal",
           "router_configs", "train_on_cluster", "watchdog_limit"]
