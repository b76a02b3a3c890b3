"""Run one engine operation at any level: validate the case, load, compute, store, compare.

:func:`run_op` ``(level, cfg, op, **case)`` validates the case *before* any simulation
(:func:`validate_case`: missing or unknown keys, wrong dtypes/shapes, values outside their
formats, shapes beyond the buffers or the command fields -> one :class:`CaseError`), builds the
engine program (:mod:`pymtl_fp.engine.program`), drives the engine's three streams with random
stalls (the per-cycle stall decision is :func:`pymtl_fp.tb.stream.stall_pattern`, a pure function of
(seed, cycle), as in :class:`pymtl_fp.tb.stream.StallSource`/``StallSink``) and returns the result arrays.
Timed levels (``cl``, ``rtl``, ``verilator``) also report ``cycles`` (compute command accepted ->
last output word), ``compute_cycles`` (compute command accepted -> engine idle again), ``macs``
(useful multiply-accumulates) and ``total_cycles`` (the whole program: loads, compute, stores).
An engine with a command register (``cfg.pipelined_cmd``) is offered a command with ``ovl = 0``
only when it is idle (``busy`` low; the same cycles as offering it at once to an engine without
the register, which accepts it only then), so that a compute command's cycles are measured from
its handshake as on the others: ``cmd_latency`` more (``drive(..., eager=True)`` offers every
command at once instead, and then reports only ``total_cycles``).

Levels: ``fl`` (:class:`EngineFL`), ``rtl`` (:class:`EngineRTL` simulated by PyMTL3),
``verilator`` (the same RTL translated and imported), ``cl`` (:class:`EngineCL`: golden values
at the RTL's cycles, from :mod:`pymtl_fp.timing`).  Elaborated models are cached per (level,
config): many cases run through one build.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.cases import CaseError, golden_op, result_bits, validate_case
from pymtl_fp.levels import LEVELS
from pymtl_fp.levels import TIMED_LEVELS as TIMED
from pymtl_fp.sim import SimulationHang, stall_pattern
from pymtl_fp.sim_passes import default_passes

OPS = tuple(msgs.OPS)

def assert_results(prog, out, want: dict) -> None:
    """The named results of ``prog`` in the output stream ``out`` equal ``want`` exactly."""
    got = prog.unpack(out)
    for key, val in want.items():
        assert np.array_equal(got[key], val), key


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
    from pymtl_fp.engine.registry import engine_class

    if level == "verilator":
        from pymtl_fp.verilate import translate_import
        m = translate_import(engine_class(level)(cfg), cfg.module_name(), params=cfg.params())
    else:
        m = engine_class(level)(cfg)
        m.elaborate()
        m.apply(default_passes())
    _MODELS[key] = m
    return m


def drive(model, cfg, prog, *, stall=(0.0, 0.0, 0.0), seed=0, max_cycles=2_000_000, idle_limit=20_000,
          trace: list | None = None, accepts: list | None = None, eager: bool = False):
    """Run ``prog`` through ``model``; return ``(out_elements, timing dict)``.

    The program's elements travel ``cfg.stream_lanes`` per beat (:func:`program.din_beats`,
    :func:`program.dout_elements`; a non-zero surplus lane in a STORE's last beat raises
    ``AssertionError``).  ``stall`` = stall probabilities of (cmd source, din source, dout sink),
    per beat; their patterns are seeded by ``seed`` (three independent streams).  ``trace``, if
    given, receives the ``(cmd.rdy, din.rdy, dout.val, busy)`` handshake signals of every cycle;
    ``accepts``, if given, the cycle in which each command was accepted.  With a command register
    (``cfg.pipelined_cmd``) and not ``eager``, a command with ``ovl = 0`` waits for ``busy`` low
    before it is offered."""
    DataT = msgs.data_type(cfg)
    pc = stall_pattern(seed * 3 + 0, stall[0])
    pd = stall_pattern(seed * 3 + 1, stall[1])
    po = stall_pattern(seed * 3 + 2, stall[2])
    cmds, din = prog.cmds, [DataT(w) for w in program.din_beats(prog, cfg)]
    n_out = program.dout_beat_count(prog, cfg)
    model.sim_reset()
    ci = di = 0
    out = []
    t = 0
    t_acc = t_idle = t_last = None
    idle = 0
    hold_serial = cfg.pipelined_cmd and not eager
    while ci < len(cmds) or len(out) < n_out:
        if t >= max_cycles:
            raise SimulationHang(f"engine not done after {max_cycles} cycles: {ci}/{len(cmds)} commands, "
                                 f"{di}/{len(din)} data-in beats, {len(out)}/{n_out} data-out beats")
        vc = ci < len(cmds) and not next(pc)
        if vc and hold_serial and not cmds[ci].ovl and model.busy:
            vc = False
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
            out.append(int(model.dout.msg))
            t_last = t
            moved = True
        idle = 0 if moved else idle + 1
        if idle > idle_limit:
            raise SimulationHang(f"engine made no progress for {idle_limit} cycles at cycle {t}: "
                                 f"{ci}/{len(cmds)} commands, {di}/{len(din)} data-in beats, "
                                 f"{len(out)}/{n_out} data-out beats; trace: {model.line_trace()}")
        model.sim_tick()
        t += 1
    try:
        out = program.dout_elements(prog, cfg, out)
    except ValueError as exc:
        raise AssertionError(f"dout: {exc}") from None
    timing = dict(total_cycles=t)
    if t_acc is not None and not (eager and cfg.pipelined_cmd):
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


def handshake_trace(level: str, cfg, op: str, *, stall=(0.0, 0.0, 0.0), stall_seed=0, max_cycles=200_000,
                    eager=False, **case) -> tuple[list, list]:
    """Drive ``op`` through the engine of ``level`` with :func:`drive` (same stall patterns);
    return ``(per-cycle (cmd.rdy, din.rdy, dout.val, busy) tuples, received elements)``, so two
    levels can be compared cycle by cycle (``eager``: see :func:`drive`)."""
    case = validate_case(cfg, op, case)
    prog = program.build(cfg, op, case)
    trace: list = []
    out, _ = drive(get_model(level, cfg), cfg, prog, stall=stall, seed=stall_seed, max_cycles=max_cycles,
                   trace=trace, eager=eager)
    return trace, out

