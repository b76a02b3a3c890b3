"""Every engine operation at every level equals the golden model, bit for bit (property tests).

One test class, inherited by every level (PyMTL3-examples style): random shapes (stride 1 and
2, padding, 1x1 and 3x3 kernels, channel counts that are and are not multiples of the array),
values including each format's extremes, both rounding modes and random back-pressure on all
three streams.  Each example checks the level's result == golden, and FL == golden as well.

* ``TestEngineFL`` / ``TestEngineRTL`` (PyMTL3 simulation, 2x2 ``tiny`` engine);
* ``TestEngineVerilator``: one Verilator build of ``tiny``, many cases through it (shapes and
  rounding are runtime command fields); fewer examples in the default suite;
* with ``--test-verilog`` (pytest-pymtl3 plugin option) the RTL class runs through Verilator too.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.engine.cases import golden_op, validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.tb.engine_harness import run_op
from pymtl_fp.tb.engine_strategies import engine_cases
from pymtl_fp.tb.hypothesis_profiles import examples
from pymtl_fp.timing import COMPUTE_OPS

CFG = preset("tiny")
#: the suite's methods run from several classes (one per level): Hypothesis flags that
_SUPPRESS = list(settings().suppress_health_check) + [HealthCheck.differing_executors]


def _examples(n):
    return settings(max_examples=examples(n), suppress_health_check=_SUPPRESS)


def _check(level, op, drawn):
    case, stall, stall_seed = drawn
    want = golden_op(CFG, op, validate_case(CFG, op, case))
    got = run_op(level, CFG, op, stall=stall, stall_seed=stall_seed, **case)
    for key, val in want.items():
        assert got[key].shape == val.shape, (level, op, key)
        diff = np.argwhere(got[key] != val)
        assert diff.size == 0, (f"{level} {op} {key}: {len(diff)} element(s) differ, first at "
                                f"{tuple(diff[0])}: got {got[key][tuple(diff[0])]}, want {val[tuple(diff[0])]}")
    if level != "fl":
        fl = run_op("fl", CFG, op, stall=stall, stall_seed=stall_seed, **case)
        for key, val in want.items():
            assert np.array_equal(fl[key], val), ("fl", op, key)
        assert got["cycles"] > 0 and got["compute_cycles"] > 0


class EngineOpsSuite:
    """Inherited by each level; ``level`` picks the model."""

    level = "fl"
    n_examples = 6

    def _level(self, cmdline_opts):
        if self.level == "rtl" and cmdline_opts.get("test_verilog"):
            return "verilator"
        return self.level

    @_examples(6)
    @given(data=st.data())
    def test_fwd(self, cmdline_opts, data):
        _check(self._level(cmdline_opts), "fwd", data.draw(engine_cases(CFG, "fwd")))

    @_examples(6)
    @given(data=st.data())
    def test_fwd_batch_parallel(self, cmdline_opts, data):
        """bp=1: images of the batch on the array's columns, maps batch-innermost; up to 2P + 1
        images (a partial last image tile), channels that are and are not multiples of P."""
        _check(self._level(cmdline_opts), "fwd", data.draw(engine_cases(CFG, "fwd", bp=True, max_n=2 * CFG.P + 1)))

    @_examples(6)
    @given(data=st.data())
    def test_bwd_data(self, cmdline_opts, data):
        _check(self._level(cmdline_opts), "bwd_data", data.draw(engine_cases(CFG, "bwd_data")))

    @_examples(6)
    @given(data=st.data())
    def test_bwd_weight(self, cmdline_opts, data):
        _check(self._level(cmdline_opts), "bwd_weight", data.draw(engine_cases(CFG, "bwd_weight")))

    @_examples(5)
    @given(data=st.data())
    def test_pool_fwd(self, cmdline_opts, data):
        _check(self._level(cmdline_opts), "pool_fwd", data.draw(engine_cases(CFG, "pool_fwd")))

    @_examples(5)
    @given(data=st.data())
    def test_pool_bwd(self, cmdline_opts, data):
        _check(self._level(cmdline_opts), "pool_bwd", data.draw(engine_cases(CFG, "pool_bwd")))

    @_examples(5)
    @given(data=st.data())
    def test_update(self, cmdline_opts, data):
        _check(self._level(cmdline_opts), "update", data.draw(engine_cases(CFG, "update")))


class TestEngineFL(EngineOpsSuite):
    level = "fl"


class TestEngineRTL(EngineOpsSuite):
    level = "rtl"


class TestEngineVerilator(EngineOpsSuite):
    level = "verilator"


@pytest.mark.rtl
@pytest.mark.parametrize("op", COMPUTE_OPS)
def test_extremes_saturate_both_modes(cmdline_opts, op):
    """All operands at a format extreme with shift 0: results saturate at both ends."""
    level = "verilator" if cmdline_opts.get("test_verilog") else "rtl"
    rng = np.random.default_rng(7)
    for mode in ("nearest", "stochastic"):
        lo, hi = -128, 127
        x = np.where(rng.random((1, 3, 4, 4)) < 0.5, lo, hi).astype(np.int64)
        w = np.where(rng.random((3, 3, 3, 3)) < 0.5, lo, hi).astype(np.int64)
        dy = np.where(rng.random((1, 3, 4, 4)) < 0.5, lo, hi).astype(np.int64)
        case = {
            "fwd": dict(x=x, w=w, b=np.array([0, 5, -5]), stride=1, pad=1, shift=0, relu=0),
            "bwd_data": dict(dy=dy, w=w, x=x, stride=1, pad=1, shift=0, relu=1),
            "bwd_weight": dict(x=x, dy=dy, w_shape=np.array([3, 3, 3, 3]), stride=1, pad=1, shift=0,
                               bias_shift=0),
            "pool_fwd": dict(x=x, k=2),
            "pool_bwd": dict(dy=dy[:, :, :2, :2], argmax=np.array(rng.integers(0, 4, (1, 3, 2, 2))), k=2),
            "update": dict(w=w, dw=np.where(rng.random(w.shape) < 0.5, lo, hi).astype(np.int64), lr_shift=0),
        }[op]
        case.update(mode=mode, seed=123, tensor_id=4)
        want = golden_op(CFG, op, validate_case(CFG, op, case))
        got = run_op(level, CFG, op, stall=(0.2, 0.2, 0.2), stall_seed=5, **case)
        for key, val in want.items():
            assert np.array_equal(got[key], val), (op, mode, key)
        if op in ("fwd", "bwd_weight", "update"):
            key = {"fwd": "y", "bwd_weight": "dw", "update": "w"}[op]
            assert got[key].max() == 127 and got[key].min() == -128, (op, mode)


@pytest.mark.rtl
@pytest.mark.slow
@settings(max_examples=examples(10))
@given(data=st.data())
def test_small_engine_larger_shapes(cmdline_opts, data):
    """A 4x4 engine, larger shapes (slow: PyMTL3 simulation of a 16-MAC array)."""
    cfg = preset("small")
    level = "verilator" if cmdline_opts.get("test_verilog") else "rtl"
    op = data.draw(st.sampled_from(COMPUTE_OPS))
    case, stall, seed = data.draw(engine_cases(cfg, op, max_hw=8, max_ch=9))
    want = golden_op(cfg, op, validate_case(cfg, op, case))
    got = run_op(level, cfg, op, stall=stall, stall_seed=seed, **case)
    for key, val in want.items():
        assert np.array_equal(got[key], val), (op, key)


MIXED = preset("tiny").replace(rows=3, cols=3, act_bits=6, weight_bits=7, grad_bits=12, acc_bits=40,
                               stream_bits=40, act_depth=200, weight_depth=40, bias_depth=5, name="mixed")


@pytest.mark.parametrize("level", [pytest.param("rtl", marks=[pytest.mark.rtl, pytest.mark.slow]),
                                   pytest.param("verilator", marks=pytest.mark.verilator)])
@pytest.mark.parametrize("op", COMPUTE_OPS)
def test_mixed_widths_3x3_array(cmdline_opts, level, op):
    """A 3x3 array (not a power of two) with different activation/weight/gradient widths and a
    40-bit accumulator: every operation, both modes, stride 1 with padding and stride 2."""
    from pymtl_fp.tb.engine_harness import random_case

    if cmdline_opts.get("test_verilog"):
        level = "verilator"
    rng = np.random.default_rng(sum(map(ord, op)))
    combos = [(mode, stride, pad, r) for mode in ("nearest", "stochastic") for stride, pad, r in ((1, 1, 3), (2, 0, 1))]
    if level == "rtl":  # the PyMTL3 simulation is slow: two of the four combinations, smaller maps
        combos = [combos[0], combos[3]]
    hw = 3 if level == "rtl" and not op.startswith("pool") else 4
    for mode, stride, pad, r in combos:
        case = random_case(MIXED, op, rng, mode=mode, stride=stride, pad=pad, c=4, k=5, h=hw, w=hw, r=r, s=r,
                           extremes=0.3)
        run_op(level, MIXED, op, stall=(0.3, 0.3, 0.3), stall_seed=stride, check=True, **case)


@pytest.mark.parametrize("drain_rows", [pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow), 4])
def test_raw_bwd_weight_every_level(drain_rows):
    """``bwd_weight`` with ``raw=1`` (a data-parallel replica's partial sums: dw and db
    un-rounded, accumulator-wide, in B) equals the golden accumulators at FL, CL and RTL, with CL
    == RTL cycle for cycle, on a 4x4 engine whose drain writes 1, 2 or 4 rows a cycle otherwise
    (raw drains one row a cycle: a tile whose rows were lost would differ; no padding hides it)."""
    cfg = preset("small").replace(drain_rows=drain_rows, bias_depth=256)
    rng = np.random.default_rng(drain_rows)
    for n, c, k, h, r, stride, pad in ((1, 4, 4, 3, 3, 2, 1), (2, 8, 4, 2, 1, 1, 0), (1, 5, 7, 3, 3, 1, 1)):
        ho = (h + 2 * pad - r) // stride + 1
        case = dict(x=rng.integers(-128, 128, (n, c, h, h)), dy=rng.integers(-128, 128, (n, k, ho, ho)),
                    w_shape=np.array([k, c, r, r]), stride=stride, pad=pad, shift=5, bias_shift=3, raw=1,
                    mode="stochastic", seed=7, tensor_id=3)
        want = golden_op(cfg, "bwd_weight", validate_case(cfg, "bwd_weight", case))
        assert np.abs(want["dw"]).max() > 2 ** cfg.grad_bits  # wider than any rounded gradient
        cycles = {}
        for level in ("fl", "cl", "rtl"):
            got = run_op(level, cfg, "bwd_weight", stall=(0.3, 0.3, 0.3), stall_seed=3, **case)
            for key, val in want.items():
                assert np.array_equal(got[key], val), (level, key)
            cycles[level] = got.get("cycles")
        assert cycles["cl"] == cycles["rtl"]


@pytest.mark.rtl
@pytest.mark.parametrize("op", COMPUTE_OPS)
def test_outer_counters_moving_at_the_second_step(op):
    """1x1 maps, 1x1 kernels and one input-channel tile: every inner loop is one step, so an
    outer counter (image, output-channel tile, channel tile) moves at the command's second step.
    The strides that multiply those counters are command fields (encoding.PRODUCTS) valid from the
    first step (they used to be registered one cycle after it): the results equal the golden
    model's and CL's cycles."""
    from pymtl_fp.tb.engine_harness import random_case

    rng = np.random.default_rng(sum(map(ord, op)) + 11)
    for n, c, k in ((2, 2, 4), (1, 2, 6), (3, 1, 2)):
        hw = 2 if op.startswith("pool") else 1
        case = random_case(CFG, op, rng, n=n, c=c, k=k, h=hw, w=hw, r=1, s=1, pad=0, mode="stochastic")
        got = run_op("rtl", CFG, op, stall=(0.0, 0.0, 0.0), check=True, **case)
        assert got["cycles"] == run_op("cl", CFG, op, **case)["cycles"]
