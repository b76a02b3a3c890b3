"""The fixed-point SGD update, with and without momentum."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.golden import reference, sgd_update


def clamp(v, bits):
    return max(-(2 ** (bits - 1)), min(2 ** (bits - 1) - 1, v))


def nearest(v, s):
    return (v + (1 << (s - 1) if s else 0)) // 2**s


@settings(deadline=None)
@given(st.integers(2, 32), st.integers(-8, 20), st.data())
def test_plain_sgd_matches_the_integer_definition(bits, lr_shift, data):
    n = data.draw(st.integers(1, 20))
    w = data.draw(st.lists(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1), min_size=n, max_size=n))
    dw = data.draw(st.lists(st.integers(-(2**40), 2**40), min_size=n, max_size=n))
    got = sgd_update(np.array(w), np.array(dw), lr_shift=lr_shift, bits=bits)
    step = [nearest(d, lr_shift) if lr_shift >= 0 else d * 2**-lr_shift for d in dw]
    assert got.tolist() == [clamp(a - s, bits) for a, s in zip(w, step)]


@settings(deadline=None)
@given(st.integers(-(2**20), 2**20), st.integers(1, 16), st.integers(0, 2**32 - 1))
def test_stochastic_update_is_unbiased(dw, lr_shift, seed):
    n = 4096
    w_new = sgd_update(np.zeros(n, np.int64), np.full(n, dw), lr_shift=lr_shift, bits=40,
                       mode="stochastic", seed=seed, tensor_id=3)
    p_up = (dw % 2**lr_shift) / 2**lr_shift
    assert abs(-w_new.mean() - dw / 2**lr_shift) <= 5 * np.sqrt(p_up * (1 - p_up) / n) + 1e-12


@settings(deadline=None)
@given(st.integers(1, 8), st.integers(0, 8), st.data())
def test_momentum_matches_float_when_exact(m, lr_shift, data):
    """Velocities divisible by 2**m and steps divisible by 2**lr_shift round exactly: same as float."""
    n = data.draw(st.integers(1, 10))
    v = np.array(data.draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n))) * 2**m
    dw = np.array(data.draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n))) * 2**m
    v_new_expected = v - v // 2**m + dw
    w = np.zeros(n, np.int64)
    w_new, v_new = sgd_update(w, dw, lr_shift=lr_shift, bits=40, momentum=m, velocity=v,
                              velocity_bits=40)
    assert v_new.tolist() == v_new_expected.tolist()
    w_ref, v_ref = reference.sgd_update(w, dw, lr=2.0**-lr_shift, momentum=1 - 2.0**-m, velocity=v)
    assert np.array_equal(v_new, v_ref)
    assert np.all(np.abs(w_new - w_ref) <= 0.5)  # only the final step is rounded


def test_momentum_saturates_the_velocity_and_defaults_to_zero():
    w_new, v_new = sgd_update(np.array([0, 0]), np.array([500, -500]), lr_shift=0, bits=16,
                              momentum=2, velocity_bits=8)
    assert v_new.tolist() == [127, -128] and w_new.tolist() == [-127, 128]


@pytest.mark.parametrize("kwargs,exc", [
    ({"dw": np.zeros(3, np.int64)}, ValueError),
    ({"dw": np.zeros(2)}, TypeError),
    ({"lr_shift": 33}, ValueError),
    ({"lr_shift": -33}, ValueError),
    ({"lr_shift": 1.0}, TypeError),
    ({"bits": 63}, ValueError),
    ({"w": np.array([200, 0])}, ValueError),
    ({"mode": "up"}, ValueError),
    ({"momentum": 2}, ValueError),  # velocity_bits missing
    ({"momentum": 0, "velocity_bits": 16}, ValueError),
    ({"velocity": np.zeros(2, np.int64)}, ValueError),  # velocity without momentum
    ({"lr_shift": -30, "dw": np.array([2**40, 0])}, ValueError),
])
def test_sgd_bad_input(kwargs, exc):
    args = {"w": np.zeros(2, np.int64), "dw": np.zeros(2, np.int64), "lr_shift": 3, "bits": 8}
    args.update(kwargs)
    w, dw = args.pop("w"), args.pop("dw")
    with pytest.raises(exc):
        sgd_update(w, dw, **args)
