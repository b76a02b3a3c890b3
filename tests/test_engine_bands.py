"""Row-band commands (FPDeep's fine-grained pipeline, :mod:`pymtl_fp.golden.band`): a band of a
conv's rows, padded by ``pt`` above its window and rounded as rows of the whole map, gives the whole
map's bits for those rows, at every level.

* golden: a whole map split into bands of any height equals the whole map, bit for bit, in both
  rounding modes (fwd ``y``, bwd_data ``dx``); bwd_weight's band sums add up to the whole sums;
* the engine: one band of a random conv at FL, CL, PyMTL3 RTL and Verilator equals the whole map's
  result rows (fwd, bwd_data) and the golden model's band (all three, raw bwd_weight too); CL takes
  the RTL's cycles, which are the closed form's (``timing`` with ``pt``), with random stalls.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp import golden
from pymtl_fp.engine import program
from pymtl_fp.engine.cases import CaseError, golden_op, validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.golden import band
from pymtl_fp.numerics import slice_seed
from pymtl_fp.tb.engine_harness import run_op
from pymtl_fp.tb.engine_strategies import band_case, band_cases
from pymtl_fp.tb.hypothesis_profiles import examples

CFG = preset("tiny")
#: the suite's methods run from one class per level: Hypothesis flags that
_SUPPRESS = list(settings().suppress_health_check) + [HealthCheck.differing_executors]


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), r=st.integers(1, 5), stride=st.sampled_from([1, 2]),
       data=st.data())
def test_a_whole_map_in_bands_is_the_whole_map(seed, r, stride, data):
    if r < stride:
        stride = 1
    rng = np.random.default_rng(seed)
    pad = data.draw(st.integers(0, r - 1))
    H, W = data.draw(st.integers(r, 11)), data.draw(st.integers(r, 7))
    n, c, k = 2, 3, 2
    x, w = rng.integers(-9, 9, (n, c, H, W)), rng.integers(-9, 9, (k, c, r, r))
    b = rng.integers(-99, 99, k)
    rnd = dict(mode=data.draw(st.sampled_from(["nearest", "stochastic"])), seed=seed, tensor_id=7)
    conv = dict(stride=stride, pad=pad, shift=4, out_bits=8)
    y = golden.conv_fwd(x, w, b, relu=True, **conv, **rnd)
    Ho, Wo = y.shape[2:]
    dy = rng.integers(-9, 9, (n, k, Ho, Wo))
    dx = golden.conv_bwd_data(dy, w, x, relu=True, **conv, **rnd)
    dw, db = golden.conv_bwd_weight_acc(x, dy, w.shape, stride=stride, pad=pad)
    rnd.pop("seed")
    ys, dxs, sw, sb = [], [], 0, 0
    for y0, y1 in band.bands(Ho, data.draw(st.integers(1, Ho))):
        win = band.fwd_window(H, r, stride, pad, y0, y1)
        xb = x[:, :, win.i0:win.i1]
        ys.append(band.conv_fwd_band(xb, w, b, relu=True, pt=win.pt, ho=y1 - y0, hi=Ho, seed=slice_seed(seed, y0 * Wo),
                                     **conv, **rnd))
        a, bb = band.band_bwd_weight_acc(xb, dy[:, :, y0:y1], w.shape, stride=stride, pad=pad, pt=win.pt)
        sw, sb = sw + a, sb + bb
    for x0, x1 in band.bands(H, data.draw(st.integers(1, H))):
        win = band.bwd_data_window(H, Ho, r, stride, pad, x0, x1)
        assert 0 <= win.pt < r
        dxs.append(band.conv_bwd_data_band(dy[:, :, win.i0:win.i1], w, x[:, :, x0:x1], relu=True, pt=win.pt, hi=H,
                                           seed=slice_seed(seed, x0 * W), **conv, **rnd))
    assert np.array_equal(np.concatenate(ys, axis=2), y)
    assert np.array_equal(np.concatenate(dxs, axis=2), dx)
    assert np.array_equal(sw, dw) and np.array_equal(sb, db)


def test_a_band_without_pt_rounds_differently_and_a_bad_pt_is_refused():
    """The band fields matter: the same band rounded as a map of its own rows (no ``hi``) or
    padded like a whole map (``pt = pad``) gives other bits; a ``pt`` as tall as the kernel is a
    one-line error before any simulation."""
    rng = np.random.default_rng(3)
    x, w, b = rng.integers(-50, 50, (1, 2, 8, 4)), rng.integers(-50, 50, (2, 2, 3, 3)), np.zeros(2, np.int64)
    case = dict(x=x, w=w, b=b, stride=1, pad=1, shift=6, relu=0, mode="stochastic", seed=11, tensor_id=1)
    whole = golden_op(CFG, "fwd", validate_case(CFG, "fwd", case))["y"]
    bc, (lo, hi) = band_case("fwd", case, 3, 6)
    assert bc["pt"] == 0 and bc["x"].shape[2] == 5
    assert np.array_equal(golden_op(CFG, "fwd", validate_case(CFG, "fwd", bc))["y"], whole[:, :, lo:hi])
    own_rows = golden_op(CFG, "fwd", validate_case(CFG, "fwd", dict(bc, hi=hi - lo)))["y"]
    assert not np.array_equal(own_rows, whole[:, :, lo:hi])
    padded = golden_op(CFG, "fwd", validate_case(CFG, "fwd", dict(bc, pt=1)))["y"]
    assert not np.array_equal(padded, whole[:, :, lo:hi])
    with pytest.raises(CaseError, match=r"pt=3 is outside 0\.\.2"):
        validate_case(CFG, "fwd", dict(bc, pt=3))
    with pytest.raises(CaseError, match="hi=2 is outside 3"):
        validate_case(CFG, "fwd", dict(bc, hi=2))


def _check_band(level, op, drawn):
    whole, bc, (lo, hi), stall, stall_seed = drawn
    want = golden_op(CFG, op, validate_case(CFG, op, bc))
    if op != "bwd_weight":  # the band's rows of the whole map's result
        key = "y" if op == "fwd" else "dx"
        full = golden_op(CFG, op, validate_case(CFG, op, whole))[key]
        assert np.array_equal(want[key], full[:, :, lo:hi])
    got = run_op(level, CFG, op, stall=stall, stall_seed=stall_seed, **bc)
    for key, val in want.items():
        assert np.array_equal(got[key], val), (level, op, key, bc["pt"], lo, hi)
    if level != "fl":  # the closed form (the CL model's) is the level's: with pt, on the RTL
        if not any(stall):
            t = program.op_timing(CFG, op, validate_case(CFG, op, bc))
            assert got["compute_cycles"] == t["compute_cycles"]
    return got


class BandSuite:
    level = "fl"

    @settings(max_examples=examples(8), deadline=None, suppress_health_check=_SUPPRESS)
    @given(data=st.data())
    def test_fwd_band(self, data):
        _check_band(self.level, "fwd", data.draw(band_cases(CFG, "fwd")))

    @settings(max_examples=examples(6), deadline=None, suppress_health_check=_SUPPRESS)
    @given(data=st.data())
    def test_fwd_band_batch_parallel(self, data):
        _check_band(self.level, "fwd", data.draw(band_cases(CFG, "fwd", bp=True)))

    @settings(max_examples=examples(8), deadline=None, suppress_health_check=_SUPPRESS)
    @given(data=st.data())
    def test_bwd_data_band(self, data):
        _check_band(self.level, "bwd_data", data.draw(band_cases(CFG, "bwd_data")))

    @settings(max_examples=examples(8), deadline=None, suppress_health_check=_SUPPRESS)
    @given(data=st.data())
    def test_bwd_weight_band(self, data):
        _check_band(self.level, "bwd_weight", data.draw(band_cases(CFG, "bwd_weight")))


class TestBandsFL(BandSuite):
    level = "fl"


class TestBandsCL(BandSuite):
    level = "cl"


@pytest.mark.rtl
class TestBandsRTL(BandSuite):
    level = "rtl"


@pytest.mark.verilator
class TestBandsVerilator(BandSuite):
    level = "verilator"


@pytest.mark.rtl
@settings(max_examples=examples(6), deadline=None)
@given(data=st.data(), op=st.sampled_from(["fwd", "bwd_data", "bwd_weight"]))
def test_cl_takes_the_rtls_cycles_on_bands(data, op):
    """With random stalls: CL and the PyMTL3 RTL take the same cycles on a band."""
    drawn = data.draw(band_cases(CFG, op))
    rtl, cl = _check_band("rtl", op, drawn), _check_band("cl", op, drawn)
    assert (cl["cycles"], cl["compute_cycles"], cl["total_cycles"]) == \
        (rtl["cycles"], rtl["compute_cycles"], rtl["total_cycles"])


@pytest.mark.rtl
@pytest.mark.parametrize("level", ["cl", "rtl", "verilator"])
@pytest.mark.parametrize("op", ["fwd", "bwd_data"])
def test_a_middle_band_of_three_channel_tiles_rounds_as_the_whole_map(level, op):
    """Stochastic rounding of a middle band with three channel tiles of results on the 2x2 engine:
    every term of the flat index (image, channel tile, lane, row) counts the whole map's rows."""
    rng = np.random.default_rng(21)
    x, w, dy = rng.integers(-99, 99, (2, 5, 8, 3)), rng.integers(-99, 99, (5, 5, 3, 3)), rng.integers(-99, 99, (2, 5, 8, 3))
    case = dict(x=x, w=w, stride=1, pad=1, shift=9, relu=0, mode="stochastic", seed=2024, tensor_id=9)
    case.update(b=np.zeros(5, np.int64)) if op == "fwd" else case.update(dy=dy)
    bc, (lo, hi) = band_case(op, case, 3, 6)
    assert bc["pt"] == (0 if op == "fwd" else 2)
    whole = golden_op(CFG, op, validate_case(CFG, op, case))["y" if op == "fwd" else "dx"]
    got = run_op(level, CFG, op, **bc)["y" if op == "fwd" else "dx"]
    assert np.array_equal(got, whole[:, :, lo:hi])
