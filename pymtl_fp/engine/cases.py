"""Engine cases: one operation with its tensors, validated against a configuration, and the golden
model's results for it (pure NumPy; used by the test harness, the CLI and the fuzz targets).

:func:`validate_case` checks a case *before* any simulation: missing or unknown keys, wrong
dtypes/shapes, values outside their formats, shapes beyond the buffers or the command fields ->
one :class:`CaseError`.  :func:`golden_op` dispatches a validated case to :mod:`pymtl_fp.golden`.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp import golden
from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden import band
from pymtl_fp.golden.geometry import conv_out_size
from pymtl_fp.numerics import wrap
from pymtl_fp.timing import POOL_OPS

OPS = tuple(msgs.OPS)

#: required keys per operation (arrays, then scalars); optional for all: mode, seed, tensor_id
REQUIRED = {
    "fwd": (("x", "w", "b"), ("stride", "pad", "shift", "relu")),
    "bwd_data": (("dy", "w", "x"), ("stride", "pad", "shift", "relu")),
    "bwd_weight": (("x", "dy", "w_shape"), ("stride", "pad", "shift", "bias_shift")),
    "pool_fwd": (("x",), ("k",)),
    "pool_bwd": (("dy", "argmax"), ("k",)),
    "update": (("w", "dw"), ("lr_shift",)),
}
OPTIONAL = {"mode", "seed", "tensor_id"}
#: a row band (:mod:`pymtl_fp.golden.band`): ``pt`` zero rows above the window, ``hi`` rows of the
#: whole result map (stochastic rounding), fwd's ``ho`` output rows (bwd_*: ``dy``'s rows)
BAND = {"fwd": {"pt", "ho", "hi"}, "bwd_data": {"pt", "hi"}, "bwd_weight": {"pt"}}
OPTIONAL_OP = {"fwd": BAND["fwd"] | {"bp"}, "bwd_data": BAND["bwd_data"],
               "bwd_weight": {"bias_tensor_id", "raw", "acc", "acc_dw", "acc_db"} | BAND["bwd_weight"]}
RESULTS = {"fwd": ("y",), "bwd_data": ("dx",), "bwd_weight": ("dw", "db"), "pool_fwd": ("y", "argmax"),
           "pool_bwd": ("dx",), "update": ("w",)}


class CaseError(ValueError):
    """The case cannot run on this engine configuration (raised before any simulation)."""


# ---- validation ------------------------------------------------------------------------------

def _scalar(case, key, lo, hi):
    v = case[key]
    arr = np.asarray(v)
    if arr.shape != () or arr.dtype.kind not in "iub":
        raise CaseError(f"{key} must be an integer scalar, got {v!r}")
    v = int(arr)
    if not lo <= v <= hi:
        raise CaseError(f"{key}={v} is outside {lo}..{hi}")
    return v


def _array(case, key, ndim, bits=None, what=None):
    arr = np.asarray(case[key])
    if arr.dtype.kind not in "iu":
        raise CaseError(f"{key} must hold integers (raw fixed-point values), got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise CaseError(f"{key} must be {ndim}-D, got shape {arr.shape}")
    if arr.size == 0:
        raise CaseError(f"{key} is empty (shape {arr.shape})")
    amin, amax = int(arr.min()), int(arr.max())  # in the array's own dtype: a uint64 2**64-1 stays so
    if bits is not None:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if amin < lo or amax > hi:
            raise CaseError(f"{key} has values in [{amin}, {amax}], outside its "
                            f"{bits}-bit {what or ''} format [{lo}, {hi}]".replace("  ", " "))
    elif amax > np.iinfo(np.int64).max:
        raise CaseError(f"{key} has values up to {amax}, outside int64 (at most 2**63-1)")
    return arr.astype(np.int64)


def _maxabs(a):
    return max(-int(a.min()), int(a.max())) if a.size else 0


def validate_case(cfg, op: str, case: dict) -> dict:
    """Check a case against the operation and the configuration; return it normalized (int64
    arrays, Python ints, ``mode`` a string).  Raises :class:`CaseError` with one clear message."""
    if op not in REQUIRED:
        raise CaseError(f"unknown operation {op!r}; choose one of {', '.join(REQUIRED)}")
    arrays, scalars = REQUIRED[op]
    missing = [k for k in arrays + scalars if k not in case]
    if missing:
        raise CaseError(f"{op} case is missing key(s) {', '.join(missing)} (needs {', '.join(arrays + scalars)})")
    unknown = set(case) - set(arrays) - set(scalars) - OPTIONAL - OPTIONAL_OP.get(op, set())
    if unknown:
        raise CaseError(f"{op} case has unknown key(s) {', '.join(sorted(unknown))}")
    out = {}
    mode = case.get("mode", "nearest")
    mode = str(np.asarray(mode)) if not isinstance(mode, str) else mode
    if mode not in ("nearest", "stochastic"):
        raise CaseError(f"mode must be 'nearest' or 'stochastic', got {mode!r}")
    if mode == "stochastic" and not cfg.stochastic:
        raise CaseError("this engine configuration was built without stochastic rounding")
    out["mode"] = mode
    out["seed"] = _scalar(case, "seed", 0, 2**32 - 1) if "seed" in case else 0
    out["tensor_id"] = _scalar(case, "tensor_id", 0, 255) if "tensor_id" in case else 0
    if op in ("fwd", "bwd_data", "bwd_weight"):
        _validate_conv(cfg, op, case, out)
    elif op in POOL_OPS:
        _validate_pool(cfg, op, case, out)
    else:  # update
        _validate_update(cfg, case, out)
    return out


def _fits(cfg, what, words, depth, buf):
    """``words`` of ``what`` fit buffer ``buf`` of ``depth`` words."""
    if words > depth:
        raise CaseError(f"{what} needs {words} words of buffer {buf} but it holds {depth} "
                        f"(config {cfg.name or cfg.module_name()})")


def _dims_ok(**dims):
    """Every dimension fits its command field."""
    for name, v in dims.items():
        if v >= 1 << msgs.DIM_BITS:
            raise CaseError(f"{name}={v} does not fit the {msgs.DIM_BITS}-bit command field")


def _validate_conv(cfg, op: str, case: dict, out: dict) -> None:
    """The fields of a ``fwd`` / ``bwd_data`` / ``bwd_weight`` case (into ``out``): scalars, tensors and
    their shapes, a row band's rows, the buffers' room and the accumulator's range."""
    P = cfg.P
    act_words = cfg.act_depth
    acc_lim = 1 << (cfg.acc_bits - 1)
    for key, lo, hi in (("stride", 1, 128), ("pad", 0, 255), ("shift", 0, 32)):
        out[key] = _scalar(case, key, lo, hi)
    if out["stride"] & (out["stride"] - 1):
        raise CaseError(f"stride must be a power of two (1, 2, 4, ...) on this engine, got {out['stride']}")
    if op == "bwd_weight":
        out["bias_shift"] = _scalar(case, "bias_shift", 0, 32)
        if "bias_tensor_id" in case:
            out["bias_tensor_id"] = _scalar(case, "bias_tensor_id", 0, 255)
        elif out["tensor_id"] == 255:
            raise CaseError("tensor_id 255 leaves no default bias_tensor_id (tensor_id + 1)")
        out["raw"] = _scalar(case, "raw", 0, 1) if "raw" in case else 0
        out["acc"] = _scalar(case, "acc", 0, 1) if "acc" in case else 0
        if out["acc"] and not out["raw"]:
            raise CaseError("acc=1 adds to un-rounded sums in B: it needs raw=1")
        if out["acc"] != ("acc_dw" in case) or out["acc"] != ("acc_db" in case):
            raise CaseError("acc=1 goes with acc_dw and acc_db (the sums already in B), and only with it")
    else:
        out["relu"] = _scalar(case, "relu", 0, 1)
    if op == "fwd" and "bp" in case:  # batch-parallel: x and y batch-innermost
        out["bp"] = _scalar(case, "bp", 0, 1)
    x = out["x"] = _array(case, "x", 4, cfg.act_bits, "activation")
    if op == "bwd_weight":
        ws = np.asarray(case["w_shape"])
        if ws.shape != (4,) or ws.dtype.kind not in "iu" or int(ws.min()) < 1:
            raise CaseError(f"w_shape must be 4 positive integers (K, C, R, S), got {case['w_shape']!r}")
        w_shape = tuple(int(v) for v in ws)
        out["w_shape"] = w_shape
    else:
        wt = out["w"] = _array(case, "w", 4, cfg.weight_bits, "weight")
        w_shape = wt.shape
    n, c, h, w = x.shape
    k, cw, r, s = w_shape
    if cw != c:
        raise CaseError(f"x has {c} channels but the weights expect {cw} (w shape {w_shape})")
    if out["pad"] >= min(r, s):
        raise CaseError(f"pad {out['pad']} must be smaller than the kernel {r}x{s}")
    banded = bool(BAND[op] & set(case))
    try:
        wo = conv_out_size(w, s, out["stride"], out["pad"], "input width")
        if not (banded and (op != "fwd" or "ho" in case)):
            ho = conv_out_size(h, r, out["stride"], out["pad"], "input height")
    except ValueError as exc:
        raise CaseError(str(exc)) from None
    if banded:  # a row band: its rows are free, its columns the whole map's
        out["pt"] = _scalar(case, "pt", 0, r - 1) if "pt" in case else out["pad"]
        if op == "fwd":
            ho = out["ho"] = _scalar(case, "ho", 1, (1 << msgs.DIM_BITS) - 1) if "ho" in case else ho
        else:
            ho = int(np.shape(case["dy"])[2]) if np.ndim(case["dy"]) == 4 else 0
        if op != "bwd_weight":
            rows = ho if op == "fwd" else h
            out["hi"] = _scalar(case, "hi", rows, (1 << msgs.DIM_BITS) - 1) if "hi" in case else rows
            plane = (k * wo if op == "fwd" else c * w) * out["hi"]
            if plane >= 1 << 24:
                raise CaseError(f"the whole map of {out['hi']} rows has {plane} elements an image, "
                                f"beyond the 24-bit index stride")
    _dims_ok(N=n, C=c, K=k, H=h, W=w, R=r, S=s)
    ct, kt = tiles(c, P), tiles(k, P)
    bp = out.get("bp", 0)
    _fits(cfg, "x", (tiles(n, P) * c if bp else n * ct) * h * w, act_words, "X")
    _fits(cfg, "w", kt * ct * r * s, cfg.weight_depth, "W" if op != "bwd_weight" else "G")
    if op == "fwd":
        b = out["b"] = _array(case, "b", 1)
        if b.shape != (k,):
            raise CaseError(f"b must have shape ({k},), got {b.shape}")
        bound = c * r * s * _maxabs(x) * _maxabs(out["w"]) + _maxabs(b)
        _fits(cfg, "b", kt, cfg.bias_depth, "B")
        _fits(cfg, "y", (tiles(n, P) * k if bp else n * kt) * ho * wo, act_words, "O")
    else:
        dy = out["dy"] = _array(case, "dy", 4, cfg.grad_bits, "gradient")
        if dy.shape != (n, k, ho, wo):
            raise CaseError(f"dy shape {dy.shape} does not match the forward output shape {(n, k, ho, wo)}")
        _fits(cfg, "dy", n * kt * ho * wo, act_words, "D")
        if op == "bwd_data":
            bound = k * r * s * _maxabs(dy) * _maxabs(out["w"])
            _fits(cfg, "dx", n * ct * h * w, act_words, "O")
        else:
            bound = n * ho * wo * _maxabs(dy) * max(_maxabs(x), 1)
            if out["raw"]:  # un-rounded dw rows (P words per G word) and db, in B
                _fits(cfg, "raw dw and db", kt * ct * r * s * P + kt, cfg.bias_depth, "B")
            if out["acc"]:  # the sums already in B, accumulator-wide
                out["acc_dw"] = _array(case, "acc_dw", 4, cfg.acc_bits, "accumulator")
                out["acc_db"] = _array(case, "acc_db", 1, cfg.acc_bits, "accumulator")
                if out["acc_dw"].shape != w_shape or out["acc_db"].shape != (k,):
                    raise CaseError(f"acc_dw and acc_db must have shapes {w_shape} and ({k},), got "
                                    f"{out['acc_dw'].shape} and {out['acc_db'].shape}")
            else:
                _fits(cfg, "db", kt, cfg.bias_depth, "B")
    if bound >= acc_lim:
        raise CaseError(f"the {op} accumulator could reach {bound}, beyond the {cfg.acc_bits}-bit "
                        f"accumulator of this configuration")


def _validate_pool(cfg, op: str, case: dict, out: dict) -> None:
    """The fields of a ``pool_fwd`` / ``pool_bwd`` case (into ``out``)."""
    P = cfg.P
    act_words = cfg.act_depth
    pk = out["k"] = _scalar(case, "k", 1, 8)
    if pk * pk - 1 > (1 << (cfg.act_bits - 1)) - 1:
        raise CaseError(f"pool k={pk} gives argmax values that do not fit {cfg.act_bits}-bit words")
    if op == "pool_fwd":
        x = out["x"] = _array(case, "x", 4, cfg.act_bits, "activation")
        n, c, h, w = x.shape
        if h % pk or w % pk:
            raise CaseError(f"max pool k={pk} needs H and W divisible by {pk}, got {h}x{w}")
        ho, wo = h // pk, w // pk
        ct = tiles(c, P)
        _fits(cfg, "x and argmax", n * ct * (h * w + ho * wo), act_words, "X")
    else:
        dy = out["dy"] = _array(case, "dy", 4, cfg.grad_bits, "gradient")
        am = out["argmax"] = _array(case, "argmax", 4)
        if am.shape != dy.shape:
            raise CaseError(f"argmax shape {am.shape} differs from dy shape {dy.shape}")
        if int(am.min()) < 0 or int(am.max()) >= pk * pk:
            raise CaseError(f"argmax values must be in 0..{pk * pk - 1} for k={pk}")
        n, c, ho, wo = dy.shape
        h, w = ho * pk, wo * pk
        ct = tiles(c, P)
        _fits(cfg, "dy", n * ct * ho * wo, act_words, "D")
    _fits(cfg, "dx" if op == "pool_bwd" else "y", n * ct * (h * w if op == "pool_bwd" else ho * wo), act_words, "O")
    _dims_ok(N=n, C=c, H=h, W=w)


def _validate_update(cfg, case: dict, out: dict) -> None:
    """The fields of an ``update`` case (into ``out``)."""
    P = cfg.P
    out["lr_shift"] = _scalar(case, "lr_shift", 0, 32)
    wt = out["w"] = _array(case, "w", 4, cfg.weight_bits, "weight")
    dw = out["dw"] = _array(case, "dw", 4, cfg.grad_bits, "gradient")
    if dw.shape != wt.shape:
        raise CaseError(f"dw shape {dw.shape} differs from w shape {wt.shape}")
    k, c, r, s = wt.shape
    _dims_ok(K=k, C=c, R=r, S=s)
    _fits(cfg, "w", tiles(k, P) * tiles(c, P) * r * s, cfg.weight_depth, "W")


# ---- golden reference --------------------------------------------------------------------

def result_bits(cfg, op: str) -> int:
    return {"fwd": cfg.act_bits, "bwd_data": cfg.grad_bits, "bwd_weight": cfg.grad_bits,
            "pool_fwd": cfg.act_bits, "pool_bwd": cfg.grad_bits, "update": cfg.weight_bits}[op]


def golden_op(cfg, op: str, case: dict) -> dict:
    """The golden model's results for a validated case."""
    rnd = dict(mode=case["mode"], seed=case["seed"], tensor_id=case["tensor_id"])
    if "pt" in case:
        return _golden_band(cfg, op, case, rnd)
    if op == "fwd":
        return {"y": golden.conv_fwd(case["x"], case["w"], case["b"], stride=case["stride"], pad=case["pad"],
                                     shift=case["shift"], relu=bool(case["relu"]), out_bits=cfg.act_bits, **rnd)}
    if op == "bwd_data":
        return {"dx": golden.conv_bwd_data(case["dy"], case["w"], case["x"], stride=case["stride"],
                                           pad=case["pad"], shift=case["shift"], relu=bool(case["relu"]),
                                           out_bits=cfg.grad_bits, **rnd)}
    if op == "bwd_weight" and case.get("raw"):
        dw, db = golden.conv_bwd_weight_acc(case["x"], case["dy"], case["w_shape"], stride=case["stride"],
                                            pad=case["pad"])
        return _raw(cfg, case, dw, db)
    if op == "bwd_weight":
        dw, db = golden.conv_bwd_weight(case["x"], case["dy"], case["w_shape"], stride=case["stride"],
                                        pad=case["pad"], shift=case["shift"], bias_shift=case["bias_shift"],
                                        out_bits=cfg.grad_bits, bias_tensor_id=case.get("bias_tensor_id"),
                                        **rnd)
        return {"dw": dw, "db": db}
    if op == "pool_fwd":
        y, am = golden.pool_fwd(case["x"], k=case["k"])
        return {"y": y, "argmax": am}
    if op == "pool_bwd":
        return {"dx": golden.pool_bwd(case["dy"], case["argmax"], k=case["k"])}
    return {"w": golden.sgd_update(case["w"], case["dw"], lr_shift=case["lr_shift"], bits=cfg.weight_bits, **rnd)}


def _golden_band(cfg, op: str, case: dict, rnd: dict) -> dict:
    """The golden model's results for a validated row-band case (:mod:`pymtl_fp.golden.band`)."""
    geo = dict(stride=case["stride"], pad=case["pad"], pt=case["pt"])
    if op == "fwd":
        return {"y": band.conv_fwd_band(case["x"], case["w"], case["b"], ho=case["ho"], hi=case["hi"], shift=case["shift"],
                                        relu=bool(case["relu"]), out_bits=cfg.act_bits, **geo, **rnd)}
    if op == "bwd_data":
        return {"dx": band.conv_bwd_data_band(case["dy"], case["w"], case["x"], hi=case["hi"], shift=case["shift"],
                                              relu=bool(case["relu"]), out_bits=cfg.grad_bits, **geo, **rnd)}
    if case.get("raw"):
        dw, db = band.band_bwd_weight_acc(case["x"], case["dy"], case["w_shape"], **geo)
        return _raw(cfg, case, dw, db)
    dw, db = band.conv_bwd_weight_band(case["x"], case["dy"], case["w_shape"], shift=case["shift"],
                                       bias_shift=case["bias_shift"], out_bits=cfg.grad_bits,
                                       bias_tensor_id=case.get("bias_tensor_id"), **geo, **rnd)
    return {"dw": dw, "db": db}


def _raw(cfg, case: dict, dw, db) -> dict:
    """A raw bwd_weight's results in B: its sums, plus (``acc``) the sums already there, wrapped."""
    if case.get("acc"):
        dw, db = dw + case["acc_dw"], db + case["acc_db"]
    return {"dw": wrap(dw, cfg.acc_bits), "db": wrap(db, cfg.acc_bits)}
