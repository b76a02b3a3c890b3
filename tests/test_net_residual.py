"""Residual nets in the net description: ``add`` (``from`` an earlier layer, an optional 1x1 strided
projection) and ``global_avg_pool`` layers in net files, their shapes, MACs and shifts; bad
descriptions refused in one line naming the layer; the cluster's partition placing the residual
layers, ``--schedule cp`` refusing a residual net, and residual nets trained end to end by
``pymtl-fp train --engine golden``."""

import argparse
import json

import pytest

from pymtl_fp.cli import cmd_train
from pymtl_fp.cli.errors import UserError
from pymtl_fp.net import Add, GlobalAvgPool, NetError, load_net, net_from_dict, presets, save_net

RESNET = "resnet8-mnist"
FORMATS = {"8": {"act": [8, 4], "weight": [8, 6], "grad": [8, 7], "wgrad": [8, 3], "bias_bits": 16,
                 "loss_scale_log2": 5}}


def _doc(*layers, shape=(1, 8, 8)):
    return {"name": "res", "input_shape": list(shape), "layers": list(layers), "formats": FORMATS}


def conv(name, k, stride=1, relu=True):
    return {"type": "conv", "name": name, "out_channels": k, "kernel": 3, "stride": stride, "pad": 1, "relu": relu}


def test_the_preset_has_its_blocks_shapes_and_macs():
    net = load_net(RESNET)
    assert RESNET in presets()
    by_name = dict(zip([ly.name for ly in net.layers], net.shapes()[1:]))
    assert by_name["pool1"] == by_name["add1"] == (8, 14, 14)
    assert by_name["add2"] == (32, 7, 7) and by_name["add3"] == (64, 4, 4)
    assert by_name["gap"] == (64, 1, 1) and net.classes == 10
    assert [ly.name for ly in net.layers if isinstance(ly, Add) and ly.project] == ["add2", "add3"]
    assert net.conv_geometry(net.layer("add2")) == {"w_shape": (32, 8, 1, 1), "stride": 2, "pad": 0}
    macs = {m.name: (m.fp, m.bp, m.wg) for m in net.macs()}
    # by hand: K*C*R*S*Ho*Wo; conv1 reads the image (no data gradient)
    assert macs["conv1"] == (8 * 9 * 28 * 28, 0, 8 * 9 * 28 * 28)
    assert macs["b1b"] == (8 * 8 * 9 * 14 * 14,) * 3
    assert macs["add2"] == (32 * 8 * 7 * 7,) * 3  # the projection's 1x1 conv over the skip
    assert macs["b3b"] == (64 * 64 * 9 * 4 * 4,) * 3
    assert macs["add3"] == (64 * 32 * 4 * 4,) * 3
    assert macs["fc"] == (10 * 64,) * 3
    assert "add1" not in macs and "gap" not in macs  # an identity add and a pool have no weights
    assert set(net.shifts("8")) == set(macs)
    assert net.residual and not load_net("lenet5-mnist").residual
    assert net.layer("b1b").init_scale == 0.0 and net.layer("conv1").init_scale == 1.0


def test_the_plain_sgd_resnet_differs_from_resnet8_mnist_only_in_its_classifier_and_its_start():
    """resnet8fc-mnist: resnet8-mnist's blocks, its fc layer over the whole 64x4x4 map (no average
    pool) at 2**-4 of the net's learning rate and starting at zero, the branches' last convs at 0.1;
    its file trains plain SGD (what the cluster's engines do), so the cluster runs its settings."""
    base, net = load_net(RESNET), load_net("resnet8fc-mnist")
    assert "resnet8fc-mnist" in presets()
    strip = {"init_scale", "lr_log2_offset"}
    def shape_of(layer):
        return {k: v for k, v in vars(layer).items() if k not in strip}
    assert [shape_of(ly) for ly in base.layers if ly.name != "gap"] == [shape_of(ly) for ly in net.layers]
    assert not any(isinstance(ly, GlobalAvgPool) for ly in net.layers)
    assert net.shapes()[-2] == (64, 4, 4) and {m.name: m.fp for m in net.macs()}["fc"] == 10 * 64 * 16
    assert [ly.init_scale for ly in net.layers if ly.name in ("b1b", "b2b", "b3b", "fc")] == [0.1, 0.1, 0.1, 0.0]
    assert net.layer("fc").lr_log2_offset == 4
    assert net.shifts("8", 2)["fc"] == base.shifts("8", 6)["fc"] and net.shifts("8", 2)["b3b"] == base.shifts("8", 2)["b3b"]
    assert net.train.momentum is None and (net.train.lr_log2, net.train.lr_halve_every) == (2, 3)


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_residual_net_file_round_trips(tmp_path, suffix):
    net = load_net(RESNET)
    path = save_net(net, tmp_path / f"r{suffix}")
    assert load_net(path) == net
    text = path.read_text()
    assert '"from"' in text or "from = " in text  # the file's key, not the field's name


def test_plain_nets_save_as_before():
    """A layer at the default init_scale writes no init_scale key (plain nets' files are unchanged)."""
    d = load_net("lenet5-mnist").to_dict()
    assert all("init_scale" not in layer for layer in d["layers"])


@pytest.mark.parametrize("layers,match", [
    ([conv("c1", 4), conv("c2", 8), {"type": "add", "name": "a1", "from": "c1"}],
     r"^a1 \(input 8x8x8\): the residual branches' shapes disagree: the main branch is 8x8x8, the skip from "
     r"'c1' is 4x8x8; give project = true"),
    ([conv("c1", 4), conv("c2", 8, stride=2), {"type": "add", "name": "a1", "from": "c1", "project": True}],
     r"^a1 \(input 8x4x4\): the residual branches' shapes disagree: .*projection of stride 1 gives 8x8x8"),
    ([conv("c1", 4), {"type": "add", "name": "a1", "from": "nope"}],
     r"^a1: from 'nope' names no layer of the net"),
    ([conv("c1", 4), {"type": "add", "name": "a1", "from": "c2"}, conv("c2", 4)],
     r"^a1: from 'c2' names a later layer"),
    ([conv("c1", 4), {"type": "add", "name": "a1", "from": "a1"}],
     r"^a1: from 'a1' names itself"),
    ([conv("c1", 4), {"type": "add", "name": "a1", "from": "c1", "stride": 2}],
     r"^a1: stride 2 needs project = true"),
    ([conv("c1", 4), conv("c2", 4), {"type": "add", "name": "a1", "from": "c1", "lr_log2_offset": 1}],
     r"^a1: lr_log2_offset needs project = true \(an identity add has no weights to learn\)$"),
    ([conv("c1", 4), {"type": "add", "name": "a1", "source": "c1"}],
     r"^layer 1 \(add\): unknown keys \['source'\]"),
    ([conv("c1", 4), {"type": "add", "name": "a1", "from": "c1", "relu": 1}],
     r"^a1: relu must be true or false"),
    ([conv("c1", 4), {"type": "conv", "name": "c2", "out_channels": 4, "kernel": 3, "pad": 1, "init_scale": -1}],
     r"^c2: init_scale must be a number in 0..16"),
])
def test_bad_residual_descriptions_are_one_line_errors_naming_the_layer(layers, match):
    with pytest.raises(NetError, match=match) as exc:
        net_from_dict(_doc(*layers))
    assert "\n" not in str(exc.value)


def test_an_average_pool_over_too_large_a_map_is_refused():
    doc = _doc(conv("c1", 2), {"type": "global_avg_pool"}, {"type": "fc", "name": "fc", "out_features": 2},
               shape=(1, 512, 512))
    with pytest.raises(NetError, match=r"^gap1 \(input 2x512x512\): averages 262144 elements per channel; "
                                       r"at most 65536"):
        net_from_dict(doc)


def test_unnamed_average_pools_are_named_by_position():
    net = net_from_dict(_doc(conv("c1", 2), {"type": "global_avg_pool"}, {"type": "fc", "name": "fc", "out_features": 2}))
    assert isinstance(net.layers[1], GlobalAvgPool) and net.layers[1].name == "gap1"
    assert net.rectified(1) and not net.rectified(2)  # a mean does not keep its elements' signs


# ---- refused by the cluster, trained by the golden engine ----------------------------------------

def _train(*argv):
    parser = argparse.ArgumentParser()
    cmd_train.add_arguments(parser)
    return cmd_train.main(parser.parse_args(list(argv)))


ONE_LINE = r"^resnet8-mnist is a residual net \(Add, GlobalAvgPool layers\): residual nets run on the golden engine only"
#: the cluster runs the residual layers; resnet8-mnist's file trains with momentum, which it has not
MOMENTUM = r"^the cluster trains with plain SGD: the engine's update has no momentum"


@pytest.mark.parametrize("argv,match", [(["--engine", "cluster"], MOMENTUM),
                                        (["--engine", "cluster", "--level", "verilator"], MOMENTUM),
                                        (["--schedule", "cp", "--precision", "8"], ONE_LINE)])
def test_the_train_command_refuses_what_the_cluster_does_not_run_in_one_line(argv, match):
    with pytest.raises(UserError, match=match) as exc:
        _train("--net", RESNET, *argv)
    assert "\n" not in str(exc.value)


def test_momentum_0_drops_the_files_momentum(monkeypatch):
    """``--momentum 0`` trains plain SGD whatever the net's file says: the command's cluster check
    passes, the session makes its data without momentum (stopped there), the golden study gets no
    momentum (stopped at the fit), and a negative shift is refused in one line naming the range."""
    from pymtl_fp.cluster.config import cluster_for_net
    from pymtl_fp.cluster.run import session

    net = load_net(RESNET)
    with pytest.raises(UserError, match=MOMENTUM):
        cmd_train._check_cluster_net(net, argparse.Namespace(momentum=None))
    cmd_train._check_cluster_net(net, argparse.Namespace(momentum=0))
    seen = {}

    def stop(key):
        def record(*args, **kw):
            seen[key] = args[7] if key == "session" else kw["momentum"]
            raise SystemExit(0)
        return record

    monkeypatch.setattr(session, "_data", stop("session"))
    with pytest.raises(SystemExit):
        session.run_training(net, cluster_for_net(net), momentum=0)
    monkeypatch.setattr("pymtl_fp.golden.study.fit", stop("golden"))
    monkeypatch.setattr(cmd_train.train_data, "load", lambda *a: type("S", (), {"y_train": [], "y_test": []})())
    with pytest.raises(SystemExit):
        _train("--net", RESNET, "--momentum", "0", "--precision", "8")
    assert seen == {"session": None, "golden": None}
    with pytest.raises(UserError, match=r"^--momentum must be in 0\.\.16, got -1$"):
        _train("--net", RESNET, "--momentum", "-1")


def test_the_partition_places_the_residual_layers_and_the_api_and_session_refuse_momentum():
    """The cluster's partition attaches each identity add and the average pool to the node of the
    layer before it and gives each projection (a layer with weights) its own item; the API and the
    session refuse resnet8-mnist's momentum in one line."""
    from pymtl_fp import api
    from pymtl_fp.cluster.compiler.partition import partition
    from pymtl_fp.cluster.config import ClusterError, cluster_for_net
    from pymtl_fp.cluster.run.session import run_training

    net = load_net(RESNET)
    ccfg = cluster_for_net(load_net("lenet5-mnist"))
    part = partition(net, ccfg, 8, split=False)
    names = [[net.layers[it.layer].name for it in items] for items in part.nodes]
    flat = [n for node in names for n in node]
    assert flat == [ly.name for ly in net.layers]  # every layer once, in order
    for node in names:  # an identity add or the pool never starts a node; a projection may
        assert node[0] not in ("add1", "gap", "pool1")
    for call in (lambda: api.train(RESNET), lambda: run_training(net, ccfg)):
        with pytest.raises(ClusterError, match=MOMENTUM):
            call()


def test_a_residual_net_file_trains_on_the_golden_engine_end_to_end(tmp_path, capsys):
    """A small residual net on the 8x8 digits, one epoch at every precision, with its JSON report."""
    doc = _doc(conv("c1", 4), {"type": "pool", "name": "p1", "k": 2}, conv("c2", 4), conv("c3", 4, relu=False),
               {"type": "add", "name": "a1", "from": "p1", "relu": True}, conv("c4", 8, stride=2, relu=False),
               {"type": "add", "name": "a2", "from": "a1", "project": True, "stride": 2, "relu": True},
               {"type": "global_avg_pool", "name": "gap"}, {"type": "fc", "name": "fc", "out_features": 10})
    path = tmp_path / "res.json"
    path.write_text(json.dumps(doc))
    report = tmp_path / "report.json"
    assert _train("--net", str(path), "--engine", "golden", "--epochs", "2", "--precision", "all",
                  "--report", str(report)) == 0
    out = capsys.readouterr().out
    for prec in ("float64", "8"):
        assert f"{prec}: test accuracy" in out
    results = json.loads(report.read_text())["results"]
    assert set(results) == {"float64", "8"}
    assert all(r["steps"] == 2 * (1437 // 32) for r in results.values())
    assert all(r["final_test_accuracy"] > 0.3 for r in results.values())  # ten classes: chance is 0.1


def test_the_pytorch_export_refuses_a_residual_net_in_one_line():
    pytest.importorskip("torch")
    from pymtl_fp.interop.chain import InteropError
    from pymtl_fp.interop.torch_net import torch_from_net

    with pytest.raises(InteropError, match=r"^resnet8-mnist is a residual net: torch_from_net exports chains"):
        torch_from_net(load_net(RESNET))
