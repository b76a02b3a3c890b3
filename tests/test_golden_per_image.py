"""Per-image weight updates (plain SGD, continuous propagation) in the golden model.

* One image with no staleness is exactly :func:`train_step` of one image (the seed rule reduces
  to the step seed, the loss divisor to 1).
* The staleness a schedule gives (``fwd_versions``) is what a pipeline of nodes running their
  own programs computes: a test-side event simulation (each node holds its own layers' weights and
  runs its ``step_order`` with an update after each backward pass, nodes advancing in a random
  dataflow-legal interleaving) ends with the same weights and logits.
* Bad staleness tables are refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster.compiler.schedule import fwd_versions, step_order
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.conv import conv_bwd_data, conv_bwd_weight, conv_fwd
from pymtl_fp.golden.loss import row_loss_grad
from pymtl_fp.golden.per_image import check_versions, image_seed, train_step_per_image
from pymtl_fp.golden.pool import pool_bwd, pool_fwd
from pymtl_fp.golden.train import (
    TrainConfig,
    init_params_float64,
    quantize_params,
    sgd_layer,
    step_seed,
    tensor_id,
    train_step,
)
from pymtl_fp.net import Pool, load_net
from pymtl_fp.numerics import slice_seed
from pymtl_fp.tb.hypothesis_profiles import examples

NET = load_net("vgg-digits")
PREC = "8"
FMT = NET.precision(PREC)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:16], FMT.act), split.y_train[:16]


def _params(seed=0):
    return quantize_params(NET, init_params_float64(NET, seed), PREC)


def _equal(a, b):
    return all(np.array_equal(a[k][t], b[k][t]) for k in a for t in ("w", "b"))


@settings(max_examples=examples(6), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), step=st.integers(0, 50), image=st.integers(0, 15),
       fwd=st.sampled_from(["nearest", "stochastic"]), net=st.sampled_from(["lenet-digits", "vgg-digits"]))
def test_one_image_without_staleness_is_the_minibatch_step_of_one_image(data, seed, step, image, fwd, net):
    net = load_net(net)
    params = quantize_params(net, init_params_float64(net, 1), PREC)
    cfg = TrainConfig(PREC, seed=seed, step=step, fwd_mode=fwd)
    x, y = data[0][image:image + 1], data[1][image:image + 1]
    want, want_loss = train_step(net, params, x, y, cfg)
    got, loss = train_step_per_image(net, params, x, y, cfg)
    assert _equal(got, want)
    assert loss == want_loss


def test_image_seed_is_the_slice_seed_of_a_per_image_gradient_tensor():
    assert image_seed(7, 0, 72) == 7
    assert image_seed(7, 3, 72) == slice_seed(7, 216)


# ---- an independent model of the pipeline: nodes running their own programs ---------------------

class _Node:
    """A node holding whole layers ``layers`` (indices into NET.layers), its own weights, running
    its step order with an update after each backward pass."""

    def __init__(self, j, n, layers, params, batch):
        self.j, self.layers = j, layers
        self.events = []
        for kind, b in step_order("cp", j, n, batch):
            self.events.append((kind, b))
            if kind == "bwd":
                self.events.append(("upd", b))
        self.w = {NET.layers[i].name: params[NET.layers[i].name] for i in layers if not isinstance(NET.layers[i], Pool)}
        self.acts, self.grads = {}, {}


def _pidx(i):
    return [lyr.name for lyr in NET.param_layers()].index(NET.layers[i].name)


def _run_pipeline(params, images, labels, cfg, groups, rng):
    """Every node's events in a random order that respects the data flow; returns the final
    weights and every image's logits."""
    n, batch = len(groups), len(images)
    seed, shifts, shapes = step_seed(cfg.seed, cfg.step), NET.shifts(PREC, cfg.lr_log2), NET.shapes()
    nodes = [_Node(j, n, g, params, batch) for j, g in enumerate(groups)]
    fwd_out, bwd_out, logits = {}, {}, {}   # (node, image) -> what it sent on
    relu_last = NET.param_layers()[-1].relu
    pos = [0] * n

    def ready(nd):
        kind, b = nd.events[pos[nd.j]]
        if kind == "fwd":
            return nd.j == 0 or (nd.j - 1, b) in fwd_out
        if kind == "bwd":
            return (nd.j, b) in fwd_out and (nd.j == n - 1 or (nd.j + 1, b) in bwd_out)
        return True

    while any(pos[j] < len(nodes[j].events) for j in range(n)):
        cand = [nd for nd in nodes if pos[nd.j] < len(nd.events) and ready(nd)]
        assert cand, "the schedule deadlocks"
        nd = cand[rng.integers(len(cand))]
        kind, b = nd.events[pos[nd.j]]
        pos[nd.j] += 1
        if kind == "fwd":
            x = images[b:b + 1] if nd.j == 0 else fwd_out[(nd.j - 1, b)]
            for i in nd.layers:
                layer = NET.layers[i]
                nd.acts[(i, b)] = x
                if isinstance(layer, Pool):
                    x, am = pool_fwd(x, k=layer.k)
                    nd.acts[("am", i, b)] = am
                    continue
                geo, prm, p = NET.conv_geometry(layer), nd.w[layer.name], _pidx(i)
                x = conv_fwd(x, prm["w"], prm["b"], stride=geo["stride"], pad=geo["pad"],
                             shift=shifts[layer.name].fwd, relu=layer.relu, out_bits=FMT.act.bits,
                             mode=cfg.fwd_mode, seed=slice_seed(seed, b * int(np.prod(shapes[i + 1]))),
                             tensor_id=tensor_id(p, "FWD"), x_bits=FMT.act.bits, w_bits=FMT.weight.bits,
                             b_bits=FMT.bias_bits)
            fwd_out[(nd.j, b)] = x
            if nd.j == n - 1:
                logits[b] = x.reshape(-1)
        elif kind == "bwd":
            if nd.j == n - 1:
                g = row_loss_grad(logits[b], labels[b], batch, FMT, relu_last).reshape(fwd_out[(nd.j, b)].shape)
            else:
                g = bwd_out[(nd.j + 1, b)]
            for i in reversed(nd.layers):
                layer, x = NET.layers[i], nd.acts[(i, b)]
                if isinstance(layer, Pool):
                    g = pool_bwd(g, nd.acts[("am", i, b)], k=layer.k)
                    continue
                geo, prm, p, sh = NET.conv_geometry(layer), nd.w[layer.name], _pidx(i), shifts[layer.name]
                wseed = image_seed(seed, b, int(np.prod(geo["w_shape"])))
                nd.grads[(layer.name, b)] = (conv_bwd_weight(
                    x, g, geo["w_shape"], stride=geo["stride"], pad=geo["pad"], shift=sh.wgrad,
                    bias_shift=sh.bgrad, out_bits=FMT.wgrad.bits, mode=cfg.grad_mode, seed=wseed,
                    tensor_id=tensor_id(p, "DW"), bias_tensor_id=tensor_id(p, "DB"), x_bits=FMT.act.bits,
                    dy_bits=FMT.grad.bits), wseed)
                if p == 0:
                    break
                g = conv_bwd_data(g, prm["w"], x, stride=geo["stride"], pad=geo["pad"], shift=sh.bwd_data,
                                  relu=NET.param_layers()[p - 1].relu, out_bits=FMT.grad.bits,
                                  mode=cfg.grad_mode, seed=slice_seed(seed, b * int(np.prod(shapes[i]))),
                                  tensor_id=tensor_id(p, "DX"), dy_bits=FMT.grad.bits, w_bits=FMT.weight.bits)
            bwd_out[(nd.j, b)] = g
        else:  # the update of every layer of the node for image b
            for name in nd.w:
                grads, wseed = nd.grads.pop((name, b))
                p = [lyr.name for lyr in NET.param_layers()].index(name)
                nd.w[name] = sgd_layer(NET, p, nd.w[name], grads, cfg, wseed)
    final = {}
    for nd in nodes:
        final.update(nd.w)
    return final, logits


#: whole-layer groups of vgg-digits' layers (conv1 conv2 pool1 conv3 conv4 pool2 fc) on 1..4 nodes
GROUPS = {1: [[0, 1, 2, 3, 4, 5, 6]], 2: [[0, 1, 2], [3, 4, 5, 6]], 3: [[0, 1], [2, 3, 4], [5, 6]],
          4: [[0], [1, 2], [3], [4, 5, 6]]}


@settings(max_examples=examples(4), deadline=None)
@given(n=st.sampled_from(sorted(GROUPS)), batch=st.integers(1, 6), seed=st.integers(0, 2**32 - 1),
       order=st.integers(0, 2**32 - 1))
def test_staleness_of_the_schedule_is_what_a_pipeline_of_nodes_computes(data, n, batch, seed, order):
    params = _params(2)
    cfg = TrainConfig(PREC, seed=seed, step=1)
    images, labels = data[0][:batch], data[1][:batch]
    groups = GROUPS[n]
    holder = {NET.layers[i].name: j for j, g in enumerate(groups) for i in g}
    vers = {lyr.name: fwd_versions("cp", holder[lyr.name], n, batch) for lyr in NET.param_layers()}
    want, _ = _run_pipeline(params, images, labels, cfg, groups, np.random.default_rng(order))
    got, _ = train_step_per_image(NET, params, images, labels, cfg, vers)
    assert _equal(got, want)


def test_one_f_one_b_staleness_is_the_pipeline_depth():
    for n in range(1, 6):
        for j in range(n):
            assert fwd_versions("cp", j, n, 12) == [max(0, b - (n - j)) for b in range(12)]
    assert fwd_versions("gpipe", 0, 3, 4) == [0, 0, 0, 0]


@pytest.mark.parametrize("bad, match", [
    ({"conv1": [0, 2]}, "image b can see 0..b updates"),
    ({"conv1": [0]}, "must give 2 update counts"),
    ({"conv1": [0, -1]}, "image b can see 0..b updates"),
])
def test_bad_staleness_tables_are_refused(bad, match):
    vers = {lyr.name: [0, 0] for lyr in NET.param_layers()}
    vers.update(bad)
    with pytest.raises(ValueError, match=match):
        check_versions(NET, vers, 2)
