"""Training on the simulated cluster leaves exactly the golden model's weights: 1-4 nodes, split
layers, random stalls and link latencies, mixed levels; a deadlock is a clear failure naming the
stuck node; the report holds the throughput figures."""

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import (
    ClusterConfig,
    ClusterError,
    default_link,
    engine_for_net,
)
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net
from pymtl_fp.sim import SimulationHang
from pymtl_fp.tb.hypothesis_profiles import examples

NET = load_net("lenet-digits")
PREC = "8"
FMT = NET.precision(PREC)
ENGINE = engine_for_net(NET, PREC)
TCFG = TrainConfig(PREC, lr_log2=3, seed=7)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:32], FMT.act), split.y_train[:32]


def _params(seed=0):
    return quantize_params(NET, init_params_float64(NET, seed), PREC)


def _check(data, n, *, steps=2, batch=2, levels=None, cuts=None, link=None, stall=None, tcfg=TCFG, split=True,
           topology="chain", link_overrides=None):
    images, labels = data
    params = _params()
    ccfg = ClusterConfig.homogeneous(n, ENGINE, link, topology=topology, link_overrides=link_overrides or {})
    run = train_on_cluster(NET, params, images, labels, tcfg, ccfg, Mapping(cuts=cuts, split=split), steps=steps,
                           batch=batch, levels=levels or ["fl"] * n, stall=stall)
    want, losses = golden_steps(NET, params, images, labels, tcfg, steps, batch)
    assert params_equal(run.params, want)
    assert not params_equal(want, params)  # it did learn
    assert np.allclose(run.losses, losses)
    return run


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_fl_cluster_equals_golden(data, n):
    run = _check(data, n)
    rep = run.report
    assert rep["nodes"] == n and len(rep["cycles_per_step"]) == 2
    if n == 2:
        assert rep["partition"]["split_layers"] == ["conv2"]


def test_partition_that_splits_conv1_and_fc(data):
    run = _check(data, 3, cuts=[0, 1, 7, 9], steps=1, batch=3)
    assert run.report["partition"]["split_layers"] == ["conv1", "fc"]


def test_a_layers_learning_rate_offset_trains_bit_exact(data):
    """lenet-digits with its fc layer at 2**-2 of the net's learning rate (``lr_log2_offset = 2``) on
    two CL nodes: the cluster's update shifts are the net's, so its weights equal the golden model's,
    and differ from those of the net without the offset."""
    from pymtl_fp.net import net_from_dict

    d = NET.to_dict()
    d["layers"][-1]["lr_log2_offset"] = 2
    net = net_from_dict(d)
    images, labels = data
    params = _params()
    ccfg = ClusterConfig.homogeneous(2, ENGINE)
    run = train_on_cluster(net, params, images, labels, TCFG, ccfg, Mapping(), steps=1, batch=2, levels=["cl"] * 2)
    want, _ = golden_steps(net, params, images, labels, TCFG, 1, 2)
    plain, _ = golden_steps(NET, params, images, labels, TCFG, 1, 2)
    assert params_equal(run.params, want)
    assert not np.array_equal(want["fc"]["w"], plain["fc"]["w"])  # the offset changed the fc update
    assert all(np.array_equal(want[k]["w"], plain[k]["w"]) for k in want if k != "fc")


def test_stochastic_forward_and_nearest_gradients(data):
    _check(data, 2, steps=1, tcfg=replace(TCFG, fwd_mode="stochastic", grad_mode="nearest"))


def test_report_holds_throughput_against_the_bound(data):
    run = _check(data, 2, steps=2, batch=4)
    rep = run.report
    b = rep["bound"]
    steady = rep["cycles_per_step"][-1]
    assert b["cycles_per_step"] == max(b["node_serial_cycles_per_step"], b["busiest_link_cycles_per_step"])
    assert 0.5 < b["efficiency_vs_bound"] <= 1.05  # FL streams a STORE word a cycle faster than the model
    assert b["node_compute_cycles_per_step"] <= b["node_serial_cycles_per_step"] <= 1.05 * steady
    for node in rep["node"]:
        assert 0 < node["mac_utilization"] < 1
        assert sum(node["cycles"].values()) == rep["cycles_total"] + 1 or \
            abs(sum(node["cycles"].values()) - rep["cycles_total"]) <= 2
    assert {lk["link"] for lk in rep["links"]} >= {"node0->node1", "node1->node0", "host->node0"}
    assert rep["images_per_s"] > 0 and rep["pipeline"]["fill_cycles_first_logits"] > 0
    # steady state: images leave the pipeline at a regular interval no shorter than the slowest
    # node's compute for one image in that phase
    ss = rep["steady_state"]
    for phase in ("fwd", "bwd"):
        t = ss[phase]["completions"]
        assert all(a < b for a, b in itertools.pairwise(t)), (phase, t)
        assert ss[phase]["bound_cycles_per_image"] <= ss[phase]["interval_cycles_per_image"]
    assert ss["schedule"] == "1f1b"  # one forward and one backward pass per node and image
    assert ss["cycles_per_image"] == ss["fwd"]["interval_cycles_per_image"]
    assert 0 < ss["efficiency"] <= 1.0


@settings(max_examples=examples(3), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 3), latency=st.integers(1, 40), credits=st.integers(1, 6),
       stall=st.floats(0.0, 0.5), seed=st.integers(0, 1000), topology=st.sampled_from(["chain", "ring"]))
def test_random_stalls_and_link_latencies_never_change_the_weights(data, n, latency, credits, stall, seed,
                                                                    topology):
    link = default_link(ENGINE.stream_bits, latency).replace(credits=credits)
    _check(data, n, steps=1, batch=2, link=link, stall=(stall, seed), topology=topology)


@pytest.mark.cl
@pytest.mark.parametrize("n", [2, 3, 4])
def test_ring_attaches_the_host_to_node_0_only(data, n):
    """A ring: node N-1's logits reach the host over the ring link to node 0 and node 0's host
    link, the loss gradients the other way; bit-exact, the same node programs, and the logits'
    round trip takes the extra hop (a slow ring link shows in the fill)."""
    chain = _check(data, n, steps=1, batch=4, levels=["cl"] * n)
    ring = _check(data, n, steps=1, batch=4, levels=["cl"] * n, topology="ring")
    links = {lk["link"]: lk["elements_per_step"] for lk in ring.report["links"]}
    logits = chain.report["links"][-1]["elements_per_step"]
    assert links[f"ring:node{n - 1}->node0"] == links["node0->host"] == logits
    assert links["host->node0:grad"] == links[f"ring:node0->node{n - 1}"] == logits
    assert f"node{n - 1}->host" not in links and ring.report["topology"] == "ring"
    for j in range(n - 1):
        assert links[f"node{j}->node{j + 1}"] > 0
    slow = default_link(ENGINE.stream_bits, 200)
    far = _check(data, n, steps=1, batch=4, levels=["cl"] * n, topology="ring",
                 link_overrides={f"ring:node{n - 1}->node0": slow})
    assert far.report["pipeline"]["fill_cycles_first_logits"] >= ring.report["pipeline"]["fill_cycles_first_logits"] + 150
    with pytest.raises(ClusterError, match="at least 2 nodes"):
        ClusterConfig.homogeneous(1, ENGINE, topology="ring")


def test_a_deadlock_names_the_stuck_node(data, monkeypatch):
    from pymtl_fp.cluster import isa
    from pymtl_fp.cluster.compiler import codegen

    real = codegen.forward

    def broken(plan, b, seed, **kw):  # node 0 never sends image 1's output downstream
        real(plan, b, seed, **kw)
        ops = plan.emit.ops
        if plan.node.j == 0 and b == 1:
            while not (ops[-1].kind == isa.STORE and ops[-1].dmask & isa.DST_FWD_OUT):
                ops.pop()
            ops.pop()  # the STORE feeding the link
    monkeypatch.setattr(codegen, "forward", broken)
    images, labels = data
    ccfg = ClusterConfig.homogeneous(2, ENGINE)
    with pytest.raises(SimulationHang, match=r"stuck: .*node1: instruction \d+/\d+ [^;]*move fwd_in->din 0/\d+"):
        train_on_cluster(NET, _params(), images, labels, TCFG, ccfg, steps=1, batch=2, levels=["fl", "fl"],
                         idle_limit=2000)


def test_cl_and_fl_nodes_in_one_cluster_equal_golden(data):
    run = _check(data, 2, steps=1, batch=2, levels=["cl", "fl"])
    assert run.report["levels"] == ["cl", "fl"] and run.report["link_level"] == "cl"


def test_nodes_with_different_buffers_equal_golden(data):
    images, labels = data
    params = _params()
    engines = (ENGINE.replace(act_depth=1024), ENGINE.replace(act_depth=4096, weight_depth=1024))
    ccfg = ClusterConfig(engines, default_link(ENGINE.stream_bits, 3))
    run = train_on_cluster(NET, params, images, labels, TCFG, ccfg, steps=1, batch=2, levels=["fl", "fl"])
    want, _ = golden_steps(NET, params, images, labels, TCFG, 1, 2)
    assert params_equal(run.params, want)
    assert [n["buffers"]["X"]["depth"] for n in run.report["node"]] == [1024, 4096]


@pytest.mark.slow
@pytest.mark.cl
def test_cl_steady_state_throughput_against_the_bounds():
    """4 CL nodes, batch 32, serial engines: the second step takes at most 1/0.85 of the slowest
    node's modelled compute + stream I/O (measured: 86%; it was 95% before layers wrote their
    results where the next layer reads them, which took the copies out of that bound too); the
    compute-or-link bound is reported alongside, and the steady state (pipeline full) per phase."""
    split = load_digits_split(seed=0)
    images, labels = quantize_images(split.x_train[:64], FMT.act), split.y_train[:64]
    ccfg = ClusterConfig.homogeneous(4, engine_for_net(NET, PREC, act_depth=8192))
    run = train_on_cluster(NET, _params(), images, labels, TCFG, ccfg, steps=2, batch=32, levels=["cl"] * 4)
    want, _ = golden_steps(NET, _params(), images, labels, TCFG, 2, 32)
    assert params_equal(run.params, want)
    b = run.report["bound"]
    assert b["efficiency_vs_bound"] >= 0.85
    assert 0 < b["efficiency_vs_compute_bound"] < b["efficiency_vs_bound"]
    ss = run.report["steady_state"]
    for phase in ("fwd", "bwd"):
        assert ss[phase]["bound_cycles_per_image"] <= ss[phase]["interval_cycles_per_image"]
    assert 0 < ss["efficiency"] <= 1.0


def test_a_slow_link_becomes_the_bound(data):
    images, labels = data
    params = _params()
    link = default_link(ENGINE.stream_bits, 4)
    slow = link.replace(phit_bits=1, name="slow")  # 32 flits per element
    ccfg = ClusterConfig.homogeneous(2, ENGINE, link).replace(link_overrides={"node0->node1": slow})
    run = train_on_cluster(NET, params, images, labels, TCFG, ccfg, steps=2, batch=2, levels=["fl", "fl"])
    want, _ = golden_steps(NET, params, images, labels, TCFG, 2, 2)
    assert params_equal(run.params, want)
    b = run.report["bound"]
    assert b["busiest_link_cycles_per_step"] > b["node_serial_cycles_per_step"]
    assert b["cycles_per_step"] == b["busiest_link_cycles_per_step"] == b["compute_or_link_cycles_per_step"]
    assert 0.5 < b["efficiency_vs_bound"] <= 1.0
    util = {lk["link"]: lk["bandwidth_utilization"] for lk in run.report["links"]}
    assert util["node0->node1"] > 0.5 > util["node1->node0"]
    with pytest.raises(ClusterError, match="no link named"):
        ClusterConfig.homogeneous(2, ENGINE, link).replace(link_overrides={"node0->node2": slow})


def test_16_bit_precision_equals_golden():
    """64-bit streams and links, a negative bias-update shift (a left shift in the DMA)."""
    fmt16 = NET.precision("16")
    split = load_digits_split(seed=0)
    images, labels = quantize_images(split.x_train[:4], fmt16.act), split.y_train[:4]
    params = quantize_params(NET, init_params_float64(NET, 2), "16")
    tcfg = TrainConfig("16", lr_log2=3, seed=1)
    ccfg = ClusterConfig.homogeneous(2, engine_for_net(NET, "16"))
    assert ccfg.engines[0].stream_bits == 64 and NET.shifts("16", 3)["fc"].update_b < 0
    run = train_on_cluster(NET, params, images, labels, tcfg, ccfg, steps=1, batch=2, levels=["fl", "fl"])
    want, _ = golden_steps(NET, params, images, labels, tcfg, 1, 2)
    assert params_equal(run.params, want)


@pytest.mark.cl
def test_cl_steady_state_is_at_least_90_percent_of_the_compute_or_link_bound():
    """The issue's throughput target, at CL, 4 nodes, batch 8 (the default run): with the 1f1b
    schedule and overlapping engines the pipeline, once full, delivers an image every
    ``cycles_per_image`` cycles, at least 90% of the rate the slowest node's compute (forward plus
    backward, for one image) or the busiest link allows (measured: 1411 vs 1312 cycles, 93.0%).
    The gpipe schedule on the same partition reaches much less (measured: 60%): its phases are
    bounded by different nodes.  Both are bit-exact."""
    split = load_digits_split(seed=0)
    images, labels = quantize_images(split.x_train[:16], FMT.act), split.y_train[:16]
    ccfg = ClusterConfig.homogeneous(4, ENGINE)
    want, _ = golden_steps(NET, _params(), images, labels, TCFG, 2, 8)
    ss = {}
    for schedule in ("1f1b", "gpipe"):
        run = train_on_cluster(NET, _params(), images, labels, TCFG, ccfg, Mapping(overlap=True, schedule=schedule),
                               steps=2, batch=8, levels=["cl"] * 4)
        assert params_equal(run.params, want), schedule
        ss[schedule] = run.report["steady_state"]
        assert ss[schedule]["schedule"] == schedule
    print({k: (v["cycles_per_image"], v["bound_cycles_per_image"], round(v["efficiency"], 3)) for k, v in ss.items()})
    assert ss["1f1b"]["efficiency"] >= 0.9
    assert ss["1f1b"]["cycles_per_image"] < ss["gpipe"]["cycles_per_image"]
    assert ss["1f1b"]["bound_cycles_per_image"] == ss["gpipe"]["bound_cycles_per_image"]


def test_watchdog_allows_the_longest_command_and_still_catches_a_deadlock():
    """The idle limit comes from the programs: a node waiting for a neighbour's longest engine
    command (here a 51k-cycle bwd_weight of 16 images on a 2x2 array) is not a deadlock; the
    limit stays a small multiple of it, so a real deadlock is still caught."""
    from pymtl_fp.cluster.compiler.compile import compile_cluster
    from pymtl_fp.cluster.compiler.partition import partition
    from pymtl_fp.cluster.run.limits import watchdog_limit

    eng = engine_for_net(NET, "8", P=2, act_depth=8192)
    ccfg = ClusterConfig.homogeneous(3, eng)
    cprog = compile_cluster(NET, ccfg, partition(NET, ccfg, 16, split=False), _params(), TCFG, 1)
    longest = max(p.longest_command for p in cprog.nodes)
    assert longest > 50_000
    limit = watchdog_limit(ccfg, cprog)
    assert 2 * longest < limit < 3 * longest
    assert watchdog_limit(ccfg, cprog, stall=(0.5, 1)) >= 2 * limit
