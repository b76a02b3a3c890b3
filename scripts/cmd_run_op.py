"""``pymtl-fp run-op``: run one engine operation from a case file at a chosen level.

    pymtl-fp run-op --level fl|cl|rtl|verilator --config tiny|small|medium --op OP \
                    --case IN.npz --out OUT.npz [--stall P_CMD P_DIN P_DOUT] [--stall-seed N]
    pymtl-fp run-op --make-case OUT.npz --op OP [--config ...] [--seed N] [--mode nearest|stochastic]

The case is validated before any simulation (missing key, wrong dtype, value outside its
format, shape beyond the buffers: one-line error, exit 1).  OUT.npz holds the result arrays,
``bits`` and, for timed levels, ``cycles`` (compute command accepted -> last output word),
``compute_cycles`` and ``macs`` (useful multiply-accumulates); timed levels: cl, rtl, verilator.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError
from pymtl_fp.levels import LEVELS
from pymtl_fp.timing import COMPUTE_OPS as OPS

#: highest stall probability: at 0.95 a transfer waits 20 cycles on average; above, a run of a
#: few thousand transfers can outlast any watchdog a real deadlock should trip
MAX_STALL = 0.95

HELP = "run one engine operation (fwd, bwd_data, bwd_weight, pool_fwd, pool_bwd, update) from a case file"


def add_arguments(parser):
    parser.add_argument("--level", choices=LEVELS, default="fl")
    parser.add_argument("--config", default="tiny", help="engine preset: tiny (2x2), small (4x4), medium (8x8)")
    parser.add_argument("--op", choices=OPS, required=True)
    parser.add_argument("--pipeline", metavar="PARTS",
                        help="build the engine with pipelines: requant, mac, addr, cmd (comma-separated), all or none, "
                             "and dsp (the mac pipeline accumulating in the DSPs) (as translate --pipeline; default all, "
                             "the presets')")
    parser.add_argument("--case", type=Path, help="input case (.npz); keys per operation: docs/engine.md")
    parser.add_argument("--out", type=Path, help="where to write the results (.npz)")
    parser.add_argument("--stall", type=float, nargs=3, default=(0.0, 0.0, 0.0), metavar=("P_CMD", "P_DIN", "P_DOUT"),
                        help="stall probabilities of the command source, data source and data sink")
    parser.add_argument("--stall-seed", type=int, default=0)
    parser.add_argument("--check", action="store_true", help="also compare with the golden model")
    parser.add_argument("--make-case", type=Path, metavar="OUT.npz",
                        help="write a random valid case for --op/--config to this file and exit")
    parser.add_argument("--seed", type=int, default=1, help="random seed of --make-case")
    parser.add_argument("--mode", choices=("nearest", "stochastic"), default="nearest",
                        help="rounding mode of --make-case")
    parser.add_argument("--inject-bug", metavar="NAME",
                        help="run a copy of the RTL with a known bug (the fuzz campaign's mutation check; "
                             "level rtl): replays a reproducer that `pymtl-fp fuzz --inject-bug` printed")


def _load_case(path: Path) -> dict:
    from pymtl_fp.documents import DocumentError, read_npz

    try:
        case = read_npz(path)
    except DocumentError as exc:
        raise UserError(f"--case {exc}") from None
    out = {}
    for k, v in case.items():
        if v.dtype.kind in "US":
            out[k] = str(v)
        elif v.ndim == 0:
            out[k] = v.item() if v.dtype.kind in "iub" else v
        else:
            out[k] = v
    return out


def _inject_bug(name: str, level: str) -> list:
    """Point the engine at a mutant copy of one RTL module (this process only; files untouched);
    returns the undo list of :func:`pymtl_fp.tb.fuzz.mutate.undo`."""
    from pymtl_fp.tb.fuzz import mutate
    from pymtl_fp.tb.fuzz.target_engine import MUTATIONS
    from pymtl_fp.verilate import build_dir

    if name not in MUTATIONS:
        raise UserError(f"unknown bug {name!r}; injectable: {', '.join(MUTATIONS)}")
    if level not in MUTATIONS[name].levels:
        raise UserError(f"bug {name!r} can be injected at level {', '.join(MUTATIONS[name].levels)} only")
    undo = mutate.apply(MUTATIONS[name], build_dir("mutants"))
    print(f"note: running a MUTANT copy of the RTL with the bug {name!r}: "
          f"{MUTATIONS[name].description}", file=sys.stderr)
    return undo


#: options of a run (``--case``) and of ``--make-case``, with their defaults: each refuses the other's
RUN_OPTIONS = {"--case": None, "--out": None, "--level": "fl", "--stall": (0.0, 0.0, 0.0), "--stall-seed": 0,
               "--check": False, "--inject-bug": None}
MAKE_OPTIONS = {"--seed": 1, "--mode": "nearest"}


def _given(args, options: dict) -> list:
    """The options of ``options`` set to other than their defaults."""
    values = {opt: getattr(args, opt[2:].replace("-", "_")) for opt in options}
    return [opt for opt, v in values.items() if (tuple(v) if isinstance(v, list) else v) != options[opt]]


def main(args) -> int:
    from pymtl_fp.engine.cases import CaseError, validate_case
    from pymtl_fp.engine.config import preset
    from pymtl_fp.sim import SimulationHang
    from pymtl_fp.tb import engine_harness as eh

    try:
        cfg = preset(args.config)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    cfg = cfg.replace(**validate.pipelines(args.pipeline))
    for name, p in zip(("P_CMD", "P_DIN", "P_DOUT"), args.stall):
        validate.number(p, f"--stall {name}", 0.0, MAX_STALL)
    validate.integer(args.stall_seed, "--stall-seed", 0, 2**32 - 1)
    given = _given(args, RUN_OPTIONS if args.make_case else MAKE_OPTIONS)
    if given:
        raise UserError(f"{', '.join(given)}: option(s) of " + ("a run; --make-case writes a random case and exits"
                                                                 if args.make_case else "--make-case"))
    if args.make_case:
        validate.integer(args.seed, "--seed", 0, 2**32 - 1)
        validate.output_file(args.make_case, "--make-case", ".npz")
        rng = np.random.default_rng(args.seed)
        case = eh.random_case(cfg, args.op, rng, mode=args.mode)
        np.savez(args.make_case, **{k: np.asarray(v) for k, v in case.items()})
        print(f"wrote a random {args.op} case for config {args.config} to {args.make_case} "
              f"(keys: {', '.join(sorted(case))})")
        return 0
    if args.case is None or args.out is None:
        raise UserError("--case and --out are required (or use --make-case OUT.npz)")
    validate.output_file(args.out, "--out", ".npz")
    case = _load_case(args.case)
    try:
        validate_case(cfg, args.op, case)
    except CaseError as exc:
        raise UserError(f"bad {args.op} case {args.case}: {exc}") from None
    undo = _inject_bug(args.inject_bug, args.level) if args.inject_bug is not None else None
    start = time.perf_counter()
    try:
        if undo is not None:
            eh.drop_model(args.level, cfg)  # never reuse a cached model of the real RTL
        res = eh.run_op(args.level, cfg, args.op, stall=tuple(args.stall), stall_seed=args.stall_seed,
                        check=args.check, **case)
    except AssertionError as exc:
        raise UserError(f"mismatch with the golden model: {exc}") from None
    except SimulationHang as exc:
        raise UserError(str(exc).splitlines()[0]) from None
    finally:
        if undo is not None:
            from pymtl_fp.tb.fuzz import mutate

            mutate.undo(undo)
            eh.drop_model(args.level, cfg)  # nor leave the mutant cached for later runs
    seconds = time.perf_counter() - start
    np.savez(args.out, **{k: np.asarray(v) for k, v in res.items()})
    shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in res.items() if isinstance(v, np.ndarray))
    timing = ""
    if "cycles" in res:
        util = res["macs"] / (cfg.macs_per_cycle * res["compute_cycles"]) if res["compute_cycles"] else 0.0
        timing = (f"; {res['cycles']} cycles ({res['compute_cycles']} computing), {res['macs']} useful MACs, "
                  f"utilization {util:.1%}")
    from pymtl_fp.clock import pipelines_key

    pipes = f" with pipelines {pipelines_key(cfg)}" + (" (mac in the DSPs)" if cfg.dsp_mac else "")
    print(f"{args.op} at {args.level} on {args.config}{pipes}: {shapes}; saturated to {res['bits']} bits{timing}; "
          f"{seconds:.1f} s -> {args.out}" + (" (golden: equal)" if args.check else ""))
    return 0
