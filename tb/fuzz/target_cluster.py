"""Fuzz target ``cluster``: training steps of the bundled LeNet on a simulated cluster of nodes.

A case draws the cluster first and small first (number of nodes, link latency and credits, whether
layers are split across nodes), then the training run (steps, batch, initial-weight seed, which
images, learning-rate shift) and the stalls.  Mappings the cluster refuses before simulating
(``ClusterError``: e.g. more nodes than layers without splitting) are rejected, not failures.
The property: the weights the nodes hold after the steps equal :func:`pymtl_fp.cluster.run.train.golden_steps`
exactly (the golden model's ``train_step`` applied ``steps`` times; for the per-image schedules
``cp`` and ``sgd``, drawn too, the golden per-image step with the partition's staleness).  The
case also draws how the nodes share the work: one pipeline, or data-parallel / hybrid replicas
(``--parallel``; GPipe order, a batch of at least one image per replica), which must end with the
same one-node weights, and, for a mini-batch pipeline, when the weight gradients are computed
(``--wgrad batch | image | auto``) and, half the time, one whole layer whose weights a neighbour
keeps and streams in for every pass (``--weight-home``, :mod:`pymtl_fp.cluster.compiler.weights_home`).
``--level`` sets every node's engine level (``fl``, ``cl``, ``rtl``, ``verilator``); links are
cycle level, or RTL when every node is RTL (``cluster.run`` decides).
A hang is caught by the cluster's watchdog and counts as a failure.
"""

from __future__ import annotations

import functools

from hypothesis import assume
from hypothesis import strategies as st

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.levels import LEVELS, RTL_LEVELS
from pymtl_fp.tb.fuzz.targets import FuzzTarget

NET_NAME = "lenet-digits"
PREC = "8"
#: training images the check loads (a case's ``first_image .. + steps x batch`` lies among them)
IMAGES = 64


@functools.lru_cache(maxsize=1)
def _fixture():
    from pymtl_fp.cluster.config import engine_for_net
    from pymtl_fp.data import load_digits_split, quantize_images
    from pymtl_fp.net import load_net

    net = load_net(NET_NAME)
    fmt = net.precision(PREC)
    split = load_digits_split(seed=0)
    return net, engine_for_net(net, PREC), quantize_images(split.x_train[:IMAGES], fmt.act), split.y_train[:IMAGES]


@st.composite
def case_strategy(draw, level):
    max_nodes = 2 if level in RTL_LEVELS else 4
    return dict(
        nodes=draw(st.integers(1, max_nodes)),
        latency=draw(st.integers(1, 12)),
        extra_credits=draw(st.integers(0, 4)),
        split=draw(st.booleans()),
        steps=draw(st.integers(1, 2)),
        batch=draw(st.integers(1, 6)),  # (4 and more: 1F1B nodes move LOADs, cluster.hoist)
        param_seed=draw(st.integers(0, 1000)),
        first_image=draw(st.integers(0, 40)),
        lr_log2=draw(st.integers(2, 6)),
        train_seed=draw(st.integers(0, 2**16)),
        stall=draw(st.sampled_from([0.0, 0.2, 0.5])),
        stall_seed=draw(st.integers(0, 1000)),
        schedule=draw(st.sampled_from(["1f1b", "gpipe", "cp", "sgd"])),
        parallel=draw(st.sampled_from(["pipeline", "pipeline", "data", "hybrid"])),
        wgrad=draw(st.sampled_from(["batch", "image", "auto"])),
        weight_home=draw(st.one_of(st.none(), st.integers(0, 1000))),
    )


def strategy(level):
    return case_strategy(level)


def limits(case):
    """A replayed cluster case: the strategy's fields in range (node counts up to the net's tiles
    are left to the partition), the images it trains on among the 64 the check loads, a stall at
    most 0.95, and the schedule, parallelism and weight-gradient mode among those drawn."""
    from pymtl_fp.tb.fuzz import case_limits as cl

    cl.integer(case, "nodes", 1, 64)
    cl.integer(case, "latency", 1, 4096)
    cl.integer(case, "extra_credits", 0, 64)
    cl.flag(case, "split")
    steps = cl.integer(case, "steps", 1, IMAGES)
    batch = cl.integer(case, "batch", 1, IMAGES)
    first = cl.integer(case, "first_image", 0, IMAGES - 1)
    if first + steps * batch > IMAGES:
        raise cl.CaseLimitError(f"first_image {first} + steps {steps} x batch {batch} passes the {IMAGES} "
                                "images the check loads")
    cl.integer(case, "param_seed", 0, cl.SEED_MAX)
    cl.integer(case, "lr_log2", 0, 16)
    cl.integer(case, "train_seed", 0, cl.SEED_MAX)
    cl.number(case, "stall", 0.0, cl.MAX_STALL)
    cl.integer(case, "stall_seed", 0, cl.SEED_MAX)
    cl.choice(case, "schedule", ("1f1b", "gpipe", "cp", "sgd"), default="1f1b")
    cl.choice(case, "parallel", ("pipeline", "data", "hybrid"), default="pipeline")
    cl.choice(case, "wgrad", ("batch", "image", "auto"), default="batch")
    if case.get("weight_home") is not None:
        cl.integer(case, "weight_home", 0, cl.SEED_MAX)


def check(case, level, ctx):
    from pymtl_fp.cluster.config import ClusterConfig, ClusterError, default_link
    from pymtl_fp.cluster.run.train import cp_versions, golden_steps, params_equal, train_on_cluster
    from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params

    net, engine, images, labels = _fixture()
    n, steps, batch = case["nodes"], case["steps"], case["batch"]
    sl = slice(case["first_image"], case["first_image"] + steps * batch)
    images, labels = images[sl], labels[sl]
    link = default_link(engine.stream_bits, case["latency"])
    link = link.replace(credits=link.credits + case["extra_credits"])
    ccfg = ClusterConfig.homogeneous(n, engine, link)
    tcfg = TrainConfig(PREC, lr_log2=case["lr_log2"], seed=case["train_seed"])
    params = quantize_params(net, init_params_float64(net, case["param_seed"]), PREC)
    stall = (case["stall"], case["stall_seed"]) if case["stall"] else None
    schedule = case.get("schedule", "1f1b")  # (case files written before schedules were drawn)
    parallel = case.get("parallel", "pipeline")  # (... and before replicas were)
    groups = 2 if parallel == "hybrid" else None
    # per-image weight gradients summed in B: for a mini-batch pipeline (the rest computes them per image
    # already, or per replica)
    wgrad = case.get("wgrad", "batch") if parallel == "pipeline" and schedule in ("1f1b", "gpipe") else "batch"
    if parallel != "pipeline":  # replicas run GPipe order, an image each at least
        schedule = "gpipe"
        batch = max(batch, groups or n)
        sl = slice(case["first_image"], case["first_image"] + steps * batch)
        images, labels = _fixture()[2][sl], _fixture()[3][sl]
    try:
        home = _placement(net, ccfg, batch, case) if parallel == "pipeline" and schedule in ("1f1b", "gpipe") else None
        run = train_on_cluster(net, params, images, labels, tcfg, ccfg,
                               Mapping(split=case["split"], schedule=schedule, parallel=parallel, groups=groups,
                                       wgrad=wgrad, weight_home=home or "auto"),
                               steps=steps, batch=batch, levels=[level] * n, stall=stall)
    except ClusterError:  # a mapping the cluster refuses before simulating: not a test case
        assume(False)
    want, _ = golden_steps(net, params, images, labels, tcfg, steps, batch, cp_versions(net, ccfg, batch,
                                                                                        Mapping(schedule=schedule)))
    if not params_equal(run.params, want):
        bad = [f"{layer}.{k}" for layer in want for k in ("w", "b")
               if not (run.params[layer][k] == want[layer][k]).all()]
        raise AssertionError(f"{level} cluster of {n} node(s): weights differ from the golden model in {bad}")


def _placement(net, ccfg, batch, case):
    """The case's layer kept by a neighbour (``weight_home``: which of the partition's whole
    conv/fc layers and neighbours), or None."""
    from pymtl_fp.cluster.compiler.compile import choose_partition
    from pymtl_fp.cluster.compiler.partition import layer_info
    from pymtl_fp.cluster.compiler.weights_home import Placement

    pick = case.get("weight_home")  # (case files written before it was drawn: none)
    if pick is None:
        return None
    part = choose_partition(net, ccfg, batch, Mapping(split=case["split"]))
    cands = [(u, it.layer, h) for u, items in enumerate(part.nodes) for it in items
             if not it.pool and it.k0 == 0 and it.k1 == layer_info(net, it.layer)["k"]
             for h in (u - 1, u + 1) if 0 <= h < part.n]
    if not cands:
        return None
    u, li, h = cands[pick % len(cands)]
    return Placement({(u, li): h})


def coverage(case):
    parallel = case.get("parallel", "pipeline")
    schedule = case.get("schedule", "1f1b") if parallel == "pipeline" else "gpipe"
    wgrad = case.get("wgrad", "batch") if parallel == "pipeline" and schedule in ("1f1b", "gpipe") else "batch"
    return (f"{parallel} {schedule} wgrad-{wgrad} {case['nodes']} node(s) {'split' if case['split'] else 'layer-cut'} "
            f"L{case['latency']} "
            f"{case['steps']}x batch {case['batch']}" + (f" stall{case['stall']}" if case["stall"] else "")
            + (" weight-home" if case.get("weight_home") is not None and parallel == "pipeline"
               and schedule in ("1f1b", "gpipe") else ""))


TARGET = FuzzTarget(
    name="cluster",
    description="training steps of LeNet on 1-4 simulated nodes vs the golden model's weights",
    levels=LEVELS,
    strategy=strategy,
    check=check,
    coverage=coverage,
    case_keys=("nodes", "latency", "extra_credits", "split", "steps", "batch", "param_seed", "first_image",
               "lr_log2", "train_seed", "stall", "stall_seed"),
    limits=limits,
)
