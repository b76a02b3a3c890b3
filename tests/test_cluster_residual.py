"""A residual net (identity adds, a global average pool) trains on the simulated cluster exactly as the
golden model: the compiler's ADD / MASK / GAP / GAPB over the router's residual unit
(:mod:`pymtl_fp.cluster.compiler.residual`), final weights, logits and losses bit for bit; the router
gets the residual unit only where its program uses it; what the compiler does not map is refused in
one line naming the layer."""

from dataclasses import replace

import numpy as np
import pytest

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.compile import choose_partition, compile_cluster
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
from pymtl_fp.cluster.run.train import compile_run, router_configs, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, forward, init_params_float64, quantize_params, step_seed, train_step
from pymtl_fp.net import load_net

NET = load_net("resnet-digits")
TCFG = TrainConfig("8", lr_log2=3, seed=7)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return split.x_train[:16], split.y_train[:16]


def golden(net, params, images, labels, tcfg, steps, batch):
    """``steps`` golden steps: the final weights, the losses and every image's logits (as the host
    receives them: each step's forward pass with that step's weights and seed)."""
    losses, logits = [], []
    for s in range(steps):
        sl = slice(s * batch, (s + 1) * batch)
        cfg = replace(tcfg, step=tcfg.step + s)
        y = forward(net, params, images[sl], tcfg.precision, mode=cfg.fwd_mode, seed=step_seed(cfg.seed, cfg.step))[-1]
        logits += [v.reshape(-1) for v in y]
        params, loss = train_step(net, params, images[sl], labels[sl], cfg)
        losses.append(loss)
    return params, losses, logits


def run_and_check(data, n, level="cl", prec="8", cuts=None, steps=2, batch=2, net=NET, mapping=None):
    fmt = net.precision(prec)
    images, labels = quantize_images(data[0], fmt.act), data[1]
    params = quantize_params(net, init_params_float64(net, 0), prec)
    tcfg = replace(TCFG, precision=prec)
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(net, prec), None)
    mapping = mapping or Mapping(cuts=cuts, split=False)
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg, mapping, steps=steps, batch=batch,
                           levels=[level] * n)
    want, losses, logits = golden(net, params, images, labels, tcfg, steps, batch)
    for name in want:
        assert np.array_equal(run.params[name]["w"], want[name]["w"]), name
        assert np.array_equal(run.params[name]["b"], want[name]["b"]), name
        assert not np.array_equal(want[name]["w"], params[name]["w"]), name  # every layer learned
    assert [v.reshape(-1).tolist() for v in run.logits] == [v.tolist() for v in logits]
    assert run.losses == pytest.approx(losses, abs=0)
    return run


@pytest.mark.parametrize("level,prec", [("cl", "8"), ("fl", "16")])
def test_one_node_trains_a_residual_net_bit_exact(data, level, prec):
    run_and_check(data, 1, level, prec)


def _programs(n=1, cuts=None, net=NET):
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(net, "8"), None)
    params = quantize_params(net, init_params_float64(net, 0), "8")
    _, _, _, cprog = compile_run(net, ccfg, params, TCFG, Mapping(cuts=cuts, split=False), steps=1, batch=2)
    return ccfg, cprog


def test_the_compiled_step_runs_each_residual_kind_per_image():
    """Per image: two forward ADDs (add1, add2, each with its ReLU) and one GAP; backward one GAPB
    masked by add2's ReLU, a MASK of each add's skip share (the sources come out of ReLUs), a MASK
    of add2's main share (conv4 has a ReLU; conv3, add1's main branch, has none) and one ADD at each
    fork; the node's router is built with the residual unit."""
    ccfg, cprog = _programs()
    (prog,) = cprog.nodes
    lo, hi = prog.loop
    body = prog.ops[lo:hi + 1]
    count = {k: sum(1 for ins in body if ins.kind == k) for k in isa.RES_KINDS}
    assert count == {isa.ADD: 2 * 2 + 2 * 2, isa.GAP: 2, isa.GAPB: 2, isa.MASK: 3 * 2}
    assert all(ins.field("relu") for ins in body if ins.kind == isa.GAPB)
    (rcfg,) = router_configs(ccfg, cprog)
    assert rcfg.residual and prog.residual


def test_a_plain_chain_keeps_a_router_without_the_residual_unit():
    net = load_net("lenet-digits")
    ccfg, cprog = _programs(net=net)
    assert not any(r.residual for r in router_configs(ccfg, cprog))


@pytest.mark.parametrize("mapping,match", [
    (Mapping(bands=2, split=False), r"^resnet-digits is a residual net: its adds and average pools run on whole"),
    (Mapping(schedule="cp", split=False), r"^resnet-digits is a residual net: the cluster trains it with a mini-batch"),
    (Mapping(cuts=(0, 1, 11)), None),
])
def test_what_the_compiler_does_not_map_is_refused_in_one_line(mapping, match):
    ccfg = ClusterConfig.homogeneous(2 if match is None else 1, engine_for_net(NET, "8"), None)
    params = quantize_params(NET, init_params_float64(NET, 0), "8")
    if match is None:  # conv1 (two of the 11 tiles of P = 4) split over the two nodes
        match = r"^resnet-digits is a residual net: conv1 is split over two nodes"
    with pytest.raises(ClusterError, match=match) as exc:
        part = choose_partition(NET, ccfg, 2, mapping)
        compile_cluster(NET, ccfg, part, params, TCFG, 1, mapping)
    assert "\n" not in str(exc.value)
