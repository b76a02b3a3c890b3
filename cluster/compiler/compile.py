"""Compile a :class:`~pymtl_fp.cluster.compiler.partition.Partition` into one program per node.

A node program (:mod:`pymtl_fp.cluster.isa`) is what the node's router/DMA sequencer executes:
engine commands, LOAD/STORE data moves to and from the links, the host side channel and the
scratch FIFO, link-to-link pass-through, bias updates and relayouts on the scratch FIFO, marks for
the report.  Nodes synchronize only through the val/rdy flow control of their links (dataflow: no
global controller).  A training run is ``init; loop(steps){one step}; final; HALT``: the initial
weights come from the host side channel, the step body runs ``steps`` times with rounding seeds
relative to the step (``seedstep``), the final weights go back to the host.

Modules: :mod:`~pymtl_fp.cluster.compiler.codegen` (per-node code generation: passes over a
:class:`~pymtl_fp.cluster.compiler.plan.NodePlan`, with :mod:`~pymtl_fp.cluster.compiler.regions` and
:mod:`~pymtl_fp.cluster.compiler.emit`),
:mod:`~pymtl_fp.cluster.compiler.buffers` (the buffer plan), :mod:`~pymtl_fp.cluster.compiler.schedule` (the order of
image passes), :mod:`~pymtl_fp.cluster.compiler.dma` (slice seeds, relayout), and here
:func:`compile_cluster` (the programs, checked against every node's buffers before any
simulation) and :func:`unpack_params` (the weights the nodes send back).
"""

from __future__ import annotations

import functools

import numpy as np

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler import codegen
from pymtl_fp.cluster.compiler.bands import check_bands
from pymtl_fp.cluster.compiler.buffers import DEPTH_BUFFERS, pow2_at_least
from pymtl_fp.cluster.compiler.collectives import Collectives
from pymtl_fp.cluster.compiler.mapping import DEFAULT, Mapping
from pymtl_fp.cluster.compiler.partition import layer_info, partition
from pymtl_fp.cluster.compiler.plan import make_plan
from pymtl_fp.cluster.compiler.program import ClusterProgram, NodeProgram
from pymtl_fp.cluster.compiler.regions import keep_in_flight
from pymtl_fp.cluster.compiler.remote_weights import RemoteWeights
from pymtl_fp.cluster.compiler.residual import check_residual
from pymtl_fp.cluster.compiler.schedule import PER_IMAGE, SCHEDULES, WGRAD, fill_passes, layer_versions, step_order
from pymtl_fp.cluster.compiler.weight_phase import WeightPhase
from pymtl_fp.cluster.compiler.weights_home import HomePlan, check_links, place_weights
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.cluster.isa.marks import MARK_BWD, MARK_END, MARK_STEP, MARK_WG, done_id
from pymtl_fp.engine.msgs import tiles, unpack_bias, unpack_weight
from pymtl_fp.golden.train import TrainConfig, step_seed

__all__ = ["SCHEDULES", "ClusterProgram", "NodeProgram", "choose_partition", "compile_cluster", "compile_pipeline",
           "host_out_params", "split_host_out", "step_order", "unpack_params"]


def check_wgrad(wgrad: str, schedule: str) -> None:
    """Refuse an unknown ``--wgrad``, or ``image`` / ``auto`` under a per-image schedule (whose
    gradients are already per image)."""
    if wgrad not in WGRAD:
        raise ClusterError(f"unknown --wgrad {wgrad!r}; choose one of {', '.join(WGRAD)}")
    if wgrad != "batch" and schedule in PER_IMAGE:
        raise ClusterError(f"--wgrad {wgrad} is for the mini-batch schedules (1f1b, gpipe): --schedule {schedule} "
                           "already computes each image's weight gradient after its backward pass")


def compile_cluster(net, ccfg, part, params: dict, tcfg, steps: int, mapping: Mapping = DEFAULT) -> ClusterProgram:
    """One program per node for ``steps`` training steps from ``params`` (raw integers), with the
    choices of ``mapping`` (:class:`~pymtl_fp.cluster.compiler.mapping.Mapping`; its partition
    choices are ``part``'s, its ``bands`` a row count).  ``overlap``: every engine command may
    overlap earlier ones (``ovl = 1``; the engine checks the hazards) and results alternate
    between two O slots per direction.  ``schedule``: the
    order of the image passes in a step (:func:`~pymtl_fp.cluster.compiler.schedule.step_order`) and, for
    ``cp``, a weight update after each image's backward pass instead of one per step.  ``wgrad``:
    the weight gradients over the batch at the step's end, or per image summed in B
    (:data:`~pymtl_fp.cluster.compiler.schedule.WGRAD`; the engines' B must hold the sums:
    :func:`compile_pipeline` deepens it).  ``bands``: the forward passes of the pipeline's fill
    (:func:`~pymtl_fp.cluster.compiler.schedule.fill_passes`; with ``bands_all`` every forward pass) in row
    bands of that many output rows (FPDeep's fine-grained pipeline, :mod:`~pymtl_fp.cluster.compiler.bands`;
    0: whole layers), and with ``bands_backward`` every backward pass too.  ``weight_home``: ``auto``
    lets a neighbour keep the weights of a node's layers that do not fit its W (FPDeep's weight
    balancing, :func:`~pymtl_fp.cluster.compiler.weights_home.place_weights`), ``off`` does not, a
    :class:`~pymtl_fp.cluster.compiler.weights_home.Placement` says which."""
    overlap, schedule, wgrad, weight_home = mapping.overlap, mapping.schedule, mapping.wgrad, mapping.weight_home
    bands, bands_backward, bands_all = mapping.bands, mapping.bands_backward, mapping.bands_all
    step_order(schedule, 0, part.n, part.batch)  # refuse an unknown schedule before compiling
    check_wgrad(wgrad, schedule)
    check_residual(net, part, schedule, bands, mixed_p=ccfg.mixed_p)
    check_bands(bands, net, part, [e.P for e in ccfg.engines], bands_backward)
    if schedule in PER_IMAGE:
        layer_versions(net, part, schedule)  # refuses a layer split over two nodes
    fmt, shifts = check_training(net, tcfg, steps, part.batch)
    placement = place_weights(net, ccfg, part, schedule=schedule, mode=weight_home)
    if placement and bands:
        raise ClusterError("the weights of " + "; ".join(placement.describe(net)) + ": they stream in for "
                           "whole layers, not row bands (--bands 0, or deeper W buffers)")
    try:
        nodes = _emit(net, ccfg, part, params, tcfg, fmt, shifts, steps, overlap, schedule, wgrad, bands,
                      bands_backward, bands_all, placement)
    except isa.IsaError as exc:
        raise ClusterError(f"batch {part.batch}: {net.name}'s programs need a command beyond the engine's "
                           f"command fields ({exc}); a smaller --batch, or smaller or fewer layers, may fit") from None
    check_fit(nodes, part.batch, "" if weight_home != "auto" else
              " (weights kept by a neighbour need a mini-batch schedule, 1f1b or gpipe)" if schedule in PER_IMAGE
              else " (--weight-home auto found no neighbour with room for whole layers of it)")
    check_beats(nodes, ccfg.lanes)
    K, ho, wo = net.shapes()[-1]
    p_in, p_out = ccfg.P_in, ccfg.P_out   # node 0's and node N-1's layouts
    return ClusterProgram(nodes, image_elems(net, part, p_in), tiles(K, p_out) * ho * wo * p_out,
                          (K, ho, wo), steps, part.batch, bool(overlap), schedule, image_pack=image_pack(net, part),
                          wgrad=wgrad, bands=bands, bands_backward=bool(bands and bands_backward),
                          bands_all=bool(bands and bands_all), placement=placement)


def check_host_loads(net, part) -> None:
    """Refuse, before any weights are made, a partition whose nodes need a LOAD of initial weights
    beyond the engine's ``count`` field: a node's piece of a layer, ``[k0, k1)`` of its output
    channels, is at least ``(k1 - k0) * C * R * S`` elements (the compiler's check, made early)."""
    width = dict(isa.CMD_FIELDS)["count"]
    for i, items in enumerate(part.nodes):
        for it in items:
            if it.pool:
                continue
            _, C, R, S = net.conv_geometry(net.layers[it.layer])["w_shape"]
            count = (it.k1 - it.k0) * C * R * S
            if count >= 1 << width:
                raise ClusterError(f"batch {part.batch}: {net.name}'s programs need a command beyond the engine's "
                                   f"command fields (command field count={count} does not fit in {width} bits: node "
                                   f"{i}'s weights of {net.layers[it.layer].name}); smaller layers, or more nodes to "
                                   "share them, may fit")


def compile_pipeline(net, ccfg, part, params: dict, tcfg, steps: int, mapping: Mapping = DEFAULT):
    """:func:`compile_cluster`, and the cluster it runs on: with per-image weight gradients
    (``mapping.wgrad`` ``image`` or ``auto``) every engine's B deepened to the power of two that
    holds its un-rounded sums (as the replicas' all-reduce needs); returns ``(ccfg, cprog)``."""
    if mapping.wgrad == "batch":
        return ccfg, compile_cluster(net, ccfg, part, params, tcfg, steps, mapping)
    cprog = compile_cluster(net, roomy_bias(ccfg), part, params, tcfg, steps, mapping)
    return fit_bias(ccfg, cprog), cprog


def roomy_bias(ccfg, depths=("bias_depth",)):
    """``ccfg`` with the buffers of ``depths`` (:data:`~pymtl_fp.cluster.compiler.buffers.DEPTH_BUFFERS`
    keys; default B, for any program's un-rounded sums) as deep as an engine takes, to compile against."""
    return ccfg.replace(engines=tuple(e.replace(**{d: ROOMY_BIAS for d in depths}) for e in ccfg.engines))


def fit_bias(ccfg, cprog, depths=("bias_depth",), keep: bool = True):
    """``ccfg`` with every engine's ``depths`` the power of two the programs use (the largest over
    the nodes; at least the engine's own depth with ``keep``, else at least 2), and each node's
    buffer plan bound to its engine."""
    used = [p.alloc.usage() for p in cprog.nodes]
    need = {d: pow2_at_least(max(u[b]["used"] for u in used for b in DEPTH_BUFFERS[d])) for d in depths}
    ccfg = ccfg.replace(engines=tuple(e.replace(**{d: max(getattr(e, d) if keep else 2, n) for d, n in need.items()})
                                      for e in ccfg.engines))
    for prog, ecfg in zip(cprog.nodes, ccfg.engines):
        prog.alloc.ecfg = ecfg
    return ccfg


#: the depth programs compile against before :func:`fit_bias` (the deepest an engine takes)
ROOMY_BIAS = 65536


def _emit(net, ccfg, part, params, tcfg, fmt, shifts, steps, overlap, schedule, wgrad="batch", bands=0,
          bands_backward=False, bands_all=False, placement=None) -> list:
    """Every node's program (unchecked).  With a ``placement`` (layers whose weights a neighbour
    keeps, :mod:`~pymtl_fp.cluster.compiler.weights_home`), each home node is compiled again once its
    user's step is known, with the weight chunks placed in its step (:class:`HomePlan`)."""
    # (the fill's forward passes in bands, or every one: the same for each node's upstream node)
    band_images = None if bands_all else [fill_passes(schedule, j, part.n, part.batch) for j in range(part.n)]
    args = (net, ccfg, part, params, tcfg, fmt, shifts, steps, overlap, schedule, wgrad, bands, bands_backward,
            band_images, placement)
    nodes, plans, prev_sent = [], [], {}
    passes = []  # each node's modelled forward and backward compute per image
    for j in range(part.n):
        plan = _emit_node(j, prev_sent, None, *args, upstream_passes=passes[j - 1] if j else 0)
        nodes.append(plan.prog)
        plans.append(plan)
        prev_sent = plan.flow.sent
        passes.append(plan.prog.image_compute("fwd", "bwd") // part.batch)
    if placement:
        for h in sorted({h for h in placement.homes.values()}):
            u = placement.hosted(h)[0][0]  # (a home keeps one user's layers)
            home_plan = HomePlan.from_log(u, h, plans[u].home.link_log)
            plan = _emit_node(h, plans[h - 1].flow.sent if h else {}, home_plan, *args,
                              upstream_passes=passes[h - 1] if h else 0)
            nodes[h], plans[h] = plan.prog, plan
        for (u, _), h in placement.homes.items():
            check_links(plans[u].home.link_log, plans[h].home.link_log, u, h)
    return nodes


def _emit_node(j, prev_sent, home_plan, net, ccfg, part, params, tcfg, fmt, shifts, steps, overlap, schedule, wgrad,
               bands, bands_backward, band_images, placement, upstream_passes=0):
    """Node ``j``'s plan, its program emitted by the passes (``upstream_passes``: node ``j - 1``'s
    modelled forward and backward compute per image, :func:`~pymtl_fp.cluster.compiler.hoist.beside_weight_gradients`)."""
    per_image = schedule in PER_IMAGE
    plan = make_plan(j, ccfg.engines[j], net, part, tcfg, shifts, fmt, [e.P for e in ccfg.engines], overlap,
                     wgrad, bands, bands_backward, placement, home_plan)
    plan.opts.band_images = band_images
    plan.flow.upstream_sent = prev_sent  # (the pieces node j-1's banded forward passes sent, in order)
    plan.flow.upstream_passes = upstream_passes
    if per_image or wgrad != "batch":  # an image's tensors are freed with its weight gradients
        keep_in_flight(plan, schedule)
    em = plan.emit
    seed = begin_step(plan, params)
    order = step_order(schedule, j, part.n, part.batch)
    received = set()
    wg_due = None  # an image whose weight gradients follow the next forward pass
    fwd_at = wgi_at = None  # where the last forward pass and the weight gradients after it begin
    for i, (kind, b) in enumerate(order):
        early = (fwd_at, wgi_at) if wgi_at is not None and schedule == "1f1b" else None
        wgi_at = None
        if kind == "fwd":
            fwd_at = len(em.ops)
            em.phase = "fwd"
            codegen.forward(plan, b, seed, received=b in received)
        else:
            if b == 0:
                em.mark(MARK_BWD)
            em.phase = "bwd"
            then = None
            # (not under sgd: the next input exists only once this image's gradient has gone back)
            if i + 1 < len(order) and order[i + 1][0] == "fwd" and schedule != "sgd":
                nb = order[i + 1][1]
                received.add(nb)
                then = functools.partial(codegen.receive, plan, nb)
            codegen.backward(plan, b, seed, then, early)
        em.done_mark(done_id(kind, b))
        if kind == "bwd" and not per_image and plan.keep.per_image:  # the image's exact sums added to B ...
            wg_due = b
        if wg_due is not None and (kind == "fwd" or i + 1 == len(order) or order[i + 1][0] != "fwd"):
            # ... after the forward pass that follows its backward pass (which the next node
            # waits for; its slots: images_in_flight(late_wgrad=True)), if one does
            em.phase = "wgi"
            wgi_at = len(em.ops)
            Collectives(plan).raw_gradients(wg_due, 1, plan.keep.per_image, first_first=kind == "fwd")
            wg_due = None
        if kind == "bwd" and per_image:  # the node's layers updated at once
            em.phase = "upd"
            WeightPhase(plan).run(seed, image=b)
    em.phase = "wg"
    em.mark(MARK_WG)
    if not per_image:
        WeightPhase(plan).run(seed)
    end_step(plan, steps)
    return plan


def fits_buffers(net, ccfg, part, tcfg=None, overlap: bool = False, schedule: str = "1f1b",
                 wgrad: str = "batch") -> bool:
    """Whether ``part``'s programs compile and fit its nodes' buffers (what :func:`compile_cluster`
    checks), for the run's ``tcfg`` (its precision and learning rate set the shifts; default: the
    net's first precision), ``overlap`` (two O slots per direction), ``schedule`` and ``wgrad``
    (per image: B is deepened to fit, :func:`compile_pipeline`); the weights do not matter."""
    tcfg = tcfg or TrainConfig(next(iter(net.formats)))
    params = {ly.name: {"w": np.zeros(net.conv_geometry(ly)["w_shape"], dtype=np.int64),
                        "b": np.zeros(net.conv_geometry(ly)["w_shape"][0], dtype=np.int64)}
              for ly in net.param_layers()}
    try:
        fmt, shifts = check_training(net, tcfg, 1, part.batch)
        nodes = _emit(net, ccfg, part, params, tcfg, fmt, shifts, 1, overlap, schedule, wgrad)
    except (ClusterError, ValueError):
        return False
    deepened = set() if wgrad == "batch" else {"B"}  # (compile_pipeline deepens B to fit)
    return not any(set(prog.alloc.overflow()) - deepened for prog in nodes)


def splits_layers(net, mapping: Mapping) -> bool:
    """May ``mapping``'s partition of ``net`` split a layer between two nodes?  As ``mapping.split``
    says, never for a residual net (its layers run whole: :mod:`~pymtl_fp.cluster.compiler.residual`)."""
    return mapping.split and not net.residual


def choose_partition(net, ccfg, batch: int, mapping: Mapping = DEFAULT, *, tcfg=None):
    """The partition a run compiles, by ``mapping``'s ``split`` (never for a residual net), ``cuts`` and ``pack``
    (``--tap-pack``): ``auto`` takes the tap-packed one where packing pays
    (:func:`~pymtl_fp.cluster.compiler.partition.packed_layers`) and its programs, for the run's
    ``tcfg`` and ``mapping``'s ``overlap``, ``schedule`` and ``wgrad``, compile and fit the buffers
    (the packed input is ``R*S/stride^2`` times the image), else the unpacked one."""
    split, cuts, pack = splits_layers(net, mapping), mapping.cut_list(), mapping.pack
    part = partition(net, ccfg, batch, split=split, cuts=cuts, pack=pack)
    if pack == "auto" and part.packed and not fits_buffers(net, ccfg, part, tcfg, mapping.overlap, mapping.schedule,
                                                           mapping.wgrad):
        part = partition(net, ccfg, batch, split=split, cuts=cuts, pack="off")
    return part


def image_pack(net, part) -> tuple | None:
    """``(R, S, stride, pad)`` of a tap-packed first layer (the host packs every image), else None."""
    if 0 not in part.packed:
        return None
    f = layer_info(net, 0)
    return (f["r"], f["s"], f["stride"], f["pad"])


def image_elems(net, part, P: int) -> int:
    """Elements of one image as the host sends it, in the layout of array side ``P`` (tap-packed:
    ``C*R*S`` channels on the first layer's output map)."""
    f = layer_info(net, 0, 0 in part.packed)
    return tiles(f["c"], P) * f["h"] * f["w"] * P


def check_training(net, tcfg, steps: int, batch: int) -> tuple:
    """Refuse what the cluster cannot train (momentum, a negative update shift, a step count or
    batch beyond the program's fields); return the precision's formats and the layer shifts."""
    check_momentum(tcfg.momentum)
    fmt = net.precision(tcfg.precision)
    shifts = net.shifts(tcfg.precision, tcfg.lr_log2)
    for name, sh in shifts.items():
        if sh.update_w < 0:
            raise ClusterError(f"{name}: the weight-update shift {sh.update_w} is negative; the "
                               f"engine's update takes right shifts only")
    if not 1 <= steps < (1 << isa.LCOUNT_BITS):
        raise ClusterError(f"steps must be in 1..{(1 << isa.LCOUNT_BITS) - 1}, got {steps}")
    if 2 * batch + 1 >= (1 << isa.DONE_BITS):
        raise ClusterError(f"batch {batch} is too large for the node program's done marks")
    return fmt, shifts


def check_momentum(momentum) -> None:
    """Refuse momentum: the engine's update is plain SGD."""
    if momentum is not None:
        raise ClusterError("the cluster trains with plain SGD: the engine's update has no momentum "
                           "(--momentum 0 trains without the net's)")


def begin_step(plan, params) -> int:
    """Emit the initial weights of node ``plan`` and open the step loop (marked ``step``); returns
    the step's rounding seed (relative: the loop's ``seedstep`` adds the iteration)."""
    em, prog = plan.emit, plan.prog
    WeightPhase(plan).initial(params)
    prog.compute_cycles = prog.io_cycles = prog.macs = 0
    prog.phase_compute = {}
    em.link = {}
    # one step, in a loop run `steps` times: seeds relative to the step (seedstep)
    em.in_loop = True
    em.flush_marks()
    em.loop_start = len(em.ops)
    em.mark(MARK_STEP)
    return step_seed(plan.node.cfg.seed, plan.node.cfg.step)


def end_step(plan, steps: int) -> NodeProgram:
    """Close node ``plan``'s step loop (``steps`` iterations), emit the final weights to the host
    and HALT; returns its program."""
    em, prog = plan.emit, plan.prog
    RemoteWeights(plan).end_hosting()  # (the weight chunks a neighbour still needs this step)
    em.flush_marks()
    start, last = em.loop_start, len(em.ops) - 1
    em.ops[last] = em.ops[last].with_(lend=1, lcount=steps, ltarget=start)
    prog.loop = (start, last)
    em.in_loop = False
    em.counting = False
    em.mark(MARK_END)
    WeightPhase(plan).final()
    em.emit(isa.Instr(isa.HALT))
    prog.link_elems = dict(em.link)
    prog.scratch_peak = em.scratch_peak
    if len(em.ops) > (1 << isa.PC_BITS):
        raise ClusterError(f"node {prog.node}: the program has {len(em.ops)} instructions; the sequencer "
                           f"addresses at most {1 << isa.PC_BITS}")
    return prog


def check_beats(nodes: list, lanes: int) -> None:
    """Refuse a program whose link or host streams do not split into whole beats of ``lanes``
    elements (a partial beat would end one command and start the next on the other side).  Every
    tensor is padded to its array side, which ``lanes`` divides, so the compiler's programs pass;
    a partial last beat is fine towards the scratch FIFO."""
    if lanes == 1:
        return
    links = isa.DST_FWD_OUT | isa.DST_BWD_OUT | isa.DST_HOST
    for prog in nodes:
        for pc, ins in enumerate(prog.ops):
            on_link = (ins.kind in (isa.MOVE, isa.REDUCE, isa.RELAY)
                       or (ins.kind == isa.LOAD and ins.src != isa.SRC_SCRATCH)
                       or (ins.kind == isa.STORE and ins.dmask & links))
            if on_link and ins.count % lanes:
                raise ClusterError(f"node {prog.node} instruction {pc} ({ins.describe()}) streams {ins.count} "
                                   f"elements over a link or the host: not a whole number of {lanes}-element beats")
        if len(prog.host_in) % lanes:
            raise ClusterError(f"node {prog.node}: {len(prog.host_in)} side-channel elements are not a whole "
                               f"number of {lanes}-element beats")


def check_fit(nodes: list, batch: int, w_hint: str = "") -> None:
    """Refuse programs whose buffer regions overflow their nodes' buffers (before simulating);
    ``w_hint`` follows an overflowing W."""
    bad = []
    for prog in nodes:
        for buf in prog.alloc.overflow():
            u = prog.alloc.usage()[buf]
            bad.append(f"node {prog.node} buffer {buf} needs {u['used']} words, has {u['depth']}"
                       + (w_hint if buf == "W" else ""))
    if bad:
        raise BufferFitError(f"the mapping does not fit the nodes' buffers (batch {batch}): " + "; ".join(bad))


class BufferFitError(ClusterError):
    """Programs whose buffer regions overflow their nodes' buffers: ``what`` says which, and the message
    adds the advice for a cluster run (another caller, such as ``translate --case``, gives its own)."""

    ADVICE = "Use a smaller batch, more nodes or deeper buffers."

    def __init__(self, what: str):
        super().__init__(f"{what}. {self.ADVICE}")
        self.what = what


def unpack_params(net, part, P, host_out: dict, like: dict) -> dict:
    """Reassemble ``{layer: {"w", "b"}}`` from what the nodes stored to the host; ``P`` is the
    array side of every node (an int, or one per node: each piece is in its node's layout)."""
    Ps = [int(P)] * part.n if isinstance(P, (int, np.integer)) else [int(p) for p in P]
    owner = {(it.layer, it.k0, it.k1): Ps[j] for j, items in enumerate(part.nodes) for it in items}
    out = {name: {"w": np.zeros_like(np.asarray(p["w"])), "b": np.zeros_like(np.asarray(p["b"]))}
           for name, p in like.items()}
    for key, vals in host_out.items():  # what the nodes streamed to the host, split by key
        kind, li, k0, k1 = key
        P = owner[(li, k0, k1)]
        layer = net.layers[li]
        _, C, R, S = net.conv_geometry(layer)["w_shape"]
        if kind == "w":
            words = np.asarray(vals, dtype=np.int64).reshape(-1, P * P)
            if li in part.packed:  # the node keeps (K, C*R*S, 1, 1): the same elements in the same order
                w = unpack_weight(words, (k1 - k0, C * R * S, 1, 1), P).reshape(k1 - k0, C, R, S)
            else:
                w = unpack_weight(words, (k1 - k0, C, R, S), P)
            out[layer.name]["w"][k0:k1] = w
        else:
            out[layer.name]["b"][k0:k1] = unpack_bias(np.asarray(vals), k1 - k0, P)
    return out


def host_out_elements(net, part, prog: NodeProgram, P: int, params: dict) -> list:
    """What node ``prog.node`` (array side ``P``) streams to the host when its layers hold ``params``,
    in order: each ``prog.host_out`` piece packed as the compiler packs the initial weights (the
    inverse of :func:`unpack_params` for one node; an exported case's expected ``host_out``)."""
    from pymtl_fp.engine import packing
    from pymtl_fp.engine.msgs import pack_bias, pack_weight

    out = []
    for key, n in prog.host_out:
        kind, li, k0, k1 = key
        name = net.layers[li].name
        if kind == "w":
            w = np.asarray(params[name]["w"])
            if li in part.packed:  # kept in the packed layout (K, C*R*S, 1, 1) on the node
                w = packing.pack_weight(w)
            vals = pack_weight(w[k0:k1], P).reshape(-1)
        else:
            vals = pack_bias(np.asarray(params[name]["b"])[k0:k1], P).reshape(-1)
        if len(vals) != n:
            raise ClusterError(f"node {prog.node} stores {n} elements of {key} to the host; they pack to {len(vals)}")
        out += [int(v) for v in vals]
    return out


def params_equal(a: dict, b: dict) -> bool:
    """Two ``{layer: {"w", "b"}}`` parameter sets hold the same integers."""
    return all(np.array_equal(a[n][k], b[n][k]) for n in a for k in ("w", "b"))


def split_host_out(prog: NodeProgram, elements: list) -> dict:
    """What a node streamed to the host (``elements``, in order) as ``{key: values}``."""
    out, pos = {}, 0
    for key, n in prog.host_out:
        out[key] = list(elements[pos:pos + n])
        pos += n
    if pos != len(elements):
        raise ClusterError(f"node {prog.node} sent {len(elements)} elements to the host, its program "
                           f"stores {pos}")
    return out


def host_out_params(net, part, cprog: ClusterProgram, Ps, streams: list, like: dict) -> dict:
    """The trained weights from every node's host stream (``streams[j]``: node j's elements)."""
    host_out = {}
    for prog, elems in zip(cprog.nodes, streams):
        host_out.update(split_host_out(prog, elems))
    return unpack_params(net, part, Ps, host_out, like)
