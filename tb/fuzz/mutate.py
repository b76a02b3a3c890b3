"""Copies of RTL modules with a known bug: the mutation check of a fuzz campaign.

:func:`mutant_module` reads a module's source, applies exact text replacements (each ``old``
must occur exactly once, so a mutation that no longer matches the RTL fails loudly instead of
silently testing the unmodified design), writes the copy to a file in the worker's build
directory and imports it under a fresh module name.  The real source files are never touched.
PyMTL3 reads update blocks' source (to analyse and to translate them), which is why the copy is
a real file rather than an ``exec`` of a string.

Replacements are whitespace-tolerant (a run of blanks or newlines in ``old`` matches any
whitespace run), so reformatting the RTL does not break a mutation, but changing the code does.

A :class:`Mutation` says which module to copy, what to replace, and which attributes of which
modules to point at the copy's classes while the campaign runs (in the worker process only).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

from pymtl_fp.levels import RTL_LEVELS


@dataclasses.dataclass(frozen=True)
class Mutation:
    """A known bug injected into a copy of one RTL module."""

    name: str  #: short id used on the command line (``--inject-bug NAME``)
    description: str  #: what the bug is, in one line
    module: str  #: dotted name of the module to copy, e.g. ``pymtl_fp.primitives.RequantRTL``
    replacements: tuple  #: ``((old, new), ...)`` exact text replacements in that module
    patch: tuple  #: ``((dotted module, attribute, class name in the copy), ...)`` to redirect
    levels: tuple = RTL_LEVELS  #: levels at which the mutant can be built

    @property
    def tag(self) -> str:
        """Alphanumeric tag for Verilog module names of mutated builds (e.g. ``mutroundhalfdown``)."""
        return "mut" + re.sub(r"[^A-Za-z0-9]", "", self.name).lower()


_LOADED: dict = {}


def mutant_module(module: str, replacements, tag: str, out_dir):
    """Import a copy of ``module`` with ``replacements`` applied; cached per (module, tag)."""
    key = (module, tag)
    if key in _LOADED:
        return _LOADED[key]
    src_mod = importlib.import_module(module)
    text = inspect.getsource(src_mod)
    for old, new in replacements:
        # whitespace-tolerant: runs of blanks/newlines in ``old`` match any whitespace run
        pattern = re.compile(r"\s+".join(re.escape(part) for part in old.split()))
        count = len(pattern.findall(text))
        if count != 1:
            raise ValueError(f"mutation {tag}: {old!r} occurs {count} times in {module} (need exactly 1); "
                             f"the RTL changed: update the mutation")
        text = pattern.sub(lambda _m, new=new: new, text)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    modname = f"_pymtl_fp_mutant_{re.sub(r'[^A-Za-z0-9]', '_', module)}_{tag}"
    path = out / f"{modname}.py"
    header = f"# MUTANT copy of {module} ({tag}) written by tb.fuzz.mutate -- not the real RTL\n"
    if not path.is_file() or path.read_text() != header + text:
        path.write_text(header + text)
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    _LOADED[key] = mod
    return mod


def apply(mutation: Mutation, out_dir) -> list:
    """Point the attributes of ``mutation.patch`` at the mutant's classes (this process only).
    Returns the undo list for :func:`undo`."""
    mod = mutant_module(mutation.module, mutation.replacements, mutation.tag, out_dir)
    undo_list = []
    for target_module, attr, cls_name in mutation.patch:
        tm = importlib.import_module(target_module)
        undo_list.append((tm, attr, getattr(tm, attr)))
        setattr(tm, attr, getattr(mod, cls_name))
    return undo_list


def undo(undo_list) -> None:
    for tm, attr, old in reversed(undo_list):
        setattr(tm, attr, old)
