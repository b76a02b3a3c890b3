"""Hypothesis profiles shared by the test suite and ``pymtl-fp fuzz``.

* ``ci``: bounded and derandomized (the same examples every run), no deadline, no example
  database: fits the 2-core CI budget and never flakes.
* ``dev`` (default outside CI): the same example counts as ``ci``, but random examples (a new
  draw every run) and a local example database in ``.hypothesis/`` that replays a failure first.
* ``campaign``: thousands of examples, persistent database (``$PYMTL_FP_HYPOTHESIS_DB`` or
  ``~/.cache/pymtl-fp/hypothesis``) so a failure found once is replayed first next time.

Selected by ``$PYMTL_FP_PROFILE`` (``ci`` | ``dev`` | ``campaign``); when unset, ``ci`` if
``$CI`` is set, else ``dev``.  Heavy tests scale their own example counts with
:func:`examples` rather than hard-coding them.  The default run (``ci`` or ``dev``) keeps each
property at the count it needs to cover its cases; volume belongs to ``campaign`` (``pymtl-fp
fuzz``), so a plain ``pytest`` costs the same with or without ``$CI``.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

PROFILES = ("ci", "dev", "campaign")
_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture,
            HealthCheck.filter_too_much]
_registered = False


def campaign_db_path() -> Path:
    return Path(os.environ.get("PYMTL_FP_HYPOTHESIS_DB")
                or Path.home() / ".cache" / "pymtl-fp" / "hypothesis").expanduser()


def register() -> None:
    global _registered
    if _registered:
        return
    settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True,
                              database=None, suppress_health_check=_SLOW_OK, print_blob=True)
    settings.register_profile("dev", max_examples=20, deadline=None,
                              suppress_health_check=_SLOW_OK, print_blob=True)
    settings.register_profile("campaign", max_examples=5000, deadline=None,
                              database=DirectoryBasedExampleDatabase(str(campaign_db_path())),
                              suppress_health_check=_SLOW_OK, print_blob=True)
    _registered = True


def selected_profile() -> str:
    name = os.environ.get("PYMTL_FP_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
    if name not in PROFILES:
        raise ValueError(f"PYMTL_FP_PROFILE must be one of {', '.join(PROFILES)}, not {name!r}")
    return name


def load(name: str | None = None) -> str:
    """Register the profiles and load ``name`` (default: :func:`selected_profile`)."""
    register()
    name = name or selected_profile()
    settings.load_profile(name)
    return name


def examples(base: int) -> int:
    """Scale an example count for a heavy test: ``base`` in ci and dev, 50x in campaign."""
    factor = {"ci": 1, "dev": 1, "campaign": 50}[selected_profile()]
    return max(1, base * factor)
