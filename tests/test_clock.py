"""The clock a configuration's RTL reaches (:mod:`pymtl_fp.clock`) and how reports state it."""

import json
import tomllib

import pytest

from pymtl_fp import clock, pnr
from pymtl_fp.cli import record_clock
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, cluster_for_net
from pymtl_fp.engine.config import PIPELINES, PRESETS, STRUCTURES, pipeline_fields
from pymtl_fp.net import load_net

NET = load_net("lenet-digits")
ALL = pipeline_fields("all")
NONE = pipeline_fields("none")


def test_every_record_names_a_preset_and_a_known_set_of_pipelines():
    for r in clock.pre_route_records():
        assert r["unit"] in ("engine", "node") and r["preset"] in PRESETS and r["ns"] > 0
        assert r["pipelines"] == "none" or set(r["pipelines"].split(",")) <= set(PIPELINES)
    for r in clock.routing_records():  # (nextpnr prints each part to 0.01 ns)
        assert r["post_route_ns"] == pytest.approx(r["logic_ns"] + r["routing_ns"], abs=0.02)
        parts = r["pipelines"].split(",")
        assert r["pipelines"] == "none" or set(parts) <= {"all", *PIPELINES, *STRUCTURES}, r["pipelines"]
        pipeline_fields(r["pipelines"])  # a --pipeline option as given


def test_the_engine_with_every_pipeline_reaches_a_faster_clock_than_without():
    plain = clock.rtl_clock([PRESETS["small"].replace(**NONE)], unit="engine")
    fast = clock.rtl_clock([PRESETS["small"]], unit="engine")
    assert fast.mhz > 4 * plain.mhz
    assert plain.record == "engine small, pipelines none" and fast.pre_route_ns < 5.0


def test_the_estimate_is_the_recorded_path_times_the_routing_allowance():
    est = clock.rtl_clock([PRESETS["small"].replace(**NONE)])
    rec = next(r for r in clock.pre_route_records()
               if (r["unit"], r["preset"], r["pipelines"]) == ("node", "small", "none"))
    # no node was placed and routed: the node takes its engine's run (small, no pipelines)
    run = next(r for r in pnr.recorded() if (r["unit"], r["preset"], r["pipelines"]) == ("engine", "small", "none"))
    assert est.pre_route_ns == rec["ns"] and est.allowance == run["post_route_ns"] / run["logic_ns"]
    assert est.mhz == pytest.approx(1000 / (rec["ns"] * run["post_route_ns"] / run["logic_ns"]))
    assert f"{rec['ns']:g} ns pre-route" in est.describe() and "its engine's" in est.describe()
    # the docs' figure for nodes without pipelines (31.5 ns x 2.97)
    assert est.mhz == pytest.approx(10.7, abs=0.05)


def test_the_default_nodes_clock_is_the_pipelined_nodes_record():
    """The presets' (and train's) nodes have every pipeline: node small's recorded 4.99 ns, with no
    place-and-route of an engine small with them, times the largest allowance recorded (said so)."""
    est = cluster_for_net(NET, "8", [4, 4]).clock
    rec = next(r for r in clock.pre_route_records()
               if (r["unit"], r["preset"], r["pipelines"]) == ("node", "small", ",".join(PIPELINES)))
    # (a run with a structure option, such as all,taps, stands for that option only)
    factor = max(r["post_route_ns"] / r["logic_ns"] for r in pnr.recorded() if r["pipelines"] in ("none", "all"))
    assert rec["ns"] == 4.99 and est.pre_route_ns == rec["ns"] and est.allowance == pytest.approx(factor)
    assert est.mhz == pytest.approx(1000 / (4.99 * factor))
    assert "pipelines requant,mac,addr,cmd" in est.describe() and "the largest allowance recorded" in est.describe()
    # the docs' figure for the default nodes (4.99 ns x 3.09)
    assert est.mhz == pytest.approx(65.0, abs=0.05)


def test_a_cluster_runs_at_its_slowest_nodes_clock():
    fast = cluster_for_net(NET, "8", [4])
    slow = cluster_for_net(NET, "8", [2], pipelines=NONE)
    assert fast.clock.mhz > slow.clock.mhz
    mixed = cluster_for_net(NET, "8", [4, 2]).replace(engines=(fast.engines[0], slow.engines[0])).clock
    assert mixed.mhz == slow.clock.mhz and not mixed.given


def test_an_unrecorded_array_or_pipeline_set_says_what_it_stands_in_with():
    est = cluster_for_net(NET, "8", [16], pipelines=pipeline_fields("mac")).clock
    text = est.describe()
    assert "array 16x16 not recorded: the 8x8 preset's path" in text
    assert "pipelines mac not recorded: the slowest record" in text
    assert est.record.startswith("node medium")
    # the same pipelines recorded at another preset stand in before the slowest record of this one
    near = clock.estimate("node", 8, ",".join(PIPELINES))
    assert near.record == "node small, pipelines requant,mac,addr,cmd" and "recorded at small" in near.describe()


def test_a_given_clock_is_used_and_the_rtls_estimate_printed_beside_it():
    c = cluster_for_net(NET, "8", [4, 4], clock_mhz=200.0).clock
    assert c.given and c.mhz == 200.0 and c.rtl is not None and c.rtl.mhz < 200
    assert c.describe().startswith("200 MHz as given (the RTL reaches about")
    d = c.to_dict()
    assert d["rtl_mhz"] == c.rtl.mhz and d["mhz"] == 200.0
    with pytest.raises(ClusterError, match="clock_mhz must be a finite number > 0"):
        ClusterConfig.homogeneous(2, PRESETS["small"], clock_mhz=float("nan"))


def _report(tmp_path, name, **rep):
    d = tmp_path / name
    d.mkdir()
    (d / "report.json").write_text(json.dumps(rep))
    return d


def test_record_clock_replaces_one_record_from_a_translate_report(tmp_path, capsys):
    toml = tmp_path / "paths.toml"
    toml.write_text((clock.HERE / "pre_route.toml").read_text())
    before = tomllib.loads(toml.read_text())["path"]
    run = _report(tmp_path, "run", unit="node", preset="small", pipelines="requant,mac,addr,cmd",
                  synth={"timing": {"ns": 4.97, "through": ["a", "b", "router.unit.q"]}})
    assert record_clock.main([str(run), "--toml", str(toml)]) == 0
    after = tomllib.loads(toml.read_text())["path"]
    assert len(after) == len(before)
    mine = [r for r in after if (r["unit"], r["preset"], r["pipelines"]) == ("node", "small", "requant,mac,addr,cmd")]
    assert [r["ns"] for r in mine] == [4.97] and "router.unit.q" in mine[0]["through"]
    key = ("node", "small", "requant,mac,addr,cmd")
    assert [r for r in after if r not in mine] == [r for r in before if (r["unit"], r["preset"], r["pipelines"]) != key]
    assert toml.read_text().startswith("# Pre-route critical paths")
    comments = [ln for ln in toml.read_text().splitlines() if ln.startswith("#")]
    assert comments == [ln for ln in (clock.HERE / "pre_route.toml").read_text().splitlines() if ln.startswith("#")]


def test_record_clock_refuses_a_report_without_a_path_in_one_line(tmp_path, capsys):
    run = _report(tmp_path, "nosynth", unit="engine", preset="tiny", pipelines="none")
    assert record_clock.main([str(run), "--toml", str(tmp_path / "x.toml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no Yosys sta path" in err
    assert not (tmp_path / "x.toml").exists()
