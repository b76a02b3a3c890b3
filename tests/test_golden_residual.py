"""The golden model of residual networks: the add, the gradient sum at a fork and the global average
pool bit for bit against their definitions (:mod:`pymtl_fp.golden.residual`), written here again in
Python integers and exact fractions; a whole residual step in float64 against PyTorch's autograd;
the fixed-point step against a step composed by hand from the operations."""

from fractions import Fraction
from math import floor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.golden import train as T
from pymtl_fp.golden.residual import add_fwd, fork_sum, gap_bwd, gap_fwd, gap_reciprocal
from pymtl_fp.net import Add, Conv, Fc, GlobalAvgPool, Net, Pool, load_net
from pymtl_fp.numerics import QFormat, int_range, stochastic_offset

RESNET = "resnet8-mnist"


def _sat(v: int, bits: int) -> int:
    lo, hi = int_range(bits)
    return min(max(v, lo), hi)


def _half_up(q: Fraction) -> int:
    return floor(q + Fraction(1, 2))


# ---- the operations against their definitions ------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.integers(2, 16), st.data())
def test_add_is_the_saturated_exact_sum(bits, data):
    lo, hi = int_range(bits)
    vals = st.lists(st.integers(lo, hi), min_size=6, max_size=6)
    a, b = data.draw(vals), data.draw(vals)
    relu = data.draw(st.booleans())
    y = add_fwd(np.array(a).reshape(1, 1, 2, 3), np.array(b).reshape(1, 1, 2, 3), bits=bits, relu=relu)
    want = [max(_sat(x + z, bits), 0) if relu else _sat(x + z, bits) for x, z in zip(a, b)]
    assert y.reshape(-1).tolist() == want


def test_the_add_refuses_operands_of_different_formats_or_shapes_in_one_line():
    a = np.zeros((1, 2, 3, 3), dtype=np.int64)
    with pytest.raises(ValueError, match=r"^add7: the add's operands have different formats \(Q8\.4 and Q8\.3\)"):
        add_fwd(a, a, bits=8, main_format=QFormat(8, 4), skip_format=QFormat(8, 3), name="add7")
    with pytest.raises(ValueError, match=r"^add7: the residual branches' shapes disagree"):
        add_fwd(a, a[:, :1], bits=8, name="add7")


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(1, 4), st.data())
def test_a_fork_sums_exactly_and_saturates_once(bits, parts, data):
    lo, hi = int_range(bits)
    contributions = [data.draw(st.lists(st.integers(lo, hi), min_size=4, max_size=4)) for _ in range(parts)]
    got = fork_sum([np.array(c) for c in contributions], bits=bits)
    assert got.tolist() == [_sat(sum(col), bits) for col in zip(*contributions)]


@pytest.mark.parametrize("area", [1, 2, 4, 49, 64, 196, 3136, 2**16])
def test_the_reciprocal_is_the_half_up_rounded_inverse_with_16_more_bits(area):
    m, f = gap_reciprocal(area)
    assert f == 16 + (area - 1).bit_length()
    assert m == _half_up(Fraction(2**f, area))
    if area & (area - 1) == 0:  # a power of two: M is exact, the division a shift
        assert m * area == 2**f


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([(1, 1), (2, 2), (7, 7), (3, 5), (4, 4)]), st.integers(3, 16), st.data())
def test_the_average_pool_forward_is_the_reciprocal_product_rounded_half_up(hw, bits, data):
    h, w = hw
    lo, hi = int_range(bits)
    x = np.array(data.draw(st.lists(st.integers(lo, hi), min_size=2 * h * w, max_size=2 * h * w))).reshape(1, 2, h, w)
    y = gap_fwd(x, out_bits=bits)
    m, f = gap_reciprocal(h * w)
    want = [_sat(_half_up(Fraction(m * int(x[0, c].sum()), 2**f)), bits) for c in range(2)]
    assert y.reshape(-1).tolist() == want
    if h * w in (1, 4):  # a power-of-two area: the sum shifted right, half up
        k = (h * w).bit_length() - 1
        assert y.reshape(-1).tolist() == [_sat(floor(Fraction(int(x[0, c].sum()), 2**k) + Fraction(1, 2)), bits)
                                         for c in range(2)]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([(2, 2), (7, 7), (3, 5)]), st.integers(4, 16), st.booleans(), st.data())
def test_the_average_pool_backward_spreads_the_gradient_stochastically(hw, bits, relu, data):
    h, w = hw
    lo, hi = int_range(bits)
    dy = np.array(data.draw(st.lists(st.integers(lo, hi), min_size=2, max_size=2))).reshape(1, 2, 1, 1)
    x = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=2 * h * w, max_size=2 * h * w))).reshape(1, 2, h, w)
    seed, tid = data.draw(st.integers(0, 2**32 - 1)), data.draw(st.integers(0, 255))
    dx = gap_bwd(dy, x, out_bits=bits, relu=relu, mode="stochastic", seed=seed, tensor_id=tid)
    m, f = gap_reciprocal(h * w)
    for idx in range(2 * h * w):
        c = idx // (h * w)
        r = int(stochastic_offset(seed, tid, np.int64(idx), f))
        want = _sat((m * int(dy[0, c, 0, 0]) + r) >> f, bits)
        if relu and x.reshape(-1)[idx] <= 0:
            want = 0
        assert dx.reshape(-1)[idx] == want


def test_stochastic_rounding_keeps_small_average_pool_gradients_on_average():
    """dy = 3 units over 49 elements is 0.061 units each: half up gives 0 everywhere, the stochastic
    rounding about 6% ones (its mean is the exact quotient, within sampling error)."""
    dy = np.full((64, 1, 1, 1), 3, dtype=np.int64)
    x = np.ones((64, 1, 7, 7), dtype=np.int64)
    assert not gap_bwd(dy, x, out_bits=8, mode="nearest").any()
    dx = gap_bwd(dy, x, out_bits=8, mode="stochastic", seed=9, tensor_id=254)
    assert set(np.unique(dx)) <= {0, 1}
    assert dx.mean() == pytest.approx(3 / 49, abs=0.01)


# ---- a whole step in float64: PyTorch -----------------------------------------------------------

def _torch_step(net, params, images, labels, lr):
    """PyTorch autograd of the mean cross-entropy in float64, written from the layer types (not
    from the golden model): ``(loss, logits, {layer: (dw, db)}, {layer: (w - lr*dw, b - lr*db)})``."""
    import torch
    import torch.nn.functional as F

    tp = {name: {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in p.items()}
          for name, p in params.items()}
    outs = {}
    x = torch.tensor(images, dtype=torch.float64)
    for layer in net.layers:
        if isinstance(layer, Pool):
            x = F.max_pool2d(x, layer.k, stride=layer.k)
        elif isinstance(layer, GlobalAvgPool):
            x = F.adaptive_avg_pool2d(x, 1)
        elif isinstance(layer, Add):
            skip = outs[layer.source]
            if layer.project:
                skip = F.conv2d(skip, tp[layer.name]["w"], tp[layer.name]["b"], stride=layer.stride)
            x = x + skip
        elif isinstance(layer, Conv):
            x = F.conv2d(x, tp[layer.name]["w"], tp[layer.name]["b"], stride=layer.stride, padding=layer.pad)
        else:
            assert isinstance(layer, Fc)
            x = F.linear(x.flatten(1), tp[layer.name]["w"].flatten(1), tp[layer.name]["b"])[:, :, None, None]
        if getattr(layer, "relu", False):
            x = F.relu(x)
        outs[layer.name] = x
    logits = x.flatten(1)
    loss = F.cross_entropy(logits, torch.tensor(labels))
    loss.backward()
    grads = {name: (p["w"].grad.numpy(), p["b"].grad.numpy()) for name, p in tp.items()}
    new = {name: tuple((p[k] - lr * p[k].grad).detach().numpy() for k in ("w", "b")) for name, p in tp.items()}
    return loss.item(), logits.detach().numpy(), grads, new


@pytest.mark.parametrize("which", [RESNET, "tiny"])
def test_a_whole_residual_step_in_float64_equals_pytorch(which):
    """resnet8-mnist (identity and projection skips, a fork after a pool, the average pool) on
    four MNIST images, and a tiny net whose adds have a ReLU: logits, loss, every gradient and the
    updated weights equal PyTorch's to 1e-12.  Every weight is random (none at Fixup's zero) and
    the biases non-zero, so every path is live."""
    pytest.importorskip("torch")
    from pymtl_fp.data import dataset_for

    rng = np.random.default_rng(3)
    if which == "tiny":
        net = _tiny()
        images, labels = rng.uniform(0, 1, size=(4, 1, 4, 4)), np.array([0, 1, 2, 1])
    else:
        net = load_net(RESNET)
        split = dataset_for(net, "mnist")
        images, labels = split.x_train[:4], split.y_train[:4]
    params = {layer.name: {"w": rng.normal(0.0, 0.3, size=net.conv_geometry(layer)["w_shape"]),
                           "b": rng.normal(0.0, 0.1, size=net.conv_geometry(layer)["w_shape"][:1])}
              for layer in net.param_layers()}
    cfg = T.TrainConfig(T.FLOAT64, lr_log2=3)
    loss, grads = T.gradients_float64(net, params, images, labels)
    new, step_loss = T.train_step_float64(net, params, images, labels, cfg)
    t_loss, t_logits, t_grads, t_new = _torch_step(net, params, images, labels, cfg.lr)
    np.testing.assert_allclose(T.predict_float64(net, params, images), t_logits, rtol=1e-12, atol=1e-12)
    assert loss == step_loss == pytest.approx(t_loss, rel=1e-12, abs=1e-12)
    assert set(grads) == set(t_grads) == {ly.name for ly in net.param_layers()}
    assert any(isinstance(ly, Add) and ly.project for ly in net.param_layers())
    for layer, (dw, db) in grads.items():
        assert np.abs(dw).max() > 0, layer  # every layer's gradient reached
        np.testing.assert_allclose(dw, t_grads[layer][0], rtol=1e-12, atol=1e-12, err_msg=layer)
        np.testing.assert_allclose(db, t_grads[layer][1], rtol=1e-12, atol=1e-12, err_msg=layer)
        np.testing.assert_allclose(new[layer]["w"], t_new[layer][0], rtol=1e-12, atol=1e-12, err_msg=layer)
        np.testing.assert_allclose(new[layer]["b"], t_new[layer][1], rtol=1e-12, atol=1e-12, err_msg=layer)


# ---- the fixed-point step, composed by hand ------------------------------------------------------

def _tiny():
    """conv (relu) -> [conv (relu), conv] + identity skip (relu) -> [conv s2] + projection (relu)
    -> average pool -> fc, on 1x4x4 images."""
    return Net("tiny-res", (1, 4, 4), (
        Conv("c1", 2, 3, pad=1, relu=True),
        Conv("c2", 2, 3, pad=1, relu=True), Conv("c3", 2, 3, pad=1), Add("a1", "c1", relu=True),
        Conv("c4", 3, 3, stride=2, pad=1), Add("a2", "a1", project=True, stride=2, relu=True),
        GlobalAvgPool("gap"), Fc("fc", 3)),
        formats=load_net(RESNET).formats)


def test_the_fixed_point_step_is_the_operations_composed_by_hand():
    """The residual walk of :func:`~pymtl_fp.golden.train.gradients` against the same step written
    out operation by operation from the module's definitions: the fork at c1's output sums the
    gradients of c2's ``bwd_data`` and of the skip; a1's output feeds c4 and a2's projection."""
    from pymtl_fp.golden.conv import conv_bwd_data, conv_bwd_weight, conv_fwd
    from pymtl_fp.golden.loss import softmax_xent_grad

    net, prec = _tiny(), "8"
    fmt, sh = net.precision(prec), net.shifts(prec)
    rng = np.random.default_rng(1)
    params = T.quantize_params(net, {k: {"w": v["w"] * 3, "b": rng.normal(0, 0.2, v["b"].shape)}
                                     for k, v in T.init_params_float64(net, 2).items()}, prec)
    images = rng.integers(0, 16, size=(3, 1, 4, 4))
    labels = np.array([0, 2, 1])
    cfg = T.TrainConfig(prec, seed=7)
    seed = T.step_seed(cfg.seed, cfg.step)
    loss, grads = T.gradients(net, params, images, labels, cfg)

    def tid(name, role):
        return T.tensor_id([ly.name for ly in net.param_layers()].index(name), role)

    def fwd(name, x, relu, stride=1, pad=1):
        return conv_fwd(x, params[name]["w"], params[name]["b"], stride=stride, pad=pad, shift=sh[name].fwd,
                        relu=relu, out_bits=8, tensor_id=tid(name, "FWD"))

    def bwd(name, g, x, relu, stride=1, pad=1):
        dw = conv_bwd_weight(x, g, params[name]["w"].shape, stride=stride, pad=pad, shift=sh[name].wgrad,
                             bias_shift=sh[name].bgrad, out_bits=8, mode="stochastic", seed=seed,
                             tensor_id=tid(name, "DW"), bias_tensor_id=tid(name, "DB"))
        dx = conv_bwd_data(g, params[name]["w"], x, stride=stride, pad=pad, shift=sh[name].bwd_data, relu=relu,
                           out_bits=8, mode="stochastic", seed=seed, tensor_id=tid(name, "DX"))
        return dw, dx

    def sat(v):
        return np.clip(v, -128, 127)

    h1 = fwd("c1", images, True)
    h2 = fwd("c2", h1, True)
    h3 = fwd("c3", h2, False)
    a1 = np.maximum(sat(h3 + h1), 0)
    h4 = fwd("c4", a1, False, stride=2)
    a2 = np.maximum(sat(h4 + fwd("a2", a1, False, stride=2, pad=0)), 0)
    m, f = gap_reciprocal(4)
    pooled = np.clip((a2.sum(axis=(2, 3), keepdims=True) * m + 2**(f - 1)) >> f, -128, 127)
    logits = conv_fwd(pooled, params["fc"]["w"], params["fc"]["b"], shift=sh["fc"].fwd, out_bits=8,
                      tensor_id=tid("fc", "FWD"))
    want_loss, g = softmax_xent_grad(logits, labels, logit_frac=fmt.act.frac, grad_format=fmt.grad,
                                     loss_scale_log2=fmt.loss_scale_log2, logit_bits=8)
    want = {}
    want["fc"], g_pool = bwd("fc", g, pooled, False, pad=0)
    g_a2 = gap_bwd(g_pool, a2, out_bits=8, relu=True, mode="stochastic", seed=seed, tensor_id=254)
    want["a2"], g_a1_skip = bwd("a2", g_a2, a1, True, stride=2, pad=0)  # the projection's input: a1
    want["c4"], g_a1_main = bwd("c4", g_a2, a1, True, stride=2)
    g_a1 = sat(g_a1_main + g_a1_skip)  # the fork at a1
    want["c3"], g_h2 = bwd("c3", g_a1, h2, True)
    want["c2"], g_h1_main = bwd("c2", g_h2, h1, True)
    g_h1 = sat(g_h1_main + np.where(h1 > 0, g_a1, 0))  # the fork at c1: main and the masked skip
    want["c1"] = bwd("c1", g_h1, images, False)[0]
    assert loss == want_loss
    assert set(grads) == set(want)
    for name, (dw, db) in want.items():
        assert np.array_equal(grads[name][0], dw) and np.array_equal(grads[name][1], db), name
    assert any(np.abs(w[0]).max() > 0 for w in want.values())


def test_the_resnet_trains_a_step_at_every_precision():
    """One golden step of the preset at 8 and 16 bits: the loss is finite and the weights move (the
    branches' last convs start at zero and leave it)."""
    from pymtl_fp.data import dataset_for, quantize_images

    net = load_net(RESNET)
    split = dataset_for(net, "mnist")
    base = T.init_params_float64(net, 0)
    assert not base["b1b"]["w"].any() and base["b1a"]["w"].any()
    for prec in ("8", "16"):
        params = T.quantize_params(net, base, prec)
        images = quantize_images(split.x_train[:8], net.precision(prec).act)
        new, loss = T.train_step(net, params, images, split.y_train[:8], T.TrainConfig(prec, lr_log2=3))
        assert np.isfinite(loss)
        assert not np.array_equal(new["b1b"]["w"], params["b1b"]["w"])


def test_the_per_image_and_data_parallel_steps_keep_their_identities_on_a_residual_net():
    """The walk's seeds index a projection's data gradient by the skip's own tensor: per-image SGD of
    one image is the mini-batch step of that image, and a data-parallel step over any split of the
    batch is the mini-batch step, bit for bit, on a residual net too."""
    from pymtl_fp.golden.data_parallel import train_step_data_parallel
    from pymtl_fp.golden.per_image import train_step_per_image

    net, prec = _tiny(), "8"
    rng = np.random.default_rng(4)
    params = T.quantize_params(net, {k: {"w": v["w"] * 3, "b": rng.normal(0, 0.2, v["b"].shape)}
                                     for k, v in T.init_params_float64(net, 1).items()}, prec)
    images = rng.integers(0, 16, size=(4, 1, 4, 4))
    labels = np.array([0, 2, 1, 1])
    cfg = T.TrainConfig(prec, seed=11)
    one, _ = T.train_step(net, params, images[:1], labels[:1], cfg)
    per, _ = train_step_per_image(net, params, images[:1], labels[:1], cfg)
    assert all(np.array_equal(one[k][x], per[k][x]) for k in one for x in ("w", "b"))
    whole, _ = T.train_step(net, params, images, labels, cfg)
    split, _ = train_step_data_parallel(net, params, images, labels, cfg, [1, 3])
    assert all(np.array_equal(whole[k][x], split[k][x]) for k in whole for x in ("w", "b"))
    assert any(not np.array_equal(whole[k]["w"], params[k]["w"]) for k in whole)


def test_the_average_pool_refuses_operands_its_accumulator_cannot_hold():
    x = np.full((1, 1, 4, 4), 2**47, dtype=np.int64)
    with pytest.raises(ValueError, match=r"^average pool accumulator could reach \d+ >= 2\*\*62"):
        gap_fwd(x, out_bits=48)
    with pytest.raises(ValueError, match=r"^average pool backward accumulator could reach"):
        gap_bwd(np.full((1, 1, 1, 1), 2**47, dtype=np.int64), x, out_bits=48)
