"""The constraint files ``pymtl-fp translate`` writes beside the Verilog (XDC for Vivado, SDC for
Quartus/OpenSTA/nextpnr): every port of the top that exists in the Verilog is named, the clock has
the period given, the I/O delays are the stated fraction of it; both files run in a real Tcl
interpreter whose SDC commands check their arguments and resolve every port pattern.  Also the
port reader and the out-of-context wrapper of place and route (linted by Verilator with the unit)."""

import json
import re

import pytest

from pymtl_fp import constraints, pnr_wrapper
from pymtl_fp.cli.main import main as cli_main
from pymtl_fp.verilog_ports import module_ports, struct_widths


def header_ports(text: str, top: str) -> dict:
    """{name: direction} of the top's ANSI header, read independently of pymtl_fp.verilog_ports:
    the identifier before the optional unpacked range on each ``input``/``output`` line."""
    head = text[text.index(f"module {top}\n"):]
    head = head[:head.index(");")]
    out = {}
    for line in head.splitlines():
        m = re.match(r"\s*(input|output)\b.*?(\w+)\s*(\[\d+:\d+\]\s*)?,?\s*$", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out


def named(lines: list, name: str, rx: bool) -> list:
    """The lines whose port pattern names port ``name`` (SDC: ``{name}`` or ``{name[*]}``; XDC: the regexp)."""
    pat = re.escape(name + r"(\[[0-9]+\])*") if rx else re.escape(name) + r"(\[\*\])?"
    return [ln for ln in lines if re.search(r"\{" + pat + r"\}\]$", ln)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    assert cli_main(["translate", "--config", "tiny", "--out", str(out), "--no-synth", "--clock-ns", "4"]) == 0
    report = json.loads((out / "report.json").read_text())
    return out, report["module"], report


def test_constraint_files_name_every_port_with_the_period_given(tiny):
    out, top, report = tiny
    ports = header_ports((out / f"{top}.sv").read_text(), top)
    assert len(ports) == 12 and ports["cmd__msg"] == "input" and ports["dout__val"] == "output"
    assert report["constraints"] == dict(clock_ns=4.0, io_fraction=0.25, xdc=f"{top}.xdc", sdc=f"{top}.sdc")
    for suffix, rx in (("xdc", True), ("sdc", False)):
        lines = [ln for ln in (out / f"{top}.{suffix}").read_text().splitlines() if ln and not ln.startswith("#")]
        clock = named(lines, "clk", rx)
        assert len(clock) == 1 and clock[0].startswith("create_clock -name clk -period 4.000 ")
        for name, direction in ports.items():
            if name == "clk":
                continue
            got = named(lines, name, rx)
            assert len(got) == 1, (suffix, name, got)
            cmd = "set_input_delay" if direction == "input" else "set_output_delay"
            assert got[0].startswith(f"{cmd} -clock [get_clocks clk] 1.000 "), got  # 0.25 x 4 ns
        assert len(lines) == len(ports)  # one line a port, nothing else


class SdcChecker:
    """A real Tcl interpreter (Python's tkinter) with the SDC commands the files use as procedures
    that check their options and resolve every port pattern against the netlist's bit names; a
    pattern that matches no port, an unknown option or a clock never created is a Tcl error."""

    def __init__(self, bit_names: list, regexp: bool):
        tkinter = pytest.importorskip("tkinter")
        try:
            self.tcl = tkinter.Tcl()
        except tkinter.TclError as exc:
            pytest.skip(f"no Tcl: {exc}")
        self.tcl.eval("set ::bits {%s}; set ::clocks {}; set ::constrained {}" %
                      " ".join("{%s}" % b for b in bit_names))
        self.tcl.eval(r"""
proc get_ports {args} {
    set rx 0
    if {[lindex $args 0] eq "-regexp"} { set rx 1; set args [lrange $args 1 end] }
    if {[llength $args] != 1} { error "get_ports: one pattern list expected, got $args" }
    set found {}
    foreach pat [lindex $args 0] {
        set glob [string map {[ \\[ ] \\]} $pat]  ;# brackets in a port pattern are literal (bus bits), as in SDC tools
        set hit 0
        foreach b $::bits {
            if {($rx && [regexp "^(?:$pat)\$" $b]) || (!$rx && [string match $glob $b])} { lappend found $b; set hit 1 }
        }
        if {!$hit} { error "get_ports: '$pat' matches no port" }
    }
    return $found
}
proc get_clocks {name} {
    if {[lsearch -exact $::clocks $name] < 0} { error "get_clocks: no clock $name" }
    return $name
}
proc create_clock {args} {
    if {[llength $args] != 5 || [lindex $args 0] ne "-name" || [lindex $args 2] ne "-period"} {
        error "create_clock: expected -name N -period P PORTS, got $args" }
    if {![string is double -strict [lindex $args 3]] || [lindex $args 3] <= 0} { error "bad period" }
    lappend ::clocks [lindex $args 1]
    foreach b [lindex $args 4] { lappend ::constrained $b }
}
proc io_delay {cmd args} {
    if {[llength $args] != 4 || [lindex $args 0] ne "-clock"} { error "$cmd: expected -clock C DELAY PORTS" }
    if {![string is double -strict [lindex $args 2]]} { error "$cmd: bad delay" }
    foreach b [lindex $args 3] { lappend ::constrained $b }
}
proc set_input_delay {args} { io_delay set_input_delay {*}$args }
proc set_output_delay {args} { io_delay set_output_delay {*}$args }
""")

    def run(self, path) -> set:
        self.tcl.eval("source {%s}" % path)
        return set(self.tcl.splitlist(self.tcl.eval("set ::constrained")))


def bit_names(ports, one_bit_range: bool) -> list:
    """Netlist names of every port bit: ``name[i]`` (arrays flattened), a one-bit port ``name``
    (Yosys) or ``name[0]`` (tools that keep the ``[0:0]`` range)."""
    names = []
    for p in ports:
        n = p.total_bits
        if p.is_vector:
            names += [f"{p.name}[{i}]" for i in range(n)]
        else:
            names.append(f"{p.name}[0]" if one_bit_range else p.name)
    return names


def test_constraint_files_run_in_tcl_and_constrain_every_port_bit(tiny):
    out, top, _ = tiny
    ports = module_ports((out / f"{top}.sv").read_text(), top)
    sdc_bits = bit_names(ports, one_bit_range=False)
    assert len(sdc_bits) == 811  # 775 input bits (clk, reset included) and 36 output bits
    assert SdcChecker(sdc_bits, regexp=False).run(out / f"{top}.sdc") == set(sdc_bits)
    for one_bit_range in (False, True):  # Vivado may name a [0:0] port clk or clk[0]: the XDC matches both
        bits = bit_names(ports, one_bit_range)
        assert SdcChecker(bits, regexp=True).run(out / f"{top}.xdc") == set(bits)
    # the checker does reject what it should
    bad = out / "bad.sdc"
    bad.write_text((out / f"{top}.sdc").read_text().replace("get_ports {busy}", "get_ports {bussy}"))
    with pytest.raises(Exception, match="bussy"):
        SdcChecker(sdc_bits, regexp=False).run(bad)


def test_nextpnr_reads_the_sdc_clock(tiny, tmp_path):
    """nextpnr (0.11: ``create_clock``, ``set_false_path`` and ``get_*`` only) reads the SDC's clock
    line on a one-flip-flop ECP5 netlist with a ``clk`` port and constrains that clock to the period
    given; the I/O delays it cannot read (``Unsupported SDC command``), so they are left out."""
    import subprocess
    import sys

    out, top, _ = tiny
    clock = [ln for ln in (out / f"{top}.sdc").read_text().splitlines() if ln.startswith("create_clock")]
    (tmp_path / "clk.sdc").write_text("\n".join(clock) + "\n")
    net = {"modules": {"top": {
        "attributes": {"top": "00000000000000000000000000000001"},
        "ports": {"clk": {"direction": "input", "bits": [2]}, "d": {"direction": "input", "bits": [3]},
                  "q": {"direction": "output", "bits": [4]}},
        "cells": {"ff": {"hide_name": 0, "type": "TRELLIS_FF", "parameters": {}, "attributes": {},
                         "port_directions": {"CLK": "input", "DI": "input", "Q": "output"},
                         "connections": {"CLK": [2], "DI": [3], "Q": [4]}}},
        "netnames": {n: {"hide_name": 0, "bits": [b], "attributes": {}} for n, b in (("clk", 2), ("d", 3), ("q", 4))}}}}
    (tmp_path / "ff.json").write_text(json.dumps(net))
    proc = subprocess.run([sys.executable, "-m", "pymtl_fp.yowasp_run", "nextpnr-ecp5", "--85k", "--json", "ff.json",
                           "--lpf-allow-unconstrained", "--sdc", "clk.sdc", "--pack-only", "-q", "-l", "pack.log"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    log = (tmp_path / "pack.log").read_text()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "constraining clock net 'clk' to 250.00 MHz" in log  # --clock-ns 4


def test_port_reader_resolves_struct_widths_and_arrays():
    text = """
typedef struct packed {
  logic [3:0] op;
  logic [15:0] addr;
} T__Inner;
typedef struct packed {
  T__Inner a;
  logic [1:0][7:0] b;
  logic c;
} T__Outer;
module T
(
  input  logic [0:0] clk ,
  input  logic [0:0] reset ,
  output T__Outer st [0:2],
  input logic [31:0] x__msg [0:1] ,
  output logic [7:0] y
);
endmodule
"""
    assert struct_widths(text) == {"T__Inner": 20, "T__Outer": 37}
    ports = module_ports(text, "T")
    assert [(p.name, p.direction, p.bits, p.dims) for p in ports] == [
        ("clk", "input", 1, ()), ("reset", "input", 1, ()), ("st", "output", 37, (3,)),
        ("x__msg", "input", 32, (2,)), ("y", "output", 8, ())]
    assert pnr_wrapper.overhead(ports) == dict(input_bits=64, output_bits=111 + 8, ffs=64 + 2 * 119 + 1, luts=119)
    with pytest.raises(ValueError, match="no module U"):
        module_ports(text, "U")
    with pytest.raises(ValueError, match="no input port clk"):
        constraints.sdc_text([p for p in ports if p.name != "clk"], 5.0, "T")


def test_wrapper_lints_clean_with_the_unit(tiny):
    """The out-of-context wrapper of the tiny engine (its 738-bit command struct, every port) with
    the engine under ``verilator --lint-only -Wall``: widths and connections are right."""
    from pymtl_fp import lint
    from pymtl_fp.engine.verilog import ENGINE_WAIVERS

    out, top, _ = tiny
    ports = module_ports((out / f"{top}.sv").read_text(), top)
    ooc = out / f"{top}_ooc.sv"
    ooc.write_text(pnr_wrapper.write(ports, top))
    res = lint.lint(ooc, pnr_wrapper.wrapper_name(top), ENGINE_WAIVERS, extra_args=[f"{top}.sv"])
    assert res.clean, res.warnings[:5]
    text = ooc.read_text()
    # 773 input bits besides clk and reset, 36 output bits
    assert "logic [772:0] in_sr;" in text and "logic [35:0] out_w, out_q, out_sr;" in text
    assert ".cmd__msg(u_cmd__msg)" in text and ".reset(rst_q)" in text


def test_clock_ns_is_checked(tmp_path, capsys):
    assert cli_main(["translate", "--unit", "requant", "--config", "small", "--out", str(tmp_path),
                     "--no-synth", "--clock-ns", "0"]) == 1
    err = capsys.readouterr().err
    assert "--clock-ns" in err and len(err.strip().splitlines()) == 1
