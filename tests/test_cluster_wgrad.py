"""Weight gradients per image (``wgrad="image"``): after each image's backward pass a raw
``bwd_weight`` adds the image's exact sums to B (``acc``), and the router rounds the batch's sums
once at the step's end; the final weights equal the golden mini-batch step bit for bit on 1-4
nodes, split layers, both mini-batch schedules, random stalls and link latencies, FL and CL (and
the Verilated cluster, cycle for cycle with CL); a node keeps only the images in flight, so its
activation and gradient words do not grow with the batch."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.compile import choose_partition, compile_pipeline
from pymtl_fp.cluster.compiler.emit import Emitter
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.partition import layer_info
from pymtl_fp.cluster.compiler.schedule import images_in_flight, step_order
from pymtl_fp.cluster.config import ClusterError, default_link
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.engine.encoding import OP
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden.train import TrainConfig
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import seeded_params, small_cluster
from pymtl_fp.tb.hypothesis_profiles import examples

NET = load_net("lenet-digits")
PREC = "8"
FMT = NET.precision(PREC)
TCFG = TrainConfig(PREC, lr_log2=3, seed=11)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:24], FMT.act), split.y_train[:24]


def _params(net=NET):
    return seeded_params(net, PREC)


def _ccfg(n, net=NET, link=None, act_depth=2048, Ps=None):
    return small_cluster(n, net, PREC, link=link, act_depth=act_depth, Ps=Ps)


def _run(data, ccfg, level, *, batch=3, steps=2, stall=None, schedule="1f1b", overlap=True, cuts=None,
         wgrad="image", net=NET, check=True):
    images, labels = data
    params = _params(net)
    run = train_on_cluster(net, params, images, labels, TCFG, ccfg,
                           Mapping(schedule=schedule, overlap=overlap, cuts=cuts, wgrad=wgrad), steps=steps, batch=batch,
                           levels=[level] * ccfg.n, stall=stall)
    if check:
        want, losses = golden_steps(net, params, images, labels, TCFG, steps, batch)
        assert params_equal(run.params, want), f"{ccfg.n} nodes at {level}: the weights differ from the golden step"
        assert run.losses == pytest.approx(losses, abs=0)
        assert not params_equal(want, params)  # it did learn
    return run


@settings(max_examples=examples(4), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 4), level=st.sampled_from(["fl", "cl"]), batch=st.integers(2, 5),
       latency=st.integers(1, 12), stall=st.floats(0.0, 0.4), seed=st.integers(0, 1000),
       schedule=st.sampled_from(["1f1b", "gpipe"]), overlap=st.booleans(), wgrad=st.sampled_from(["image", "auto"]))
def test_per_image_weight_gradients_equal_the_golden_minibatch_step(data, n, level, batch, latency, stall, seed,
                                                                   schedule, overlap, wgrad):
    ccfg = _ccfg(n, link=default_link(32, latency))
    run = _run(data, ccfg, level, batch=batch, stall=(stall, seed), schedule=schedule, overlap=overlap, wgrad=wgrad)
    assert run.report["wgrad"] == wgrad and "rounded once" in run.report["pipelining"]


@pytest.mark.parametrize("cuts,wgrad", [([0, 1, 7, 9], "image"), ([0, 4, 6, 9], "image"), ([0, 1, 7, 9], "auto")])
def test_split_layers_and_a_deeper_net(data, cuts, wgrad):
    """Split layers (a second piece rounds its db with its own seed through the router; under
    ``auto`` the split fc's pieces stay over the batch beside per-image conv layers) on LeNet, and
    the four conv layers of vgg-digits on 4 nodes."""
    run = _run(data, _ccfg(3), "cl", cuts=cuts, wgrad=wgrad)
    assert run.report["partition"]["split_layers"]
    vgg = load_net("vgg-digits")
    _run(data, _ccfg(4, net=vgg, act_depth=4096), "cl", batch=4, steps=1, net=vgg, wgrad=wgrad)


def test_auto_keeps_fc_layers_over_the_batch():
    """``auto`` computes a conv layer's weight gradient per image (one image's bwd_weight costs
    about its share of the batch's) and an fc layer's over the batch (one image's costs about 4x
    its share: all drain): the node programs' bwd_weight commands say so."""
    ccfg = _ccfg(3)
    part = choose_partition(NET, ccfg, 8, Mapping(split=False))
    _, cprog = compile_pipeline(NET, ccfg, part, _params(), TCFG, 1, Mapping(overlap=True, wgrad="auto"))
    kinds = {}  # layer name -> {(n, raw)} of its bwd_weight commands
    for prog in cprog.nodes:
        for pc, ins in enumerate(prog.ops):
            if ins.kind == isa.ENG and ins.field("op") == OP["bwd_weight"]:
                kinds.setdefault(prog.notes[pc], set()).add((ins.field("n"), ins.field("raw")))
    assert kinds["conv1"] == kinds["conv2"] == {(1, 1)}  # per image, un-rounded into B
    assert kinds["fc"] == {(8, 0)}                       # over the batch, rounded by the engine


def test_mixed_array_sides(data):
    _run(data, _ccfg(3, Ps=[4, 2, 2]), "cl", steps=1, batch=3)


def test_without_acc_the_batch_sums_are_lost(data, monkeypatch):
    """A mutant whose per-image bwd_weight overwrites B's sums (no ``acc``) keeps only the last
    image's gradient: the weights differ from the golden step."""
    emit = Emitter.compute

    def no_acc(self, op, macs=0, packed=False, **fields):
        if fields.get("acc"):
            fields["acc"] = 0
        return emit(self, op, macs, packed, **fields)

    monkeypatch.setattr(Emitter, "compute", no_acc)
    images, labels = data
    params = _params()
    run = _run(data, _ccfg(2), "cl", steps=1, check=False)
    want, _ = golden_steps(NET, params, images, labels, TCFG, 1, 3)
    assert not params_equal(run.params, want)


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe", "cp", "sgd"])
def test_images_in_flight_follows_the_schedule(schedule):
    """The slots are the most images between a forward pass's start and the backward pass's end
    (the next input LOADed during a backward pass takes its slot early, except under sgd)."""
    n, B = 4, 32
    got = [images_in_flight(schedule, j, n, B) for j in range(n)]
    want = {"1f1b": [n - j + 2 for j in range(n)], "cp": [n - j + 2 for j in range(n)],
            "gpipe": [B] * n, "sgd": [1] * n}[schedule]
    assert got == want
    assert images_in_flight("1f1b", 0, 4, 2) == 2  # never more than the batch
    # every image's passes fall in a window of that many consecutive images
    for j in range(n):
        live = set()
        for kind, b in step_order(schedule, j, n, B):
            live.add(b) if kind == "fwd" else live.discard(b)
            assert not live or max(live) - min(live) < got[j]


def test_node_words_do_not_grow_with_the_batch():
    """At batch 8 and 32 a node keeps the same X and D words with per-image weight gradients
    (the images in flight), and at batch 32 at least 4x fewer than with one bwd_weight over the
    batch; B holds the un-rounded sums instead (the engines' B deepened to a power of two), and
    the router's scratch FIFO holds two output-channel tiles of them at most."""
    net = load_net("vgg-digits")
    ccfg = _ccfg(4, net=net, act_depth=65536)
    params = _params(net)
    used = {}
    for batch in (8, 32):
        for wgrad in ("batch", "image"):
            part = choose_partition(net, ccfg, batch, Mapping(wgrad=wgrad))
            run_ccfg, cprog = compile_pipeline(net, ccfg, part, params, TCFG, 1,
                                               Mapping(overlap=True, wgrad=wgrad))
            used[batch, wgrad] = [p.alloc.usage() for p in cprog.nodes]
            for j, (p, e) in enumerate(zip(cprog.nodes, run_ccfg.engines)):
                assert not p.alloc.overflow()
                assert (e.bias_depth > 32) == (wgrad == "image")
                if wgrad == "image":  # the router rounds one output-channel tile of dw at a time
                    tile = max(tiles(f["c"], 4) * f["r"] * f["s"] * 16
                               for f in (layer_info(net, it.layer) for it in part.nodes[j] if not it.pool))
                    assert p.scratch_peak <= 2 * tile
    act = {k: [u["X"]["used"] + u["D"]["used"] for u in v] for k, v in used.items()}
    assert act[8, "image"] == act[32, "image"]
    assert all(4 * i <= b for i, b in zip(act[32, "image"], act[32, "batch"])), act
    assert all(u["B"]["used"] > v["B"]["used"] for u, v in zip(used[32, "image"], used[32, "batch"]))


def test_refusals(data):
    for kw, msg in ((dict(schedule="cp"), "mini-batch schedules"), (dict(wgrad="rows"), "unknown --wgrad")):
        with pytest.raises(ClusterError, match=msg):
            _run(data, _ccfg(1), "fl", check=False, **{"wgrad": "image", **kw})
    images, labels = data
    with pytest.raises(ClusterError, match="no --wgrad image"):
        train_on_cluster(NET, _params(), images, labels, TCFG, _ccfg(2), Mapping(parallel="data", wgrad="image"), steps=1,
                         batch=2, levels=["fl"] * 2)


@pytest.mark.verilator
def test_verilated_cluster_equals_golden_and_cl_cycle_for_cycle(data):
    """(auto: the conv layers per image, fc over the batch; on 3 nodes at batch 5 node 1 takes a
    backward pass's output gradient and the next image's input beside the weight gradients,
    :mod:`pymtl_fp.cluster.compiler.hoist`)"""
    ccfg = _ccfg(3)
    part = choose_partition(NET, ccfg, 5, Mapping(wgrad="auto"))
    _, cprog = compile_pipeline(NET, ccfg, part, _params(), TCFG, 2, Mapping(overlap=True, wgrad="auto"))
    assert cprog.nodes[1].hoisted == {"dy": 1, "input": 1}
    v = _run(data, ccfg, "verilator", steps=2, batch=5, wgrad="auto")
    c = _run(data, ccfg, "cl", steps=2, batch=5, wgrad="auto")
    assert v.report["simulator"].startswith("verilated cluster")
    assert v.cycles == c.cycles
    for key in ("cycles_per_step", "steady_state", "pipeline"):
        assert v.report[key] == c.report[key], key
    for a, b in zip(v.report["node"], c.report["node"]):
        assert a["cycles"] == b["cycles"] and a["router_scratch_max"] == b["router_scratch_max"]
