"""``pymtl-fp fuzz``: a property-based campaign against one unit at one level, with a time budget.

Runs the target's property (``tb/fuzz/targets.py``) under the ``campaign`` Hypothesis profile in
``--workers`` processes until ``--minutes`` (or ``--seconds``) run out, then prints a summary:
examples run, examples/minute, distinct shapes/ops covered, and each failure with its shrunk
example and the command that replays it.  Exit status 1 when anything failed.

``--inject-bug NAME`` runs the campaign against a copy of the RTL with a known bug (the
mutation check: the campaign must fail).  ``--replay CASE`` runs one case file once instead.
``--list`` shows the targets, their levels and their injectable bugs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pymtl_fp.cli.errors import UserError
from pymtl_fp.levels import LEVELS

HELP = "property-based fuzzing campaign with a time budget (engine, link, cluster, requant)"


def add_arguments(parser):
    from pymtl_fp.tb.fuzz.targets import names

    parser.add_argument("--target", choices=names(), help="unit to fuzz")
    parser.add_argument("--level", choices=LEVELS, default="rtl", help="simulation level (default rtl)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, help="time budget in minutes (default 2)")
    budget.add_argument("--seconds", type=float, help="time budget in seconds (for quick runs and tests)")
    parser.add_argument("--max-examples", type=int, metavar="N",
                        help="stop after N examples in all (the time budget, then, is a safety net); a "
                             "campaign bound by examples runs the same cases whatever the machine's speed")
    parser.add_argument("--workers", type=int, default=1, help="parallel worker processes (default 1)")
    parser.add_argument("--seed", type=int, help="base random seed (default: random, printed)")
    parser.add_argument("--out", default="fuzz-results",
                        help="directory for reproducers of failures (default ./fuzz-results)")
    parser.add_argument("--inject-bug", metavar="NAME",
                        help="fuzz a copy of the RTL with this known bug (mutation check; see --list)")
    parser.add_argument("--shrink-seconds", type=float, default=120.0,
                        help="extra time allowed to shrink a failure after the budget (default 120)")
    parser.add_argument("--json", metavar="FILE", help="also write the summary as JSON")
    parser.add_argument("--replay", metavar="CASE",
                        help="run the property once on a case file written by a campaign, and exit")
    parser.add_argument("--list", action="store_true", help="list targets, levels and injectable bugs")


def _list() -> int:
    from pymtl_fp.tb.fuzz import targets

    for name in targets.names():
        t = targets.get(name)
        print(f"{name:<9} {t.description}")
        print(f"{'':<9} levels: {', '.join(t.levels)}")
        for m in t.mutations.values():
            print(f"{'':<9} --inject-bug {m.name}: {m.description}")
    return 0


def main(args) -> int:
    from pymtl_fp.tb.fuzz import campaign, targets

    if args.list:
        return _list()
    if not args.target:
        raise UserError("--target is required (or --list)")
    if args.replay:
        try:
            ok, msg = campaign.replay(args.target, args.level, args.replay, args.inject_bug)
        except targets.TargetUnavailable as exc:
            raise UserError(str(exc)) from None
        except ValueError as exc:
            raise UserError(str(exc)) from None
        print(("PASS: " if ok else "FAIL: ") + msg)
        return 0 if ok else 1
    if args.workers < 1:
        raise UserError("--workers must be at least 1")
    seconds = args.seconds if args.seconds is not None else 60.0 * (args.minutes if args.minutes is not None else 2.0)
    if not (seconds > 0 and seconds != float("inf")):
        raise UserError(f"the time budget must be a positive number of seconds, got {seconds}")
    if args.max_examples is not None and args.max_examples < 1:
        raise UserError(f"--max-examples must be >= 1, got {args.max_examples}")
    cfg = campaign.CampaignConfig(
        target=args.target, level=args.level, seconds=seconds, workers=args.workers, seed=args.seed,
        out_dir=str(Path(args.out).resolve()), inject_bug=args.inject_bug,
        shrink_seconds=args.shrink_seconds, max_examples=args.max_examples)
    try:
        summary = campaign.run_campaign(cfg, stream=sys.stderr)
    except targets.TargetUnavailable as exc:
        raise UserError(str(exc)) from None
    print(summary.report())
    if args.json:
        Path(args.json).write_text(json.dumps(summary.to_json(), indent=1) + "\n")
    return 0 if summary.ok else 1
