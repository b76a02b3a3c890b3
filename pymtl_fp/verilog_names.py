"""Unique names in an emitted Verilog file: every sub-module and typedef prefixed by its top.

PyMTL3 names a sub-module after its class and parameters (``SramRTL__width_32__depth_16``) and
the command struct after a hash of its fields (``EngineCmd__f55ab84504d150ce``), so two
configurations of one unit (or an engine beside a node) define the same names twice and cannot
be compiled into one design.  :func:`prefix_names` renames each of them ``<top>__<name>``,
which makes every file self-contained and every pair of files compatible; the top module keeps
its name (its parameters already make it unique).
"""

from __future__ import annotations

import re


def defined_names(text: str) -> list:
    """Modules and typedefs (struct, enum, plain) that ``text`` defines, in order."""
    modules = re.findall(r"^\s*module\s+([A-Za-z_]\w*)", text, re.M)
    structs = re.findall(r"^\s*}\s*([A-Za-z_]\w*)\s*;", text, re.M)  # `typedef struct packed { ... } Name;`
    simple = re.findall(r"^\s*typedef\s+(?!struct|enum|union)[^;{]*?\b([A-Za-z_]\w*)\s*;", text, re.M)
    return list(dict.fromkeys(modules + structs + simple))


def prefix_names(text: str, top: str) -> str:
    """``text`` with every module and typedef except ``top`` renamed ``<top>__<name>`` (idempotent:
    names already so prefixed are kept)."""
    names = [n for n in defined_names(text) if n != top and not n.startswith(top + "__")]
    if not names:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: f"{top}__{m.group(1)}", text)
