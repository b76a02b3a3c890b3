"""Timing constraints of a translated unit: an XDC file (Vivado) and an SDC file (Quartus, OpenSTA,
nextpnr's subset) beside its Verilog, written by ``pymtl-fp translate``.

Both say the same thing, for the ports read from the Verilog (:mod:`pymtl_fp.verilog_ports`):

* the clock on the port ``clk`` with the period ``--clock-ns`` (default :data:`DEFAULT_CLOCK_NS`:
  the 200 MHz the engine's pipelines are built for);
* every other input, the reset included, arrives :data:`IO_FRACTION` of the period after the
  clock edge (``set_input_delay``), and every output must be valid that long before the next edge
  (``set_output_delay``): the unit sits between registers of a larger design that use a quarter of
  the cycle on each side, and a combinational path from an input to an output has half of it.

The reset is timed like any input, not a false path: PyMTL3's reset is synchronous (sampled by
``update_ff`` blocks at the clock edge), so every flip-flop must see its release in the same cycle;
a false path would let the release reach them in different cycles.

Names: a vector or array port is matched bit by bit.  The XDC uses Vivado's ``-regexp`` (``name``
then any ``[i]`` indices), which matches a one-bit ``logic [0:0]`` port whether the tool calls it
``clk`` or ``clk[0]``; the SDC uses the names Yosys gives a netlist (what OpenSTA and nextpnr read):
``clk`` for a one-bit port, ``cmd__msg[*]`` for a vector or an array (Quartus keeps the range of a
``[0:0]`` port, ``clk[0]``: edit the one-bit names for it).
"""

from __future__ import annotations

from pathlib import Path

from pymtl_fp.verilog_ports import Port

#: default clock period (ns): 200 MHz
DEFAULT_CLOCK_NS = 5.0
#: input and output delay, as a fraction of the clock period
IO_FRACTION = 0.25
CLOCK = "clk"


def sdc_pattern(p: Port) -> str:
    return f"{p.name}[*]" if p.is_vector else p.name


def xdc_pattern(p: Port) -> str:
    return p.name + r"(\[[0-9]+\])*"


def _lines(ports: list, period: float, top: str, tool: str, get) -> list:
    if not any(p.name == CLOCK and p.direction == "input" for p in ports):
        raise ValueError(f"{top} has no input port {CLOCK}: no clock to constrain")
    delay = IO_FRACTION * period
    head = [f"# {tool} timing constraints of {top} (pymtl-fp translate)",
            f"# clock {CLOCK}: period {period:.3f} ns ({1000.0 / period:.1f} MHz); inputs arrive and outputs are",
            f"# needed {IO_FRACTION:g} of the period ({delay:.3f} ns) from the clock edge; the reset (synchronous) is",
            "# timed like any input.",
            f"create_clock -name {CLOCK} -period {period:.3f} [{get(next(p for p in ports if p.name == CLOCK))}]"]
    body = []
    for p in ports:
        if p.name == CLOCK:
            continue
        cmd = "set_input_delay" if p.direction == "input" else "set_output_delay"
        body.append(f"{cmd} -clock [get_clocks {CLOCK}] {delay:.3f} [{get(p)}]")
    return head + body


def sdc_text(ports: list, period: float, top: str) -> str:
    return "\n".join(_lines(ports, period, top, "SDC", lambda p: f"get_ports {{{sdc_pattern(p)}}}")) + "\n"


def xdc_text(ports: list, period: float, top: str) -> str:
    return "\n".join(_lines(ports, period, top, "XDC (Vivado)",
                            lambda p: f"get_ports -regexp {{{xdc_pattern(p)}}}")) + "\n"


def write(folder: Path, top: str, ports: list, period: float) -> list:
    """``<top>.xdc`` and ``<top>.sdc`` in ``folder``; returns their paths."""
    xdc, sdc = Path(folder) / f"{top}.xdc", Path(folder) / f"{top}.sdc"
    xdc.write_text(xdc_text(ports, period, top))
    sdc.write_text(sdc_text(ports, period, top))
    return [xdc, sdc]
