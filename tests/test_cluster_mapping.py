"""The run's mapping as one object: :class:`~pymtl_fp.cluster.compiler.mapping.Mapping` refuses each
pair of conflicting choices with its one-line message when it is built, is frozen, and a library user
trains with it directly (:func:`~pymtl_fp.cluster.run.train.train_on_cluster`,
:func:`~pymtl_fp.cluster.run.session.run_training`); a mixed-P cluster has no one ``P``."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pymtl_fp.cluster.compiler.mapping import DEFAULT, TRAIN_DEFAULT, Mapping
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, default_link, engine_for_net
from pymtl_fp.cluster.run.session import TrainingOutputs, run_training
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import seeded_params

NET = load_net("lenet-digits")
PREC = "8"

#: (choices, the one-line refusal, as the CLI prints it after "error: ")
REFUSED = [
    (dict(schedule="zigzag"), "unknown schedule 'zigzag'; choose one of 1f1b, gpipe, cp, sgd"),
    (dict(wgrad="sometimes"), "unknown --wgrad 'sometimes'; choose one of batch, image, auto"),
    (dict(bands="many"), "--bands 'many': rows per band (an integer; 0: whole layers)"),
    (dict(bands=-1), "--bands -1: rows per band must be >= 1 (0: whole layers)"),
    (dict(bands=0, bands_backward=True),
     "--bands-backward runs the backward passes in the row bands of --bands: not with --bands 0"),
    (dict(bands=0, bands_all=True), "--bands-all runs every forward pass in the row bands of --bands: not with --bands 0"),
    (dict(pack="maybe"), "unknown --tap-pack 'maybe'; choose one of auto, on, off"),
    (dict(weight_home="far"), "unknown --weight-home 'far'; choose one of auto, off"),
    (dict(parallel="model"), "unknown --parallel 'model'; choose one of pipeline, data, hybrid"),
    (dict(parallel="pipeline", groups=2), "--groups is for --parallel hybrid"),
    (dict(parallel="hybrid"), "--parallel hybrid needs --groups G (replicas; G divides the nodes)"),
    (dict(parallel="data", bands=2), "--parallel data: the replicas run whole layers (no --bands)"),
    (dict(parallel="data", bands=1, bands_backward=True), "--parallel data: the replicas run whole layers (no --bands)"),
    (dict(parallel="hybrid", groups=2, bands="auto", bands_all=True),
     "--parallel hybrid: the replicas run whole layers (no --bands)"),
    (dict(parallel="data", wgrad="image"), "--parallel data: each replica computes its share's weight gradients in "
                                           "one raw bwd_weight for the all-reduce (no --wgrad image)"),
    (dict(parallel="data", schedule="cp"),
     "--parallel data runs each replica in GPipe order with its own partition (no --schedule cp/sgd, no --cuts)"),
    (dict(parallel="hybrid", groups=2, cuts=[0, 3, 9]),
     "--parallel hybrid runs each replica in GPipe order with its own partition (no --schedule cp/sgd, no --cuts)"),
]


@pytest.mark.parametrize("choices,message", REFUSED, ids=[str(c) for c, _ in REFUSED])
def test_each_conflict_is_refused_with_its_one_line_message(choices, message):
    with pytest.raises(ClusterError) as err:
        Mapping(**choices)
    assert str(err.value) == message
    with pytest.raises(ClusterError):  # ... and again when a valid mapping is changed into it
        DEFAULT.replace(**choices)


@pytest.mark.parametrize("choices", [
    dict(parallel="data", bands="auto"),  # (auto: whole layers where bands cannot run)
    dict(parallel="hybrid", groups=2, schedule="gpipe", overlap=True, pack="auto"),
    dict(bands=2, bands_backward=True, bands_all=True, split=False),
    dict(bands="auto", bands_backward=True),
    dict(schedule="cp", cuts=[0, 2, 9]),
    dict(wgrad="auto", weight_home="off"),
])
def test_compatible_choices_are_kept(choices):
    m = Mapping(**choices)
    for k, v in choices.items():
        assert getattr(m, k) == (tuple(v) if k == "cuts" else v)


def test_a_mapping_is_frozen_hashable_and_its_cuts_a_tuple():
    m = Mapping(cuts=[0, 3, 9])
    assert m.cuts == (0, 3, 9) and m.cut_list() == [0, 3, 9]
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.schedule = "cp"
    assert hash(m) == hash(Mapping(cuts=(0, 3, 9))) and m == Mapping(cuts=(0, 3, 9))
    assert m.replace(cuts=None) == DEFAULT


def test_with_bands_zero_drops_the_band_options():
    m = Mapping(bands="auto", bands_backward=True, bands_all=True)
    assert m.with_bands(0) == DEFAULT.replace(bands=0)
    assert m.with_bands(2) == Mapping(bands=2, bands_backward=True, bands_all=True)


def test_the_train_default_is_what_the_cli_runs():
    """``pymtl-fp train --engine cluster`` without mapping options: overlap on, bands auto, the
    rest the library's defaults."""
    assert TRAIN_DEFAULT == Mapping(overlap=True, bands="auto")
    assert (TRAIN_DEFAULT.parallel, TRAIN_DEFAULT.schedule, TRAIN_DEFAULT.wgrad, TRAIN_DEFAULT.pack,
            TRAIN_DEFAULT.weight_home, TRAIN_DEFAULT.split) == ("pipeline", "1f1b", "batch", "off", "auto", True)


def _engine(P):
    return engine_for_net(NET, PREC, P=P, act_depth=2048, weight_depth=512, bias_depth=32)


def test_a_mixed_p_cluster_has_no_one_p():
    mixed = ClusterConfig((_engine(4), _engine(2)), default_link(_engine(4).stream_bits))
    with pytest.raises(ClusterError, match=r"array sides differ \(P = \[4, 2\]\)"):
        _ = mixed.P
    assert (mixed.P_in, mixed.P_out, mixed.Ps) == (4, 2, (4, 2))
    same = ClusterConfig.homogeneous(3, _engine(2))
    assert (same.P, same.P_in, same.P_out) == (2, 2, 2)


@pytest.fixture(scope="module")
def digits():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:8], NET.precision(PREC).act), split.y_train[:8]


def test_a_library_user_trains_with_a_mapping(digits):
    images, labels = digits
    params, tcfg = seeded_params(NET, PREC), TrainConfig(PREC, lr_log2=3, seed=1)
    ccfg = ClusterConfig.homogeneous(2, _engine(4))
    run = train_on_cluster(NET, params, images, labels, tcfg, ccfg, Mapping(schedule="gpipe", overlap=True,
                                                                            split=False),
                           steps=2, batch=3, levels=["fl", "cl"])
    want, losses = golden_steps(NET, params, images, labels, tcfg, 2, 3)
    assert params_equal(run.params, want)
    assert run.losses == pytest.approx(losses, abs=0)
    assert run.report["partition"]["split_layers"] == []


def test_run_training_is_the_cli_session_as_a_call(tmp_path):
    """Data, quantization, the cluster run, the golden model, test accuracy and the files, from
    one call with a net name, a cluster and a mapping."""
    ccfg = ClusterConfig.homogeneous(2, _engine(4))
    lines = []
    out = TrainingOutputs(report=tmp_path / "run.json", weights=tmp_path / "w.npz")
    result = run_training("lenet-digits", ccfg, Mapping(overlap=True, bands=1), steps=1, batch=4,
                          levels=["fl", "fl"], outputs=out, say=lines.append)
    assert result.weights_equal and result.steps == 1 and result.batch == 4
    assert len(lines) == 1 and lines[0].startswith("digits: 1 steps of 4 images; net lenet-digits (8-bit); 2 nodes")
    assert 0.0 <= result.accuracy_before <= 1.0 and 0.0 <= result.accuracy_after <= 1.0
    assert result.report["test_accuracy"]["test_images"] == result.test_images > 0
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["weights_equal_golden"] is True and doc["engine"] == "cluster" and doc["settings"]["batch"] == 4
    assert (tmp_path / "w.npz").exists()
    summary = result.summary()
    assert summary[0].startswith("final weights equal the golden model's: yes")
    assert summary[-2:] == [f"  wrote {tmp_path / 'run.json'}", f"  wrote {tmp_path / 'w.npz'}"]


def test_run_training_refuses_a_search_with_cuts_and_too_many_steps():
    ccfg = ClusterConfig.homogeneous(2, _engine(4))
    with pytest.raises(ClusterError, match="give --cuts or --partition search, not both"):
        run_training(NET, ccfg, Mapping(cuts=[0, 2, 9]), steps=1, batch=2, partition="search")
    with pytest.raises(ClusterError, match="exceeds the"):
        run_training(NET, ccfg, steps=10_000, batch=8)
