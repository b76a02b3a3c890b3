"""Max pooling with argmax routing: values, tie rule, gradient routing, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp import golden


@st.composite
def pool_inputs(draw):
    k = draw(st.integers(1, 3))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    ho, wo = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spread = draw(st.sampled_from([2, 5, 2**15]))  # small spreads force many ties
    x = rng.integers(-spread, spread, size=(n, c, ho * k, wo * k))
    return x, k, rng


def naive_pool(x, k):
    n, c, h, w = x.shape
    y = np.zeros((n, c, h // k, w // k), dtype=np.int64)
    am = np.zeros_like(y)
    for idx in np.ndindex(*y.shape):
        ni, ci, i, j = idx
        best, where = None, None
        for dr in range(k):
            for dc in range(k):
                v = x[ni, ci, i * k + dr, j * k + dc]
                if best is None or v > best:  # strict: the first maximum wins ties
                    best, where = v, dr * k + dc
        y[idx], am[idx] = best, where
    return y, am


@settings(deadline=None)
@given(pool_inputs())
def test_pool_forward_matches_naive_loops_with_first_max_ties(inputs):
    x, k, _ = inputs
    y, argmax = golden.pool_fwd(x, k=k)
    y_ref, am_ref = naive_pool(x, k)
    assert np.array_equal(y, y_ref) and np.array_equal(argmax, am_ref)


@settings(deadline=None)
@given(pool_inputs())
def test_pool_backward_routes_each_gradient_to_its_argmax(inputs):
    x, k, rng = inputs
    y, argmax = golden.pool_fwd(x, k=k)
    dy = rng.integers(-1000, 1000, size=y.shape)
    dx = golden.pool_bwd(dy, argmax, k=k)
    assert dx.shape == x.shape
    for idx in np.ndindex(*y.shape):
        ni, ci, i, j = idx
        window = dx[ni, ci, i * k:(i + 1) * k, j * k:(j + 1) * k]
        dr, dc = divmod(int(argmax[idx]), k)
        assert window[dr, dc] == dy[idx]
        assert np.count_nonzero(window) == (dy[idx] != 0)
        assert x[ni, ci, i * k + dr, j * k + dc] == y[idx]


def test_all_equal_window_picks_position_zero():
    x = np.full((1, 1, 2, 2), 7)
    y, argmax = golden.pool_fwd(x, k=2)
    assert y.tolist() == [[[[7]]]] and argmax.tolist() == [[[[0]]]]


@pytest.mark.parametrize("call,exc,match", [
    (lambda: golden.pool_fwd(np.zeros((1, 1, 5, 4), np.int64), k=2), ValueError, "divisible"),
    (lambda: golden.pool_fwd(np.zeros((1, 1, 4, 5), np.int64), k=2), ValueError, "divisible"),
    (lambda: golden.pool_fwd(np.zeros((1, 1, 4, 4)), k=2), TypeError, "integers"),
    (lambda: golden.pool_fwd(np.zeros((1, 4, 4), np.int64), k=2), ValueError, "4-D"),
    (lambda: golden.pool_fwd(np.zeros((1, 1, 4, 4), np.int64), k=0), ValueError, "k"),
    (lambda: golden.pool_bwd(np.zeros((1, 1, 2, 2), np.int64), np.full((1, 1, 2, 2), 4), k=2),
     ValueError, "argmax values"),
    (lambda: golden.pool_bwd(np.zeros((1, 1, 2, 2), np.int64), np.zeros((1, 1, 2, 1), np.int64), k=2),
     ValueError, "argmax shape"),
])
def test_pool_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
