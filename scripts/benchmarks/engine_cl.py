"""Engine cycle-level model and timing model vs the RTL: speed, accuracy and MAC utilization.

    python -m pymtl_fp.cli.benchmarks.engine_cl [--config small] [--ops fwd,...] [--no-pymtl] [--validate N]

Prints (figures only, nothing is asserted):

1. **speed**: the same program (loads, compute, stores of one operation on the VGG-like layer)
   simulated by the CL model, the RTL in PyMTL3 (Python) and the RTL through Verilator, all
   through the same stream driver (:func:`pymtl_fp.tb.engine_harness.drive`), in one run: simulated
   cycles per second and the ratios;
2. **accuracy and utilization**, for three layer shapes (small first layer, VGG-like, fully
   connected) and every operation: RTL cycles (Verilator), CL cycles, the closed form of
   :mod:`pymtl_fp.timing`, their errors, and MAC utilization = useful MACs / (P*P * compute);
3. the closed form's utilization of full-size layers (VGG-16 conv3_2, a VGG fc layer) on a
   16 x 16 array, far beyond what RTL simulation can run;
4. with ``--validate N``: N random cases per operation (random shapes and stalls) CL vs RTL,
   with the maximum relative cycle error measured.

:func:`bench` returns the figures as a dict, so ``pymtl-fp bench engine`` can call it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pymtl_fp.timing import COMPUTE_OPS as OPS
from pymtl_fp.timing import POOL_OPS

HELP = "engine CL vs RTL vs Verilator speed; timing model vs RTL cycles; MAC utilization per op"

#: name -> (n, c, k, h, w, r, s, stride, pad): three layer shapes that fit the ``small`` preset
SHAPES = {
    "small": (1, 3, 4, 6, 6, 3, 3, 1, 1),        # a first layer: 3 input channels on a 4-wide array
    "vgg-like": (1, 8, 8, 8, 8, 3, 3, 1, 1),     # 3x3, pad 1, channels a multiple of the array
    "fc": (2, 8, 8, 4, 4, 4, 4, 1, 0),           # fully connected: the kernel covers the input
}


def add_arguments(parser):
    parser.add_argument("--config", default="small", help="engine preset (default: small, 4x4)")
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated operations")
    parser.add_argument("--no-pymtl", action="store_true", help="skip the (slow) PyMTL3 RTL speed run")
    parser.add_argument("--speed-op", default="fwd", help="operation of the speed comparison (default fwd)")
    parser.add_argument("--validate", type=int, default=0, metavar="N",
                        help="also run N random cases per operation, CL vs RTL (Verilator), with stalls")


def layer_case(cfg, op, shape, rng):
    from pymtl_fp.tb.engine_harness import random_case

    n, c, k, h, w, r, s, stride, pad = SHAPES[shape]
    if op in POOL_OPS:
        h, w = h - h % 2, w - w % 2
    return random_case(cfg, op, rng, n=n, c=c, k=k, h=h, w=w, r=r, s=s, stride=stride, pad=pad,
                       mode="stochastic")


def _run(level, cfg, op, case, **kw):
    from pymtl_fp.tb.engine_harness import run_op

    return run_op(level, cfg, op, **kw, **case)


def speed(cfg, op="fwd", shape="vgg-like", pymtl=True, out=print) -> dict:
    """Simulated cycles per second of CL, PyMTL3 RTL and Verilator on the same program."""
    from pymtl_fp.tb.engine_harness import get_model

    case = layer_case(cfg, op, shape, np.random.default_rng(2024))
    levels = ["cl", "verilator"] + (["rtl"] if pymtl else [])
    setup = {}
    for lv in levels:
        t0 = time.perf_counter()
        get_model(lv, cfg)
        setup[lv] = time.perf_counter() - t0
    rate, cycles = {}, {}
    for lv in levels:
        reps = 5 if lv == "cl" else (2 if lv == "verilator" else 1)
        if lv != "rtl":
            _run(lv, cfg, op, case, check=True)  # checked warm-up (the PyMTL3 RTL run is checked below)
        t0 = time.perf_counter()
        for _ in range(reps):
            r = _run(lv, cfg, op, case, check=lv == "rtl")
        dt = (time.perf_counter() - t0) / reps
        cycles[lv] = r["total_cycles"]
        rate[lv] = r["total_cycles"] / dt
    out(f"speed: {op} on the {shape} layer, {cycles['cl']} cycles (loads, compute, stores), every level "
        f"checked against the golden model; same stream driver for all levels; timed runs unchecked "
        f"(except the single PyMTL3 RTL run, whose golden check is negligible next to it)")
    out(f"  {'level':<22}{'setup s':>9}{'cycles':>9}{'cycles/s':>12}{'CL speed-up':>13}")
    names = {"cl": "CL (PyMTL3)", "verilator": "RTL via Verilator", "rtl": "RTL in PyMTL3 (Python)"}
    for lv in levels:
        out(f"  {names[lv]:<22}{setup[lv]:>9.2f}{cycles[lv]:>9}{rate[lv]:>12.0f}"
            f"{rate['cl'] / rate[lv]:>12.1f}x")
    return dict(rate=rate, cycles=cycles, setup=setup)


def accuracy(cfg, ops=OPS, out=print) -> dict:
    """Per shape and op: RTL (Verilator) vs CL vs closed form; utilization."""
    from pymtl_fp.engine import program
    from pymtl_fp.engine.cases import validate_case

    rng = np.random.default_rng(7)
    rows = {}
    out(f"accuracy and utilization on {cfg.name or 'engine'} ({cfg.P}x{cfg.P}); cycles = compute command "
        f"accepted -> engine idle; total = whole program; err = |model - RTL| / RTL (RTL via Verilator, CL "
        f"and model: the larger of their errors); util = useful MACs / (P*P*compute); prog util = the same "
        f"over the whole program (one-element-per-cycle loads and stores, not overlapped with compute)")
    head = (f"  {'shape':<9}{'op':<11}{'RTL':>7}{'CL':>7}{'model':>7}{'err':>7}{'total RTL':>10}"
            f"{'total model':>12}{'err':>7}{'useful MACs':>12}{'util':>8}{'prog util':>10}")
    out(head)
    for shape in SHAPES:
        for op in ops:
            case = layer_case(cfg, op, shape, rng)
            rtl = _run("verilator", cfg, op, case, check=True)
            cl = _run("cl", cfg, op, case, check=True)
            model = program.op_timing(cfg, op, validate_case(cfg, op, case))
            err = abs(model["compute_cycles"] - rtl["compute_cycles"]) / rtl["compute_cycles"]
            err_cl = abs(cl["compute_cycles"] - rtl["compute_cycles"]) / rtl["compute_cycles"]
            err_t = abs(model["total_cycles"] - rtl["total_cycles"]) / rtl["total_cycles"]
            util = rtl["macs"] / (cfg.P * cfg.P * rtl["compute_cycles"]) if rtl["macs"] else None
            putil = rtl["macs"] / (cfg.P * cfg.P * rtl["total_cycles"]) if rtl["macs"] else None
            rows[(shape, op)] = dict(rtl=rtl["compute_cycles"], cl=cl["compute_cycles"],
                                     model=model["compute_cycles"], err=max(err, err_cl), total_rtl=rtl["total_cycles"],
                                     total_model=model["total_cycles"], err_total=err_t, macs=rtl["macs"], util=util,
                                     prog_util=putil)
            util_s = (f"{util:>8.1%}{putil:>10.1%}" if util is not None else f"{'-':>8}{'-':>10}")
            out(f"  {shape:<9}{op:<11}{rtl['compute_cycles']:>7}{cl['compute_cycles']:>7}{model['compute_cycles']:>7}"
                f"{max(err, err_cl):>7.1%}{rtl['total_cycles']:>10}{model['total_cycles']:>12}{err_t:>7.1%}"
                f"{rtl['macs']:>12}{util_s}")
    return rows


def full_size(out=print, P=16, E=1, drain_rows=1) -> dict:
    """Closed-form utilization of full-size layers on a P x P array (``E`` elements per stream
    beat; ``drain_rows``: its ``bwd_weight`` drain's dw rows per cycle)."""
    from pymtl_fp import timing

    layers = {
        "VGG-16 conv1_1 (C=3)": timing.ConvShape(n=1, c=3, k=64, h=224, w=224, r=3, s=3, stride=1, pad=1),
        "VGG-16 conv3_2": timing.ConvShape(n=1, c=256, k=256, h=56, w=56, r=3, s=3, stride=1, pad=1),
        "stride-2 3x3 conv": timing.ConvShape(n=1, c=128, k=128, h=56, w=56, r=3, s=3, stride=2, pad=1),
        "VGG fc7, batch 4": timing.ConvShape(n=4, c=4096, k=4096, h=1, w=1, r=1, s=1),
        "VGG fc7, batch 32": timing.ConvShape(n=32, c=4096, k=4096, h=1, w=1, r=1, s=1),
    }
    out(f"closed-form MAC utilization of full-size layers on a {P}x{P} array: compute command only, and "
        f"(prog) over the whole program with its loads and stores ({E} element(s) per cycle)")
    out(f"  {'layer':<24}" + "".join(f"{op:>12}" for op in timing.CONV_OPS)
        + "".join(f"{'prog ' + op:>16}" for op in timing.CONV_OPS))
    res = {}
    for name, shp in layers.items():
        u = {op: timing.conv_utilization(P, op, shp, drain_rows) for op in timing.CONV_OPS}
        macs = timing.useful_macs("fwd", shp.fields(P))
        pu = {op: macs / (P * P * timing.conv_program_cycles(P, op, shp, E, drain_rows)["total_cycles"])
              for op in timing.CONV_OPS}
        res[name] = dict(util=u, prog_util=pu)
        out(f"  {name:<24}" + "".join(f"{u[op]:>12.1%}" for op in timing.CONV_OPS)
            + "".join(f"{pu[op]:>16.1%}" for op in timing.CONV_OPS))
    return res


def validate(cfg, n, ops=OPS, out=print, seed=0) -> dict:
    """``n`` random cases per operation (shapes, values, rounding, stalls) CL vs RTL (Verilator)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    from pymtl_fp.tb.engine_strategies import engine_cases

    stats = {}
    for op in ops:
        errs = {"stall": [], "none": []}  # per run: the largest error of its three cycle counts

        @hseed(seed)
        @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(data=st.data())
        def one(data, op=op, errs=errs):  # (bound now: the loop moves on after one() returns)
            case, stall, sseed = data.draw(engine_cases(cfg, op))
            for stl in (stall, (0.0, 0.0, 0.0)):
                rtl = _run("verilator", cfg, op, case, stall=stl, stall_seed=sseed)
                cl = _run("cl", cfg, op, case, stall=stl, stall_seed=sseed)
                e = max(abs(cl[key] - rtl[key]) / max(1, rtl[key])
                        for key in ("total_cycles", "cycles", "compute_cycles"))
                errs["stall" if any(stl) else "none"].append(e)
                keys = [k for k in rtl if isinstance(rtl[k], np.ndarray)]
                assert all(np.array_equal(rtl[k], cl[k]) for k in keys), f"{op}: values differ"

        one()
        stats[op] = {k: (len(v), max(v) if v else 0.0) for k, v in errs.items()}
        out(f"  {op:<11} {stats[op]['none'][0]:>4} runs without stalls, max error {stats[op]['none'][1]:.2%}; "
            f"{stats[op]['stall'][0]:>4} with stalls, max error {stats[op]['stall'][1]:.2%}")
    return stats


def bench(config="small", ops=OPS, pymtl=True, speed_op="fwd", n_validate=0, out=print) -> dict:
    """Every figure of this benchmark, printed and returned."""
    from pymtl_fp.engine.config import preset

    cfg = preset(config)
    res = dict(speed=speed(cfg, speed_op, pymtl=pymtl, out=out))
    out("")
    res["accuracy"] = accuracy(cfg, ops, out=out)
    out("")
    res["full_size"] = full_size(out=out)
    if n_validate:
        out("")
        out(f"random cases, CL vs RTL (Verilator) on {config}, same stall patterns:")
        res["validate"] = validate(cfg, n_validate, ops, out=out)
    return res


def main(args) -> int:
    from pymtl_fp.cli import validate as check  # (this module has a validate() of its own)
    from pymtl_fp.cli.errors import UserError

    ops = args.ops.split(",")
    if not ops:
        raise UserError(f"--ops: no operation given; choose from {', '.join(OPS)}")
    bad = [o for o in ops + [args.speed_op] if o not in OPS]
    if bad:
        raise UserError(f"unknown operation(s) {', '.join(map(repr, bad))} (--ops, --speed-op); "
                        f"choose from {', '.join(OPS)}")
    check.integer(args.validate, "--validate", 0, 10_000)
    try:
        bench(args.config, ops, pymtl=not args.no_pymtl, speed_op=args.speed_op, n_validate=args.validate)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=HELP)
    add_arguments(p)
    raise SystemExit(main(p.parse_args()))
