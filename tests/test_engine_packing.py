"""Tap packing (pymtl_fp.engine.packing): a layer with few input channels run as a 1x1 conv over
C*R*S packed channels gives the layer's own results bit for bit, in the golden model and through
the engine at every level with random stalls, at the closed form's cycles."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp import golden, timing
from pymtl_fp.engine import packing
from pymtl_fp.engine.cases import golden_op, validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.tb import engine_harness as eh


@st.composite
def layers(draw):
    r, s = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = draw(st.sampled_from([1, 2]))
    pad = draw(st.integers(0, min(r, s) - 1))
    h, w = draw(st.integers(r, 7)), draw(st.integers(s, 7))
    return dict(n=draw(st.integers(1, 3)), c=draw(st.integers(1, 4)), k=draw(st.integers(1, 5)),
                h=h, w=w, r=r, s=s, stride=stride, pad=pad)


@settings(max_examples=60, deadline=None)
@given(layers(), st.sampled_from(["nearest", "stochastic"]), st.integers(0, 2**32 - 1))
def test_golden_packed_layer_equals_layer(shape, mode, seed):
    rng = np.random.default_rng(seed)
    n, c, k, h, w, r, s = (shape[x] for x in ("n", "c", "k", "h", "w", "r", "s"))
    stride, pad = shape["stride"], shape["pad"]
    x = rng.integers(-128, 128, size=(n, c, h, w))
    wt = rng.integers(-128, 128, size=(k, c, r, s))
    b = rng.integers(-999, 999, size=k)
    rnd = dict(mode=mode, seed=seed, tensor_id=7, out_bits=8)
    xp, wp = packing.pack_input(x, r, s, stride, pad), packing.pack_weight(wt)
    assert xp.shape[1] == c * r * s and wp.shape == (k, c * r * s, 1, 1)
    y = golden.conv_fwd(x, wt, b, stride=stride, pad=pad, shift=6, relu=True, **rnd)
    assert np.array_equal(golden.conv_fwd(xp, wp, b, shift=6, relu=True, **rnd), y)
    dy = rng.integers(-128, 128, size=y.shape)
    dw, db = golden.conv_bwd_weight(x, dy, wt.shape, stride=stride, pad=pad, shift=5, bias_shift=3, **rnd)
    dwp, dbp = golden.conv_bwd_weight(xp, dy, wp.shape, shift=5, bias_shift=3, **rnd)
    assert np.array_equal(packing.unpack_weight(dwp, wt.shape), dw) and np.array_equal(dbp, db)
    # the update is elementwise: packed weights updated in place are the layer's updated weights
    new = golden.sgd_update(wt, dw, lr_shift=2, bits=8, mode=mode, seed=seed, tensor_id=3)
    newp = golden.sgd_update(wp, dwp, lr_shift=2, bits=8, mode=mode, seed=seed, tensor_id=3)
    assert np.array_equal(packing.unpack_weight(newp, wt.shape), new)


#: (config, (n, c, k, h, w, r, s, stride, pad)): first layers with C < P
ENGINE_CASES = [
    ("tiny", (1, 1, 3, 4, 5, 3, 3, 1, 1)),
    ("small", (1, 1, 6, 6, 6, 5, 5, 1, 2)),   # LeNet-digits' conv1 shape, smaller map
    ("small", (2, 3, 4, 7, 5, 3, 3, 2, 1)),
]


@pytest.mark.parametrize("level", ["fl", "cl", "rtl", "verilator"])
@pytest.mark.parametrize("op", packing.PACKED_OPS)
def test_engine_runs_packed_layer_bit_exact(level, op):
    for i, (name, (n, c, k, h, w, r, s, stride, pad)) in enumerate(ENGINE_CASES):
        if level == "rtl" and i:  # PyMTL3's simulation is slow: one case
            break
        cfg = preset(name)
        rng = np.random.default_rng(100 + i)
        case = eh.random_case(cfg, op, rng, n=n, c=c, k=k, h=h, w=w, r=r, s=s, stride=stride, pad=pad,
                              mode="stochastic")
        want = golden_op(cfg, op, validate_case(cfg, op, case))
        res = eh.run_op(level, cfg, op, stall=(0.2, 0.3, 0.3), stall_seed=i, **packing.pack_case(op, case))
        got = packing.unpack_results(op, res, case)
        for key, val in want.items():
            assert np.array_equal(got[key], val), (name, key)
        if level != "fl":
            shape = timing.ConvShape(n=n, c=c, k=k, h=h, w=w, r=r, s=s, stride=stride, pad=pad)
            assert res["compute_cycles"] == (timing.mapped_conv_cycles(cfg.P, op, shape, packed=True)
                                             + cfg.wb_latency + cfg.cmd_latency)


def test_bwd_data_of_a_packed_layer_is_refused():
    with pytest.raises(ValueError, match="no bwd_data"):
        packing.pack_case("bwd_data", {})
    with pytest.raises(ValueError, match="no bwd_data"):
        timing.mapped_conv_cycles(16, "bwd_data", timing.ConvShape(1, 3, 8, 8, 8, 3, 3, 1, 1), packed=True)


def test_packing_pays_only_where_input_lanes_idle():
    first = dict(n=1, h=32, w=32, stride=1)
    assert timing.tap_packing_pays(16, timing.ConvShape(c=3, k=64, r=3, s=3, pad=1, **first))
    assert timing.tap_packing_pays(4, timing.ConvShape(c=1, k=6, r=5, s=5, pad=2, **first))
    assert not timing.tap_packing_pays(16, timing.ConvShape(c=64, k=64, r=3, s=3, pad=1, **first))
    assert not timing.tap_packing_pays(16, timing.ConvShape(c=3, k=64, r=1, s=1, pad=0, **first))
    # 3 of 4 input lanes busy and a small strided map (many padding taps skipped): no gain
    assert not timing.tap_packing_pays(4, timing.ConvShape(n=2, c=3, k=4, h=7, w=5, r=3, s=3, stride=2, pad=1))
