"""The closed-form timing model (:mod:`pymtl_fp.timing`) equals the RTL's own cycle counts.

* every operation, random shapes (Hypothesis, the engine's case strategy), run on the RTL
  through Verilator without stalls: whole-program cycles (loads + compute + stores), compute
  cycles, cycles until the last result and useful MACs all equal the closed forms, exactly;
* a few cases through the PyMTL3 (Python) RTL simulation as well;
* the closed forms equal a brute-force enumeration of the RTL's loop nest (and
  :func:`program.compute_cycles`, which now calls them) on many more shapes, array sizes and
  ``bwd_weight`` drain widths (``drain_rows``, any divisor of ``P``) than simulation can afford;
* the per-axis helpers agree with brute-force enumeration.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp import timing
from pymtl_fp.cost.layer import engine_layer_cycles
from pymtl_fp.engine import program
from pymtl_fp.engine.cases import CaseError, validate_case
from pymtl_fp.engine.config import EngineConfig, preset
from pymtl_fp.tb.engine_harness import random_case, run_op
from pymtl_fp.tb.engine_strategies import engine_cases
from pymtl_fp.tb.hypothesis_profiles import examples
from pymtl_fp.timing import COMPUTE_OPS

CFG = preset("tiny")
OPS = list(COMPUTE_OPS)
KEYS = ("total_cycles", "compute_cycles", "cycles", "macs")


def _same(level, cfg, op, case):
    got = run_op(level, cfg, op, **case)
    want = program.op_timing(cfg, op, validate_case(cfg, op, case))
    assert {k: got[k] for k in KEYS} == want, (level, op)


@pytest.mark.verilator
@pytest.mark.parametrize("op", OPS)
@settings(max_examples=examples(12))
@given(data=st.data())
def test_timing_model_equals_rtl_cycles(cmdline_opts, op, data):
    case, _, _ = data.draw(engine_cases(CFG, op))
    _same("verilator", CFG, op, case)


@pytest.mark.verilator
@settings(max_examples=examples(12))
@given(data=st.data())
def test_timing_model_equals_rtl_cycles_batch_parallel(cmdline_opts, data):
    """A batch-parallel fwd (bp=1): tiles of P images x P channels, each drained in P cycles."""
    case, _, _ = data.draw(engine_cases(CFG, "fwd", bp=True, max_n=2 * CFG.P + 1))
    _same("verilator", CFG, "fwd", case)


@pytest.mark.verilator
@pytest.mark.parametrize("lanes", [1, 4])
@pytest.mark.parametrize("op", OPS)
def test_timing_model_equals_rtl_on_a_4x4_engine(cmdline_opts, op, lanes):
    """``small`` with 1 and 4 elements per stream beat: the whole program's cycles (LOADs of
    ``ceil(count/E) + 1``, STOREs of ``1 + ceil(count/E) + ceil(count/L)``) as the closed forms say."""
    cfg = preset("small").replace(stream_lanes=lanes)
    rng = np.random.default_rng(7)
    for c, k, h, stride, pad in ((6, 5, 5, 2, 1), (4, 8, 4, 1, 0)):
        case = random_case(cfg, op, rng, n=2, c=c, k=k, h=h if not op.startswith("pool") else 4,
                           w=h if not op.startswith("pool") else 4, stride=stride, pad=pad)
        _same("verilator", cfg, op, case)


@pytest.mark.rtl
@pytest.mark.parametrize("op", OPS)
def test_timing_model_equals_pymtl_rtl(op):
    rng = np.random.default_rng(3)
    case = random_case(CFG, op, rng, n=1, c=3, k=2, h=3 if not op.startswith("pool") else 2,
                       w=4 if not op.startswith("pool") else 2, r=3, s=3, stride=2 if op == "bwd_data" else 1,
                       pad=1)
    _same("rtl", CFG, op, case)


@st.composite
def _any_case(draw):
    P = draw(st.sampled_from([1, 2, 3, 4, 8, 16]))
    dr = draw(st.sampled_from([d for d in range(1, P + 1) if P % d == 0]))
    cfg = EngineConfig(rows=P, cols=P, act_depth=65536, weight_depth=65536, bias_depth=4096, acc_bits=64,
                       stream_bits=64, drain_rows=dr,
                       stream_lanes=draw(st.sampled_from([e for e in range(1, P + 1) if P % e == 0])))
    op = draw(st.sampled_from(OPS))
    r = draw(st.sampled_from([1, 2, 3, 5, 7]))
    s = draw(st.sampled_from([1, r, 3]))
    stride = draw(st.sampled_from([1, 2, 4]))
    pad = draw(st.integers(0, min(r, s) - 1))
    h = draw(st.integers(max(1, r - 2 * pad), 14))
    w = draw(st.integers(max(1, s - 2 * pad), 14))
    if op.startswith("pool"):
        h = w = draw(st.sampled_from([2, 4, 6, 8]))
    kw = dict(n=draw(st.integers(1, 3)), c=draw(st.integers(1, 20)), k=draw(st.integers(1, 20)), h=h, w=w,
              r=r, s=s, stride=stride, pad=pad)
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    bp = op == "fwd" and draw(st.booleans())  # batch-parallel: up to 3P images
    if bp:
        kw["n"] = draw(st.integers(1, 3 * P))
    try:
        case = validate_case(cfg, op, dict(random_case(cfg, op, rng, **kw), **({"bp": 1} if bp else {})))
    except CaseError:
        from hypothesis import assume
        assume(False)
    return cfg, op, case


def _reference_cycles(P, op, f, dr=1):
    """Brute force: enumerate the RTL's loop nest (steps), tile by tile for bwd_weight (whose
    drain writes ``dr`` rows a cycle)."""
    n, ct, kt, h, w, ho, wo, r, s = (f[x] for x in ("n", "ct", "kt", "h", "w", "ho", "wo", "r", "s"))
    st, pad = 1 << f["lgst"], f["pad"]
    if op in ("pool_fwd", "pool_bwd"):
        return n * ct * ho * wo * f["pk"] ** 2 + 3
    if op == "update":
        return kt * ct * r * s * P + 3

    def outs(size, out, tap):
        return sum(1 for o in range(out) if 0 <= o * st + tap - pad < size)

    if op == "fwd" and f["bp"]:  # tiles (nt, kt, oh, ow) of c * taps steps, each drained in P cycles
        per = lambda size, o, kern: max(1, sum(1 for i in range(kern) if 0 <= o * st + i - pad < size))
        tiles = [f["c"] * per(h, oh, r) * per(w, ow, s) for _ in range(-(-n // P)) for _ in range(kt)
                 for oh in range(ho) for ow in range(wo)]
        return tiles[0] + sum(max(L, P) for L in tiles[1:]) + 3 + P
    if op == "fwd":  # per output: the taps inside the input
        taps = lambda size, out, kern: sum(sum(1 for i in range(kern) if 0 <= o * st + i - pad < size)
                                           for o in range(out))
        return n * kt * ct * taps(h, ho, r) * taps(w, wo, s) + 3
    if op == "bwd_data":  # per input: the (output, tap) pairs reaching it, at least one step
        taps = lambda size, out, kern: sum(max(1, sum(1 for o in range(out) for i in range(kern)
                                                      if o * st + i - pad == x)) for x in range(size))
        return n * ct * kt * taps(h, ho, r) * taps(w, wo, s) + 3
    tiles = [(n * max(1, outs(h, ho, i)) * max(1, outs(w, wo, j)), c == 0 and i == r - 1 and j == s - 1)
             for _ in range(kt) for c in range(ct) for i in range(r) for j in range(s)]
    drain = [P // dr + 1 if end else P // dr for _, end in tiles]
    steps = tiles[0][0] + sum(max(L, drain[i - 1]) for i, (L, _) in enumerate(tiles) if i)
    return steps + 3 + drain[-1]


@settings(max_examples=examples(300))
@given(_any_case())
def test_closed_forms_equal_brute_force_enumeration(drawn):
    """The closed forms (O(R+S) per op) equal an enumeration of the RTL's loop nest and its
    bwd_weight drain schedule, on many more shapes and array sizes than simulation can afford."""
    cfg, op, case = drawn
    f = program.op_fields(cfg, op, case)
    dr = cfg.drain_rows
    assert timing.compute_cycles(cfg.P, op, f, dr) == _reference_cycles(cfg.P, op, f, dr)
    assert timing.compute_cycles(cfg.P, op, f, dr) == program.compute_cycles(cfg, op, case)
    if op != "bwd_weight":  # the drain width matters to bwd_weight only
        assert timing.compute_cycles(cfg.P, op, f, dr) == timing.compute_cycles(cfg.P, op, f)
    if op in timing.CONV_OPS:
        st, pad = 1 << f["lgst"], f["pad"]
        pairs = lambda size, out, kern: sum(1 for o in range(out) for i in range(kern) if 0 <= o * st + i - pad < size)
        assert timing.useful_macs(op, f) == f["n"] * f["k"] * f["c"] * pairs(f["h"], f["ho"], f["r"]) * \
            pairs(f["w"], f["wo"], f["s"])


@settings(max_examples=examples(100))
@given(_any_case())
def test_layer_level_forms_equal_the_program_forms(drawn):
    cfg, op, case = drawn
    got = None
    if op in timing.CONV_OPS:
        shape = timing.ConvShape(n=case["x"].shape[0], c=case["x"].shape[1],
                                 k=(case["w"].shape if op != "bwd_weight" else case["w_shape"])[0],
                                 h=case["x"].shape[2], w=case["x"].shape[3],
                                 r=(case["w"].shape if op != "bwd_weight" else case["w_shape"])[2],
                                 s=(case["w"].shape if op != "bwd_weight" else case["w_shape"])[3],
                                 stride=case["stride"], pad=case["pad"], bp=bool(case.get("bp", 0)))
        got = timing.conv_program_cycles(cfg.P, op, shape, cfg.stream_lanes, cfg.drain_rows)
        want = program.op_timing(cfg, op, case)
        assert {k: got[k] for k in ("total_cycles", "compute_cycles", "cycles")} == \
            {k: want[k] for k in ("total_cycles", "compute_cycles", "cycles")}
        assert timing.conv_cycles(cfg.P, op, shape, cfg.drain_rows) == want["compute_cycles"]
    elif op == "update":
        assert timing.update_cycles(cfg.P, *case["w"].shape) == program.op_timing(cfg, op, case)["compute_cycles"]
    else:
        src = case["x"] if op == "pool_fwd" else case["dy"]
        n, c, a, b = src.shape
        ho, wo = (a // case["k"], b // case["k"]) if op == "pool_fwd" else (a, b)
        assert timing.pool_cycles(cfg.P, n, c, ho, wo, case["k"]) == program.op_timing(cfg, op, case)["compute_cycles"]


@settings(max_examples=examples(200))
@given(size=st.integers(1, 30), kern=st.integers(1, 7), stride=st.sampled_from([1, 2, 3, 4, 8]),
       pad=st.integers(0, 6))
def test_axis_helpers_equal_enumeration(size, kern, stride, pad):
    if pad >= kern or size + 2 * pad < kern:
        return
    out = (size + 2 * pad - kern) // stride + 1
    pairs = [(o, t) for o in range(out) for t in range(kern) if 0 <= o * stride + t - pad < size]
    assert timing.valid_pairs(size, out, kern, stride, pad) == len(pairs)
    for t in range(kern):
        assert timing.outs(size, out, t, stride, pad) == sum(1 for _, tt in pairs if tt == t)
    covered = {o * stride + t - pad for o, t in pairs}
    assert timing.covered_inputs(size, out, kern, stride, pad) == len(covered)
    assert timing.bwd_data_taps(size, out, kern, stride, pad) == len(pairs) + size - len(covered)


def test_load_store_and_layer_level_forms():
    assert timing.load_cycles(5) == 6 and timing.load_cycles(0) == 1
    assert timing.store_cycles(8, 4) == 1 + 8 + 2 and timing.store_cycles(9, 4) == 1 + 9 + 3
    # E elements per beat: ceil(count / E) beats; a STORE still reads each word once
    assert timing.load_cycles(5, 4) == 2 + 1 and timing.load_cycles(0, 4) == 1
    assert timing.store_cycles(9, 4, 4) == 1 + 3 + 3 and timing.store_cycles(9, 16, 2) == 1 + 5 + 1
    assert timing.store_cycles(0, 4, 2) == 1
    # a VGG-like layer far beyond any buffer: channels multiple of the array, stride 1
    shape = timing.ConvShape(n=8, c=256, k=256, h=28, w=28, r=3, s=3, stride=1, pad=1)
    for op in timing.CONV_OPS:
        assert timing.conv_utilization(16, op, shape) > 0.99
    # fully connected with a batch smaller than the array: bwd_weight waits for the drains, unless
    # they write drain_rows rows a cycle (P / DR cycles a tile)
    fc = timing.ConvShape(n=4, c=512, k=512, h=1, w=1, r=1, s=1)
    assert timing.conv_utilization(16, "bwd_weight", fc) == pytest.approx(4 / 16, rel=0.01)
    assert timing.conv_utilization(16, "bwd_weight", fc, drain_rows=2) == pytest.approx(4 / 8, rel=0.01)
    assert timing.conv_utilization(16, "bwd_weight", fc, drain_rows=4) == pytest.approx(1, rel=0.01)
    assert timing.conv_utilization(16, "fwd", fc, drain_rows=4) == timing.conv_utilization(16, "fwd", fc)
    for dr in (0, 3, 32):
        with pytest.raises(ValueError, match="drain_rows must divide"):
            timing.conv_cycles(16, "bwd_weight", fc, drain_rows=dr)


def test_explore_adapter_runs_vgg16_at_the_arrays_peak_on_the_useful_macs():
    """On VGG-16's 3x3/pad-1 conv layers (channels a multiple of P) the engine's closed forms per
    explore layer equal the P x P array's peak on the MACs that do not touch padding: a fraction
    ((3H - 2) / 3H)^2 of the dense count on an H x H map (within 0.5% for the fill); and they
    expose a fully connected layer's dw drain at a batch below the array."""
    from pymtl_fp.explore import get_network

    net = get_network("vgg16")
    checked = 0
    for ly in net.layers:
        if ly.kind != "conv" or ly.C % 16 or ly.K % 16:
            continue
        H = ly.in_shape[1]
        useful = ly.fp_macs * ((3 * H - 2) / (3 * H)) ** 2
        got = engine_layer_cycles(ly, 16, batch=32)
        for key in ("fp", "bp", "wg"):
            assert useful / 256 <= got[key] <= 1.005 * useful / 256, (ly.name, key, got)
        checked += 1
    assert checked == 12
    fc7 = net.layer("fc7")
    small = engine_layer_cycles(fc7, 16, batch=4)
    assert small["wg"] == pytest.approx(4 * small["fp"], rel=0.01)
    wide = engine_layer_cycles(fc7, 16, batch=4, drain_rows=4)  # 4 dw rows a cycle keep pace
    assert wide["wg"] == pytest.approx(wide["fp"], rel=0.01) and wide["fp"] == small["fp"]
