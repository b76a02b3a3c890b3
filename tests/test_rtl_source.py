"""Source rules PyMTL3's Verilog translation relies on, checked on every component in the repository.

Within one process, PyMTL3 finds the source of an update block by its name in its component's
class: two variants of a component whose ``construct`` defines *different* blocks under one name
(say in both branches of an elaboration ``if``) translate the second variant with the first
variant's block.  The simulation stays right and only the Verilog is wrong (it happened with
``EngineAcceptRTL``'s command register: an undriven signal that lint caught).  So every update
block name is unique within its ``construct``.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BLOCK_DECORATORS = {"update", "update_ff", "update_once"}


def repeated_block_names(source: str) -> list:
    """``(class, block name)`` for every update block name defined more than once in one
    ``construct`` of ``source``."""
    out = []
    for cls in ast.walk(ast.parse(source)):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name == "construct"):
                continue
            seen = set()
            for node in ast.walk(fn):
                if isinstance(node, ast.FunctionDef) and any(
                        isinstance(d, ast.Name) and d.id in BLOCK_DECORATORS for d in node.decorator_list):
                    if node.name in seen:
                        out.append((cls.name, node.name))
                    seen.add(node.name)
    return out


def test_the_rule_finds_a_repeated_block_name():
    bad = ("class A:\n    def construct(s, x):\n        if x:\n            @update\n            def up():\n"
           "                pass\n        else:\n            @update\n            def up():\n                pass\n")
    assert repeated_block_names(bad) == [("A", "up")]
    good = bad.replace("        else:\n            @update\n            def up():",
                       "        else:\n            @update\n            def up_other():")
    assert repeated_block_names(good) == []


def test_every_update_block_name_is_unique_within_its_construct():
    files = [p for folder in ("pymtl_fp", "cluster", "tb") for p in (REPO / folder).rglob("*.py")]
    assert len(files) > 50
    bad = {str(p.relative_to(REPO)): r for p in files if (r := repeated_block_names(p.read_text()))}
    assert not bad, bad
