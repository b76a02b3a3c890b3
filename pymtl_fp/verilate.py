"""Translate a PyMTL3 component to Verilog and import it into Verilator, safely and cached.

One helper for every unit (engine, link, node, cluster):

* builds run in a build directory (``$PYMTL_FP_BUILD_DIR``, default ``~/.cache/pymtl-fp/build``),
  never in the repo root: one directory that every process (every pytest-xdist worker) shares,
  each unit built under a lock (:func:`shared_build_dir`, :func:`build_lock`), so a unit is built
  once; traced builds, which bake their VCD path into the library, in the process's own
  sub-directory (:func:`build_dir`);
* the top module gets an explicit name without ``__`` (Verilator 5 mangles ``__``) that encodes
  **every** elaboration parameter, so two elaborations never share a name; a process-wide
  registry raises if the same name is reused for different parameters (a reused name would
  silently load the first build's shared library);
* PyMTL3's import pass caches builds: an unchanged design is not recompiled;
* Verilator's runtime compiled once and linked into every build (:mod:`pymtl_fp.verilator_runtime`);
* optional VCD tracing (``vcd=True``);
* source paths in the Verilog are relative (:mod:`pymtl_fp.verilog_paths`), so a build made from
  one checkout is a cache hit for another.

Use :func:`module_name` to make a name and :func:`translate_import` to get a simulatable
Verilator-backed component (already elaborated, with the default pass group applied).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path

from pymtl_fp import verilator_runtime, verilog_paths
from pymtl_fp.build_dirs import build_dir, build_lock, shared_build_dir
from pymtl_fp.sim_passes import default_passes
from pymtl_fp.toolchain import setup_verilator

_NAME_REGISTRY: dict[str, str] = {}


def _token(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return str(value).replace(".", "p").replace("-", "m")
    if isinstance(value, (tuple, list)):
        return "x".join(_token(v) for v in value)
    return re.sub(r"[^A-Za-z0-9]", "", str(value))


def module_name(base: str, params: dict) -> str:
    """A Verilog module name from a base and every elaboration parameter (sorted by key, ``_``
    dropped from keys), e.g. ``module_name("MacRTL", dict(a_bits=8, acc_bits=24))`` is
    ``"MacRTL_abits8_accbits24"``.

    Verilator 5 renames any ``__``; we never produce one. Names longer than 120 characters keep a
    readable prefix and end in a hash of the full parameter set."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", base):
        raise ValueError(f"module base name must be alphanumeric, got {base!r}")
    parts = [base] + [f"{_token(k)}{_token(v)}" for k, v in sorted(params.items())]
    name = "_".join(p for p in parts if p)
    name = re.sub(r"_+", "_", name)
    if len(name) > 120:
        digest = hashlib.sha1(repr(sorted(params.items())).encode()).hexdigest()[:12]
        name = f"{name[:100].rstrip('_')}_h{digest}"
    return name


def _register(name: str, signature: str) -> None:
    prev = _NAME_REGISTRY.setdefault(name, signature)
    if prev != signature:
        raise ValueError(
            f"Verilog module name {name!r} was already used in this process for a different "
            f"elaboration ({prev} vs {signature}); encode every elaboration parameter in the name"
        )


def _elaborate_once(top) -> None:
    """Elaborate ``top`` unless it already is (elaborating again would build new children,
    leaving references to the old ones stale) -- the same test PyMTL3's ``apply`` uses."""
    if not hasattr(top._dsl, "elaborate_top"):
        top.elaborate()


def _child(top, dotted: str):
    obj = top
    for part in dotted.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{type(top).__name__} has no child {dotted!r} to import")
        obj = getattr(obj, part)
    return obj


@contextlib.contextmanager
def _chdir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def translate_import(component, name: str, *, dut=None, params: dict | None = None,
                     vcd: bool = False, vcd_file: str | None = None, linetrace: bool = False):
    """Translate a component to Verilog under the explicit module ``name``, build it with
    Verilator in :func:`build_dir`, and return the simulatable model with PyMTL3's default pass
    group applied (call ``sim_reset()`` yourself).

    ``component`` is constructed, not yet elaborated.  Without ``dut`` it is the unit to import
    and the returned object is its Verilator-backed replacement.  With ``dut`` (the dotted name
    of a child of ``component``, e.g. ``"dut"`` for the design under test inside a test bench,
    or the child itself when the top is already elaborated), only ``dut`` is translated and
    imported; the test bench around it stays in Python, and the returned object is the test bench.
    Several units at once: :func:`translate_import_units`.

    ``params`` (the elaboration parameters; default: the unit's ``params`` attribute, if any) are
    recorded so that reusing ``name`` for another elaboration in this process raises.  With
    ``vcd`` the Verilated model writes a VCD; its path is the returned object's ``vcd_path``
    (``vcd_file`` stem or ``<build_dir>/<name>``, plus ``.verilator1.vcd``)."""
    _elaborate_once(component)
    unit = dut if dut is not None else component
    stem = None
    if vcd:
        stem = str(Path(vcd_file).resolve().with_suffix("")) if vcd_file else str(build_dir() / name)
    imported = translate_import_units(component, {unit: (name, params)}, vcd_stems={unit: stem} if vcd else None,
                                      linetrace=linetrace)
    #: where the Verilated model writes its VCD (PyMTL3 appends ``.verilator1.vcd``)
    imported.vcd_path = Path(stem + ".verilator1.vcd") if vcd else None
    return imported


def translate_import_units(top, units: dict, *, vcd_stems: dict | None = None, linetrace: bool = False):
    """Import several units of one top through Verilator at once (e.g. every engine of a
    cluster whose nodes run at the ``verilator`` level); the rest stays in Python.

    ``units`` maps a unit (a component of the elaborated ``top``, or its dotted name, or ``top``
    itself) to ``(module_name, params)``; ``params=None`` takes the unit's ``params`` attribute.
    ``vcd_stems`` optionally maps units to VCD file stems.  A traced unit is built under
    ``<module_name>_vcd``: tracing changes the shared library, and a process that already loaded
    the untraced one under the same name would silently get it again.  Returns the simulatable
    top with the default pass group applied."""
    from pymtl3.passes.backends.verilog import (
        VerilogTranslationImportPass,
        VerilogTranslationPass,
        VerilogVerilatorImportPass,
    )

    setup_verilator()
    verilator_runtime.install()
    verilog_paths.install()
    _elaborate_once(top)
    stems = {}
    for unit, stem in (vcd_stems or {}).items():
        stems[id(_child(top, unit) if isinstance(unit, str) else unit)] = stem
    names = []
    for unit, (name, params) in units.items():
        if isinstance(unit, str):  # children exist only once the top is elaborated
            unit = _child(top, unit)
        if "__" in name or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise ValueError(f"bad Verilog module name {name!r} (alphanumeric and single '_' only)")
        if params is None:
            params = getattr(unit, "params", {})
        stem = stems.get(id(unit))
        if stem:
            name = f"{name}_vcd"
        _register(name, f"{type(unit).__name__}{sorted(params.items())!r}")
        names.append(name)
        unit.set_metadata(VerilogTranslationPass.explicit_module_name, name)
        unit.set_metadata(VerilogTranslationImportPass.enable, True)
        if stem:
            unit.set_metadata(VerilogVerilatorImportPass.vl_trace, True)
            unit.set_metadata(VerilogVerilatorImportPass.vl_trace_filename, stem)
    with contextlib.ExitStack() as locks:
        if any(stems.values()):  # a traced build bakes its VCD path into the library: this process's own
            where = build_dir()
        else:  # shared by every process, one unit at a time (locks taken in name order)
            where = shared_build_dir("pymtl3")
            for name in sorted(names):
                locks.enter_context(build_lock(where / name))
        with _chdir(where):
            imported = VerilogTranslationImportPass()(top)
            imported.apply(default_passes(linetrace=linetrace))
    return imported
