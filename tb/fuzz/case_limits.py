"""The limits a replayed case file (``pymtl-fp fuzz --replay CASE``) is checked against before
anything is simulated: each target's fields, with the types and ranges its strategy draws from and
the command-line options' limits (a stall probability at most 0.95 as ``run-op --stall``, a fault
rate at most 0.1 as ``bench link --fault-rate``, seeds 0..2^32-1).

A field out of its limits is a :class:`CaseLimitError` naming the field, its value and the limit:
the CLI prints it as one line, where the check would otherwise fail inside the model (reported as a
failure of the design), hang, or pass on a case that means something else (a negative image index
is Python's index from the end).
"""

from __future__ import annotations

import math

#: highest stall probability (as ``run-op --stall``: above it a run outlasts any watchdog)
MAX_STALL = 0.95
#: highest fault rate of a link case (as ``bench link --fault-rate``)
MAX_FAULT_RATE = 0.1
#: most items in a case's list (messages, vectors)
MAX_ITEMS = 4096
SEED_MAX = 2**32 - 1


class CaseLimitError(ValueError):
    """A field of a case file outside its limits."""


def _get(case: dict, key: str, where: str):
    if not isinstance(case, dict):
        raise CaseLimitError(f"{where or 'the case'} must be a table, got {type(case).__name__}")
    if key not in case:
        raise CaseLimitError(f"{where + '.' if where else ''}{key} is missing")
    return case[key]


def integer(case: dict, key: str, lo: int, hi: int, where: str = "") -> int:
    """``case[key]``, an integer (not a boolean) in ``lo..hi``."""
    value = _get(case, key, where)
    name = f"{where + '.' if where else ''}{key}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise CaseLimitError(f"{name} must be an integer in {lo}..{hi}, got {value!r:.60}")
    if not lo <= value <= hi:
        raise CaseLimitError(f"{name} must be in {lo}..{hi}, got {value}")
    return value


def integers(case: dict, key: str, lo: int, hi: int, where: str = "") -> list:
    """``case[key]``, a list of 1..:data:`MAX_ITEMS` integers in ``lo..hi``."""
    values = items(case, key, where)
    name = f"{where + '.' if where else ''}{key}"
    for i, v in enumerate(values):
        integer({f"{name}[{i}]": v}, f"{name}[{i}]", lo, hi)
    return values


def number(case: dict, key: str, lo: float, hi: float, where: str = "") -> float:
    """``case[key]``, a finite number in ``[lo, hi]``."""
    value = _get(case, key, where)
    name = f"{where + '.' if where else ''}{key}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not lo <= value <= hi:
        raise CaseLimitError(f"{name} must be a finite number in [{lo:g}, {hi:g}], got {value!r:.60}")
    return float(value)


def flag(case: dict, key: str, where: str = "") -> bool:
    """``case[key]``, a boolean (or 0/1)."""
    value = _get(case, key, where)
    if value not in (True, False) or not isinstance(value, (bool, int)):
        raise CaseLimitError(f"{where + '.' if where else ''}{key} must be true or false, got {value!r:.60}")
    return bool(value)


def choice(case: dict, key: str, options, where: str = "", default=None):
    """``case[key]`` (``default`` when absent and a default is given), one of ``options``."""
    if default is not None and isinstance(case, dict) and key not in case:
        return default
    value = _get(case, key, where)
    if not isinstance(value, (str, int)) or isinstance(value, bool) or value not in options:
        raise CaseLimitError(f"{where + '.' if where else ''}{key} must be one of "
                             f"{', '.join(map(str, options))}, got {value!r:.60}")
    return value


def items(case: dict, key: str, where: str = "") -> list:
    """``case[key]``, a list of 1..:data:`MAX_ITEMS` items."""
    value = _get(case, key, where)
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_ITEMS:
        got = f"{len(value)} items" if isinstance(value, list) else type(value).__name__
        raise CaseLimitError(f"{where + '.' if where else ''}{key} must be a list of 1..{MAX_ITEMS} items, got {got}")
    return value
