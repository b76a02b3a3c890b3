"""Fixed-point numerics: QFormat, requantize (nearest / stochastic), the rounding generator."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pymtl_fp.numerics import (
    ACC_LIMIT,
    MAX_SHIFT,
    QFormat,
    relu,
    requantize,
    saturate,
    stochastic_offset,
)

M32 = 0xFFFFFFFF


def fmix32_py(h: int) -> int:
    """murmur3's finalizer, written independently with Python ints."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return h


def offset_py(seed: int, tensor_id: int, index: int, shift: int) -> int:
    h = fmix32_py((seed * 0x9E3779B1 + tensor_id * 0x632BE5AB + index) & M32)
    return h >> (32 - shift) if shift else 0


def clamp(v: int, bits: int) -> int:
    return max(-(2 ** (bits - 1)), min(2 ** (bits - 1) - 1, v))


def round_nearest_py(acc: int, shift: int) -> int:
    return (acc + (1 << (shift - 1) if shift else 0)) // 2**shift  # Python // is floor


# ---- QFormat ------------------------------------------------------------------------------

@pytest.mark.parametrize("bits,frac,exc", [(1, 0, ValueError), (65, 0, ValueError),
                                           (8, 8, ValueError), (8, -1, ValueError),
                                           (8.0, 2, TypeError), (True, 0, TypeError),
                                           (8, 2.5, TypeError)])
def test_qformat_rejects_bad_parameters(bits, frac, exc):
    with pytest.raises(exc):
        QFormat(bits, frac)


@given(st.integers(2, 64), st.data())
def test_qformat_range_is_twos_complement(bits, data):
    frac = data.draw(st.integers(0, bits - 1))
    fmt = QFormat(bits, frac)
    assert fmt.min == -(1 << (bits - 1)) and fmt.max == (1 << (bits - 1)) - 1
    assert fmt.max - fmt.min + 1 == 2**bits


@settings(deadline=None)
@given(st.integers(2, 24), st.data())
def test_quantize_rounds_half_up_and_saturates(bits, data):
    frac = data.draw(st.integers(0, bits - 1))
    fmt = QFormat(bits, frac)
    k = data.draw(st.integers(fmt.min - 8, fmt.max + 8))
    lsb = 2.0**-frac
    # exactly half way between k and k+1 goes up; just below half way goes down
    assert fmt.quantize((k + 0.5) * lsb) == clamp(k + 1, bits)
    assert fmt.quantize((k + 0.25) * lsb) == clamp(k, bits)
    assert fmt.quantize(k * lsb) == clamp(k, bits)
    if fmt.min <= k <= fmt.max:
        assert fmt.to_float(fmt.quantize(k * lsb)) == k * lsb


def test_quantize_known_values_and_infinities():
    fmt = QFormat(8, 4)
    got = fmt.quantize([-0.5 / 16, -1.5 / 16, 1.5 / 16, 100.0, -100.0, np.inf, -np.inf])
    assert got.tolist() == [0, -1, 2, 127, -128, 127, -128]
    assert got.dtype == np.int64
    wide = QFormat(64, 0)
    assert wide.quantize([1e30, -1e30]).tolist() == [2**63 - 1, -(2**63)]
    with pytest.raises(ValueError, match="NaN"):
        fmt.quantize([0.0, np.nan])


# ---- requantize: nearest -------------------------------------------------------------------

acc_values = st.integers(-(2**52) + 1, 2**52 - 1)


@settings(deadline=None)
@given(st.lists(acc_values, min_size=1, max_size=40), st.integers(0, MAX_SHIFT), st.integers(2, 64))
def test_nearest_matches_integer_and_float64_oracles(accs, shift, bits):
    got = requantize(np.array(accs, dtype=np.int64), shift, bits)
    expected = [clamp(round_nearest_py(a, shift), bits) for a in accs]
    assert got.tolist() == expected
    # float64 is exact here (|acc| < 2**52): floor(acc / 2**shift + 0.5)
    as_float = np.floor(np.array(accs, dtype=np.float64) / 2.0**shift + 0.5)
    unsaturated = [clamp(int(v), bits) == int(v) for v in as_float]
    assert all(g == int(f) for g, f, ok in zip(got.tolist(), as_float, unsaturated) if ok)


@given(st.integers(2, 63), st.integers(0, MAX_SHIFT), st.integers(1, 2**20))
def test_nearest_saturates_exactly_at_the_format_bounds(bits, shift, excess):
    hi, lo = 2 ** (bits - 1) - 1, -(2 ** (bits - 1))
    assume((hi + excess) << shift < ACC_LIMIT)
    accs = np.array([(hi + excess) << shift, (lo - excess) << shift, hi << shift, lo << shift])
    assert requantize(accs, shift, bits).tolist() == [hi, lo, hi, lo]


def test_nearest_ties_go_up_for_negative_values_too():
    # -2.5 -> -2, -1.5 -> -1, -0.5 -> 0, 0.5 -> 1, 2.5 -> 3  (acc / 2 with shift 1)
    assert requantize(np.array([-5, -3, -1, 1, 5]), 1, 16).tolist() == [-2, -1, 0, 1, 3]


# ---- requantize: stochastic ----------------------------------------------------------------

@settings(deadline=None)
@given(st.lists(acc_values, min_size=1, max_size=30), st.integers(0, MAX_SHIFT),
       st.integers(0, M32), st.integers(0, 255))
def test_stochastic_matches_the_specified_formula(accs, shift, seed, tensor_id):
    acc = np.array(accs, dtype=np.int64)
    got = requantize(acc, shift, 64, "stochastic", seed=seed, tensor_id=tensor_id)
    expected = [(a + offset_py(seed, tensor_id, i, shift)) // 2**shift for i, a in enumerate(accs)]
    assert got.tolist() == expected
    floor = [a // 2**shift for a in accs]
    assert all(g - f in (0, 1) for g, f in zip(got.tolist(), floor))
    assert all(g == f for g, f, a in zip(got.tolist(), floor, accs) if a % 2**shift == 0)
    again = requantize(acc, shift, 64, "stochastic", seed=seed, tensor_id=tensor_id)
    assert np.array_equal(got, again)


@settings(deadline=None)
@given(st.integers(-(2**40), 2**40), st.integers(1, 20), st.integers(0, M32), st.integers(0, 255))
def test_stochastic_rounding_is_unbiased(acc, shift, seed, tensor_id):
    n = 4096
    got = requantize(np.full(n, acc, dtype=np.int64), shift, 64, "stochastic", seed=seed,
                     tensor_id=tensor_id)
    p_up = (acc % 2**shift) / 2**shift  # probability of rounding up
    std_error = math.sqrt(p_up * (1 - p_up) / n)
    assert abs(got.mean() - acc / 2**shift) <= 5 * std_error + 1e-12


def test_stochastic_uses_the_given_index_and_saturates():
    acc = np.array([[3, 3], [3, 3]], dtype=np.int64)
    index = np.array([[7, 8], [9, 10]])
    got = requantize(acc, 2, 16, "stochastic", seed=5, tensor_id=9, index=index)
    expected = [(3 + offset_py(5, 9, i, 2)) // 4 for i in (7, 8, 9, 10)]
    assert got.ravel().tolist() == expected
    assert requantize(np.array([1000]), 0, 4, "stochastic").tolist() == [7]
    with pytest.raises(ValueError, match="index shape"):
        requantize(acc, 2, 16, "stochastic", index=np.arange(4))


# ---- the rounding generator ----------------------------------------------------------------

def test_stochastic_offset_hand_checkable_vectors():
    # fmix32(0) = 0; fmix32(1) = 0x514E28B7 is murmur3's published finalizer value
    assert stochastic_offset(0, 0, np.array([0, 1]), 32).tolist() == [0, 0x514E28B7]
    assert stochastic_offset(1, 0, 0, 32) == fmix32_py(0x9E3779B1) == 0x11FD02EB
    assert stochastic_offset(0, 1, 5, 4) == fmix32_py(0x632BE5B0) >> 28 == 0xB
    assert stochastic_offset(3, 2, 7, 0) == 0


@settings(deadline=None)
@given(st.integers(0, M32), st.integers(0, 255), st.lists(st.integers(0, M32), min_size=1, max_size=20),
       st.integers(0, 32))
def test_stochastic_offset_matches_pure_python(seed, tensor_id, indices, shift):
    got = stochastic_offset(seed, tensor_id, np.array(indices, dtype=np.uint64), shift)
    assert got.tolist() == [offset_py(seed, tensor_id, i, shift) for i in indices]
    assert all(0 <= r < 2**shift for r in got.tolist())
    top = stochastic_offset(seed, tensor_id, np.array(indices, dtype=np.uint64), 32)
    assert np.array_equal(got, top >> (32 - shift) if shift else np.zeros_like(top))


@pytest.mark.parametrize("kwargs,exc", [
    ({"seed": -1}, ValueError), ({"seed": 2**32}, ValueError), ({"tensor_id": 256}, ValueError),
    ({"shift": 33}, ValueError), ({"shift": -1}, ValueError), ({"index": np.array([-1])}, ValueError),
    ({"index": np.array([2**32])}, ValueError), ({"index": np.array([1.0])}, TypeError),
    ({"seed": 1.0}, TypeError),
])
def test_stochastic_offset_rejects_bad_arguments(kwargs, exc):
    args = {"seed": 0, "tensor_id": 0, "index": np.array([0]), "shift": 4}
    args.update(kwargs)
    with pytest.raises(exc):
        stochastic_offset(**args)


@pytest.mark.parametrize("acc,shift,bits,mode,exc", [
    (np.array([1.0]), 1, 8, "nearest", TypeError),
    (np.array([True]), 1, 8, "nearest", TypeError),
    (np.array([1]), -1, 8, "nearest", ValueError),
    (np.array([1]), MAX_SHIFT + 1, 8, "nearest", ValueError),
    (np.array([1]), 1.0, 8, "nearest", TypeError),
    (np.array([1]), 1, 1, "nearest", ValueError),
    (np.array([1]), 1, 65, "nearest", ValueError),
    (np.array([1]), 1, 8, "truncate", ValueError),
    (np.array([ACC_LIMIT]), 1, 8, "nearest", ValueError),
    (np.array([-ACC_LIMIT]), 1, 8, "stochastic", ValueError),
    (np.array([2**63], dtype=np.uint64), 1, 8, "nearest", ValueError),
])
def test_requantize_rejects_bad_input(acc, shift, bits, mode, exc):
    with pytest.raises(exc):
        requantize(acc, shift, bits, mode)


def test_saturate_and_relu():
    assert saturate(np.array([-300, -128, 5, 127, 300]), 8).tolist() == [-128, -128, 5, 127, 127]
    assert relu(np.array([-3, 0, 4])).tolist() == [0, 0, 4]
    with pytest.raises(TypeError):
        saturate(np.array([1.5]), 8)
    with pytest.raises(ValueError):
        saturate(np.array([1]), 1)
