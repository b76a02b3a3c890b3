"""Helpers of the hostile-input tables (``tests/test_hostile_*.py``), which run the CLI in-process on
careless and hostile arguments: placeholders in a row's arguments filled with the test's folder,
and the listing of that folder (nothing may appear in it when a run is refused)."""

from __future__ import annotations

import os
from pathlib import Path


def fill(text: str, tmp: Path) -> str:
    """``{tmp}`` -> the folder; ``{f:NAME}`` -> ``NAME`` inside it."""
    return text.replace("{tmp}", str(tmp)).replace("{f:", str(tmp) + os.sep).replace("}", "")


def listing(root: Path) -> set:
    """Every file and folder under ``root``, relative to it."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}
