"""``pymtl-fp bench engine``: cycles, useful MACs and MAC utilization of every engine operation
on a fixed VGG-like layer, and simulation speed of PyMTL3 vs Verilator, measured in one run.

The figures are printed, never asserted.  Utilization = useful MACs / (rows*cols*compute
cycles), compute cycles counted from the command's acceptance until the engine is idle again
(loads and stores excluded; ``cycles`` includes the stores of the results).  Speed = simulated
cycles (whole program: loads, compute, stores) per wall-clock second.
"""

from __future__ import annotations

import time

import numpy as np

from pymtl_fp.cli import validate
from pymtl_fp.timing import COMPUTE_OPS as OPS

HELP = "engine: RTL cycles, useful MACs, utilization per operation; PyMTL3 vs Verilator speed"


#: bounds of the benchmark layer, checked before any array is drawn (the presets' buffers hold far
#: less: the exact fit is then checked by the case validation)
MAX_CHANNELS = 1024
MAX_SIZE = 1024
MAX_STREAM = 64


def add_arguments(parser):
    parser.add_argument("--config", default="small", help="engine preset (default: small, 4x4)")
    parser.add_argument("--channels", type=int, default=8, help="C = K of the layer (default 8)")
    parser.add_argument("--size", type=int, default=8, help="H = W of the layer (default 8)")
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated operations")
    parser.add_argument("--no-pymtl", action="store_true", help="skip the (slow) PyMTL3 simulation")
    parser.add_argument("--stream-lanes", type=int, metavar="E",
                        help="elements per din/dout beat (elaboration generic; default: the preset's, 1)")
    parser.add_argument("--drain-rows", type=int, metavar="DR",
                        help="dw rows the bwd_weight drain writes a cycle (default: the preset's, 1)")
    parser.add_argument("--pipeline", metavar="PARTS",
                        help="build the engine with pipelines: requant, mac, addr, cmd (comma-separated), all or none "
                             "(as translate --pipeline; default all, the presets')")
    parser.add_argument("--stream", type=int, default=8, metavar="M",
                        help="operations in the overlapped stream of the program_util figure (default 8)")
    parser.add_argument("--json", metavar="FILE.json",
                        help="write compute_util / program_util per layer and op (and VGG-16's closed forms)")


def layer_case(cfg, op, channels, size, rng):
    from pymtl_fp.tb.engine_harness import random_case

    return random_case(cfg, op, rng, n=1, c=channels, k=channels, h=size, w=size, r=3, s=3, stride=1,
                       pad=1, mode="stochastic")


def main(args) -> int:
    from pymtl_fp.cli.errors import UserError
    from pymtl_fp.engine.cases import CaseError, validate_case
    from pymtl_fp.engine.config import preset
    from pymtl_fp.tb import engine_harness as eh

    try:
        cfg = preset(args.config)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    for opt, field in (("--stream-lanes", "stream_lanes"), ("--drain-rows", "drain_rows")):
        value = getattr(args, field)
        if value is not None:
            validate.integer(value, opt, 1, cfg.P)
            try:
                cfg = cfg.replace(**{field: value})
            except ValueError as exc:
                raise UserError(f"{opt} {value}: {exc}") from None
    cfg = cfg.replace(**validate.pipelines(args.pipeline))
    ops = args.ops.split(",")
    if not ops:
        raise UserError(f"--ops: no operation given; choose from {', '.join(OPS)}")
    bad = [o for o in ops if o not in OPS]
    if bad:
        raise UserError(f"--ops {args.ops}: unknown operation(s) {', '.join(map(repr, bad))}; "
                        f"choose from {', '.join(OPS)}")
    validate.integer(args.channels, "--channels", 1, MAX_CHANNELS)
    validate.integer(args.size, "--size", 1, MAX_SIZE)
    validate.integer(args.stream, "--stream", 1, MAX_STREAM)
    validate.output_file(args.json, "--json", ".json")
    rng = np.random.default_rng(2024)
    cases = {op: layer_case(cfg, op, args.channels, args.size, rng) for op in ops}
    for op, case in cases.items():  # every case must fit before anything is simulated
        try:
            validate_case(cfg, op, case)
        except CaseError as exc:
            raise UserError(f"the benchmark layer does not fit config {args.config} for {op}: {exc}") from None
    levels = ["verilator"] + ([] if args.no_pymtl else ["rtl"])
    from pymtl_fp.clock import pipelines_key

    print(f"engine {args.config} ({cfg.rows}x{cfg.cols} MACs, {cfg.act_bits}/{cfg.weight_bits}/"
          f"{cfg.grad_bits}-bit act/weight/grad, {cfg.acc_bits}-bit accumulators); layer N=1, "
          f"C=K={args.channels}, {args.size}x{args.size}, 3x3, stride 1, pad 1, stochastic rounding"
          + (f"; pipelines: {pipelines_key(cfg)}{',dsp' if cfg.dsp_mac else ''} ({cfg.wb_latency} cycles more per "
             f"compute command"
             + (f", {cfg.cmd_latency} per command offered to an idle engine" if cfg.cmd_latency else "") + ")"
             if cfg.wb_latency or cfg.cmd_latency else ""))
    t0 = time.perf_counter()
    eh.get_model("verilator", cfg)
    print(f"Verilator build (or cache hit): {time.perf_counter() - t0:.1f} s")
    if not args.no_pymtl:
        t0 = time.perf_counter()
        eh.get_model("rtl", cfg)
        print(f"PyMTL3 elaboration: {time.perf_counter() - t0:.1f} s")
    head = (f"{'op':<11}{'compute':>9}{'cycles':>8}{'useful MACs':>13}{'util':>8}{'total':>8}"
            f"{'PyMTL3 c/s':>12}{'Verilator c/s':>15}{'ratio':>8}")
    print(head)
    print("-" * len(head))
    for op, case in cases.items():
        speed = {}
        res = None
        for level in levels:
            t0 = time.perf_counter()
            r = eh.run_op(level, cfg, op, check=True, **case)
            dt = time.perf_counter() - t0
            speed[level] = r["total_cycles"] / dt if dt > 0 else float("inf")
            if res is not None and (r["cycles"], r["compute_cycles"]) != (res["cycles"], res["compute_cycles"]):
                print(f"  note: {level} cycle count differs from verilator's")
            res = res or r
        util = res["macs"] / (cfg.macs_per_cycle * res["compute_cycles"]) if res["macs"] else float("nan")
        py = f"{speed['rtl']:>12.0f}" if "rtl" in speed else f"{'-':>12}"
        ratio = f"{speed['verilator'] / speed['rtl']:>7.1f}x" if "rtl" in speed else f"{'-':>8}"
        util_s = f"{util:>7.1%}" if res["macs"] else f"{'-':>7}"
        print(f"{op:<11}{res['compute_cycles']:>9}{res['cycles']:>8}{res['macs']:>13}{util_s:>8}"
              f"{res['total_cycles']:>8}{py}{speed['verilator']:>15.0f}{ratio}")
    print("compute = cycles from the command's acceptance until the engine is idle; cycles = until the "
          "last result word left the engine (includes the store); total = the whole program (loads, "
          "compute, stores); util = useful MACs / (rows*cols*compute); every result was checked "
          "against the golden model.")
    util_table(cfg, args)
    return 0


def util_table(cfg, args) -> None:
    """compute_util / program_util per layer and op (measured on the RTL via Verilator) and the
    closed forms of VGG-16 on 16x16 and 32x32 arrays; written to ``--json`` if given."""
    import json

    from pymtl_fp.cli.benchmarks.engine_utilization import closed_form_layers, measure

    figs = measure(cfg, "verilator", args.stream)
    print(f"\nutilization (RTL via Verilator; program = LOADs, compute, STOREs; overlapped: a stream of "
          f"{args.stream} operations; {cfg.stream_lanes} element(s) per stream beat, {cfg.drain_rows} dw "
          f"row(s) per drain cycle)")
    head = f"{'layer':<10}{'op':<12}{'mapping':<10}{'compute':>9}{'program':>9}{'overlapped':>12}"
    print(head)
    print("-" * len(head))
    for layer, ops in figs.items():
        for op, f in ops.items():
            print(f"{layer:<10}{op:<12}{f['mapping']:<10}{f['compute_util']:>9.1%}"
                  f"{f['program_util_serial']:>9.1%}{f['program_util']:>12.1%}")
    closed = {str(P): closed_form_layers(P) for P in (16, 32)}
    print("VGG-16 closed forms (compute_util, fwd / bwd_data / bwd_weight):")
    for name in closed["16"]:
        cells = []
        for P in ("16", "32"):
            row = closed[P][name]
            cells.append(f"{P}x{P}: " + " / ".join(f"{row[op]['compute_util']:.1%}" if op in row else "-"
                                                 for op in ("fwd", "bwd_data", "bwd_weight")))
        print(f"  {name:<10}{cells[0]:<36}{cells[1]}")
    if args.json:
        doc = dict(config=cfg.name, params=cfg.params(), stream=args.stream, measured=figs,
                   closed_form=closed)
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
        print(f"wrote {args.json}")
