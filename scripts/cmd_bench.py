"""``pymtl-fp bench TARGET``: benchmarks that print measured figures (never pass/fail on time).

Each target lives in ``scripts/bench_<target>.py`` (``-`` in the name becomes ``_``) with ``HELP``, ``add_arguments(parser)`` and
``main(args) -> int``; a target whose module is missing says so and exits 2.
"""

from __future__ import annotations

import importlib
import sys

HELP = "benchmarks that print measured figures: engine, engine-cl, link"
TARGETS = {"engine": "engine FL/RTL", "engine-cl": "engine CL and timing model",
           "link": "FPGA-to-FPGA link"}


def _load(target):
    modname = f"pymtl_fp.cli.bench_{target.replace('-', '_')}"
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name == modname:
            return None
        raise


def add_arguments(parser):
    sub = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    for target, owner in TARGETS.items():
        mod = _load(target)
        if mod is None:
            p = sub.add_parser(target, help=f"(not implemented yet: {owner})")
        else:
            p = sub.add_parser(target, help=mod.HELP, description=mod.HELP)
            mod.add_arguments(p)
        p.set_defaults(_bench_module=mod, _bench_owner=owner)


def main(args) -> int:
    mod = args._bench_module
    if mod is None:
        print(f"pymtl-fp bench {args.target}: not implemented yet (arrives with the "
              f"{args._bench_owner} work); nothing was run.", file=sys.stderr)
        return 2
    return int(mod.main(args) or 0)
