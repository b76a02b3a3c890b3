"""The registry of fuzz targets: what ``pymtl-fp fuzz --target NAME`` can run.

A target is a :class:`FuzzTarget`:

* ``strategy(level)`` -- a Hypothesis strategy of **cases** (dicts of ints/bools/strings/lists
  and NumPy arrays).  Draw the hardware parameters first and from small to large, then the
  transactions, so that a failure shrinks to a small configuration and a short input (PyH2 style);
* ``check(case, level, ctx)`` -- the property: runs the case at ``level`` and raises
  ``AssertionError`` (with the mismatch) when the design and the reference disagree.  Any other
  exception counts as a failure too (a crash, a hang caught by the watchdog).  ``ctx`` is a
  :class:`FuzzContext`: a per-process cache for built simulators and the injected mutation;
* ``coverage(case)`` -- a short string that names the case's shape/operation/configuration; the
  campaign reports how many distinct keys it saw;
* ``reproducer(case, level, out_dir, inject_bug)`` (optional) -- writes the files that replay a
  failing case and returns a :class:`Reproducer` (files + commands).  The default writes the
  case as JSON (:mod:`pymtl_fp.tb.fuzz.cases`) replayed by ``pymtl-fp fuzz --replay``;
* ``case_keys`` -- the keys every case has: ``--replay`` refuses a file that lacks one (a
  malformed file is the user's error, not a hardware failure);
* ``limits(case)`` (optional) -- checks a replayed case's fields against their types and ranges
  (:mod:`pymtl_fp.tb.fuzz.case_limits`) before it runs, raising ``ValueError`` naming the field;
* ``mutations`` -- known bugs (:class:`pymtl_fp.tb.fuzz.mutate.Mutation`) for ``--inject-bug``;
* ``available()`` -- ``None`` when the target can run, else why not (a unit not built yet).

To add a target, write ``tb/fuzz/target_<name>.py`` defining ``TARGET = FuzzTarget(...)`` and add
its name to :data:`TARGET_MODULES`.  Nothing else in the campaign or the CLI changes.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from pathlib import Path

from pymtl_fp.tb.fuzz import cases as case_files

#: target name -> module defining ``TARGET`` (imported lazily, when the target is asked for)
TARGET_MODULES = {
    "engine": "pymtl_fp.tb.fuzz.target_engine",
    "link": "pymtl_fp.tb.fuzz.target_link",
    "cluster": "pymtl_fp.tb.fuzz.target_cluster",
    "requant": "pymtl_fp.tb.fuzz.target_requant",
    "residual": "pymtl_fp.tb.fuzz.target_residual",
}


class TargetUnavailable(ValueError):
    """No such target, level or injectable bug; the message names the choices."""


@dataclasses.dataclass
class Reproducer:
    files: list  #: paths written
    commands: list  #: shell commands that replay the failure (first: the one to use)
    notes: str = ""


@dataclasses.dataclass
class FuzzContext:
    """Per-process state handed to ``check``: a cache of built simulators and the mutation."""

    mutation: object = None  #: the injected :class:`~pymtl_fp.tb.fuzz.mutate.Mutation`, or None
    cache: dict = dataclasses.field(default_factory=dict)

    @property
    def tag(self) -> str:
        """``""`` or the mutation's tag: add it to Verilog module names of mutated builds."""
        return self.mutation.tag if self.mutation else ""


@dataclasses.dataclass(frozen=True)
class FuzzTarget:
    name: str
    description: str
    levels: tuple
    strategy: Callable
    check: Callable
    coverage: Callable
    reproducer: Callable | None = None
    mutations: dict = dataclasses.field(default_factory=dict)
    case_keys: tuple = ()  #: top-level keys every case holds (a replayed file is checked for them)
    limits: Callable | None = None  #: checks a replayed case's fields (raises ValueError naming one)
    describe: Callable = lambda case: case_files.dumps(case).replace("\n", "")[:400]

    def write_reproducer(self, case: dict, level: str, out_dir, replay_cmd: str,
                         inject_bug: str | None = None) -> Reproducer:
        """Files + commands that replay ``case``; ``replay_cmd`` is the generic
        ``pymtl-fp fuzz ... --replay`` prefix (the case path is appended); ``inject_bug`` the
        mutation the campaign ran, if any."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = case_files.write_case(case, out / "case.json")
        rep = Reproducer([path], [f"{replay_cmd} --replay {path}"])
        if self.reproducer is not None:
            extra = self.reproducer(case, level, out, inject_bug)
            rep.files += extra.files
            rep.commands += extra.commands
            rep.notes = extra.notes
        return rep


def names() -> list:
    return list(TARGET_MODULES)


def get(name: str) -> FuzzTarget:
    """The target called ``name``; :class:`TargetUnavailable` if there is none."""
    if name not in TARGET_MODULES:
        raise TargetUnavailable(f"unknown fuzz target {name!r}; choose one of {', '.join(TARGET_MODULES)}")
    return importlib.import_module(TARGET_MODULES[name]).TARGET
