"""A fuzz campaign: Hypothesis driven directly, in parallel worker processes, within a time budget.

:func:`run_campaign` starts ``workers`` processes (``spawn``; each with its own Verilator build
directory, ``$PYMTL_FP_BUILD_DIR/fuzz-w<i>``).  Each worker:

1. applies the injected mutation, if any (a copy of the RTL module, patched in that process only);
2. runs the target's property under ``@given(target.strategy(level))`` with the ``campaign``
   Hypothesis profile's settings, ``max_examples`` unbounded and the persistent example database
   (:func:`pymtl_fp.tb.hypothesis_profiles.campaign_db_path`) under a key per (target, level, mutation),
   so a failure found once is replayed first next time;
3. stops when the budget ends (a ``BaseException`` raised from inside the property, which
   Hypothesis does not treat as a failure), or when the property fails: Hypothesis then shrinks
   the failing case (for at most ``shrink_seconds`` beyond the budget; the last failing case seen
   is the smallest so far) and the worker writes a reproducer;
4. streams progress (examples, new coverage keys) to the parent.

The parent prints a progress line and returns a :class:`Summary`.  :func:`replay` runs one case
file once (what the printed reproducer command does).
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import os
import queue as queue_mod
import shlex
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

from pymtl_fp.tb.fuzz import cases as case_files
from pymtl_fp.tb.fuzz import mutate, targets

PROGRESS_EVERY = 1.0  # seconds between worker progress messages


class _Budget(BaseException):
    """Raised inside the property when the time budget is over (not a test failure)."""


@dataclasses.dataclass
class CampaignConfig:
    target: str
    level: str
    seconds: float
    workers: int = 1
    seed: int | None = None
    out_dir: str = "fuzz-results"
    inject_bug: str | None = None
    shrink_seconds: float = 120.0
    max_examples: int | None = None  #: stop after this many examples in all (None: the time budget only)
    build_base: str | None = None  #: default: $PYMTL_FP_BUILD_DIR or ~/.cache/pymtl-fp/build
    db_path: str | None = None  #: default: the campaign profile's database
    db_url: str | None = None  #: a Redis example database shared by every machine (``redis://host:port/n``)
    command: str = "pymtl-fp"  #: how to spell the CLI in printed commands

    def replay_prefix(self) -> str:
        parts = [self.command, "fuzz", "--target", self.target, "--level", self.level]
        if self.inject_bug:
            parts += ["--inject-bug", self.inject_bug]
        return " ".join(shlex.quote(p) for p in parts)


@dataclasses.dataclass
class Failure:
    worker: int
    error: str  #: the exception (type and message) of the smallest failing case
    case: dict
    description: str
    shrunk: bool  #: Hypothesis finished shrinking (False: shrink budget ran out)
    files: list
    commands: list
    notes: str = ""


@dataclasses.dataclass
class Summary:
    target: str
    level: str
    workers: int
    seed: int
    budget_seconds: float
    wall_seconds: float
    examples: int  #: property runs, shrinking runs included
    coverage: list
    failures: list
    inject_bug: str | None = None
    worker_errors: list = dataclasses.field(default_factory=list)
    shrink_runs: int = 0  #: property runs spent shrinking failures (part of ``examples``)
    scheduler: str = "processes"  #: local worker processes, or the Dask cluster that ran them
    restarts: int = 0  #: workers whose process died and whose work was run again
    @property
    def examples_per_minute(self) -> float:
        return self.examples / (self.wall_seconds / 60) if self.wall_seconds > 0 else 0.0

    @property
    def ok(self) -> bool:
        """No failure, no worker error, and at least one example ran (a campaign that checked
        nothing is no pass)."""
        return not self.failures and not self.worker_errors and self.examples > 0

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["examples_per_minute"] = round(self.examples_per_minute, 1)
        d["ok"] = self.ok
        for f in d["failures"]:
            f["case"] = json.loads(case_files.dumps(f["case"]))
            f["files"] = [str(p) for p in f["files"]]
        return d

    def report(self) -> str:
        lines = [
            f"fuzz {self.target} at {self.level}: {self.examples} examples"
            + (f" ({self.shrink_runs} of them shrinking)" if self.shrink_runs else "")
            + f" in {self.wall_seconds:.1f} s "
            f"({self.examples_per_minute:.0f} examples/minute) with {self.workers} worker(s) on {self.scheduler}, "
            f"seed {self.seed}"
            + (f", injected bug {self.inject_bug!r}" if self.inject_bug else ""),
            f"  coverage: {len(self.coverage)} distinct shapes/ops/configurations"
            + (f" (e.g. {', '.join(self.coverage[:4])})" if self.coverage else ""),
        ]
        for err in self.worker_errors:
            lines.append(f"  WORKER ERROR: {err}")
        if self.restarts:
            lines.append(f"  {self.restarts} worker(s) restarted after their process died (their examples re-run; "
                         "failures already found replay first from the example database)")
        if not self.failures:
            lines.append("  failures: none" if not self.worker_errors else "  failures: none found")
        for i, f in enumerate(self.failures, 1):
            how = "shrunk" if f.shrunk else "partly shrunk: shrink budget ran out"
            lines.append(f"  FAILURE {i} (worker {f.worker}, {how}):")
            lines.append(f"    error:   {f.error}")
            lines.append(f"    example: {f.description}")
            for p in f.files:
                lines.append(f"    file:    {p}")
            for j, c in enumerate(f.commands):
                lines.append(f"    {'replay:' if j == 0 else 'also:  '}  {c}")
            if f.notes:
                lines.append(f"    note:    {f.notes}")
        if self.examples == 0 and not self.failures:
            lines.append("  no example ran within the budget: nothing was checked")
        lines.append("  result: " + ("PASS" if self.ok else "FAIL"))
        return "\n".join(lines)


def _short_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    text = " ".join(text.split())
    return text[:600] + ("..." if len(text) > 600 else "")


def worker_env(wid: int, cfg: CampaignConfig) -> None:
    """The worker's own Verilator build directory, example database and Hypothesis storage folder
    (process environment)."""
    base = Path(cfg.build_base or os.environ.get("PYMTL_FP_BUILD_DIR")
                or Path.home() / ".cache" / "pymtl-fp" / "build").expanduser()
    os.environ["PYMTL_FP_BUILD_DIR"] = str(base / f"fuzz-w{wid}")
    if cfg.db_path:
        os.environ["PYMTL_FP_HYPOTHESIS_DB"] = cfg.db_path
    hypothesis_home(cfg)


def hypothesis_home(cfg: CampaignConfig) -> None:
    """Hypothesis keeps a storage folder of its own (``.hypothesis``, by default in the working
    directory, whatever the example database): put it inside the campaign's output folder."""
    from hypothesis.configuration import set_hypothesis_home_dir

    home = Path(cfg.out_dir) / ".hypothesis"
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(home)
    set_hypothesis_home_dir(home)


def example_database(cfg: CampaignConfig, profile):
    """The campaign's example database: Redis when ``db_url`` is given (shared by every machine),
    else the campaign profile's directory database."""
    if not cfg.db_url:
        return profile.database
    import redis
    from hypothesis.extra.redis import RedisExampleDatabase

    return RedisExampleDatabase(redis.Redis.from_url(cfg.db_url))


def _worker(wid: int, cfg: CampaignConfig, seed: int, deadline_wall: float, out_q) -> None:
    """One worker process (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the workers
    worker_env(wid, cfg)
    try:
        out_q.put(("start", wid, os.getpid()))
        _worker_body(wid, cfg, seed, deadline_wall, out_q)
    except BaseException as exc:
        out_q.put(("error", wid, f"{_short_error(exc)}\n{traceback.format_exc()[-2000:]}"))
    finally:
        out_q.put(("done", wid))


def _worker_body(wid, cfg, seed, deadline_wall, out_q):
    from hypothesis import Phase, Verbosity, given, settings
    from hypothesis.errors import UnsatisfiedAssumption

    from pymtl_fp.tb import hypothesis_profiles
    from pymtl_fp.verilate import build_dir

    hypothesis_profiles.register()
    # Hypothesis warns when the global `random` state moves while a strategy draws; in a Dask worker
    # the worker's own threads move it (our strategies draw without `random`: tests/test_fuzz.py)
    warnings.filterwarnings("ignore", message="Do not use the `random` module inside strategies")
    profile = settings.get_profile("campaign")
    target = targets.get(cfg.target)
    ctx = targets.FuzzContext()
    if cfg.inject_bug:
        ctx.mutation = target.mutations[cfg.inject_bug]
        mutate.apply(ctx.mutation, build_dir("mutants"))
    strategy = target.strategy(cfg.level)
    # wall clock -> this process's monotonic clock
    deadline = time.monotonic() + (deadline_wall - time.time())
    shrink_deadline = deadline + cfg.shrink_seconds
    st = dict(examples=0, sent=0, shrinks=0, shrinks_sent=0, cov=set(), new=[], last=time.monotonic(),
              failing=None, error=None)

    def flush(force=False):
        now = time.monotonic()
        if force or now - st["last"] >= PROGRESS_EVERY:
            out_q.put(("progress", wid, st["examples"] - st["sent"], st["new"], st["failing"] is not None,
                       st["shrinks"] - st["shrinks_sent"]))
            st["sent"] = st["examples"]
            st["shrinks_sent"] = st["shrinks"]
            st["new"] = []
            st["last"] = now

    # an example budget, shared evenly by the workers (the time budget stays a safety net)
    per_worker = None
    if cfg.max_examples is not None:
        per_worker = cfg.max_examples // cfg.workers + (wid < cfg.max_examples % cfg.workers)

    def prop(case):
        now = time.monotonic()
        if now > (deadline if st["failing"] is None else shrink_deadline):
            raise _Budget()
        if per_worker is not None and st["failing"] is None and st["examples"] >= per_worker:
            raise _Budget()
        st["examples"] += 1
        if st["failing"] is not None:
            st["shrinks"] += 1
        key = target.coverage(case)
        if key not in st["cov"]:
            st["cov"].add(key)
            st["new"].append(key)
        try:
            target.check(case, cfg.level, ctx)
        except UnsatisfiedAssumption:  # the check rejected the case (assume): not a failure
            st["examples"] -= 1
            raise
        except Exception as exc:
            st["failing"], st["error"] = case, _short_error(exc)
            raise
        finally:
            flush()

    db_key = f"pymtl-fp-fuzz:{cfg.target}:{cfg.level}:{cfg.inject_bug or ''}".encode()
    shrunk = False
    rnd = 0
    while (time.monotonic() < deadline and st["failing"] is None
           and (per_worker is None or st["examples"] < per_worker)):
        # no "explain" phase: it re-runs the failing case under sys.settrace, which makes a
        # PyMTL3 simulation crawl; the shrunk case and the replay command are what we report
        s = settings(profile, max_examples=10**9, deadline=None, verbosity=Verbosity.quiet,
                     database=example_database(cfg, profile), derandomize=False,
                     phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink))
        test = s(given(strategy)(prop))
        # Hypothesis has no public way to set both the random seed and the example database
        # (@seed turns the database off), so set the two attributes @seed and @given use
        test._hypothesis_internal_database_key = db_key
        test._hypothesis_internal_use_seed = seed * 1_000_003 + wid * 7_919 + rnd
        try:
            test()
        except _Budget:
            break
        except BaseException as exc:  # the property failed: Hypothesis re-raises the shrunk case
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            shrunk = st["failing"] is not None
            if st["failing"] is None:  # failed outside the property (e.g. in the strategy)
                raise
            break
        rnd += 1
    flush(force=True)
    if st["failing"] is not None:
        case = st["failing"]
        out = Path(cfg.out_dir) / f"{cfg.target}-{cfg.level}{'-' + cfg.inject_bug if cfg.inject_bug else ''}-w{wid}"
        try:
            rep = target.write_reproducer(case, cfg.level, out, cfg.replay_prefix(), cfg.inject_bug)
            files, commands, notes = [str(p) for p in rep.files], rep.commands, rep.notes
        except Exception as exc:
            files, commands, notes = [], [], f"could not write a reproducer: {_short_error(exc)}"
        out_q.put(("failure", wid, dict(error=st["error"], case=case, description=target.describe(case),
                                        shrunk=shrunk, files=files, commands=commands, notes=notes)))


def check_config(cfg: CampaignConfig) -> int:
    """Refuse a target, level or bug the registry does not have (before any worker starts);
    returns the campaign's seed."""
    target = targets.get(cfg.target)  # raises TargetUnavailable early, in the parent
    if cfg.level not in target.levels:
        raise targets.TargetUnavailable(
            f"fuzz target {cfg.target!r} runs at levels {', '.join(target.levels)}, not {cfg.level!r}")
    if cfg.inject_bug and cfg.inject_bug not in target.mutations:
        raise targets.TargetUnavailable(
            f"fuzz target {cfg.target!r} has no injectable bug {cfg.inject_bug!r}; choose one of "
            f"{', '.join(target.mutations) or '(none)'}")
    if cfg.inject_bug and cfg.level not in target.mutations[cfg.inject_bug].levels:
        raise targets.TargetUnavailable(
            f"bug {cfg.inject_bug!r} can be injected at levels "
            f"{', '.join(target.mutations[cfg.inject_bug].levels)}, not {cfg.level!r}")
    return cfg.seed if cfg.seed is not None else int.from_bytes(os.urandom(4), "little")


def run_campaign(cfg: CampaignConfig, *, stream=None) -> Summary:
    """Run a campaign in local worker processes and return its summary; ``stream`` (default
    stderr) gets progress lines.  (:mod:`pymtl_fp.tb.fuzz.dask_campaign` runs the same workers on
    a Dask cluster.)"""
    stream = stream or sys.stderr
    seed = check_config(cfg)
    ctx = mp.get_context("spawn")
    out_q = ctx.Queue()
    start = time.time()
    deadline_wall = start + cfg.seconds
    procs = [ctx.Process(target=_worker, args=(w, cfg, seed, deadline_wall, out_q), daemon=True)
             for w in range(cfg.workers)]
    tally = Tally()
    hard_stop = deadline_wall + cfg.shrink_seconds + 120  # startup + a last slow example
    try:
        for p in procs:
            p.start()
        _collect(procs, out_q, stream, start, deadline_wall, hard_stop, tally)
    except KeyboardInterrupt:
        _stop_workers([p for p in procs if p.pid is not None], out_q)
        raise
    for p in procs:
        p.join(timeout=10)
    return tally_summary(cfg, seed, time.time() - start, tally)


def tally_summary(cfg: CampaignConfig, seed: int, wall: float, tally: Tally, scheduler: str = "processes") -> Summary:
    return Summary(cfg.target, cfg.level, cfg.workers, seed, cfg.seconds, wall, tally.examples,
                   sorted(tally.coverage), tally.failures, cfg.inject_bug, tally.errors, tally.shrinks,
                   scheduler=scheduler, restarts=sum(max(0, n - 1) for n in tally.starts.values()))


def _stop_workers(procs, out_q) -> None:
    """After Ctrl-C: further Ctrl-C are ignored while the workers are stopped and the queue closed,
    so a second one cannot interrupt the clean-up (and the interpreter's exit handlers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
    out_q.cancel_join_thread()
    out_q.close()


@dataclasses.dataclass
class Tally:
    """What the workers reported so far (from their messages, whatever carries them)."""

    examples: int = 0
    shrinks: int = 0
    coverage: dict = dataclasses.field(default_factory=dict)
    failures: list = dataclasses.field(default_factory=list)
    errors: list = dataclasses.field(default_factory=list)
    done: set = dataclasses.field(default_factory=set)
    failing: set = dataclasses.field(default_factory=set)
    starts: dict = dataclasses.field(default_factory=dict)  #: worker -> times it started (restarts)

    def take(self, msg) -> None:
        kind, wid = msg[0], msg[1]
        if kind == "progress":
            self.examples += msg[2]
            self.shrinks += msg[5]
            for key in msg[3]:
                self.coverage[key] = self.coverage.get(key, 0) + 1
            if msg[4]:
                self.failing.add(wid)
        elif kind == "failure":
            self.failures.append(Failure(worker=wid, **msg[2]))
        elif kind == "error":
            self.errors.append(f"worker {wid}: {msg[2]}")
        elif kind == "start":
            self.starts[wid] = self.starts.get(wid, 0) + 1
        elif kind == "done":
            self.done.add(wid)

    def line(self, now, start, deadline_wall) -> str:
        left = max(0.0, deadline_wall - now)
        return (f"[{now - start:6.1f} s, {left:5.0f} s left] {self.examples} examples "
                f"({self.examples / max(now - start, 1e-9) * 60:.0f}/min), {len(self.coverage)} shapes, "
                f"{len(self.failing)} worker(s) failing"
                + (" (shrinking)" if self.failing and not self.failures else ""))


def print_progress(stream, line: str, tty: bool) -> None:
    stream.write(("\r" + line.ljust(100)) if tty else line + "\n")
    stream.flush()


def _collect(procs, out_q, stream, start, deadline_wall, hard_stop, tally: Tally) -> None:
    """Gather the workers' reports into ``tally`` until all are done (or the hard stop)."""
    tty = hasattr(stream, "isatty") and stream.isatty()
    last_print = 0.0
    while len(tally.done) < len(procs):
        try:
            msg = out_q.get(timeout=0.5)
        except queue_mod.Empty:
            msg = None
            if time.time() > hard_stop or all(not p.is_alive() for p in procs):
                for p in procs:
                    if p.is_alive():
                        p.terminate()
                for i, p in enumerate(procs):
                    if i not in tally.done:
                        tally.errors.append(f"worker {i} did not finish in time (killed)" if time.time() > hard_stop
                                            else f"worker {i} died (exit code {p.exitcode}) without reporting")
                break
        if msg is not None:
            tally.take(msg)
        now = time.time()
        if now - last_print >= (1.0 if tty else 15.0):
            last_print = now
            print_progress(stream, tally.line(now, start, deadline_wall), tty)
    if tty:
        stream.write("\n")


def replay(target_name: str, level: str, case_path, inject_bug: str | None = None):
    """Run the property once on a case file (in this process).  Returns ``(ok, message)``."""
    from pymtl_fp.verilate import build_dir

    target = targets.get(target_name)
    if level not in target.levels:
        raise targets.TargetUnavailable(
            f"fuzz target {target_name!r} runs at levels {', '.join(target.levels)}, not {level!r}")
    case = case_files.read_case(case_path)
    missing = [k for k in target.case_keys if k not in case]
    if missing:
        raise ValueError(f"--replay {case_path}: not a {target_name} case: no {', '.join(map(repr, missing))} "
                         f"(a {target_name} case has {', '.join(target.case_keys)})")
    if target.limits is not None:
        try:
            target.limits(case)
        except ValueError as exc:
            raise ValueError(f"--replay {case_path}: {exc}") from None
    ctx = targets.FuzzContext()
    undo = []
    if inject_bug:
        if inject_bug not in target.mutations:
            raise targets.TargetUnavailable(f"fuzz target {target_name!r} has no injectable bug {inject_bug!r}")
        ctx.mutation = target.mutations[inject_bug]
        undo = mutate.apply(ctx.mutation, build_dir("mutants"))
    from hypothesis.errors import UnsatisfiedAssumption

    try:
        target.check(case, level, ctx)
    except UnsatisfiedAssumption:
        return False, "the case is not a valid test case for this target (the check rejected it)"
    except Exception as exc:
        return False, _short_error(exc)
    finally:
        mutate.undo(undo)
    return True, f"{target.describe(case)}: passed"
