"""Run one engine operation at any level: validate the case, load, compute, store, compare.

:func:`run_op` ``(level, cfg, op, **case)`` validates the case *before* any simulation
(:func:`validate_case`: missing or unknown keys, wrong dtypes/shapes, values outside their
formats, shapes beyond the buffers or the command fields -> one :class:`CaseError`), builds the
engine program (:mod:`pymtl_fp.engine.program`), drives the engine's three streams with random
stalls (the per-cycle stall decision is :func:`tb.stream.stall_pattern`, a pure function of
(seed, cycle), as in :class:`tb.stream.StallSource`/``StallSink``) and returns the result arrays.
Timed levels (``cl``, ``rtl``, ``verilator``) also report ``cycles`` (compute command accepted ->
last output word), ``compute_cycles`` (compute command accepted -> engine idle again), ``macs``
(useful multiply-accumulates) and ``total_cycles`` (the whole program: loads, compute, stores).

Levels: ``fl`` (:class:`EngineFL`), ``rtl`` (:class:`EngineRTL` simulated by PyMTL3),
``verilator`` (the same RTL translated and imported), ``cl`` (:class:`EngineCL`: golden values
at the RTL's cycles, from :mod:`pymtl_fp.timing`).  Elaborated models are cached per (level,
config): many cases run through one build.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp import golden
from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.msgs import from_word, tiles, to_word
from pymtl_fp.golden.geometry import conv_out_size
from tb.sim import SimulationHang
from tb.stream import stall_pattern

LEVELS = ("fl", "cl", "rtl", "verilator")
TIMED = ("cl", "rtl", "verilator")
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
OPTIONAL_OP = {"bwd_weight": {"bias_tensor_id"}}
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
    arr = arr.astype(np.int64)
    if bits is not None:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if int(arr.min()) < lo or int(arr.max()) > hi:
            raise CaseError(f"{key} has values in [{int(arr.min())}, {int(arr.max())}], outside its "
                            f"{bits}-bit {what or ''} format [{lo}, {hi}]".replace("  ", " "))
    return arr


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
    P = cfg.P
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
    acc_lim = 1 << (cfg.acc_bits - 1)
    act_words = cfg.act_depth

    def fits(what, words, depth, buf):
        if words > depth:
            raise CaseError(f"{what} needs {words} words of buffer {buf} but it holds {depth} "
                            f"(config {cfg.name or cfg.module_name()})")

    def dims_ok(**dims):
        for name, v in dims.items():
            if v >= 1 << msgs.DIM_BITS:
                raise CaseError(f"{name}={v} does not fit the {msgs.DIM_BITS}-bit command field")

    if op in ("fwd", "bwd_data", "bwd_weight"):
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
        else:
            out["relu"] = _scalar(case, "relu", 0, 1)
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
        try:
            ho = conv_out_size(h, r, out["stride"], out["pad"], "input height")
            wo = conv_out_size(w, s, out["stride"], out["pad"], "input width")
        except ValueError as exc:
            raise CaseError(str(exc)) from None
        dims_ok(N=n, C=c, K=k, H=h, W=w, R=r, S=s)
        ct, kt = tiles(c, P), tiles(k, P)
        fits("x", n * ct * h * w, act_words, "X")
        fits("w", kt * ct * r * s, cfg.weight_depth, "W" if op != "bwd_weight" else "G")
        if op == "fwd":
            b = out["b"] = _array(case, "b", 1)
            if b.shape != (k,):
                raise CaseError(f"b must have shape ({k},), got {b.shape}")
            bound = c * r * s * _maxabs(x) * _maxabs(out["w"]) + _maxabs(b)
            fits("b", kt, cfg.bias_depth, "B")
            fits("y", n * kt * ho * wo, act_words, "O")
        else:
            dy = out["dy"] = _array(case, "dy", 4, cfg.grad_bits, "gradient")
            if dy.shape != (n, k, ho, wo):
                raise CaseError(f"dy shape {dy.shape} does not match the forward output shape {(n, k, ho, wo)}")
            fits("dy", n * kt * ho * wo, act_words, "D")
            if op == "bwd_data":
                bound = k * r * s * _maxabs(dy) * _maxabs(out["w"])
                fits("dx", n * ct * h * w, act_words, "O")
            else:
                bound = n * ho * wo * _maxabs(dy) * max(_maxabs(x), 1)
                fits("db", kt, cfg.bias_depth, "B")
        if bound >= acc_lim:
            raise CaseError(f"the {op} accumulator could reach {bound}, beyond the {cfg.acc_bits}-bit "
                            f"accumulator of this configuration")
    elif op in ("pool_fwd", "pool_bwd"):
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
            fits("x and argmax", n * ct * (h * w + ho * wo), act_words, "X")
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
            fits("dy", n * ct * ho * wo, act_words, "D")
        fits("dx" if op == "pool_bwd" else "y", n * ct * (h * w if op == "pool_bwd" else ho * wo), act_words, "O")
        dims_ok(N=n, C=c, H=h, W=w)
    else:  # update
        out["lr_shift"] = _scalar(case, "lr_shift", 0, 32)
        wt = out["w"] = _array(case, "w", 4, cfg.weight_bits, "weight")
        dw = out["dw"] = _array(case, "dw", 4, cfg.grad_bits, "gradient")
        if dw.shape != wt.shape:
            raise CaseError(f"dw shape {dw.shape} differs from w shape {wt.shape}")
        k, c, r, s = wt.shape
        dims_ok(K=k, C=c, R=r, S=s)
        fits("w", tiles(k, P) * tiles(c, P) * r * s, cfg.weight_depth, "W")
    return out


# ---- golden reference --------------------------------------------------------------------

def assert_results(prog, out, want: dict) -> None:
    """The named results of ``prog`` in the output stream ``out`` equal ``want`` exactly."""
    got = prog.unpack(out)
    for key, val in want.items():
        assert np.array_equal(got[key], val), key


def result_bits(cfg, op: str) -> int:
    return {"fwd": cfg.act_bits, "bwd_data": cfg.grad_bits, "bwd_weight": cfg.grad_bits,
            "pool_fwd": cfg.act_bits, "pool_bwd": cfg.grad_bits, "update": cfg.weight_bits}[op]


def golden_op(cfg, op: str, case: dict) -> dict:
    """The golden model's results for a validated case."""
    rnd = dict(mode=case["mode"], seed=case["seed"], tensor_id=case["tensor_id"])
    if op == "fwd":
        return {"y": golden.conv_fwd(case["x"], case["w"], case["b"], stride=case["stride"], pad=case["pad"],
                                     shift=case["shift"], relu=bool(case["relu"]), out_bits=cfg.act_bits, **rnd)}
    if op == "bwd_data":
        return {"dx": golden.conv_bwd_data(case["dy"], case["w"], case["x"], stride=case["stride"],
                                           pad=case["pad"], shift=case["shift"], relu=bool(case["relu"]),
                                           out_bits=cfg.grad_bits, **rnd)}
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


# ---- models --------------------------------------------------------------------------------

_MODELS: dict = {}


def drop_model(level: str, cfg) -> None:
    """Forget the cached model of (level, cfg), e.g. around a run of a mutant copy of the RTL."""
    _MODELS.pop((level, cfg.params().__repr__()), None)


def get_model(level: str, cfg):
    """An elaborated, simulatable engine of ``level`` for ``cfg`` (cached per process)."""
    if level not in LEVELS:
        raise CaseError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    key = (level, cfg.params().__repr__())
    if key in _MODELS:
        return _MODELS[key]
    from pymtl3 import DefaultPassGroup
    if level == "fl":
        from pymtl_fp.engine.EngineFL import EngineFL
        m = EngineFL(cfg)
        m.elaborate()
        m.apply(DefaultPassGroup())
    elif level == "cl":
        from pymtl_fp.engine.EngineCL import EngineCL
        m = EngineCL(cfg)
        m.elaborate()
        m.apply(DefaultPassGroup())
    elif level == "rtl":
        from pymtl_fp.engine.EngineRTL import EngineRTL
        m = EngineRTL(cfg)
        m.elaborate()
        m.apply(DefaultPassGroup())
    else:
        from pymtl_fp.engine.EngineRTL import EngineRTL
        from pymtl_fp.verilate import translate_import
        m = translate_import(EngineRTL(cfg), cfg.module_name(), params=cfg.params())
    _MODELS[key] = m
    return m


def drive(model, cfg, prog, *, stall=(0.0, 0.0, 0.0), seed=0, max_cycles=2_000_000, idle_limit=20_000,
          trace: list | None = None, accepts: list | None = None):
    """Run ``prog`` through ``model``; return ``(out_elements, timing dict)``.

    ``stall`` = stall probabilities of (cmd source, din source, dout sink); their patterns are
    seeded by ``seed`` (three independent streams).  ``trace``, if given, receives the
    ``(cmd.rdy, din.rdy, dout.val, busy)`` handshake signals of every cycle; ``accepts``, if
    given, the cycle in which each command was accepted."""
    DataT = msgs.data_type(cfg)
    sb = cfg.stream_bits
    pc = stall_pattern(seed * 3 + 0, stall[0])
    pd = stall_pattern(seed * 3 + 1, stall[1])
    po = stall_pattern(seed * 3 + 2, stall[2])
    cmds, din = prog.cmds, [DataT(to_word(v, sb)) for v in prog.din]
    n_out = prog.out_count()
    model.sim_reset()
    ci = di = 0
    out = []
    t = 0
    t_acc = t_idle = t_last = None
    idle = 0
    while ci < len(cmds) or len(out) < n_out:
        if t >= max_cycles:
            raise SimulationHang(f"engine not done after {max_cycles} cycles: {ci}/{len(cmds)} commands, "
                                 f"{di}/{len(din)} data in, {len(out)}/{n_out} data out")
        vc = ci < len(cmds) and not next(pc)
        vd = di < len(din) and not next(pd)
        model.cmd.val @= vc
        if vc:
            model.cmd.msg @= cmds[ci]
        model.din.val @= vd
        if vd:
            model.din.msg @= din[di]
        model.dout.rdy @= not next(po)
        model.sim_eval_combinational()
        if trace is not None:
            trace.append((int(model.cmd.rdy), int(model.din.rdy), int(model.dout.val), int(model.busy)))
        moved = False
        if t_acc is not None and t_idle is None and not model.busy:
            t_idle = t
        if vc and model.cmd.rdy:
            if accepts is not None:
                accepts.append(t)
            if ci == prog.compute_index:
                t_acc = t
            ci += 1
            moved = True
        if vd and model.din.rdy:
            di += 1
            moved = True
        if model.dout.val and model.dout.rdy:
            out.append(from_word(int(model.dout.msg), sb))
            t_last = t
            moved = True
        idle = 0 if moved else idle + 1
        if idle > idle_limit:
            raise SimulationHang(f"engine made no progress for {idle_limit} cycles at cycle {t}: "
                                 f"{ci}/{len(cmds)} commands, {di}/{len(din)} data in, "
                                 f"{len(out)}/{n_out} data out; trace: {model.line_trace()}")
        model.sim_tick()
        t += 1
    timing = dict(total_cycles=t)
    if t_acc is not None:
        timing["cycles"] = (t_last - t_acc + 1) if t_last is not None else 0
        timing["compute_cycles"] = ((t_idle if t_idle is not None else t) - t_acc)
    return out, timing


def run_op(level: str, cfg, op: str, *, stall=(0.0, 0.0, 0.0), stall_seed=0, check=False, **case) -> dict:
    """Run one operation; return its result arrays, ``bits`` and (timed levels) ``cycles``,
    ``compute_cycles``, ``macs``.  With ``check``, compare against the golden model and raise
    ``AssertionError`` on any difference."""
    if level not in LEVELS:
        raise CaseError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    case = validate_case(cfg, op, case)
    prog = program.build(cfg, op, case)
    model = get_model(level, cfg)
    elements, timing = drive(model, cfg, prog, stall=stall, seed=stall_seed)
    res = prog.unpack(elements)
    res["bits"] = result_bits(cfg, op)
    if level in TIMED:
        res["cycles"] = timing["cycles"]
        res["compute_cycles"] = timing["compute_cycles"]
        res["macs"] = program.useful_macs(op, case)
        res["total_cycles"] = timing["total_cycles"]
    if check:
        want = golden_op(cfg, op, case)
        for key, val in want.items():
            got = res[key]
            if got.shape != val.shape or not np.array_equal(got, val):
                bad = np.argwhere(got != val) if got.shape == val.shape else None
                raise AssertionError(f"{level} {op} {key} differs from golden"
                                     + (f" at {len(bad)} element(s), first {tuple(bad[0])}: got "
                                        f"{got[tuple(bad[0])]}, want {val[tuple(bad[0])]}" if bad is not None
                                        else f": shape {got.shape} vs {val.shape}"))
    return res


def random_case(cfg, op: str, rng: np.random.Generator, *, n=1, c=3, k=3, h=6, w=6, r=3, s=3, stride=1,
                pad=1, mode="nearest", extremes=0.1) -> dict:
    """A random valid case (values drawn over each format, a fraction ``extremes`` at its min/max)."""
    def vals(shape, bits):
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        a = rng.integers(lo, hi + 1, size=shape)
        m = rng.random(shape)
        a = np.where(m < extremes / 2, lo, np.where(m < extremes, hi, a))
        return a.astype(np.int64)
    case = dict(mode=mode, seed=int(rng.integers(0, 2**32)), tensor_id=int(rng.integers(0, 200)))
    if op in ("fwd", "bwd_data", "bwd_weight"):
        ho = (h + 2 * pad - r) // stride + 1
        wo = (w + 2 * pad - s) // stride + 1
        case.update(stride=stride, pad=pad, shift=int(rng.integers(0, 12)))
        x = vals((n, c, h, w), cfg.act_bits)
        if op == "fwd":
            case.update(x=x, w=vals((k, c, r, s), cfg.weight_bits),
                        b=rng.integers(-1000, 1000, size=k).astype(np.int64), relu=int(rng.integers(0, 2)))
        elif op == "bwd_data":
            case.update(x=x, w=vals((k, c, r, s), cfg.weight_bits), dy=vals((n, k, ho, wo), cfg.grad_bits),
                        relu=int(rng.integers(0, 2)))
        else:
            case.update(x=x, dy=vals((n, k, ho, wo), cfg.grad_bits), w_shape=np.array([k, c, r, s]),
                        bias_shift=int(rng.integers(0, 8)))
    elif op == "pool_fwd":
        case.update(x=vals((n, c, h, w), cfg.act_bits), k=2)
    elif op == "pool_bwd":
        case.update(dy=vals((n, c, h // 2, w // 2), cfg.grad_bits),
                    argmax=rng.integers(0, 4, size=(n, c, h // 2, w // 2)).astype(np.int64), k=2)
    elif op == "update":
        case.update(w=vals((k, c, r, s), cfg.weight_bits), dw=vals((k, c, r, s), cfg.grad_bits),
                    lr_shift=int(rng.integers(0, 6)))
    else:
        raise CaseError(f"unknown operation {op!r}")
    return case
