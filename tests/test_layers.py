"""The package's shape: one import namespace, imports only go down the layers, no import cycle.

Layers (``docs/DESIGN.md``), lowest first::

    0  numerics, golden, timing, net, data, sim and the tool-chain glue (pure NumPy / PyMTL3)
    1  engine, link, primitives        (PyMTL3 units, FL/CL/RTL twins)
    2  cluster, energy                 (node = engine + router + link ends; partition, compile, top;
                                        energy constants, activity and joules of a run), in steps:
       2.0  cluster.config, cluster.isa  (descriptions, the node program ISA)
       2.1  cluster.hw | cluster.compiler  (the hardware | the compiler: neither imports the other)
       2.2  energy                     (reads the ISA and the router's config)
       2.3  cluster.run                (runs compiled programs on the hardware, reports)
    3  explore                         (analytic models at paper scale)
    4  tb                              (test benches, fuzz campaigns; may import Hypothesis)
    4.5 api                            (the public Python API: a facade over layers 0-3)
    5  cli                             (argument parsing and reports only)

The imports are read from the source (every ``import``, also those inside functions), so the test
needs no tool and sees lazy imports too.
"""

from __future__ import annotations

import ast
import configparser
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: import name prefix -> folder in the repository (setup.cfg's package_dir)
ROOTS = {"pymtl_fp.cluster": "cluster", "pymtl_fp.cli": "scripts", "pymtl_fp.tb": "tb", "pymtl_fp": "pymtl_fp"}

#: module prefix -> layer; the longest matching prefix wins
LAYERS = {
    "pymtl_fp": 0,
    "pymtl_fp.engine": 1, "pymtl_fp.link": 1, "pymtl_fp.primitives": 1, "pymtl_fp.clock": 1.5,
    "pymtl_fp.cluster": 2, "pymtl_fp.cluster.hw": 2.1, "pymtl_fp.cluster.compiler": 2.1,
    "pymtl_fp.energy": 2.2, "pymtl_fp.energy.constants": 2, "pymtl_fp.cluster.run": 2.3,
    "pymtl_fp.explore": 3,
    "pymtl_fp.tb": 4,
    "pymtl_fp.api": 4.5,
    "pymtl_fp.cli": 5,
}


def _modules() -> dict:
    """Every module of the package: name -> source path."""
    mods = {}
    for prefix, folder in ROOTS.items():
        base = REPO / folder
        for path in base.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([prefix, *parts])
            if prefix == "pymtl_fp" and parts and parts[0] in ("cluster", "cli", "tb"):
                continue
            mods.setdefault(name, path)
    return mods


MODULES = _modules()


def layer(mod: str) -> int:
    best = max((p for p in LAYERS if mod == p or mod.startswith(p + ".")), key=len)
    return LAYERS[best]


def _resolve(name: str) -> str | None:
    """The package module an imported name refers to (``pymtl_fp.engine.msgs.tiles`` -> its module)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(mod: str) -> set:
    tree = ast.parse(MODULES[mod].read_text(), str(MODULES[mod]))
    pkg = mod if MODULES[mod].name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        for n in names:
            r = _resolve(n)
            if r and r != mod:
                out.add(r)
    return out


GRAPH = {m: imports_of(m) for m in MODULES}


def test_every_package_folder_is_installed():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    packages = {m for m, p in MODULES.items() if p.name == "__init__.py"}
    # folders of data files only (net files, device and energy tables) are listed too, so that
    # setuptools installs them; each holds files and no module
    data = {m for m in listed - packages if _folder(m).is_dir() and not list(_folder(m).glob("*.py"))}
    assert all(list(_folder(m).iterdir()) for m in data)
    assert packages | data == listed, \
        f"setup.cfg [options] packages: missing {packages - listed}, extra {listed - packages - data}"


def _folder(name: str) -> Path:
    """The repository folder of an import name (setup.cfg's package_dir)."""
    prefix = max((p for p in ROOTS if name == p or name.startswith(p + ".")), key=len)
    return REPO / ROOTS[prefix] / Path(*name[len(prefix):].strip(".").split(".")) if name != prefix else REPO / ROOTS[prefix]


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_imports_only_go_down(mod):
    up = sorted(d for d in GRAPH[mod] if layer(d) > layer(mod))
    assert not up, f"{mod} (layer {layer(mod)}) imports higher layers: " + ", ".join(
        f"{d} ({layer(d)})" for d in up)


#: sibling packages of one layer that must not import each other
APART = [("pymtl_fp.cluster.hw", "pymtl_fp.cluster.compiler")]


@pytest.mark.parametrize("a,b", APART + [(b, a) for a, b in APART])
def test_siblings_stay_apart(a, b):
    """The cluster's hardware and its compiler meet only in the ISA and the configs."""
    bad = sorted(f"{m} -> {d}" for m in MODULES if m == a or m.startswith(a + ".")
                 for d in GRAPH[m] if d == b or d.startswith(b + "."))
    assert not bad, bad


def test_no_import_cycle():
    """No cycle through package modules (a package's ``__init__`` importing its own submodules is
    not an edge back to it: importing a submodule runs its package first by construction)."""
    color, stack, cycles = {}, [], []

    def visit(m):
        color[m] = 1
        stack.append(m)
        for d in sorted(GRAPH[m]):
            if m.startswith(d + "."):  # a module importing its own package
                continue
            if color.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in color:
                visit(d)
        stack.pop()
        color[m] = 2

    for m in sorted(GRAPH):
        if m not in color:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_library_needs_neither_pytest_nor_the_test_benches():
    """Layers 0-3 never import pytest or Hypothesis (only the test benches and the CLI may)."""
    bad = []
    for mod, path in MODULES.items():
        if layer(mod) >= 4:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{mod}: {n}" for n in names if n.split(".")[0] in ("pytest", "hypothesis")]
    assert not bad, bad


@pytest.mark.parametrize("name", ["tb", "scripts", "cluster"])
def test_no_top_level_package_outside_the_repository(name, tmp_path):
    """Installing pymtl-fp claims no generic top-level name (run outside the repository root)."""
    proc = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode != 0 and "No module named" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-c", "import pymtl_fp.cluster, pymtl_fp.cli.main, pymtl_fp.tb"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
