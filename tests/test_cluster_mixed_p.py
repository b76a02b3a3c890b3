"""Clusters whose nodes have different MAC array sides ``P``: tensors are re-laid out by the
receiving DMA, the final weights equal the golden model's bit for bit, the partition balances
nodes of different speeds, and bad descriptions / options are clear errors."""

import argparse

import numpy as np
import pytest

from pymtl_fp.cli import cmd_train
from pymtl_fp.cli.errors import UserError
from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.compile import compile_cluster
from pymtl_fp.cluster.compiler.partition import grid_unit, partition
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
from pymtl_fp.tb.cluster_setup import mapping_options

NET = load_net("lenet-digits")
PREC = "8"
FMT = NET.precision(PREC)
TCFG = TrainConfig(PREC, lr_log2=3, seed=7)


def _engine(P):
    return engine_for_net(NET, PREC, P=P)


def _ccfg(Ps, latency=8):
    return ClusterConfig(tuple(_engine(p) for p in Ps), default_link(_engine(Ps[0]).stream_bits, latency))


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:8], FMT.act), split.y_train[:8]


def _check(data, Ps, level, steps=2, **kw):
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 0), PREC)
    ccfg = _ccfg(Ps)
    levels = [level] * len(Ps) if isinstance(level, str) else list(level)
    mapping, kw = mapping_options(kw)
    run = train_on_cluster(NET, params, images, labels, TCFG, ccfg, mapping, steps=steps, batch=2, levels=levels, **kw)
    want, losses = golden_steps(NET, params, images, labels, TCFG, steps, 2)
    assert params_equal(run.params, want), f"P={Ps} at {level}: final weights differ from the golden model's"
    assert not params_equal(want, params)  # it did learn
    assert np.allclose(run.losses, losses)
    assert [n["P"] for n in run.report["node"]] == list(Ps)
    return run


@pytest.mark.cl
@pytest.mark.verilator
def test_a_verilated_p4_node_next_to_a_p2_node_equals_golden(data):
    """Mixed P with RTL: the P = 4 engine through Verilator, its neighbour a P = 2 engine at CL;
    the DMAs re-lay out every tensor crossing between them (both directions, and the split
    layer's weight exchange when the partition splits one); one step (each crossing happens in
    every step; the PyMTL3-driven Verilated node costs about 5 s a step)."""
    for Ps, levels in (((4, 2), ("verilator", "cl")), ((2, 4), ("cl", "verilator"))):
        _check(data, Ps, levels, steps=1)


def test_two_nodes_p4_p2_fl_equal_golden(data):
    run = _check(data, (4, 2), "fl")
    # the host's images and logits use the end nodes' layouts: node 1 has P=2, 10 classes -> 10 lanes
    links = {lk["link"]: lk["elements_per_step"] for lk in run.report["links"]}
    assert links["node1->host"] == 2 * 10


@pytest.mark.cl
def test_three_nodes_p2_p4_p2_with_a_split_layer_cl_equal_golden(data):
    part = partition(NET, _ccfg((2, 4, 2)), 2)
    assert part.split_layers(), "the case must exercise a split layer between nodes of different P"
    _check(data, (2, 4, 2), "cl")


def test_four_nodes_mixed_p_fl_equal_golden(data):
    # 4,2,4,2: node 1 (P=2) holds only conv2's first piece and passes node 2's (P=4) data gradient
    # through to node 0 (P=4); the split layer's weights cross from P=2 to P=4
    part = partition(NET, _ccfg((4, 2, 4, 2)), 2)
    assert part.split_layers() == ["conv2"]
    _check(data, (4, 2, 4, 2), "fl")


def test_split_cuts_are_multiples_of_both_holders_p():
    ccfg = _ccfg((2, 4, 2))
    assert grid_unit(ccfg) == 4
    part = partition(NET, ccfg, 2, cuts=[0, 1, 6, 9])
    for items in part.nodes:
        for it in items:
            if not it.pool and it.k0 > 0:
                assert it.k0 % 4 == 0 and it.k0 % 2 == 0


@pytest.mark.parametrize("Ps", [(4, 2, 4, 2), (8, 2)])
def test_partition_balances_nodes_of_different_speeds(Ps):
    mixed = _ccfg(Ps)
    # the speed-unaware partition: cuts chosen as if every node had the largest array
    blind = partition(NET, ClusterConfig.homogeneous(len(Ps), _engine(max(Ps))), 8)
    even = partition(NET, mixed, 8, cuts=blind.cuts)
    aware = partition(NET, mixed, 8)
    assert max(aware.work) < max(even.work)
    assert aware.balance < even.balance


def test_node_work_uses_each_nodes_engine():
    part = partition(NET, _ccfg((4, 2)), 8, cuts=[0, 2, 9])
    same = partition(NET, _ccfg((4, 4)), 8, cuts=[0, 2, 9])
    assert part.work[0] == same.work[0]
    assert part.work[1] > 2 * same.work[1]  # a P=2 node is several times slower than a P=4 one


def _relayouts(Ps):
    ccfg = _ccfg(Ps)
    params = quantize_params(NET, init_params_float64(NET, 0), PREC)
    prog = compile_cluster(NET, ccfg, partition(NET, ccfg, 2), params, TCFG, steps=1)
    for node in prog.nodes:  # every relayout is a GATHER of the router's relayout unit
        assert len(node.relayouts) == sum(op.kind == isa.GATHER for op in node.ops)
    return [node.relayouts for node in prog.nodes]


def test_relayout_happens_on_the_receiving_side_only_where_p_differs():
    assert _relayouts((4, 4, 4)) == [[], [], []]
    calls = _relayouts((4, 2, 4, 2))
    # node 0 gets images in its own layout and, passed through node 1, node 2's (P=4) gradients
    assert calls[0] == []
    for j in (1, 2, 3):
        assert calls[j], f"node {j} receives tensors from a node of another P"
        assert all(c.pb == (4, 2, 4, 2)[j] and c.pa != c.pb for c in calls[j])
    assert any(c.kind == "weight" for c in calls[2])  # conv2's first piece weights, P=2 -> P=4


def test_different_stream_bits_are_refused():
    e = _engine(4)
    with pytest.raises(ClusterError, match="stream_bits=64 differs from node 0's 32"):
        ClusterConfig((e, _engine(2).replace(stream_bits=64)), default_link(e.stream_bits))


def run_cli(*argv):
    parser = argparse.ArgumentParser()
    cmd_train.add_arguments(parser)
    return cmd_train.main(parser.parse_args(["--engine", "cluster", *argv]))


@pytest.mark.parametrize("argv,match", [
    (["--nodes", "3", "--arrays", "4,2"], "2 array sides for --nodes 3"),
    (["--nodes", "2", "--arrays", "4,64"], "array side 64 is not supported"),
    (["--nodes", "2", "--arrays", "4,x"], "one integer array side per node"),
])
def test_arrays_option_is_validated(argv, match):
    with pytest.raises(UserError, match=match):
        run_cli(*argv)


def test_arrays_option_runs_a_mixed_cluster(capsys):
    assert run_cli("--nodes", "2", "--arrays", "2,4", "--batch", "2", "--steps", "1") == 0
    out = capsys.readouterr().out
    assert "arrays 2,4" in out
    assert "final weights equal the golden model's: yes" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("0  cl", "1  cl"))]
    assert [r[2] for r in rows] == ["2", "4"]


@pytest.mark.cl
def test_tap_packed_first_layer_split_between_p4_and_p2_cl_equal_golden(data):
    """conv1 tap-packed and split: node 0 (P=4) sends its packed input and its packed weights to
    node 1 (P=2), which re-lays them out (activations (1, 9, 8, 8), weights (4, 9, 1, 1))."""
    run = _check(data, (4, 2, 4), "cl", pack="on", cuts=[0, 1, 5, 9])
    assert run.report["partition"]["tap_packed"] == ["conv1"] and "conv1" in run.report["partition"]["split_layers"]
