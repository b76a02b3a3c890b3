"""The float64 reference: its gradients agree with finite differences of its forward pass."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.golden import reference
from pymtl_fp.tb.hypothesis_profiles import examples

EPS = 1e-6


def numeric_gradient(f, x):
    """Central differences of the scalar function f at every element of x."""
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        old = x[idx]
        x[idx] = old + EPS
        up = f(x)
        x[idx] = old - EPS
        down = f(x)
        x[idx] = old
        g[idx] = (up - down) / (2 * EPS)
    return g


@st.composite
def float_conv_problems(draw):
    n, c, k = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    r, s = draw(st.sampled_from([(1, 1), (3, 3), (2, 3), (5, 5)]))
    stride = draw(st.sampled_from([1, 2]))
    pad = draw(st.integers(0, min(r, s) - 1))
    h = draw(st.integers(max(1, r - 2 * pad), r - 2 * pad + 4))
    w = draw(st.integers(max(1, s - 2 * pad), s - 2 * pad + 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.normal(size=(n, c, h, w))
    x[np.abs(x) < 0.01] = 0.5  # keep pre-activations away from the ReLU kink
    return {"x": x, "w": rng.normal(size=(k, c, r, s)), "b": rng.normal(size=k),
            "stride": stride, "pad": pad, "rng": rng}


@settings(deadline=None, max_examples=examples(12))
@given(float_conv_problems(), st.booleans())
def test_conv_gradients_match_finite_differences(p, relu_before):
    """L = sum(G * conv(act(a), w) + b): dL/da via bwd_data (with the ReLU mask), dL/dw, dL/db."""
    geo = {"stride": p["stride"], "pad": p["pad"]}
    act = (lambda a: np.maximum(a, 0)) if relu_before else (lambda a: a)
    out = reference.conv_fwd(act(p["x"]), p["w"], p["b"], **geo)
    G = p["rng"].normal(size=out.shape)

    def loss_a(a):
        return float((G * reference.conv_fwd(act(a), p["w"], p["b"], **geo)).sum())

    def loss_w(w):
        return float((G * reference.conv_fwd(act(p["x"]), w, p["b"], **geo)).sum())

    def loss_b(b):
        return float((G * reference.conv_fwd(act(p["x"]), p["w"], b, **geo)).sum())

    # the mask is given the layer's forward input act(a): <= 0 exactly where a <= 0
    dx = reference.conv_bwd_data(G, p["w"], act(p["x"]), relu=relu_before, **geo)
    dw, db = reference.conv_bwd_weight(act(p["x"]), G, p["w"].shape, **geo)
    np.testing.assert_allclose(dx, numeric_gradient(loss_a, p["x"].copy()), atol=1e-6)
    np.testing.assert_allclose(dw, numeric_gradient(loss_w, p["w"].copy()), atol=1e-6)
    np.testing.assert_allclose(db, numeric_gradient(loss_b, p["b"].copy()), atol=1e-6)


@settings(deadline=None, max_examples=examples(12))
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_pool_gradient_matches_finite_differences(k, ho, wo, seed):
    rng = np.random.default_rng(seed)
    # distinct values, at least 0.1 apart, so a tiny perturbation never changes the argmax
    size = 2 * ho * k * wo * k
    x = rng.permutation(2 * size)[:size].reshape(1, 2, ho * k, wo * k) * 0.1
    y, argmax = reference.pool_fwd(x, k=k)
    G = rng.normal(size=y.shape)
    dx = reference.pool_bwd(G, argmax, k=k)
    num = numeric_gradient(lambda v: float((G * reference.pool_fwd(v, k=k)[0]).sum()), x.copy())
    np.testing.assert_allclose(dx, num, atol=1e-6)


@settings(deadline=None)
@given(st.integers(1, 5), st.integers(2, 10), st.integers(0, 2**32 - 1), st.booleans())
def test_softmax_xent_gradient_matches_finite_differences(n, k, seed, batch_mean):
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=3.0, size=(n, k))
    labels = rng.integers(0, k, size=n)
    loss, g = reference.softmax_xent(z, labels, batch_mean=batch_mean)
    scale = 1.0 if batch_mean else n  # the loss is the batch mean; batch_mean=False drops 1/N
    num = numeric_gradient(lambda v: reference.softmax_xent(v, labels)[0] * scale, z.copy())
    np.testing.assert_allclose(g, num, atol=1e-6)
    assert loss > 0


def test_sgd_reference():
    w = np.array([1.0, -2.0])
    assert reference.sgd_update(w, np.array([0.5, 0.5]), lr=0.5).tolist() == [0.75, -2.25]
    w2, v2 = reference.sgd_update(w, np.array([1.0, 1.0]), lr=0.5, momentum=0.5,
                                  velocity=np.array([2.0, 0.0]))
    assert v2.tolist() == [2.0, 1.0] and w2.tolist() == [0.0, -2.5]
