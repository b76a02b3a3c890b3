"""Property-based fuzzing campaigns (``pymtl-fp fuzz``).

* :mod:`pymtl_fp.tb.fuzz.targets` -- the registry: a :class:`~pymtl_fp.tb.fuzz.targets.FuzzTarget` names a case
  strategy, a property (``check(case, level, ctx)``), a coverage key, a reproducer writer and the
  bugs that can be injected into a copy of its RTL; targets live in ``tb/fuzz/target_<name>.py``
  and are imported only when asked for.
* :mod:`pymtl_fp.tb.fuzz.campaign` -- the campaign: worker processes (own build directory each) drive
  Hypothesis directly under the ``campaign`` profile until a time budget runs out, report
  progress, and the parent prints the summary (examples, examples/minute, coverage, failures
  with their shrunk example and the command that replays it).
* :mod:`pymtl_fp.tb.fuzz.mutate` -- copies of RTL modules with a known bug, for the mutation check.
* :mod:`pymtl_fp.tb.fuzz.cases` -- case files (JSON, NumPy arrays included) shared by every target.
"""
