"""The partition search (cluster.tune): on 2 and 3 nodes, where FPDeep's rule leaves a node's
LOADs waiting behind its neighbour, the searched cuts train bit-exactly, faster than the rule's,
at >= 90 % of their steady-state bound; the search's own cycle figures are the simulated ones."""

import itertools
import math

import numpy as np
import pytest

from pymtl_fp.cli.errors import UserError
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, engine_for_net
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.cluster.run.tune import search_partition
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net

NET = load_net("lenet-digits")
PREC = "8"
TCFG = TrainConfig(PREC, lr_log2=3, seed=0)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    order = np.random.default_rng(0).permutation(len(split.y_train))[:16]
    return quantize_images(split.x_train[order], NET.precision(PREC).act), split.y_train[order]


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3])
def test_searched_partition_is_faster_and_near_its_bound(data, n):
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 0), PREC)
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(NET, PREC))
    found = search_partition(NET, ccfg, params, images, labels, TCFG, 8, Mapping(overlap=True))
    assert found["table"][0]["cuts"] == found["rule_cuts"]  # the rule's partition is always tried
    runs = {}
    for name, cuts in (("rule", found["rule_cuts"]), ("search", found["cuts"])):
        runs[name] = train_on_cluster(NET, params, images, labels, TCFG, ccfg, Mapping(overlap=True, cuts=cuts), steps=2,
                                      batch=8, levels=["cl"] * n)
    want, _ = golden_steps(NET, params, images, labels, TCFG, 2, 8)
    assert params_equal(runs["search"].params, want)
    first = next(r for r in found["table"] if r["cuts"] == found["cuts"])
    assert first["cycles"] == min(r["cycles"] for r in found["table"])
    assert found["cuts"] != found["rule_cuts"]
    ss = {k: r.report["steady_state"] for k, r in runs.items()}
    assert ss["search"]["cycles_per_image"] < ss["rule"]["cycles_per_image"]
    assert runs["search"].report["cycles_per_step"][-1] < runs["rule"].report["cycles_per_step"][-1]
    assert ss["search"]["efficiency"] >= 0.90


def test_search_from_the_command_line_reports_its_candidates(tmp_path, capsys):
    import argparse
    import json

    from pymtl_fp.cli import cmd_train
    parser = argparse.ArgumentParser()
    cmd_train.add_arguments(parser)
    report = tmp_path / "r.json"
    assert cmd_train.main(parser.parse_args(["--engine", "cluster", "--nodes", "2", "--steps", "1",
                                             "--partition", "search", "--report", str(report)])) == 0
    out = capsys.readouterr().out
    assert "partition search (" in out and "final weights equal the golden model's: yes" in out
    part = json.loads(report.read_text())["partition"]
    assert part["method"].startswith("searched at cl") and len(part["search"]) >= 2
    assert part["cuts"] == min(part["search"], key=lambda r: r["cycles"])["cuts"]
    with pytest.raises(UserError, match="give --cuts or --partition search"):
        cmd_train.main(parser.parse_args(["--engine", "cluster", "--nodes", "2", "--cuts", "0,2,9",
                                          "--partition", "search"]))


def test_a_whole_layer_partition_searches_the_layer_boundaries():
    """A residual net's layers run whole: the search's candidates are its layer boundaries, so a net
    of 64-channel layers (16 tiles of 4 channels each, 67 tiles in all: C(66, 3) = 45 760 tile-position
    cut vectors for 4 nodes, more than the search compiles) still gets its C(4, 3) = 4 whole-layer
    cut vectors, ranked by their bound, the rule's among them."""
    from pymtl_fp.cluster.compiler.compile import choose_partition
    from pymtl_fp.cluster.run.tune import MAX_CANDIDATES, candidates
    from pymtl_fp.net import net_from_dict

    def conv(name, relu=True):
        return {"type": "conv", "name": name, "out_channels": 64, "kernel": 3, "pad": 1, "relu": relu}

    formats = {"act": [8, 4], "weight": [8, 6], "grad": [8, 7], "wgrad": [8, 3], "bias_bits": 16, "loss_scale_log2": 5}
    net = net_from_dict({"name": "wide-res", "input_shape": [1, 8, 8], "formats": {"8": formats},
                         "layers": [conv("c1"), conv("c2"), conv("c3", relu=False),
                                    {"type": "add", "name": "a1", "from": "c1"}, conv("c4"),
                                    {"type": "fc", "name": "fc", "out_features": 10}]})
    ccfg = ClusterConfig.homogeneous(4, engine_for_net(net, PREC, P=4, act_depth=8192, weight_depth=8192))
    params = quantize_params(net, init_params_float64(net, 0), PREC)
    boundaries = [16, 32, 48, 64]  # (c1, c2, c3 with a1, c4: 16 tiles each; fc's 3 tiles end at 67)
    assert math.comb(66, 3) > MAX_CANDIDATES
    found = candidates(net, ccfg, 2, params, TCFG, 67, Mapping())
    cut_sets = [c for _, c in found]
    assert sorted(cut_sets) == sorted([0, *inner, 67] for inner in itertools.combinations(boundaries, 3))
    bounds = [b for b, _ in found]
    assert bounds == sorted(bounds) and bounds[0] < bounds[-1]
    assert choose_partition(net, ccfg, 2, Mapping()).cuts in cut_sets


def test_a_search_with_fitted_buffers_runs_its_candidates_on_roomy_buffers():
    """``--fit-buffers --partition search`` on nodes whose own buffers fit no candidate (A 64, W 16
    words: lenet-digits needs more on every cut): the candidates run on the deepest buffers an
    engine takes, the chosen cuts' buffers are fitted; the run is bit-exact with the fastest
    candidate's cuts."""
    from pymtl_fp.cluster.run.session import run_training

    ccfg = ClusterConfig.homogeneous(2, engine_for_net(NET, PREC, act_depth=64, weight_depth=16))
    lines = []
    result = run_training(NET, ccfg, Mapping(split=False), steps=1, batch=2, partition="search", fitted=True,
                          say=lines.append)
    assert result.weights_equal
    table = result.search["table"]
    assert len(table) >= 2
    chosen = next(r for r in table if r["cuts"] == result.search["cuts"])
    assert chosen["cycles"] == min(r["cycles"] for r in table)
    assert result.report["partition"]["cuts"] == chosen["cuts"]
    fitted = next(line for line in lines if line.startswith("buffers fitted to the run"))
    assert "A 64," not in fitted and "W 16 " not in fitted
