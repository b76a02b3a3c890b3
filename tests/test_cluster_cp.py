"""Continuous propagation (``--schedule cp``: pipelined SGD, a weight update after each image's
backward pass) and plain per-image SGD (``--schedule sgd``) on the simulated cluster: the final
weights and losses equal the golden per-image step with the partition's staleness
(:func:`pymtl_fp.cluster.run.train.cp_versions`) bit for bit on 1-4 nodes, at FL and CL with random
stalls, link latencies and both topologies (the Verilated cluster, cycle-equal with CL:
``tests/test_cluster_verilated.py``); split layers are refused before any simulation."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, default_link, engine_for_net
from pymtl_fp.cluster.run.train import cp_versions, golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net
from pymtl_fp.tb.hypothesis_profiles import examples

PREC = "8"
TCFG = TrainConfig(PREC, lr_log2=3, seed=5)
#: whole layers need as many conv/fc layers as nodes: LeNet has 3, vgg-digits 5
NETS = {n: load_net("lenet-digits" if n <= 3 else "vgg-digits") for n in (1, 2, 3, 4)}


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    fmt = NETS[1].precision(PREC)
    return quantize_images(split.x_train[:24], fmt.act), split.y_train[:24]


def _run(data, n, level, *, batch=3, steps=2, link=None, stall=None, topology="chain", overlap=True, net=None,
         act_depth=2048, schedule="cp"):
    net = net or NETS[n]
    images, labels = data
    params = quantize_params(net, init_params_float64(net, 4), PREC)
    engine = engine_for_net(net, PREC, act_depth=act_depth, weight_depth=256, bias_depth=32)
    ccfg = ClusterConfig.homogeneous(n, engine, link, topology=topology)
    run = train_on_cluster(net, params, images, labels, TCFG, ccfg, Mapping(overlap=overlap, schedule=schedule),
                           steps=steps, batch=batch, levels=[level] * n, stall=stall)
    versions = cp_versions(net, ccfg, batch, Mapping(schedule=schedule))
    want, losses = golden_steps(net, params, images, labels, TCFG, steps, batch, versions)
    assert params_equal(run.params, want), f"{n} nodes at {level}: the weights differ from the golden cp step"
    assert run.losses == pytest.approx(losses, abs=0)
    # the staleness is real: the mini-batch step (or no staleness) ends elsewhere
    minibatch, _ = golden_steps(net, params, images, labels, TCFG, steps, batch)
    assert not params_equal(run.params, minibatch)
    if n > 1 and schedule == "cp":
        fresh, _ = golden_steps(net, params, images, labels, TCFG, steps, batch,
                                {name: list(range(batch)) for name in versions})
        assert not params_equal(run.params, fresh)
    return run


@settings(max_examples=examples(4), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 4), level=st.sampled_from(["fl", "cl"]), batch=st.integers(2, 4),
       latency=st.integers(1, 12), stall=st.floats(0.0, 0.4), seed=st.integers(0, 1000),
       topology=st.sampled_from(["chain", "ring"]), overlap=st.booleans(), schedule=st.sampled_from(["cp", "sgd"]))
def test_per_image_schedules_on_the_cluster_equal_the_golden_step(data, n, level, batch, latency, stall, seed, topology,
                                                                  overlap, schedule):
    """(``sgd``: no staleness, one image in the cluster at a time: the golden per-image step
    with ``fwd_versions = None``, which ``cp_versions`` gives for it.)"""
    if topology == "ring" and n == 1:
        topology = "chain"
    link = default_link(32, latency)
    _run(data, n, level, batch=batch, link=link, stall=(stall, seed), topology=topology, overlap=overlap,
         schedule=schedule)


@pytest.mark.parametrize("n", [1, 4])
def test_cp_at_every_depth_of_the_pipeline(data, n):
    run = _run(data, n, "cl", batch=6, steps=1)
    assert run.report["schedule"] == "cp"


def test_cp_refuses_split_layers_before_simulating(data):
    net = NETS[1]
    images, labels = data
    params = quantize_params(net, init_params_float64(net, 4), PREC)
    ccfg = ClusterConfig.homogeneous(4, engine_for_net(net, PREC))
    with pytest.raises(ClusterError, match="at most 3 nodes"):
        train_on_cluster(net, params, images, labels, TCFG, ccfg, Mapping(schedule="cp"), steps=1, batch=2,
                         levels=["cl"] * 4)
    ccfg = ClusterConfig.homogeneous(2, engine_for_net(net, PREC))
    with pytest.raises(ClusterError, match="needs whole layers on each node: conv2 is split"):
        train_on_cluster(net, params, images, labels, TCFG, ccfg, Mapping(schedule="cp", cuts=[0, 4, 9]), steps=1, batch=2,
                         levels=["cl"] * 2)
