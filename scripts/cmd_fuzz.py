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
import math
import os
import sys
from pathlib import Path

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError
from pymtl_fp.levels import LEVELS

#: the time budget's range: below a second the workers do not start; a week is a long campaign
MIN_SECONDS = 1.0
MAX_SECONDS = 7 * 86400.0
#: most workers even with --force-workers
MAX_WORKERS = 256
#: most examples a campaign may be bound to (a billion: months at the fastest target's rate)
MAX_EXAMPLES = 10**9

HELP = "property-based fuzzing campaign with a time budget (engine, link, cluster, requant, residual)"


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
    parser.add_argument("--workers", type=int, default=1,
                        help="parallel worker processes (default 1; at most the cores this process may use)")
    parser.add_argument("--force-workers", action="store_true",
                        help="allow more --workers than cores (they then share the cores and run slower each)")
    parser.add_argument("--scheduler", default="local", metavar="local|processes|ADDRESS",
                        help="where the workers run: local (default: a Dask cluster of --workers processes "
                             "started by the command), processes (plain local processes), or a running Dask "
                             "scheduler's address (tcp://host:8786: the campaign uses its workers)")
    parser.add_argument("--db", metavar="redis://HOST:PORT/N|DIR",
                        help="example database: a Redis URL (shared by every machine: failures found anywhere "
                             "replay first everywhere) or a directory (default: $PYMTL_FP_HYPOTHESIS_DB or "
                             "~/.cache/pymtl-fp/hypothesis)")
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


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _check_database(db: str | None) -> tuple:
    """``(db_path, db_url)``.  A directory database must be writable (a failure found once is
    replayed first next time only if it was saved: Hypothesis ignores an unwritable one
    silently); a Redis database must answer."""
    from pymtl_fp.tb.hypothesis_profiles import campaign_db_path

    if db is not None and db.startswith(("redis://", "rediss://", "unix://")):
        import redis

        try:
            redis.Redis.from_url(db, socket_connect_timeout=3, socket_timeout=3).ping()
        except (redis.RedisError, ValueError, OSError) as exc:
            raise UserError(f"--db {db}: no Redis server answers there ({exc})") from None
        return None, db
    if db is not None:
        return str(validate.output_dir(db, "--db").resolve()), None
    validate.output_dir(campaign_db_path(), "example database (set $PYMTL_FP_HYPOTHESIS_DB or --db to move it)")
    return None, None


#: options of a campaign that a replay does not take, with their defaults
CAMPAIGN_OPTIONS = {"--minutes": None, "--seconds": None, "--max-examples": None, "--workers": 1,
                    "--force-workers": False, "--scheduler": "local", "--db": None, "--seed": None,
                    "--out": "fuzz-results", "--shrink-seconds": 120.0, "--json": None}


def _campaign_options(args) -> list:
    """The campaign options given (set to other than their defaults) beside ``--replay``."""
    return [opt for opt, default in CAMPAIGN_OPTIONS.items()
            if getattr(args, opt[2:].replace("-", "_")) != default]


def main(args) -> int:
    from pymtl_fp.tb.fuzz import campaign, targets

    if args.list:
        return _list()
    if not args.target:
        raise UserError("--target is required (or --list)")
    if args.inject_bug == "":
        raise UserError("--inject-bug: empty name; see --list for the injectable bugs")
    if args.replay is not None:
        given = _campaign_options(args)
        if given:
            raise UserError(f"{', '.join(given)}: option(s) of a campaign; --replay runs one case once "
                            "(give --target, --level, --inject-bug and --replay only)")
        try:
            ok, msg = campaign.replay(args.target, args.level, args.replay, args.inject_bug)
        except targets.TargetUnavailable as exc:
            raise UserError(str(exc)) from None
        except ValueError as exc:
            raise UserError(str(exc)) from None
        print(("PASS: " if ok else "FAIL: ") + msg)
        return 0 if ok else 1
    cores = _cores()
    validate.integer(args.workers, "--workers", 1, MAX_WORKERS if args.force_workers else None)
    if args.workers > cores and not args.force_workers:
        raise UserError(f"--workers {args.workers}: this process may use {cores} cores; give at most {cores} "
                        "(or --force-workers)")
    seconds = args.seconds if args.seconds is not None else 60.0 * (args.minutes if args.minutes is not None else 2.0)
    option = "--seconds" if args.seconds is not None else "--minutes"
    if not (math.isfinite(seconds) and MIN_SECONDS <= seconds <= MAX_SECONDS):
        raise UserError(f"{option}: the time budget must be a finite {MIN_SECONDS:g}..{MAX_SECONDS:g} seconds, "
                        f"got {seconds:g} s")
    validate.integer(args.max_examples, "--max-examples", 1, MAX_EXAMPLES)
    validate.number(args.shrink_seconds, "--shrink-seconds", 0, MAX_SECONDS)
    validate.integer(args.seed, "--seed", 0, 2**32 - 1)
    out_dir = validate.output_dir(args.out, "--out")
    validate.output_file(args.json, "--json", ".json")
    db_path, db_url = _check_database(args.db)
    if args.scheduler not in ("local", "processes"):
        validate.dask_address(args.scheduler, others="local, processes")
    cfg = campaign.CampaignConfig(
        target=args.target, level=args.level, seconds=seconds, workers=args.workers, seed=args.seed,
        out_dir=str(out_dir.resolve()), inject_bug=args.inject_bug,
        shrink_seconds=args.shrink_seconds, max_examples=args.max_examples, db_path=db_path, db_url=db_url)
    try:
        if args.scheduler == "processes":
            summary = campaign.run_campaign(cfg, stream=sys.stderr)
        else:
            from pymtl_fp.distributed import SchedulerError
            from pymtl_fp.tb.fuzz import dask_campaign

            try:
                summary = dask_campaign.run_campaign_dask(cfg, args.scheduler, stream=sys.stderr)
            except SchedulerError as exc:
                raise UserError(str(exc)) from None
    except targets.TargetUnavailable as exc:
        raise UserError(str(exc)) from None
    except ImportError as exc:
        raise UserError(f"--scheduler {args.scheduler}: {exc}") from None
    print(summary.report())
    if args.json:
        Path(args.json).write_text(json.dumps(summary.to_json(), indent=1) + "\n")
    return 0 if summary.ok else 1
