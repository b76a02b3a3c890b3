"""The public Python API (:mod:`pymtl_fp.api`): a training run's tables and figures, the same run as
the command line's, the explore studies as functions equal to the commands' CSV files, and
one-line refusals of bad input before any simulation."""

from __future__ import annotations

import csv
import json
import re

import matplotlib
import pytest

from pymtl_fp import api
from pymtl_fp.cli.main import main
from pymtl_fp.cluster.config import link_names
from pymtl_fp.explore.links import LinkError

matplotlib.use("Agg")

NET, NODES, STEPS, BATCH = "lenet-digits", 2, 2, 8


@pytest.fixture(scope="module")
def result():
    return api.train(NET, nodes=NODES, steps=STEPS, batch=BATCH)


def test_train_is_bit_exact_and_tabled(result):
    assert result.weights_equal
    nodes = result.to_dataframe()
    assert list(nodes.index) == list(range(NODES))
    assert set(nodes["level"]) == {"cl"} and set(nodes["P"]) == {4}
    # every layer of the net, in order, over the nodes (a split layer shows on both sides of its cut)
    held = [re.sub(r"\[.*\]$", "", item) for layers in nodes["layers"] for item in layers.split()]
    assert list(dict.fromkeys(held)) == [ly.name for ly in api.load_net(NET).layers]
    assert (nodes["macs"] > 0).all() and ((nodes["mac_utilization"] > 0) & (nodes["mac_utilization"] <= 1)).all()
    assert {"cycles_compute", "cycles_io", "cycles_stall_in", "words_X", "words_W"} <= set(nodes.columns)
    steps = result.to_dataframe("steps")
    assert list(steps.index) == list(range(STEPS))
    # the host's losses against the golden model's replay of the same steps (computed apart)
    assert list(steps["loss"]) == list(steps["golden_loss"]) == list(result.golden_losses)
    links = result.to_dataframe("links")
    assert sorted(links.index) == sorted(link_names(NODES, "chain"))
    assert (links["elements_per_step"] > 0).all()
    with pytest.raises(ValueError, match="choose nodes, steps, links"):
        result.to_dataframe("bogus")


def test_plots(result):
    ax = result.plot_nodes()
    nodes = result.to_dataframe()
    states = [c for c in nodes.columns if c.startswith("cycles_")]
    assert len(ax.patches) == NODES * len(states)
    # node 0's stacked bars end at the sum of its cycles
    node0 = [p for p in ax.patches if abs(p.get_y() + p.get_height() / 2 - 0) < 1e-9]
    assert max(p.get_x() + p.get_width() for p in node0) == nodes.loc[0, states].sum()
    ax = result.plot_losses()
    assert [list(line.get_ydata()) for line in ax.lines] == [list(result.golden_losses)] * 2
    with pytest.raises(api.ClusterError, match="no trace recorded"):
        result.plot_timeline("unused.png")


def test_train_equals_the_command_line(result, tmp_path, capsys):
    """``api.train`` with the command's defaults is the command's run."""
    out = tmp_path / "run.json"
    assert main(["train", "--engine", "cluster", "--net", NET, "--nodes", str(NODES), "--steps", str(STEPS),
                 "--batch", str(BATCH), "--report", str(out)]) == 0
    capsys.readouterr()
    cli = json.loads(out.read_text())
    assert cli["cycles_per_step"] == result.report["cycles_per_step"]
    assert cli["losses"] == result.report["losses"]
    assert cli["test_accuracy"]["after"] == result.accuracy_after


def test_studies_equal_the_commands(tmp_path, capsys):
    study = api.scaling("vgg16", fpgas=[1, 2, 4], links=["6x10G"])
    assert main(["explore", "scaling", "--net", "vgg16", "--fpgas", "1,2,4", "--link", "6x10G", "--out",
                 str(tmp_path), "--no-plot"]) == 0
    capsys.readouterr()
    (path,) = tmp_path.glob("scaling_*.csv")
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    frame = study.to_dataframe()
    assert list(frame["fpgas"]) == [int(r["fpgas"]) for r in rows] == [1, 2, 4]
    assert list(frame["images_s"]) == pytest.approx([float(r["images_s"]) for r in rows], rel=1e-9)
    modes = api.modes("vgg-cifar", arrays=[16], batches=[4])
    assert len(modes.to_dataframe("network")) == 1
    assert set(modes.to_dataframe()["layer"]) == {ly.name for ly in modes_network_layers("vgg-cifar")}


def _csv(folder, pattern) -> list:
    (path,) = folder.glob(pattern)
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("study, argv, pattern, frame, key", [
    (lambda: api.parallelism("vgg16", fpgas=[1, 2, 4], batches=[1, 16]),
     ["parallelism", "--net", "vgg16", "--fpgas", "1,2,4", "--batches", "1,16"], "parallelism_*.csv",
     lambda r: r.to_dataframe(), "images_s"),
    (lambda: api.partition("resnet152"), ["partition", "--net", "resnet152"], "partition_*.csv",
     lambda r: r.to_dataframe("fpgas"), "stage_ms"),
    (lambda: api.design("vgg-cifar"), ["design", "--net", "vgg-cifar"], "design_*_pareto.csv",
     lambda r: r.to_dataframe().query("pareto").sort_values("gops", ascending=False), "gops"),
])
@pytest.mark.slow
def test_more_studies_equal_the_commands(study, argv, pattern, frame, key, tmp_path, capsys):
    """Each study's frame holds the figures its command writes (the design's Pareto front: the
    points the frame marks)."""
    assert main(["explore", *argv, "--out", str(tmp_path), "--no-plot"]) == 0
    capsys.readouterr()
    rows = _csv(tmp_path, pattern)
    got = list(frame(study())[key])
    want = [float(r[key]) for r in rows]
    if key == "gops":  # (the command lists the front by throughput)
        want = sorted(want, reverse=True)
    assert len(got) == len(want) > 0
    assert got == pytest.approx(want, rel=1e-6)


def modes_network_layers(name):
    from pymtl_fp.explore.zoo import get_network

    return [ly for ly in get_network(name).layers if ly.has_macs]


@pytest.mark.parametrize("call, error, message", [
    (lambda: api.train("no-such-net"), api.NetError, "no preset or file named 'no-such-net'"),
    (lambda: api.train(nodes=0), api.ClusterError, "at least one node"),
    (lambda: api.train(nodes=2, level="gates"), api.ClusterError, "unknown level 'gates'"),
    (lambda: api.train(nodes=2, levels=["cl"]), api.ClusterError, "1 node levels given for 2 nodes"),
    (lambda: api.train(nodes=2, levels=["cl", "gates"]), api.ClusterError, "unknown engine level 'gates'"),
    (lambda: api.train(nodes=2, steps="x"), api.ClusterError, "steps 'x': a number of steps"),
    (lambda: api.train(api.load_net(NET), api.cluster(NET, 2, precision="16")), api.ClusterError,
     "do not have lenet-digits's 8-bit word widths"),
    (lambda: api.train(nodes=2, batch=0), api.ClusterError, "at least 1 image"),
    (lambda: api.train(nodes=2, precision="7"), api.ClusterError, "no precision '7'"),
    (lambda: api.cluster(pipelines="fast"), api.ClusterError, "choose from requant"),
    (lambda: api.scaling(links=["1x10G"]), LinkError, "at least 2 transceivers"),
    (lambda: api.modes(arrays=[16], batches=[4]).to_dataframe("bogus"), ValueError, "choose layers or network"),
])
def test_bad_input_is_one_line(call, error, message):
    with pytest.raises(error, match=re.escape(message)) as exc:
        call()
    assert "\n" not in str(exc.value)
