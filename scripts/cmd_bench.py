"""``pymtl-fp bench TARGET``: benchmarks that print measured figures (never pass/fail on time).

Each target lives in ``scripts/benchmarks/<target>.py`` (:mod:`pymtl_fp.cli.benchmarks`; ``-`` in the name
becomes ``_``) with ``HELP``, ``add_arguments(parser)`` and ``main(args) -> int``.  A configuration the cluster
compiler refuses (``ClusterError``) is a one-line error, as in ``train``; the targets check their
options before any run (:mod:`pymtl_fp.cli.validate`).
"""

from __future__ import annotations

import importlib

HELP = ("benchmarks that print measured figures: engine, engine-cl, modes, bands, link, cluster, schedules, parallel, "
        "storage, weights, model, scaling, clock, epoch")
TARGETS = ("engine", "engine-cl", "modes", "bands", "link", "cluster", "schedules", "parallel", "storage", "weights",
           "model", "scaling", "clock", "epoch")


def _load(target):
    return importlib.import_module(f"pymtl_fp.cli.benchmarks.{target.replace('-', '_')}")


def add_arguments(parser):
    sub = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    for target in TARGETS:
        mod = _load(target)
        p = sub.add_parser(target, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_bench_module=mod)


def main(args) -> int:
    from pymtl_fp.cli.errors import UserError
    from pymtl_fp.cluster.config import ClusterError

    try:
        return int(args._bench_module.main(args) or 0)
    except ClusterError as exc:  # the cluster compiler refused a configuration the options made
        raise UserError(f"bench {args.target}: {exc}") from None
