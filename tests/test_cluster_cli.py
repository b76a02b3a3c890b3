"""``pymtl-fp train --engine cluster``: the report, the JSON and the saved weights; clear errors."""

import argparse
import json

import numpy as np
import pytest

from pymtl_fp.cli import cmd_train
from pymtl_fp.cli.errors import UserError


def run_cli(*argv):
    parser = argparse.ArgumentParser()
    cmd_train.add_arguments(parser)
    return cmd_train.main(parser.parse_args(["--engine", "cluster", *argv]))


def test_cluster_training_report_json_and_weights(tmp_path, capsys):
    report, weights = tmp_path / "r.json", tmp_path / "w.npz"
    assert run_cli("--nodes", "2", "--batch", "2", "--steps", "2", "--report", str(report),
                   "--save-weights", str(weights)) == 0
    out = capsys.readouterr().out
    assert "final weights equal the golden model's: yes" in out
    for text in ("cycles per step", "analytical bound per step", "MAC util",
                 "bandwidth utilization", "first logits after", "clock: ", "the clock the RTL reaches"):
        assert text in out
    data = json.loads(report.read_text())
    # images/s at the clock the nodes' RTL reaches, as the report states it (no assumed 200 MHz)
    clock = data["clock"]
    assert not clock["given"] and clock["mhz"] == data["clock_mhz"] < 200
    assert clock["mhz"] == pytest.approx(1000 / (clock["pre_route_ns"] * clock["routing_allowance"]))
    assert data["images_per_s"] == pytest.approx(2 * clock["mhz"] * 1e6 / data["cycles_per_step"][-1])
    assert f"images/s at {clock['mhz']:.1f} MHz" in out
    assert data["weights_equal_golden"] is True and data["nodes"] == 2 and data["batch"] == 2
    assert len(data["node"]) == 2 and data["bound"]["cycles_per_step"] > 0
    w = np.load(weights)
    assert set(w.files) == {"conv1.w", "conv1.b", "conv2.w", "conv2.b", "fc.w", "fc.b"}
    assert w["conv2.w"].shape == (16, 8, 3, 3)


def test_overlap_option_is_bit_exact_and_bounded_by_compute(tmp_path, capsys):
    """Overlap is the default; --no-overlap runs the serial engine."""
    report = tmp_path / "r.json"
    args = ("--nodes", "2", "--level", "cl", "--batch", "2", "--steps", "1", "--report", str(report))
    assert run_cli(*args, "--no-overlap") == 0
    serial = json.loads(report.read_text())
    assert run_cli(*args) == 0
    out = capsys.readouterr().out
    assert "engine commands overlap" in out and "final weights equal the golden model's: yes" in out
    data = json.loads(report.read_text())
    assert data["overlap"] is True and serial["overlap"] is False
    assert data["cycles_total"] < serial["cycles_total"]
    # an overlapping node is bounded by its compute (or a link), not by compute + I/O
    assert data["bound"]["cycles_per_step"] == data["bound"]["compute_or_link_cycles_per_step"]


def test_pipelined_engines_from_the_command_line(tmp_path, capsys):
    """Every node's engine has the four pipelines by default (for 200 MHz), ``--pipeline none``
    builds them without: both bit-exact and reported, and every compute command's 17 cycles more
    show in the step and in the modelled bound."""
    report = tmp_path / "r.json"
    args = ("--nodes", "2", "--batch", "2", "--steps", "1", "--report", str(report))
    assert run_cli(*args) == 0
    out = capsys.readouterr().out
    assert "engine pipelines: requant, mac, addr, cmd" in out and "final weights equal the golden model's: yes" in out
    data = json.loads(report.read_text())
    assert run_cli(*args, "--pipeline", "none") == 0
    out = capsys.readouterr().out
    assert "engine pipelines" not in out and "final weights equal the golden model's: yes" in out
    plain = json.loads(report.read_text())
    assert data["engine_pipelines"] == ["requant", "mac", "addr", "cmd"] and plain["engine_pipelines"] == []
    assert data["cycles_total"] > plain["cycles_total"]
    assert data["bound"]["node_compute_cycles_per_step"] > plain["bound"]["node_compute_cycles_per_step"]


@pytest.mark.parametrize("argv,match", [
    (["--level", "gates"], "choose one of"),
    (["--pipeline", "mac,fast"], "--pipeline 'mac,fast': choose from"),
    (["--nodes", "20", "--batch", "2"], "at most"),
    (["--act-depth", "128", "--batch", "8"], "does not fit"),
    (["--precision", "float64"], "fixed-point precision"),
    (["--nodes", "2", "--level", "mixed", "--node-levels", "rtl"], "1 node levels given for 2 nodes"),
    (["--nodes", "2", "--node-levels", "rtl,fl"], "needs --level mixed"),
    (["--cuts", "0,5,3,9", "--nodes", "3"], "rise from 0"),
    (["--save-weights", "w.txt"], ".npz"),
    (["--schedule", "cp", "--nodes", "4"], r"--nodes 4: lenet-digits can be spread over at most 3 nodes"),
    (["--schedule", "sgd", "--nodes", "2", "--cuts", "0,4,9"], "conv2 is split over nodes 0 and 1"),
    (["--weight-depth", "1"], "--weight-depth"),
    (["--bias-depth", "1"], "--bias-depth"),
    (["--bias-depth", "8"], "node 3 buffer B needs 9 words, has 8"),
    (["--weight-depth", "60"], "node 3 buffer W needs"),
    (["--weight-depth", "110", "--bands", "1"], "not row bands"),
])
def test_cluster_bad_options_are_user_errors(argv, match):
    with pytest.raises(UserError, match=match):
        run_cli(*argv)


def test_trace_timeline_and_kernels_from_the_command_line(tmp_path, capsys):
    """--trace writes trace-event JSON, --timeline a PNG drawn from it; --kernel pymtl and
    --no-skip give the same report (but the simulator line) as the default direct kernel."""
    import matplotlib.image

    trace, png, rep = tmp_path / "run.json", tmp_path / "run.png", tmp_path / "r.json"
    args = ("--nodes", "2", "--level", "cl", "--batch", "2", "--steps", "1")
    assert run_cli(*args, "--trace", str(trace), "--timeline", str(png), "--report", str(rep), "--no-progress") == 0
    out = capsys.readouterr().out
    assert "simulated by direct scheduler" in out and "quiet-cycle skipping on" in out
    doc = json.loads(trace.read_text())
    assert any(e["ph"] == "X" and e.get("cat") == "compute" for e in doc["traceEvents"])
    height, width = matplotlib.image.imread(png).shape[:2]
    assert width > 1000 and height > 500
    default = json.loads(rep.read_text())
    for extra in (("--kernel", "pymtl"), ("--no-skip",)):
        assert run_cli(*args, "--report", str(rep), *extra) == 0
        other = json.loads(rep.read_text())
        for key in ("cycles_per_step", "node", "links", "steady_state", "losses"):
            assert other[key] == default[key], (extra, key)
    assert "simulated by PyMTL3" not in out


@pytest.mark.parametrize("schedule", ["cp", "sgd"])
def test_per_image_schedules_from_the_command_line(tmp_path, capsys, schedule):
    report = tmp_path / "r.json"
    assert run_cli("--nodes", "2", "--batch", "3", "--steps", "1", "--schedule", schedule, "--report", str(report)) == 0
    out = capsys.readouterr().out
    assert "final weights equal the golden model's: yes" in out
    assert f"steady state ({schedule}" in out and "per-image updates included" in out
    data = json.loads(report.read_text())
    assert data["schedule"] == schedule and data["partition"]["split_layers"] == []


def test_golden_cp_takes_the_pipeline_depth_from_nodes(capsys):
    parser = argparse.ArgumentParser()
    cmd_train.add_arguments(parser)
    args = ["--precision", "8", "--epochs", "1", "--batch", "128", "--schedule", "cp"]
    assert cmd_train.main(parser.parse_args([*args, "--nodes", "3"])) == 0
    assert "schedule cp (3 nodes)" in capsys.readouterr().out
    with pytest.raises(UserError, match="at most 3 nodes"):
        cmd_train.main(parser.parse_args([*args, "--nodes", "5"]))
    with pytest.raises(UserError, match="defined in fixed point"):
        cmd_train.main(parser.parse_args(["--precision", "float64", "--schedule", "sgd"]))
    with pytest.raises(UserError, match="--array: option of --engine cluster"):
        cmd_train.main(parser.parse_args([*args, "--array", "8"]))


def test_data_parallel_and_hybrid_from_the_command_line(tmp_path, capsys):
    report = tmp_path / "r.json"
    assert run_cli("--nodes", "4", "--parallel", "hybrid", "--groups", "2", "--batch", "4", "--steps", "1",
                   "--report", str(report)) == 0
    out = capsys.readouterr().out
    assert "final weights equal the golden model's: yes" in out and "--parallel hybrid --groups 2" in out
    assert "replicas (hybrid: 2 replica(s) of a 2-node pipeline" in out and "weight phase" in out
    data = json.loads(report.read_text())
    assert data["replicas"]["groups"] == 2 and data["replicas"]["shares"] == [2, 2]
    for argv, match in ((("--parallel", "hybrid", "--groups", "3"), "must divide"),
                        (("--parallel", "data", "--partition", "search"), "--partition search"),
                        (("--groups", "9"), "--groups")):
        with pytest.raises(UserError, match=match):
            run_cli("--nodes", "4", "--batch", "4", "--steps", "1", *argv)


def test_bench_parallel_measures_every_method_bit_exact(tmp_path, capsys):
    from pymtl_fp.cli.main import main

    out_json = tmp_path / "p.json"
    assert main(["bench", "parallel", "--nodes", "2,4", "--batches", "4", "--steps", "1", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "checked bit-exact" in out and "fastest" in out
    runs = json.loads(out_json.read_text())["runs"]
    assert {(r["nodes"], r["method"]) for r in runs} == {(2, "pipeline"), (2, "data"), (4, "pipeline"), (4, "data"),
                                                         (4, "hybrid")}
    for r in runs:
        assert "error" not in r and r["images_per_s"] > 0 and 0 < r["mac_utilization"] < 1
        assert (r["weight_phase_cycles"] is None) == (r["method"] == "pipeline")


def test_weights_kept_by_a_neighbour_from_the_command_line(tmp_path, capsys):
    """--weight-depth 110: node 3's 120 words do not fit; node 2 keeps the fc layer's weights."""
    report = tmp_path / "r.json"
    assert run_cli("--weight-depth", "110", "--batch", "2", "--steps", "1", "--report", str(report)) == 0
    out = capsys.readouterr().out
    assert "weight balancing: fc's weights kept by node 2 for node 3" in out
    assert "final weights equal the golden model's: yes" in out
    data = json.loads(report.read_text())
    assert data["partition"]["weight_home"] == ["fc's weights kept by node 2 for node 3"] and data["bands"] == 0
    assert max(n["buffers"]["W"]["used"] for n in data["node"]) <= 110
    with pytest.raises(UserError, match="node 3 buffer W needs 120 words, has 110"):
        run_cli("--weight-depth", "110", "--batch", "2", "--steps", "1", "--weight-home", "off")
