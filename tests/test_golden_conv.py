"""Integer conv forward / backward-data / backward-weight against float64 math and naive loops."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp import golden
from pymtl_fp.golden import reference
from pymtl_fp.numerics import ACC_LIMIT, requantize
from pymtl_fp.tb.hypothesis_profiles import examples


@st.composite
def conv_problems(draw, max_value_bits=12, min_value_bits=2):
    """A random conv: shapes, kernel (1x1, 3x3, non-square, 5x5...), stride 1/2, padding, values.

    Values stay below 2**max_value_bits so every accumulator is far below 2**52 and float64 is
    an exact oracle.
    """
    n, c, k = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    r, s = draw(st.sampled_from([(1, 1), (3, 3), (2, 2), (1, 3), (3, 2), (5, 5)]))
    stride = draw(st.sampled_from([1, 2]))
    pad = draw(st.integers(0, min(r, s) - 1))
    h = draw(st.integers(max(1, r - 2 * pad), r - 2 * pad + 6))
    w = draw(st.integers(max(1, s - 2 * pad), s - 2 * pad + 6))
    x_bits = draw(st.integers(min_value_bits, max_value_bits))
    w_bits = draw(st.integers(min_value_bits, max_value_bits))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def values(shape, bits):
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if draw(st.booleans()):
            return rng.integers(lo, hi + 1, size=shape)
        return rng.choice(np.array([lo, hi, 0, -1, 1]), size=shape)  # extremes

    return {"x": values((n, c, h, w), x_bits), "w": values((k, c, r, s), w_bits),
            "b": rng.integers(-(2**20), 2**20, size=k), "stride": stride, "pad": pad,
            "x_bits": x_bits, "w_bits": w_bits, "rng": rng}


def nearest_float64(acc, shift):
    """The specified rounding computed in float64 (exact while |acc| < 2**52)."""
    return np.floor(np.asarray(acc, dtype=np.float64) / 2.0**shift + 0.5)


def naive_conv(x, w, stride, pad):
    """Direct six-loop convolution with Python ints (independent of both implementations)."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    ho, wo = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    y = np.zeros((n, k, ho, wo), dtype=object)
    for ni in range(n):
        for ki in range(k):
            for i in range(ho):
                for j in range(wo):
                    total = 0
                    for ci in range(c):
                        for ri in range(r):
                            for si in range(s):
                                hh, ww = i * stride + ri - pad, j * stride + si - pad
                                if 0 <= hh < h and 0 <= ww < wd:
                                    total += int(x[ni, ci, hh, ww]) * int(w[ki, ci, ri, si])
                    y[ni, ki, i, j] = total
    return y


@settings(deadline=None, max_examples=examples(15))
@given(conv_problems(max_value_bits=8))
def test_forward_accumulators_match_naive_loops(p):
    acc = golden.conv_fwd_acc(p["x"], p["w"], stride=p["stride"], pad=p["pad"])
    assert acc.tolist() == naive_conv(p["x"], p["w"], p["stride"], p["pad"]).tolist()


@settings(deadline=None)
@given(conv_problems(), st.integers(0, 32), st.integers(2, 24), st.booleans())
def test_forward_equals_float64_rounded_half_up_then_saturated(p, shift, out_bits, relu):
    y = golden.conv_fwd(p["x"], p["w"], p["b"], stride=p["stride"], pad=p["pad"], shift=shift,
                        relu=relu, out_bits=out_bits, x_bits=p["x_bits"], w_bits=p["w_bits"])
    acc = reference.conv_fwd(p["x"], p["w"], p["b"], stride=p["stride"], pad=p["pad"])
    n, k = p["x"].shape[0], p["w"].shape[0]
    assert y.shape == (n, k) + acc.shape[2:] and y.dtype == np.int64
    rounded = nearest_float64(acc, shift)
    lo, hi = -(2 ** (out_bits - 1)), 2 ** (out_bits - 1) - 1
    expected = np.clip(rounded, lo, hi)
    if relu:
        expected = np.maximum(expected, 0)
    assert np.array_equal(y, expected)
    inside = (rounded >= lo) & (rounded <= hi)  # where no saturation occurs: the float math itself
    assert np.array_equal(y[inside], np.maximum(rounded[inside], 0) if relu else rounded[inside])


@settings(deadline=None)
@given(conv_problems(), st.integers(0, 32), st.integers(2, 24), st.booleans())
def test_backward_data_equals_float64_rounded_then_masked(p, shift, out_bits, relu):
    ho_wo = reference.conv_fwd(p["x"], p["w"], stride=p["stride"], pad=p["pad"]).shape[2:]
    dy = p["rng"].integers(-(2**11), 2**11, size=(p["x"].shape[0], p["w"].shape[0]) + ho_wo)
    dx = golden.conv_bwd_data(dy, p["w"], p["x"], stride=p["stride"], pad=p["pad"], shift=shift,
                              relu=relu, out_bits=out_bits)
    acc = reference.conv_bwd_data(dy, p["w"], p["x"], stride=p["stride"], pad=p["pad"])
    expected = np.clip(nearest_float64(acc, shift), -(2 ** (out_bits - 1)), 2 ** (out_bits - 1) - 1)
    if relu:
        expected = np.where(p["x"] > 0, expected, 0)
    assert dx.shape == p["x"].shape
    assert np.array_equal(dx, expected)


@settings(deadline=None)
@given(conv_problems(), st.integers(0, 32), st.integers(0, 32), st.integers(2, 40))
def test_backward_weight_equals_float64_rounded(p, shift, bias_shift, out_bits):
    ho_wo = reference.conv_fwd(p["x"], p["w"], stride=p["stride"], pad=p["pad"]).shape[2:]
    dy = p["rng"].integers(-(2**11), 2**11, size=(p["x"].shape[0], p["w"].shape[0]) + ho_wo)
    dw, db = golden.conv_bwd_weight(p["x"], dy, p["w"].shape, stride=p["stride"], pad=p["pad"],
                                    shift=shift, bias_shift=bias_shift, out_bits=out_bits)
    acc_w, acc_b = reference.conv_bwd_weight(p["x"], dy, p["w"].shape, stride=p["stride"], pad=p["pad"])
    lo, hi = -(2 ** (out_bits - 1)), 2 ** (out_bits - 1) - 1
    assert np.array_equal(dw, np.clip(nearest_float64(acc_w, shift), lo, hi))
    assert np.array_equal(db, np.clip(nearest_float64(acc_b, bias_shift), lo, hi))


@settings(deadline=None)
@given(conv_problems())
def test_the_three_loop_nests_are_adjoint(p):
    """<conv(x, w), dy> == <x, bwd_data(dy, w)> == <w, bwd_weight(x, dy)>, exactly in integers."""
    acc = golden.conv_fwd_acc(p["x"], p["w"], stride=p["stride"], pad=p["pad"])
    dy = p["rng"].integers(-100, 100, size=acc.shape)
    dx = golden.conv_bwd_data_acc(dy, p["w"], p["x"].shape, stride=p["stride"], pad=p["pad"])
    dw, db = golden.conv_bwd_weight_acc(p["x"], dy, p["w"].shape, stride=p["stride"], pad=p["pad"])
    forward = int((acc.astype(object) * dy).sum())
    assert forward == int((p["x"].astype(object) * dx).sum()) == int((p["w"].astype(object) * dw).sum())
    assert db.tolist() == dy.sum(axis=(0, 2, 3)).tolist()


@settings(deadline=None)
@given(conv_problems(), st.integers(1, 16), st.integers(0, 2**32 - 1), st.integers(0, 254))
def test_stochastic_rounding_indexes_the_whole_result_tensor(p, shift, seed, tid):
    """Each op rounds its exact accumulators with index = flat position in its result tensor."""
    kw = {"stride": p["stride"], "pad": p["pad"], "shift": shift, "out_bits": 30,
          "mode": "stochastic", "seed": seed, "tensor_id": tid}
    y = golden.conv_fwd(p["x"], p["w"], p["b"], **kw)
    acc = golden.conv_fwd_acc(p["x"], p["w"], p["b"], stride=p["stride"], pad=p["pad"])
    index = np.arange(acc.size).reshape(acc.shape)
    assert np.array_equal(y, requantize(acc, shift, 30, "stochastic", seed=seed, tensor_id=tid,
                                        index=index))
    floor = np.floor(acc / 2.0**shift)
    assert np.all((y == floor) | (y == floor + 1))
    assert np.array_equal(y, golden.conv_fwd(p["x"], p["w"], p["b"], **kw))
    dw, db = golden.conv_bwd_weight(p["x"], np.ones_like(acc), p["w"].shape, bias_shift=shift, **kw)
    acc_w, acc_b = golden.conv_bwd_weight_acc(p["x"], np.ones_like(acc), p["w"].shape,
                                              stride=p["stride"], pad=p["pad"])
    assert np.array_equal(db, requantize(acc_b, shift, 30, "stochastic", seed=seed, tensor_id=tid + 1))
    assert np.array_equal(dw, requantize(acc_w, shift, 30, "stochastic", seed=seed, tensor_id=tid))


@settings(deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(1, 5),
       st.integers(0, 2**32 - 1))
def test_fully_connected_is_a_matrix_product(n, c, h, w, k, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(n, c, h, w))
    wt = rng.integers(-128, 128, size=(k, c, h, w))
    b = rng.integers(-1000, 1000, size=k)
    y = golden.fc_fwd(x, wt, b, shift=3, out_bits=32)
    acc = x.reshape(n, -1) @ wt.reshape(k, -1).T + b
    assert np.array_equal(y, (acc + 4) >> 3)
    dy = rng.integers(-128, 128, size=(n, k))
    dx = golden.fc_bwd_data(dy, wt, x, shift=0, out_bits=32)
    assert np.array_equal(dx.reshape(n, -1), dy @ wt.reshape(k, -1))
    dw, db = golden.fc_bwd_weight(x.reshape(n, -1), dy, (k, c * h * w), shift=0, bias_shift=0,
                                  out_bits=40)
    assert np.array_equal(dw, dy.T @ x.reshape(n, -1)) and np.array_equal(db, dy.sum(axis=0))


# ---- errors ---------------------------------------------------------------------------------

X = np.zeros((2, 3, 6, 6), dtype=np.int64)
W = np.zeros((4, 3, 3, 3), dtype=np.int64)
B = np.zeros(4, dtype=np.int64)
FWD = {"shift": 4, "out_bits": 16}


@pytest.mark.parametrize("call,exc,match", [
    (lambda: golden.conv_fwd(X, np.zeros((4, 2, 3, 3), np.int64), B, **FWD), ValueError, "channels"),
    (lambda: golden.conv_fwd(X, W, np.zeros(3, np.int64), **FWD), ValueError, "bias"),
    (lambda: golden.conv_fwd(X[0], W, B, **FWD), ValueError, "4-D"),
    (lambda: golden.conv_fwd(X.astype(float), W, B, **FWD), TypeError, "integers"),
    (lambda: golden.conv_fwd(X, W.astype(np.float32), B, **FWD), TypeError, "integers"),
    (lambda: golden.conv_fwd(X, W, B, stride=0, **FWD), ValueError, "stride"),
    (lambda: golden.conv_fwd(X, W, B, stride=1.5, **FWD), TypeError, "stride"),
    (lambda: golden.conv_fwd(X, W, B, pad=-1, **FWD), ValueError, "padding"),
    (lambda: golden.conv_fwd(X, W, B, pad=3, **FWD), ValueError, "padding"),
    (lambda: golden.conv_fwd(X[:, :, :1, :1], W, B, **FWD), ValueError, "does not fit"),
    (lambda: golden.conv_fwd(X, W, B, shift=-1, out_bits=16), ValueError, "shift"),
    (lambda: golden.conv_fwd(X, W, B, shift=33, out_bits=16), ValueError, "shift"),
    (lambda: golden.conv_fwd(X, W, B, shift=2, out_bits=1), ValueError, "out_bits"),
    (lambda: golden.conv_fwd(X, W, B, mode="up", **FWD), ValueError, "mode"),
    (lambda: golden.conv_fwd(X + 200, W, B, x_bits=8, **FWD), ValueError, "outside its 8-bit"),
    (lambda: golden.conv_fwd(X, W - 129, B, w_bits=8, **FWD), ValueError, "outside its 8-bit"),
    (lambda: golden.conv_fwd(X + 2**40, W + 2**40, B, **FWD), ValueError, "2\\*\\*62"),
    (lambda: golden.conv_fwd(X, W, B + ACC_LIMIT, **FWD), ValueError, "2\\*\\*62"),
    (lambda: golden.conv_bwd_data(np.zeros((2, 4, 5, 5), np.int64), W, X, **FWD), ValueError, "dy shape"),
    (lambda: golden.conv_bwd_data(np.zeros((2, 4, 4, 4), np.int64) + 300, W, X, dy_bits=8, **FWD),
     ValueError, "outside"),
    (lambda: golden.conv_bwd_weight(X, np.zeros((2, 4, 6, 6), np.int64), (4, 3, 3), shift=1,
                                    bias_shift=0, out_bits=16), ValueError, "w_shape"),
    (lambda: golden.conv_bwd_weight(X, np.zeros((2, 4, 4, 4), np.int64), W.shape, shift=1,
                                    bias_shift=0, out_bits=16, pad=1), ValueError, "dy shape"),
    (lambda: golden.conv_bwd_weight(X, np.zeros((2, 4, 4, 4), np.int64), W.shape, shift=1,
                                    bias_shift=40, out_bits=16), ValueError, "bias_shift"),
    (lambda: golden.fc_fwd(np.zeros((2, 7), np.int64), np.zeros((3, 8), np.int64), np.zeros(3, np.int64),
                           **FWD), ValueError, "does not match"),
])
def test_bad_input_raises_a_clear_error(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@settings(deadline=None, max_examples=examples(40))
@given(conv_problems(max_value_bits=28, min_value_bits=22), st.integers(0, 2**32 - 1))
def test_sums_formed_in_float64_equal_the_int64_sums(p, seed):
    """Operands of 22 to 28 bits, so that the bound on the partial sums falls on both sides of
    2**53: the accumulators (float64 where the bound allows, int64 beyond) equal those formed in
    int64 throughout, for the three loop nests."""
    from pymtl_fp.golden import conv

    x, w, stride, pad = p["x"], p["w"], p["stride"], p["pad"]
    dy = np.random.default_rng(seed).integers(-(2**27), 2**27, size=golden.conv_fwd_acc(
        x, w, stride=stride, pad=pad).shape)

    def sums():
        return (golden.conv_fwd_acc(x, w, p["b"], stride=stride, pad=pad),
                golden.conv_bwd_data_acc(dy, w, x.shape, stride=stride, pad=pad),
                *golden.conv_bwd_weight_acc(x, dy, w.shape, stride=stride, pad=pad))

    chosen = sums()
    exact_limit = conv.FLOAT_EXACT
    try:
        conv.FLOAT_EXACT = 0  # every sum in int64
        in_int64 = sums()
    finally:
        conv.FLOAT_EXACT = exact_limit
    for a, b in zip(chosen, in_int64):
        assert a.dtype == b.dtype == np.int64 and np.array_equal(a, b)


def test_a_sum_just_below_2_to_the_53_is_formed_in_float64_exactly():
    x = np.full((1, 2, 1, 1), -(2**26), dtype=np.int64)
    w = np.full((1, 2, 1, 1), -(2**25) - 1, dtype=np.int64)  # bound 2 * 2**26 * (2**25 + 1) < 2**53
    from pymtl_fp.golden import conv

    assert conv._sum_dtype(2 * 2**26 * (2**25 + 1), "forward") is np.float64
    got = golden.conv_fwd_acc(x, w)
    assert int(got[0, 0, 0, 0]) == 2 * 2**26 * (2**25 + 1)
