"""FPDeep's fine-grained pipeline on the cluster (``bands``, :mod:`pymtl_fp.cluster.compiler.bands`): the
pipeline fill's forward passes (or, ``bands_all``, every one) in row bands, each band computed when its
input rows are there and sent on at once, the other passes whole layers taking their input in the
upstream node's pieces, in place inside the whole maps (maps in planes), split layers included (the
input rows and the first piece's rows go on to the second holder); the final weights equal the golden mini-batch
step bit for bit on 1-4 nodes, both mini-batch schedules and continuous propagation, every
``--wgrad``, both rounding modes, random stalls and link latencies, FL and CL (and the Verilated
cluster, cycle for cycle with CL); the first logits come sooner than with whole layers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler import bands as bands_mod
from pymtl_fp.cluster.compiler.compile import choose_partition, compile_pipeline
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.schedule import fill_passes
from pymtl_fp.cluster.config import ClusterError, default_link
from pymtl_fp.cluster.run.train import cp_versions, golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.engine.encoding import OP
from pymtl_fp.golden.train import TrainConfig
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import mapping_options, seeded_params, small_cluster
from pymtl_fp.tb.hypothesis_profiles import examples

NET, VGG = load_net("lenet-digits"), load_net("vgg-digits")
PREC = "8"
FMT = NET.precision(PREC)
TCFG = TrainConfig(PREC, lr_log2=3, seed=11)
STOCH = TrainConfig(PREC, lr_log2=3, seed=11, fwd_mode="stochastic", grad_mode="stochastic")


def _params(net=NET):
    return seeded_params(net, PREC)


def _ccfg(n, net=NET, link=None, act_depth=2048, Ps=None, **kw):
    return small_cluster(n, net, PREC, link=link, act_depth=act_depth, Ps=Ps, **kw)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:24], FMT.act), split.y_train[:24]


def _run(data, ccfg, level, *, bands, net=NET, batch=3, steps=2, tcfg=TCFG, check=True, **kw):
    images, labels = data
    params = _params(net)
    mapping, kw = mapping_options(kw, bands=bands)
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg, mapping, steps=steps, batch=batch,
                           levels=[level] * ccfg.n, **kw)
    if check:
        versions = cp_versions(net, ccfg, batch, Mapping(schedule=mapping.schedule))
        want, losses = golden_steps(net, params, images, labels, tcfg, steps, batch, versions)
        assert params_equal(run.params, want), f"{ccfg.n} nodes at {level}, bands {bands}: the weights differ"
        assert run.losses == pytest.approx(losses, abs=0)
    return run


@settings(max_examples=examples(5), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(deep=st.booleans(), n=st.integers(1, 4), level=st.sampled_from(["fl", "cl"]), bands=st.integers(1, 3),
       batch=st.integers(2, 4), latency=st.integers(1, 12), stall=st.floats(0.0, 0.4), seed=st.integers(0, 1000),
       schedule=st.sampled_from(["1f1b", "gpipe"]), overlap=st.booleans(),
       wgrad=st.sampled_from(["batch", "image", "auto"]), stoch=st.booleans(), backward=st.booleans(),
       every=st.booleans())
def test_row_bands_equal_the_golden_minibatch_step(data, deep, n, level, bands, batch, latency, stall, seed, schedule,
                                                   overlap, wgrad, stoch, backward, every):
    net = VGG if deep else NET
    # (LeNet has three conv/fc layers: on four nodes one is split, which backward bands refuse; every
    # other run takes the default partition, split layers included)
    n = n if deep or not backward else min(n, 3)
    ccfg = _ccfg(n, net, link=default_link(32, latency))
    run = _run(data, ccfg, level, bands=bands, net=net, batch=batch, stall=(stall, seed), schedule=schedule,
               overlap=overlap, wgrad=wgrad, tcfg=STOCH if stoch else TCFG, bands_backward=backward, bands_all=every)
    assert run.report["bands"] == bands and run.report["bands_backward"] == backward
    assert run.report["bands_all"] == every


@pytest.mark.parametrize("schedule", ["1f1b", "cp", "gpipe", "sgd"])
def test_the_fill_passes_are_those_before_a_nodes_first_backward_pass(schedule):
    """1F1B (and cp): node ``j``'s ``n - j + 1`` warm-up forward passes; GPipe: every one (no backward
    pass until all have run); sgd: every one (each image crosses an empty cluster)."""
    n, batch = 4, 8
    for j in range(n):
        got = fill_passes(schedule, j, n, batch)
        if schedule in ("1f1b", "cp"):
            assert got == frozenset(range(min(batch, n - j + 1))), j
        else:
            assert got == frozenset(range(batch)), j
    assert fill_passes("1f1b", 0, 4, 2) == {0, 1}  # never more than the batch


def test_only_the_fill_runs_in_bands_unless_bands_all(data):
    """By default a node's forward passes of the fill run in bands and the rest as whole layers, so
    its fwd commands are the banded passes' plus the whole ones' (vgg-digits, 4 nodes, batch 8:
    node 0 bands images 0-4, node 3 images 0 and 1); ``bands_all`` bands every pass.  The receiver of
    a whole pass after a banded sender LOADs the sender's pieces; the weights are golden (the
    Verilated cluster below mixes both too)."""
    def per_node(bands, every=False):
        ccfg = _ccfg(4, VGG)
        part = choose_partition(VGG, ccfg, 8, Mapping(split=False))
        _, cprog = compile_pipeline(VGG, ccfg, part, _params(VGG), TCFG, 1,
                                    Mapping(overlap=True, bands=bands, bands_all=every))
        return [sum(ins.kind == isa.ENG and ins.field("op") == OP["fwd"] for ins in p.ops) for p in cprog.nodes]

    whole, every, fill = per_node(0), per_node(1, True), per_node(1)
    for j, banded_images in enumerate((5, 4, 3, 2)):
        assert every[j] > whole[j], j
        assert 8 * fill[j] == banded_images * every[j] + (8 - banded_images) * whole[j], j
    run = _run(data, _ccfg(4, VGG), "cl", bands=1, net=VGG, batch=6, steps=1)
    assert "the fill's forward passes" in run.report["pipelining"]


def test_continuous_propagation_in_bands(data):
    _run(data, _ccfg(3), "cl", bands=1, schedule="cp", steps=1, batch=3, bands_backward=True)


def _commands(bands, op, j, net=VGG, n=4):
    ccfg = _ccfg(n, net)
    part = choose_partition(net, ccfg, 3, Mapping(split=False))
    _, cprog = compile_pipeline(net, ccfg, part, _params(net), TCFG, 1,
                                Mapping(overlap=True, bands=bands, bands_backward=bands > 0))
    return [ins.cmd for ins in cprog.nodes[j].ops if ins.kind == isa.ENG and ins.field("op") == OP[op]]


def test_bands_run_in_place_and_the_first_logits_come_sooner(data):
    """Node programs: a conv layer's output rows (forward) and input-gradient rows (backward) in
    bands whose commands address the whole maps' planes (strides of the whole map, ``hw > h*w``); the
    next node starts before the previous one ends, so the cycles to the first logits are fewer than
    with whole layers (vgg-digits, 4 nodes, the same partition)."""
    for op, j in (("fwd", 0), ("bwd_data", 2)):
        whole, rows = _commands(0, op, j), _commands(1, op, j)
        assert len(rows) > len(whole) and all(c["hw"] == c["h"] * c["w"] for c in whole), op
        assert any(c["hw"] > c["h"] * c["w"] for c in rows), op  # a band of rows read or written in place
    ccfg = _ccfg(4, VGG)
    layer = _run(data, ccfg, "cl", bands=0, net=VGG, steps=1)
    banded = _run(data, ccfg, "cl", bands=1, net=VGG, steps=1)
    assert layer.report["partition"]["cuts"] == banded.report["partition"]["cuts"]
    assert banded.report["partition"]["split_layers"] == ["conv2", "conv4"]
    fill = [r.report["pipeline"]["fill_cycles_first_logits"] for r in (layer, banded)]
    assert fill[1] < fill[0], fill


def test_a_mutant_without_the_rows_seed_offset_rounds_differently(data, monkeypatch):
    """Stochastic rounding of a band indexes its elements as rows of the whole map (the seed's row
    offset): a mutant that rounds every band as the map's first rows gives other weights."""
    real = bands_mod.slice_seed
    calls = []

    def no_row_offset(seed, offset):
        calls.append(offset)
        return seed if len(calls) % 2 == 0 else real(seed, offset)  # the band's row offset dropped

    monkeypatch.setattr(bands_mod, "slice_seed", no_row_offset)
    run = _run(data, _ccfg(2), "fl", bands=1, tcfg=STOCH, steps=1, check=False, bands_backward=True)
    images, labels = data
    want, _ = golden_steps(NET, _params(), images, labels, STOCH, 1, 3)
    assert not params_equal(run.params, want)


def test_refusals(data):
    for kw, msg in ((dict(bands=-1), "rows per band must be >= 1"),
                    (dict(bands=1, bands_backward=True, cuts=[0, 1, 7, 9]), "splits a layer"),
                    (dict(bands=1, parallel="data"), "no --bands")):
        with pytest.raises(ClusterError, match=msg):
            _run(data, _ccfg(3 if "cuts" in kw else 2), "fl", check=False, **kw)
    with pytest.raises(ClusterError, match="one array side"):
        _run(data, _ccfg(3, Ps=[4, 2, 2]), "fl", bands=1, check=False)


@pytest.mark.verilator
def test_verilated_cluster_in_bands_equals_golden_and_cl_cycle_for_cycle(data):
    ccfg = _ccfg(2, act_depth=512, weight_depth=256, bias_depth=1024)  # (the Verilated tests' nodes: one build)
    # (batch 4: node 0 bands images 0-2, node 1 images 0-1, the others whole)
    v = _run(data, ccfg, "verilator", bands=2, steps=2, batch=4, wgrad="auto", bands_backward=True)
    c = _run(data, ccfg, "cl", bands=2, steps=2, batch=4, wgrad="auto", bands_backward=True)
    assert v.report["simulator"].startswith("verilated cluster")
    assert v.cycles == c.cycles
    for key in ("cycles_per_step", "steady_state", "pipeline"):
        assert v.report[key] == c.report[key], key
    # a split layer (conv2 over both nodes) in forward bands: its input rows and the first piece's
    # rows go on to the second holder as they are computed (B as deep as above: the same build)
    deep_b = ccfg.replace(engines=tuple(e.replace(bias_depth=v.report["node"][0]["buffers"]["B"]["depth"])
                                        for e in ccfg.engines))
    v = _run(data, deep_b, "verilator", bands=1, steps=1, batch=2, wgrad="auto")
    c = _run(data, deep_b, "cl", bands=1, steps=1, batch=2, wgrad="auto")
    assert v.report["partition"]["split_layers"] == ["conv2"] and v.cycles == c.cycles


def test_auto_chooses_the_finest_height_the_timing_model_allows(data, monkeypatch):
    """``auto`` compiles 1, 2 and 4 rows and whole layers and takes the finest height whose busiest
    node's modelled compute per step is within 2 % of whole layers'; when none is, it falls back to
    whole layers (the compiled programs' own figures decide, not a guess)."""
    run = _run(data, _ccfg(3), "cl", bands="auto", steps=1)
    assert run.report["bands"] in bands_mod.AUTO_CANDIDATES
    monkeypatch.setattr(bands_mod, "AUTO_SLACK", 0.5)
    assert _run(data, _ccfg(3), "fl", bands="auto", steps=1).report["bands"] == 0


def test_auto_is_trains_default_and_runs_whole_layers_where_bands_cannot(data):
    """``train --engine cluster`` runs ``--bands auto``: bands where they can run, whole layers
    (not an error) with replicas or nodes of different array sides."""
    import argparse

    from pymtl_fp.cli import cmd_train

    parser = argparse.ArgumentParser()
    cmd_train.add_arguments(parser)
    assert parser.parse_args(["--engine", "cluster"]).bands == "auto"
    # (the finest height within the slack: 4 rows with the default pipelines, whose 17 cycles a
    # compute command every band pays again; 1 row on engines without them)
    assert _run(data, _ccfg(2), "fl", bands="auto", steps=1).report["bands"] == 4
    assert _run(data, _ccfg(3, Ps=[4, 2, 2]), "fl", bands="auto", steps=1).report["bands"] == 0
    assert _run(data, _ccfg(2), "fl", bands="auto", steps=1, parallel="data", batch=4).report["bands"] == 0


def test_the_cli_refuses_a_bad_bands_option(capsys):
    from pymtl_fp.cli.main import main

    for bad in (["--bands", "x"], ["--bands", "-1"], ["--bands", "2000"], ["--bands", "0", "--bands-backward"],
                ["--bands", "0", "--bands-all"]):
        assert main(["train", "--engine", "cluster", "--nodes", "2", *bad]) == 1
        err = capsys.readouterr().err
        assert "--bands" in err and len(err.strip().splitlines()) == 1
