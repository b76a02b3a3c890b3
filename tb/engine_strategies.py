"""Hypothesis strategies for engine cases: random shapes (stride 1/2, padding, 1x1 and 3x3
kernels, channel counts that are and are not multiples of the array), values drawn over each
format with a controllable share of its extremes, both rounding modes, random stalls."""

from __future__ import annotations

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from pymtl_fp.timing import POOL_OPS

STALLS = st.sampled_from([0.0, 0.3, 0.7])


def _vals(rng, shape, bits, extremes):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    a = rng.integers(lo, hi + 1, size=shape)
    m = rng.random(shape)
    return np.where(m < extremes / 2, lo, np.where(m < extremes, hi, a)).astype(np.int64)


@st.composite
def engine_cases(draw, cfg, op, *, max_hw=5, max_ch=5, max_n=2, bp=False):
    """``(case, stall, stall_seed)`` for operation ``op`` on configuration ``cfg`` (``bp``: a
    batch-parallel fwd, its maps batch-innermost)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    extremes = draw(st.sampled_from([0.0, 0.2, 1.0]))
    case = dict(mode=draw(st.sampled_from(["nearest", "stochastic"])),
                seed=draw(st.integers(0, 2**32 - 1)), tensor_id=draw(st.integers(0, 254)))
    n = draw(st.integers(1, max_n))
    c = draw(st.integers(1, max_ch))
    if op in ("fwd", "bwd_data", "bwd_weight"):
        k = draw(st.integers(1, max_ch))
        r = draw(st.sampled_from([1, 3]))
        s = draw(st.sampled_from([1, r]))
        stride = draw(st.sampled_from([1, 2]))
        pad = draw(st.integers(0, min(r, s) - 1))
        h = draw(st.integers(max(1, r - 2 * pad), max_hw))
        w = draw(st.integers(max(1, s - 2 * pad), max_hw))
        ho, wo = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
        case.update(stride=stride, pad=pad, shift=draw(st.sampled_from([0, 1, 5, 9, 17, 32])))
        x = _vals(rng, (n, c, h, w), cfg.act_bits, extremes)
        if op == "fwd":
            case.update(x=x, w=_vals(rng, (k, c, r, s), cfg.weight_bits, extremes),
                        b=_vals(rng, (k,), 16, extremes), relu=draw(st.integers(0, 1)))
            if bp:
                case["bp"] = 1
        elif op == "bwd_data":
            case.update(x=x, w=_vals(rng, (k, c, r, s), cfg.weight_bits, extremes),
                        dy=_vals(rng, (n, k, ho, wo), cfg.grad_bits, extremes), relu=draw(st.integers(0, 1)))
        else:
            case.update(x=x, dy=_vals(rng, (n, k, ho, wo), cfg.grad_bits, extremes),
                        w_shape=np.array([k, c, r, s]), bias_shift=draw(st.sampled_from([0, 2, 7, 32])))
            if draw(st.booleans()):  # un-rounded, where B holds it (validate_case says)
                from pymtl_fp.engine.cases import CaseError, validate_case

                try:
                    validate_case(cfg, op, dict(case, raw=1))
                    case["raw"] = 1
                except CaseError:
                    pass
                if case.get("raw") and draw(st.booleans()):  # added to sums already in B
                    lim = 1 << (cfg.acc_bits - 1)
                    case.update(acc=1, acc_dw=rng.integers(-lim, lim, size=(k, c, r, s)),
                                acc_db=rng.integers(-lim, lim, size=k))
    elif op in POOL_OPS:
        pk = draw(st.sampled_from([1, 2, 2, 3]))
        ho, wo = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        if op == "pool_fwd":
            # extremes make ties likely (first maximum wins)
            case.update(x=_vals(rng, (n, c, ho * pk, wo * pk), cfg.act_bits, extremes), k=pk)
        else:
            case.update(dy=_vals(rng, (n, c, ho, wo), cfg.grad_bits, extremes),
                        argmax=rng.integers(0, pk * pk, size=(n, c, ho, wo)).astype(np.int64), k=pk)
    else:
        k = draw(st.integers(1, max_ch))
        r = draw(st.sampled_from([1, 3]))
        case.update(w=_vals(rng, (k, c, r, r), cfg.weight_bits, extremes),
                    dw=_vals(rng, (k, c, r, r), cfg.grad_bits, extremes),
                    lr_shift=draw(st.sampled_from([0, 1, 3, 8, 32])))
    from pymtl_fp.engine.cases import CaseError, validate_case

    try:  # shapes are drawn to fit; this only rejects the odd case beyond a small buffer
        validate_case(cfg, op, case)
    except CaseError:
        assume(False)
    stall = (draw(STALLS), draw(STALLS), draw(STALLS))
    return case, stall, draw(st.integers(0, 1000))


# ---- row bands (pymtl_fp.golden.band) -------------------------------------------------------

def band_case(op: str, case: dict, lo: int, hi: int):
    """The row band ``[lo, hi)`` of a whole-map conv ``case`` as a case of its own, and the rows of
    the whole map's result it must give (``(band case, rows)``; ``None`` if no ``dy`` row reaches a
    bwd_data band).  The band is over the result's rows: fwd's ``y``, bwd_data's ``dx``,
    bwd_weight's ``dy`` rows (its ``dw`` / ``db`` are the band's part of the sums)."""
    from pymtl_fp.golden import band
    from pymtl_fp.golden.geometry import conv_out_size
    from pymtl_fp.numerics import slice_seed

    x = np.asarray(case["x"])
    H, W = x.shape[2:]
    R = int((case["w"].shape if op != "bwd_weight" else case["w_shape"])[2])
    stride, pad = int(case["stride"]), int(case["pad"])
    out = dict(case)
    if op == "bwd_data":
        dy = np.asarray(case["dy"])
        win = band.bwd_data_window(H, dy.shape[2], R, stride, pad, lo, hi)
        if win.i1 == win.i0:
            return None
        out.update(x=x[:, :, lo:hi], dy=dy[:, :, win.i0:win.i1], pt=win.pt, hi=H,
                   seed=slice_seed(case.get("seed", 0), lo * W))
        return out, (lo, hi)
    Ho = conv_out_size(H, R, stride, pad)
    win = band.fwd_window(H, R, stride, pad, lo, hi)
    out.update(x=x[:, :, win.i0:win.i1], pt=win.pt)
    if op == "fwd":
        Wo = conv_out_size(W, int(case["w"].shape[3]), stride, pad)
        out.update(ho=hi - lo, hi=Ho, seed=slice_seed(case.get("seed", 0), lo * Wo))
    else:
        out["dy"] = np.asarray(case["dy"])[:, :, lo:hi]
    return out, (lo, hi)


@st.composite
def band_cases(draw, cfg, op, *, max_hw=8, max_ch=4, bp=False):
    """``(whole case, band case, result rows, stall, stall_seed)``: a random conv ``op`` on a whole
    map (kernels 1-4 rows, strides 1 and 2, padding) and one of its row bands (``bp``: a
    batch-parallel fwd, up to ``2P + 1`` images)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    case = dict(mode=draw(st.sampled_from(["nearest", "stochastic"])),
                seed=draw(st.integers(0, 2**32 - 1)), tensor_id=draw(st.integers(0, 254)))
    n = draw(st.integers(1, 2 * cfg.P + 1 if bp else 2))
    c, k = draw(st.integers(1, max_ch)), draw(st.integers(1, max_ch))
    r, s = draw(st.integers(1, 4)), draw(st.sampled_from([1, 3]))
    stride = draw(st.sampled_from([1, 2]))
    assume(r >= stride)
    pad = draw(st.integers(0, min(r, s) - 1))
    h = draw(st.integers(max(1, r - 2 * pad), max_hw))
    w = draw(st.integers(max(1, s - 2 * pad), 5))
    ho, wo = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    case.update(stride=stride, pad=pad, shift=draw(st.sampled_from([0, 3, 9])))
    x = _vals(rng, (n, c, h, w), cfg.act_bits, 0.1)
    wt = _vals(rng, (k, c, r, s), cfg.weight_bits, 0.1)
    dy = _vals(rng, (n, k, ho, wo), cfg.grad_bits, 0.1)
    if op == "fwd":
        case.update(x=x, w=wt, b=_vals(rng, (k,), 16, 0.0), relu=draw(st.integers(0, 1)))
        if bp:
            case["bp"] = 1
    elif op == "bwd_data":
        case.update(x=x, w=wt, dy=dy, relu=draw(st.integers(0, 1)))
    else:
        case.update(x=x, dy=dy, w_shape=np.array([k, c, r, s]), bias_shift=3, raw=draw(st.integers(0, 1)))
    rows = h if op == "bwd_data" else ho
    lo = draw(st.integers(0, rows - 1))
    hi = draw(st.integers(lo + 1, rows))
    got = band_case(op, case, lo, hi)
    assume(got is not None)
    from pymtl_fp.engine.cases import CaseError, validate_case

    try:
        validate_case(cfg, op, case)
        validate_case(cfg, op, got[0])
    except CaseError:
        assume(False)
    stall = (draw(STALLS), draw(STALLS), draw(STALLS))
    return case, got[0], got[1], stall, draw(st.integers(0, 1000))
