"""Pre-route timing of a synthesized unit: Yosys ``sta`` on the ``synth_xilinx`` netlist, read back.

After ``synth_xilinx -flatten`` the netlist is made of 7-series cells (LUTs, CARRY4, DSP48E1,
flip-flops, block RAM).  Reading Yosys's own cell library with its ``specify`` blocks
(``read_verilog -lib -specify +/xilinx/cells_sim.v``) gives every cell its data-sheet delays, and
``sta`` then finds the latest arrival time over every path from a register output or a primary
input to a register input or a primary output.  That is a **pre-route logic delay**: cell delays
only, no routing, no clock skew, no setup time; good for comparing designs and for naming the slow
path, not a sign-off figure.  How much routing adds is measured by place and route
(:mod:`pymtl_fp.pnr`, the runs in ``pnr_records.toml``): on an ECP5-85F, 61-67 % of the routed
engine's critical path is routing.

``sta`` prints the path from its end back to its start, one cell per line with its arrival time
in picoseconds, with the nets between them; :func:`parse_sta` keeps the delay, the cells on the
path by type, and the named nets it passes through (Yosys keeps the RTL's names for nets that
survive synthesis, e.g. ``wb.CRS``; abc's nets have ``$`` names and are dropped).
"""

from __future__ import annotations

import re

#: what runs after ``synth_xilinx`` (``{out}``: the report's file name)
STA_SCRIPT = "read_verilog -lib -specify +/xilinx/cells_sim.v; tee -q -o {out} sta"

#: the clock and input buffers synth_xilinx inserts (not logic)
_BUFFERS = ("BUFG", "IBUF", "OBUF")
_ARRIVAL = re.compile(r"Latest arrival time in '[^']*' is (\d+)")
_CELL = re.compile(r"^\s+(\d+)\s+\S.*\(([A-Za-z0-9_]+)\.([A-Za-z0-9_\[\]]+)->([A-Za-z0-9_\[\]]+)\)\s*$")
_NET = re.compile(r"^\s+(?:\d+\s+)?\\(\S+)(?:\s+\[\d+\])?(?:\s+\(<primary input>\))?\s*$")


def parse_sta(text: str) -> dict:
    """Yosys ``sta`` output -> ``{"ns": latest arrival in ns, "cells": {type: count on the path},
    "through": [named nets from the path's start to its end], "start": the first of them,
    "end": the last (the path's true endpoint is often an unnamed net), "start_cell": the first
    cell's arc, e.g. ``DSP48E1.CLK->P`` (a register inside a DSP) or ``FDRE.C->Q``; empty when
    the path starts at a primary input}``, or ``{"error": ...}`` when the
    text has no path (``sta`` did not run, or the design has no timed path)."""
    m = _ARRIVAL.search(text)
    if not m:
        return dict(error="Yosys sta reported no path")
    body = text[m.end():].split("Arrival histogram", 1)[0]
    cells: dict = {}
    names: list = []
    start_cell = ""
    for line in body.splitlines():
        c = _CELL.match(line)
        if c:
            cells[c.group(2)] = cells.get(c.group(2), 0) + 1
            if c.group(2) not in _BUFFERS:  # (the last one listed is the path's first)
                clocked = c.group(3) in ("C", "CLK", "CLKARDCLK", "CLKBWRCLK", "WCLK")
                start_cell = f"{c.group(2)}.{c.group(3)}->{c.group(4)}" if clocked else "a primary input"
            continue
        n = _NET.match(line)
        if n and not n.group(1).endswith("clk"):
            name = n.group(1)
            if not names or names[-1] != name:
                names.append(name)
    names.reverse()  # sta lists the path from its end back to its start
    for b in _BUFFERS:
        cells.pop(b, None)
    return dict(ns=round(int(m.group(1)) / 1000.0, 2), cells=cells, through=names,
                start=names[0] if names else "", end=names[-1] if names else "", start_cell=start_cell)


def describe(t: dict) -> str:
    """One line: the delay, the clock it allows, what the path passes through."""
    if "error" in t:
        return t["error"]
    mhz = 1000.0 / t["ns"] if t["ns"] > 0 else float("inf")
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(t["cells"].items(), key=lambda kv: -kv[1]))
    via = " -> ".join(t["through"]) if t["through"] else "unnamed nets"
    return (f"{t['ns']:.1f} ns pre-route logic delay (cell delays only, no routing: at most "
            f"{mhz:.0f} MHz); path of {kinds}, from {t['start_cell'] or 'a primary input'} through {via}")
