"""MaxSelectRTL: signed max with first-maximum argmax, at RTL (random widths) and through
Verilator, against Python ints and against the golden max pool (first argmax in a window)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymtl_fp.golden.pool import max_pool_windows
from pymtl_fp.primitives.MaxSelectRTL import MaxSelectRTL
from pymtl_fp.sim import build_sim
from pymtl_fp.verilate import module_name

CONFIG = dict(bits=8, idx_bits=4)


def signed(bits):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return st.one_of(st.sampled_from([lo, lo + 1, -1, 0, 1, hi - 1, hi]), st.integers(lo, hi))


def select(m, bits, idx_bits, a, a_idx, b, b_idx):
    m.a @= a & (2**bits - 1)
    m.a_idx @= a_idx
    m.b @= b & (2**bits - 1)
    m.b_idx @= b_idx
    m.sim_eval_combinational()
    return int(m.out.int()), int(m.out_idx), int(m.b_wins)


def oracle(a, a_idx, b, b_idx):
    return (b, b_idx, 1) if b > a else (a, a_idx, 0)


@pytest.fixture(scope="module", params=[pytest.param("rtl", marks=pytest.mark.rtl),
                                        pytest.param("verilator", marks=pytest.mark.verilator)])
def maxsel(request):
    return build_sim(MaxSelectRTL(**CONFIG), request.param, name=module_name("MaxSelectRTL", CONFIG))


def test_pairs_match_python(maxsel):
    bits, ib = CONFIG["bits"], CONFIG["idx_bits"]

    @given(st.lists(st.tuples(signed(bits), st.integers(0, 2**ib - 1), signed(bits), st.integers(0, 2**ib - 1)),
                    min_size=1, max_size=40))
    def check(cases):
        for a, ai, b, bi in cases:
            assert select(maxsel, bits, ib, a, ai, b, bi) == oracle(a, ai, b, bi)

    check()


def test_ties_keep_the_earlier_element(maxsel):
    bits, ib = CONFIG["bits"], CONFIG["idx_bits"]
    for v in (-128, -1, 0, 5, 127):
        assert select(maxsel, bits, ib, v, 2, v, 9) == (v, 2, 0)


def test_scan_and_tree_reductions_equal_golden_pool(maxsel):
    """Chained in scan order or as a tree with the earlier half on the left, the unit returns the
    golden model's max and first argmax of a k x k window."""
    bits, ib = CONFIG["bits"], CONFIG["idx_bits"]

    @given(st.sampled_from([2, 4]).flatmap(
        lambda k: st.lists(st.integers(-3, 3) | signed(bits), min_size=k * k, max_size=k * k)))
    def check(window):
        k = int(len(window) ** 0.5)
        y, arg = max_pool_windows(np.array(window, dtype=np.int64).reshape(1, 1, k, k), k)
        want = (int(y[0, 0, 0, 0]), int(arg[0, 0, 0, 0]))
        best, best_i = window[0], 0  # scan
        for i, v in enumerate(window[1:], start=1):
            best, best_i, _ = select(maxsel, bits, ib, best, best_i, v, i)
        assert (best, best_i) == want
        level = list(zip(window, range(len(window)), strict=True))  # tree (len is a power of two)
        while len(level) > 1:
            level = [select(maxsel, bits, ib, *level[j], *level[j + 1])[:2] for j in range(0, len(level), 2)]
        assert level[0] == want

    check()


@pytest.mark.rtl
@given(st.integers(2, 40), st.integers(1, 8), st.data())
def test_rtl_random_widths(bits, idx_bits, data):
    m = build_sim(MaxSelectRTL(bits=bits, idx_bits=idx_bits), "rtl")
    idx = st.integers(0, 2**idx_bits - 1)
    for a, ai, b, bi in data.draw(st.lists(st.tuples(signed(bits), idx, signed(bits), idx), min_size=1, max_size=20)):
        assert select(m, bits, idx_bits, a, ai, b, bi) == oracle(a, ai, b, bi)


@pytest.mark.rtl
def test_line_trace_and_bad_parameters():
    m = build_sim(MaxSelectRTL(**CONFIG), "rtl")
    select(m, 8, 4, -3, 1, 7, 2)
    assert m.line_trace() == "max(-3@1, 7@2)=7@2 b"
    with pytest.raises(ValueError):
        MaxSelectRTL(bits=1).elaborate()
