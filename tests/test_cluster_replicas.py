"""Data-parallel and hybrid training on the simulated cluster (``--parallel data|hybrid``): the
replicas all-reduce their un-rounded weight gradients over the links and end with exactly the
weights of one node's :func:`~pymtl_fp.golden.train.train_step` on the whole batch.

* data-parallel on 2 and 4 nodes, hybrid (2 replicas of a 2-node pipeline) on 4, at CL and with
  FL nodes in the mix, batches that do and do not split evenly;
* random stalls, link latencies, credits and both topologies never change the weights and never
  deadlock (the all-reduce included);
* the report: the replica layout, each node's weight phase, the all-reduce traffic per link;
* what cannot run is refused before any simulation, in one line.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.partition import layer_info
from pymtl_fp.cluster.compiler.replicas import replica_partitions, replicas_for
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, default_link, engine_for_net
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import mapping_options
from pymtl_fp.tb.hypothesis_profiles import examples

NET = load_net("lenet-digits")
PREC = "8"
ENGINE = engine_for_net(NET, PREC)
TCFG = TrainConfig(PREC, lr_log2=3, seed=7)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:32], NET.precision(PREC).act), split.y_train[:32]


def _check(data, n, parallel, groups=None, *, batch=4, steps=1, levels=None, link=None, stall=None,
           topology="chain", tcfg=TCFG):
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 0), PREC)
    ccfg = ClusterConfig.homogeneous(n, ENGINE, link, topology=topology)
    run = train_on_cluster(NET, params, images, labels, tcfg, ccfg, Mapping(parallel=parallel, groups=groups), steps=steps,
                           batch=batch, levels=levels or ["cl"] * n, stall=stall)
    want, losses = golden_steps(NET, params, images, labels, tcfg, steps, batch)
    assert params_equal(run.params, want)
    assert not params_equal(want, params)  # it did learn
    assert np.allclose(run.losses, losses)
    return run


@pytest.mark.parametrize("n, parallel, groups, batch, levels", [
    (2, "data", None, 4, ["cl", "cl"]),
    (4, "data", None, 6, ["cl", "fl", "cl", "fl"]),   # shares 2, 2, 1, 1
    (4, "hybrid", 2, 5, ["cl"] * 4),                   # 2 replicas of a 2-node pipeline, shares 2, 3
])
def test_replicas_end_with_the_one_node_weights(data, n, parallel, groups, batch, levels):
    run = _check(data, n, parallel, groups, batch=batch, steps=2, levels=levels,
                 tcfg=TrainConfig(PREC, lr_log2=3, seed=7, fwd_mode="stochastic"))
    sec = run.report["replicas"]
    rep = replicas_for(parallel, n, batch, groups)
    assert sec["shares"] == list(rep.shares) and sum(sec["shares"]) == batch
    assert run.report["steady_state"] is None  # (a pipeline figure; replicas report their phases)
    size = n // rep.groups
    # each all-reduce crosses each link between its first and last member once per direction: the
    # stage's dw and db partial sums in padded tiles (the stages' layers from the replica layout)
    P = ENGINE.P
    t = lambda v: -(-v // P)
    part0 = replica_partitions(NET, ClusterConfig.homogeneous(n, ENGINE), rep)[0]
    shape = lambda li: (lambda f: (f["k"], f["c"], f["r"], f["s"]))(layer_info(NET, li, li in part0.packed))
    layers = {s: [shape(it.layer) for it in items if not it.pool] for s, items in enumerate(part0.nodes)}
    size_of = {s: sum(t(k) * P + t(k) * t(c) * r * q * P * P for k, c, r, q in ws) for s, ws in layers.items()}
    for node in sec["nodes"]:
        j = node["node"]
        assert (node["replica"], node["stage"]) == (j // size, j % size)
        assert all(v > 0 for v in node["phase_cycles_last_step"].values())
        out = node["allreduce_elements_per_step"]
        first = {s: rep.members(s)[0] for s in layers}
        last = {s: rep.members(s)[-1] for s in layers}
        assert out.get("fwd_out", 0) == sum(size_of[s] for s in layers if first[s] <= j < last[s])
        assert out.get("bwd_out", 0) == sum(size_of[s] for s in layers if first[s] < j <= last[s])


@settings(max_examples=examples(3), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from([(2, "data", None), (3, "data", None), (4, "hybrid", 2), (4, "data", None)]),
       batch=st.integers(4, 6), latency=st.integers(1, 40), credits=st.integers(1, 6), stall=st.floats(0.0, 0.5),
       seed=st.integers(0, 1000), topology=st.sampled_from(["chain", "ring"]))
def test_random_stalls_and_link_latencies_never_change_the_replicas_weights(data, case, batch, latency, credits,
                                                                              stall, seed, topology):
    n, parallel, groups = case
    link = default_link(ENGINE.stream_bits, latency).replace(credits=credits)
    _check(data, n, parallel, groups, batch=batch, link=link, stall=(stall, seed), topology=topology)


@pytest.mark.parametrize("kw, match", [
    (dict(parallel="hybrid", groups=3), "must divide"),
    (dict(parallel="hybrid"), "needs --groups"),
    (dict(parallel="data", groups=2), "one replica per node"),
    (dict(parallel="pipeline", groups=2), "for --parallel hybrid"),
    (dict(parallel="model"), "unknown --parallel"),
    (dict(parallel="data", batch=3), "cannot give each of 4 replicas"),
    (dict(parallel="data", schedule="cp"), "GPipe order"),
])
def test_what_cannot_run_is_refused_before_simulating(data, kw, match):
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 0), PREC)
    ccfg = ClusterConfig.homogeneous(4, ENGINE)
    kw = dict(dict(batch=4, levels=["cl"] * 4), **kw)
    with pytest.raises(ClusterError, match=match):
        mapping, kw = mapping_options(kw)
        train_on_cluster(NET, params, images, labels, TCFG, ccfg, mapping, steps=1, **kw)


def test_replicas_need_one_array_side(data):
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 0), PREC)
    ccfg = ClusterConfig((ENGINE, engine_for_net(NET, PREC, P=2)), default_link(ENGINE.stream_bits))
    with pytest.raises(ClusterError, match="one array side"):
        train_on_cluster(NET, params, images, labels, TCFG, ccfg, Mapping(parallel="data"), steps=1, batch=4,
                         levels=["cl"] * 2)
