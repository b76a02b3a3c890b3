"""The cluster's partitioner and compiler, without simulation: FPDeep balance, splits, buffer checks,
stochastic-rounding slice seeds, the host's per-image loss gradient."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster.compiler.compile import compile_cluster
from pymtl_fp.cluster.compiler.dma import slice_seed
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.partition import partition
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net, node_levels
from pymtl_fp.golden.loss import row_loss_grad, softmax_xent_grad
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net
from pymtl_fp.numerics import stochastic_offset
from pymtl_fp.tb.hypothesis_profiles import examples

NET = load_net("lenet-digits")
ENGINE = engine_for_net(NET, "8")


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_fpdeep_partition_covers_every_channel_once(n):
    part = partition(NET, ClusterConfig.homogeneous(n, ENGINE), batch=4)
    assert len(part.nodes) == n and all(part.nodes)
    for layer in NET.param_layers():
        K = NET.conv_geometry(layer)["w_shape"][0]
        li = NET.layers.index(layer)
        pieces = sorted((it.k0, it.k1) for items in part.nodes for it in items if it.layer == li and not it.pool)
        assert pieces[0][0] == 0 and pieces[-1][1] == K
        assert all(a[1] == b[0] for a, b in itertools.pairwise(pieces))
        assert len(pieces) <= 2
    assert part.balance >= 1.0
    # every weight and bias is some node's (FPDeep reports the balance of the weights too)
    params = sum(int(np.prod(NET.conv_geometry(ly)["w_shape"])) + NET.conv_geometry(ly)["w_shape"][0]
                 for ly in NET.param_layers())
    assert sum(part.weights) == params
    assert part.weight_balance == pytest.approx(max(part.weights) * n / params)
    if n == 2:  # FPDeep splits conv2 to balance two nodes within 10%
        assert part.split_layers() == ["conv2"] and part.balance < 1.1


def test_layer_boundary_partition_is_less_balanced():
    ccfg = ClusterConfig.homogeneous(2, ENGINE)
    assert partition(NET, ccfg, 4, split=False).balance > partition(NET, ccfg, 4).balance


def test_forced_cuts_and_bad_cuts():
    ccfg = ClusterConfig.homogeneous(3, ENGINE)
    part = partition(NET, ccfg, 2, cuts=[0, 1, 7, 9])
    assert part.split_layers() == ["conv1", "fc"]
    with pytest.raises(ClusterError, match="at most two"):
        partition(NET, ClusterConfig.homogeneous(4, ENGINE), 2, cuts=[0, 3, 4, 5, 9])
    with pytest.raises(ClusterError, match="rise from 0"):
        partition(NET, ccfg, 2, cuts=[0, 5, 3, 9])
    with pytest.raises(ClusterError, match="no work"):
        partition(NET, ccfg, 2, cuts=[0, 4, 4, 9])
    with pytest.raises(ClusterError, match="at most 6 nodes"):
        partition(NET, ClusterConfig.homogeneous(10, ENGINE), 2)


def test_mapping_that_does_not_fit_is_refused_before_simulation():
    small = engine_for_net(NET, "8", act_depth=256)
    ccfg = ClusterConfig.homogeneous(2, small)
    part = partition(NET, ccfg, batch=8)
    params = quantize_params(NET, init_params_float64(NET, 0), "8")
    with pytest.raises(ClusterError, match=r"node 0 buffer X needs \d+ words, has 256"):
        compile_cluster(NET, ccfg, part, params, TrainConfig("8"), steps=1)


def test_cluster_descriptions_are_checked():
    mixed = ClusterConfig((ENGINE, ENGINE.replace(rows=2, cols=2)), ClusterConfig.homogeneous(1, ENGINE).link)
    assert mixed.Ps == (ENGINE.P, 2)  # array sides may differ (the DMA re-lays tensors out)
    with pytest.raises(ClusterError, match="stream_bits"):
        ClusterConfig((ENGINE, ENGINE.replace(stream_bits=64)), ClusterConfig.homogeneous(1, ENGINE).link)
    with pytest.raises(ClusterError, match="msg_bits"):
        ClusterConfig((ENGINE,), ClusterConfig.homogeneous(1, ENGINE).link.replace(msg_bits=16))
    deeper = ClusterConfig((ENGINE, ENGINE.replace(act_depth=4096)), ClusterConfig.homogeneous(1, ENGINE).link)
    assert deeper.n == 2
    assert node_levels("mixed", 3) == ["rtl", "fl", "fl"]
    assert node_levels("fl", 2, "verilator,fl") == ["verilator", "fl"]
    with pytest.raises(ClusterError):
        node_levels("gate", 2)
    with pytest.raises(ClusterError, match="momentum"):
        ccfg = ClusterConfig.homogeneous(1, ENGINE)
        compile_cluster(NET, ccfg, partition(NET, ccfg, 2), quantize_params(NET, init_params_float64(NET, 0), "8"),
                        TrainConfig("8", momentum=2), steps=1)


@settings(max_examples=examples(30), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tid=st.integers(0, 255), offset=st.integers(0, 2**20),
       shift=st.integers(1, 20))
def test_slice_seed_rounds_a_slice_like_the_whole_tensor(seed, tid, offset, shift):
    idx = np.arange(16)
    whole = stochastic_offset(seed, tid, idx + offset, shift)
    piece = stochastic_offset(slice_seed(seed, offset), tid, idx, shift)
    assert np.array_equal(whole, piece)


@settings(max_examples=examples(20), deadline=None)
@given(seed=st.integers(0, 2**31), batch=st.integers(1, 9))
def test_host_row_gradient_equals_the_whole_batch_gradient(seed, batch):
    fmt = NET.precision("8")
    rng = np.random.default_rng(seed)
    logits = rng.integers(-128, 128, size=(batch, 10))
    logits[0, 0] = 127  # a saturated logit exercises the one-sided mask
    labels = rng.integers(0, 10, size=batch)
    _, want = softmax_xent_grad(logits, labels, logit_frac=fmt.act.frac, grad_format=fmt.grad,
                                loss_scale_log2=fmt.loss_scale_log2, logit_bits=fmt.act.bits)
    for i in range(batch):
        assert np.array_equal(row_loss_grad(logits[i], labels[i], batch, fmt), want[i])


def test_min_max_refinement_never_loses_to_the_fpdeep_rule():
    for n in (2, 3, 4):
        ccfg = ClusterConfig.homogeneous(n, ENGINE)
        rule, best = partition(NET, ccfg, 8, refine=False), partition(NET, ccfg, 8)
        assert max(best.work) <= max(rule.work)
        assert best.method == "fpdeep" or best.method.startswith("min-max")


def test_layers_write_their_results_where_the_next_layer_reads_them():
    """One node, whole layers (conv1 pool1 conv2 pool2 fc): a fwd or pool_fwd writes into the next
    item's input in X (dsel X; a pool's argmax in O, amsel 1), a bwd_data / pool_bwd into the
    previous item's output gradient in D (dsel D): nothing goes through the DMA's scratch FIFO."""
    from pymtl_fp.engine import msgs
    ccfg = ClusterConfig.homogeneous(1, ENGINE)
    part = partition(NET, ccfg, batch=2)
    params = quantize_params(NET, init_params_float64(NET, 0), "8")
    prog = compile_cluster(NET, ccfg, part, params, TrainConfig("8"), steps=1).nodes[0]
    from pymtl_fp.cluster import isa
    from pymtl_fp.cluster.isa.marks import MARK_LABELS

    ops = prog.ops
    phase = {}
    cur = None
    for i, op in enumerate(ops):
        if op.mark:
            cur = MARK_LABELS[op.mark]
        phase[i] = cur
    cmds = [(phase[i], op.cmd) for i, op in enumerate(ops) if op.kind == isa.ENG]
    cmds = [(ph, {name: c.get(name, 0) for name, _ in msgs.CMD_FIELDS}) for ph, c in cmds]
    by_op = {}
    for ph, f in cmds:
        by_op.setdefault((ph, msgs.OP_NAMES[f["op"]]), []).append(f["dsel"])
    assert by_op[("step", "fwd")] == [msgs.DSEL_X, msgs.DSEL_X, msgs.DSEL_O] * 2  # conv1, conv2 -> X; fc -> O
    assert by_op[("step", "pool_fwd")] == [msgs.DSEL_X] * 4
    assert by_op[("bwd", "bwd_data")] == [msgs.DSEL_D] * 4                        # fc, conv2 -> D
    assert by_op[("bwd", "pool_bwd")] == [msgs.DSEL_D] * 4
    assert all(f["amsel"] == 1 for _, f in cmds if msgs.OP_NAMES[f["op"]] in ("pool_fwd", "pool_bwd"))
    scratch_stores = [phase[i] for i, op in enumerate(ops) if op.kind == isa.STORE and op.dmask & isa.DST_SCRATCH]
    assert scratch_stores.count("step") == 0 and scratch_stores.count("bwd") == 0


@settings(max_examples=examples(30), deadline=None)
@given(n=st.integers(1, 6), batch=st.integers(1, 12), schedule=st.sampled_from(["1f1b", "gpipe"]))
def test_step_orders_run_every_pass_once_forward_first(n, batch, schedule):
    """Every node runs each image's forward pass before its backward pass, each once, in image
    order per direction; in 1f1b a node has at most n - j + 1 images between the two passes."""
    from pymtl_fp.cluster.compiler.schedule import step_order
    for j in range(n):
        order = step_order(schedule, j, n, batch)
        assert sorted(order) == sorted([("fwd", b) for b in range(batch)] + [("bwd", b) for b in range(batch)])
        for kind in ("fwd", "bwd"):
            assert [b for k, b in order if k == kind] == list(range(batch))
        pos = {p: i for i, p in enumerate(order)}
        assert all(pos[("fwd", b)] < pos[("bwd", b)] for b in range(batch))
        if schedule == "1f1b":
            in_flight = max(sum(1 for k, _ in order[: i + 1] if k == "fwd") - sum(1 for k, _ in order[: i + 1] if k == "bwd")
                            for i in range(len(order)))
            assert in_flight == min(batch, n - j + 1)


def test_unknown_schedule_is_refused():
    ccfg = ClusterConfig.homogeneous(2, ENGINE)
    part = partition(NET, ccfg, batch=2)
    params = quantize_params(NET, init_params_float64(NET, 0), "8")
    with pytest.raises(ClusterError, match="unknown schedule 'zigzag'"):
        compile_cluster(NET, ccfg, part, params, TrainConfig("8"), steps=1, mapping=Mapping(schedule="zigzag"))


def test_every_link_has_its_own_name():
    """Link names select overrides and report rows: unique in every chain and ring (a one-node
    chain's two host links into node 0 included)."""
    from pymtl_fp.cluster.config import link_names
    for n in range(1, 6):
        for topology, extra in (("chain", 1), ("ring", 3)):
            if topology == "ring" and n == 1:
                continue
            names = link_names(n, topology)
            assert len(names) == len(set(names)) == 2 * (n - 1) + 2 + extra, (n, topology, names)
