"""GTKWave save files (``.gtkw``) for the VCDs the tools write: open ``gtkwave FILE.gtkw``.

:func:`save_file` reads the VCD's declarations, takes the signals of the design's top scope
(PyMTL3's Verilator import nests it as ``TOP.<module>_vcd``), groups the top-level ports by
interface (``cmd__val``, ``cmd__rdy``, ``cmd__msg`` under "cmd") and adds a group of controller
signals the unit names.  Surfer reads the same VCD; it has no save-file format of its own to emit.
"""

from __future__ import annotations

import re
from pathlib import Path


def vcd_scopes(path) -> dict:
    """``{scope path: {signal name: width}}`` from a VCD's declarations."""
    scopes, stack = {}, []
    with open(path, encoding="ascii", errors="replace") as fh:
        for line in fh:
            tok = line.split()
            if not tok:
                continue
            if tok[0] == "$scope":
                stack.append(tok[2])
                scopes.setdefault(".".join(stack), {})
            elif tok[0] == "$upscope":
                stack.pop()
            elif tok[0] == "$var":
                scopes.setdefault(".".join(stack), {})[tok[4]] = int(tok[2])
            elif tok[0] == "$enddefinitions":
                break
    return scopes


def _design_scope(scopes: dict) -> str:
    """The scope holding the design's signals: the deepest of the first chain of single scopes
    (``TOP`` -> ``TOP.<module>_vcd``)."""
    tops = [s for s in scopes if "." not in s]
    if not tops:
        raise ValueError("the VCD declares no scope")
    scope = tops[0]
    while True:
        kids = [s for s in scopes if s.startswith(scope + ".") and s.count(".") == scope.count(".") + 1]
        if len(kids) != 1:
            return scope
        scope = kids[0]


def save_file(vcd, state=()) -> str:
    """The text of a GTKWave save file for ``vcd``: ports grouped by interface, then ``state``."""
    scopes = vcd_scopes(vcd)
    scope = _design_scope(scopes)
    signals = scopes[scope]
    groups: dict = {}
    for name in signals:
        m = re.fullmatch(r"([A-Za-z0-9]+(?:_[A-Za-z0-9]+)*)__(msg|val|rdy|en)", name)
        if m:
            groups.setdefault(m.group(1), []).append(name)
        elif "__" not in name:
            groups.setdefault("clock, reset, status", []).append(name)
    groups["controller state"] = [n for n in state if n in signals]
    order = {"val": 0, "rdy": 1, "en": 1, "msg": 2}
    out = [f'[dumpfile] "{Path(vcd).name}"', "[timestart] 0", "[size] 1600 900", "[signals_width] 320"]
    for title, names in groups.items():
        if not names:
            continue
        names = sorted(names, key=lambda n: order.get(n.rsplit("__", 1)[-1], -1)) if title != "controller state" else names
        out += ["@800200", f"-{title}"]
        for n in names:
            w = signals[n]
            out += ["@28" if w == 1 else "@22", f"{scope}.{n}" + (f"[{w - 1}:0]" if w > 1 else "")]
        out += ["@1000200", f"-{title}"]
    return "\n".join(out) + "\n"


def write_save_file(vcd, state=()) -> Path:
    """Write ``<vcd stem>.gtkw`` beside ``vcd``; returns its path."""
    path = Path(vcd).with_suffix(".gtkw")
    path.write_text(save_file(vcd, state))
    return path
