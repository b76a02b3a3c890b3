"""A residual net (identity adds, adds with a 1x1 projection, a global average pool) trains on the
simulated cluster exactly as the golden model: the compiler's ADD / MASK / GAP / GAPB over the router's
residual unit, the projections on the engine
(:mod:`pymtl_fp.cluster.compiler.residual`), final weights, logits and losses bit for bit; the router
gets the residual unit only where its program uses it; what the compiler does not map is refused in
one line naming the layer."""

from dataclasses import replace

import numpy as np
import pytest

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.compile import choose_partition, compile_cluster
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
from pymtl_fp.cluster.run.limits import serial_work
from pymtl_fp.cluster.run.report import format_report
from pymtl_fp.cluster.run.train import compile_run, router_configs, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, forward, init_params_float64, quantize_params, step_seed, train_step
from pymtl_fp.net import load_net, net_from_dict

NET = load_net("resnet-digits")
TCFG = TrainConfig("8", lr_log2=3, seed=7)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return split.x_train[:16], split.y_train[:16]


def golden(net, params, images, labels, tcfg, steps, batch):
    """``steps`` golden steps: the final weights, the losses and every image's logits (as the host
    receives them: each step's forward pass with that step's weights and seed)."""
    losses, logits = [], []
    for s in range(steps):
        sl = slice(s * batch, (s + 1) * batch)
        cfg = replace(tcfg, step=tcfg.step + s)
        y = forward(net, params, images[sl], tcfg.precision, mode=cfg.fwd_mode, seed=step_seed(cfg.seed, cfg.step))[-1]
        logits += [v.reshape(-1) for v in y]
        params, loss = train_step(net, params, images[sl], labels[sl], cfg)
        losses.append(loss)
    return params, losses, logits


def run_and_check(data, n, level="cl", prec="8", cuts=None, steps=2, batch=2, net=NET, mapping=None, **kw):
    fmt = net.precision(prec)
    images, labels = quantize_images(data[0], fmt.act), data[1]
    params = quantize_params(net, init_params_float64(net, 0), prec)
    tcfg = replace(TCFG, precision=prec)
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(net, prec), None)
    mapping = mapping or Mapping(cuts=cuts, split=False)
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg, mapping, steps=steps, batch=batch,
                           levels=[level] * n, **kw)
    want, losses, logits = golden(net, params, images, labels, tcfg, steps, batch)
    for name in want:
        assert np.array_equal(run.params[name]["w"], want[name]["w"]), name
        assert np.array_equal(run.params[name]["b"], want[name]["b"]), name
        assert not np.array_equal(want[name]["w"], params[name]["w"]), name  # every layer learned
    assert [v.reshape(-1).tolist() for v in run.logits] == [v.tolist() for v in logits]
    assert run.losses == pytest.approx(losses, abs=0)
    return run


@pytest.mark.parametrize("level,prec", [("cl", "8"), ("fl", "16")])
def test_one_node_trains_a_residual_net_bit_exact(data, level, prec):
    run_and_check(data, 1, level, prec)


@pytest.mark.parametrize("n,steps,kw", [(2, 2, {}), (4, 1, {}), (2, 1, {"wgrad": "image", "overlap": True})])
def test_a_skip_crossing_a_cut_trains_bit_exact_and_is_counted_on_its_links(data, n, steps, kw):
    """resnet-digits' partition puts conv1 and conv2 on node 0 and add1 on node 1: add1's skip (conv1's
    output, conv2's input, 8 channels of 8x8 = 2 words of P = 4 lanes a pixel: 512 elements an image)
    goes with node 0's output to node 1 and its gradient share comes back behind node 1's data
    gradient; the report counts both per step (batch 2), and no other link carries a skip; the
    analytical models predict the run (cycles per step within 3 %, words and link elements exact).
    Also with per-image weight gradients and overlapping commands."""
    run = run_and_check(data, n, steps=steps, mapping=Mapping(split=False, **kw))
    # the runs' cycle cap (cluster.run.limits.cycle_cap: four times the serial work) rests on this
    _, _, _, cprog = compile_run(NET, ClusterConfig.homogeneous(n, engine_for_net(NET, "8"), None),
                                 quantize_params(NET, init_params_float64(NET, 0), "8"),
                                 TCFG, Mapping(split=False, **kw), steps=steps, batch=2)
    assert run.cycles < serial_work(cprog) * steps
    if not kw:  # (the step model's engines are serial; its weight gradients over the batch)
        _model_matches(run, NET, n, 2)
    links = {lk["link"]: lk for lk in run.report["links"]}
    skip = 2 * 8 * 8 * 4 * 2
    assert links["node0->node1"]["skip_elements_per_step"] == skip
    assert links["node1->node0"]["skip_elements_per_step"] == skip
    assert links["node0->node1"]["elements_per_step"] == skip + 2 * 8 * 8 * 4 * 2  # (node 0's output: conv2's)
    assert sum(lk["skip_elements_per_step"] for lk in links.values()) == 2 * skip
    assert "(1024 of residual skips)" in format_report(run.report)


def _model_matches(run, net, n, batch, cuts=None):
    """The analytical models (:func:`pymtl_fp.explore.against_cluster.predict_run`: shapes and
    partition only) against the run: cycles per step within 3 % (the issue's bound), every node's
    buffer words and every link's elements exact."""
    from pymtl_fp.explore.against_cluster import compare, measured, predict_run

    ccfg = ClusterConfig.homogeneous(n, engine_for_net(net, "8"), None)
    part = choose_partition(net, ccfg, batch, Mapping(cuts=cuts))
    c = compare(predict_run(net, part, ccfg, batch), measured(run.report))
    assert abs(c["cycles_per_step"][2]) < 0.03, c["cycles_per_step"]
    assert c["words_exact"][0] == c["words_exact"][1] == n
    assert c["links_exact"][0] == c["links_exact"][1]


def _chain_of_four(relu_last=False):
    """c1 -> c2 -> c3 -> c4 -> add(from c1) -> gap -> fc: a skip over three convs, which the cuts
    (0, 2, 3, 7) of 4-channel tiles send from node 0 through node 1 to node 2."""
    def conv(name, relu=True):
        return {"type": "conv", "name": name, "out_channels": 4, "kernel": 3, "pad": 1, "relu": relu}

    return net_from_dict({"name": "res4", "input_shape": [1, 8, 8], "formats": {"8": FORMATS8},
                          "layers": [conv("c1"), conv("c2"), conv("c3"), conv("c4", relu_last),
                                     {"type": "add", "name": "a1", "from": "c1"},
                                     {"type": "global_avg_pool", "name": "gap"},
                                     {"type": "fc", "name": "fc", "out_features": 10}]})


FORMATS8 = {"act": [8, 4], "weight": [8, 6], "grad": [8, 7], "wgrad": [8, 3], "bias_bits": 16, "loss_scale_log2": 5}


@pytest.mark.parametrize("schedule,overlap", [("1f1b", True), ("gpipe", False)])
def test_a_skip_passes_through_a_node_bit_exact_and_shows_in_the_trace(data, schedule, overlap):
    """The skip of a1 crosses two cuts: node 1 (c3 only) LOADs it with its input and STOREs it on
    after its output, and its gradient share back; batch 3, both schedules.  The trace names the
    skip's moves by the add: per image, node 0 STOREs the skip and LOADs its share, node 1 LOADs and
    STOREs both, node 2 LOADs the skip and STOREs the share."""
    net = _chain_of_four()
    run = run_and_check(data, 3, net=net, batch=3, steps=1, trace=True,
                        mapping=Mapping(cuts=(0, 2, 3, 7), split=False, schedule=schedule, overlap=overlap))
    links = {lk["link"]: lk.get("skip_elements_per_step") for lk in run.report["links"]}
    assert links["node0->node1"] == links["node1->node2"] == links["node2->node1"] == 3 * 8 * 8 * 4
    moves = {}
    for ev in run.trace["traceEvents"]:
        if ev.get("ph") == "X" and ev.get("args", {}).get("note") == "skip of a1":
            assert ev["name"].endswith("skip of a1")
            key = (ev["pid"], ev["cat"])
            moves[key] = moves.get(key, 0) + 1
    pids = sorted({pid for pid, _ in moves})
    per_image = [{"load": 1, "store": 1}, {"load": 2, "store": 2}, {"load": 1, "store": 1}]
    assert [{c: moves.get((pid, c), 0) / 3 for c in ("load", "store")} for pid in pids] == per_image


def _projections():
    """c1 -> c2 -> c3 (8) -> c4 (8) -> a1 (from c1, a 1x1 projection to 8 channels, ReLU) -> c5 (stride
    2) -> a2 (from a1, a 1x1 stride-2 projection) -> gap -> fc: 15 tiles of 4 channels (a1 and a2 two
    each, being layers with weights)."""
    def conv(name, k=4, relu=True, stride=1):
        return {"type": "conv", "name": name, "out_channels": k, "kernel": 3, "pad": 1, "relu": relu,
                "stride": stride}

    return net_from_dict({"name": "resp", "input_shape": [1, 8, 8], "formats": {"8": FORMATS8},
                          "layers": [conv("c1"), conv("c2"), conv("c3", 8), conv("c4", 8, relu=False),
                                     {"type": "add", "name": "a1", "from": "c1", "project": True, "relu": True},
                                     conv("c5", 8, stride=2),
                                     {"type": "add", "name": "a2", "from": "a1", "project": True, "stride": 2},
                                     {"type": "global_avg_pool", "name": "gap"},
                                     {"type": "fc", "name": "fc", "out_features": 10}]})


def test_projection_adds_train_bit_exact_with_their_skips_crossing_cuts(data):
    """Projections run on the engine (the skip's 1x1 conv, its data and weight gradients) beside the
    residual unit's add.  Cuts (0, 2, 10, 15): node 0 c1 c2, node 1 c3 c4 a1 c5, node 2 a2 gap fc;
    a1's skip (c2's input, 4 channels of 8x8) comes from node 0, a2's (c5's input, 8 channels)
    from node 1 into a2, the first item of node 2.  Skip elements per image, both directions."""
    run = run_and_check(data, 3, net=_projections(), steps=2, cuts=(0, 2, 10, 15))
    _model_matches(run, _projections(), 3, 2, cuts=(0, 2, 10, 15))
    got = {lk["link"]: lk.get("skip_elements_per_step", 0) for lk in run.report["links"]}
    assert {k: v // 2 for k, v in got.items() if v} == {"node0->node1": 4 * 64, "node1->node0": 4 * 64,
                                                        "node1->node2": 8 * 64, "node2->node1": 8 * 64}


def _programs(n=1, cuts=None, net=NET):
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(net, "8"), None)
    params = quantize_params(net, init_params_float64(net, 0), "8")
    _, _, _, cprog = compile_run(net, ccfg, params, TCFG, Mapping(cuts=cuts, split=False), steps=1, batch=2)
    return ccfg, cprog


def test_the_compiled_step_runs_each_residual_kind_per_image():
    """Per image: two forward ADDs (add1, add2, each with its ReLU) and one GAP; backward one GAPB
    masked by add2's ReLU, a MASK of each add's skip share (the sources come out of ReLUs), a MASK
    of add2's main share (conv4 has a ReLU; conv3, add1's main branch, has none) and one ADD at each
    fork; the node's router is built with the residual unit."""
    ccfg, cprog = _programs()
    (prog,) = cprog.nodes
    lo, hi = prog.loop
    body = prog.ops[lo:hi + 1]
    count = {k: sum(1 for ins in body if ins.kind == k) for k in isa.RES_KINDS}
    assert count == {isa.ADD: 2 * 2 + 2 * 2, isa.GAP: 2, isa.GAPB: 2, isa.MASK: 3 * 2}
    assert all(ins.field("relu") for ins in body if ins.kind == isa.GAPB)
    (rcfg,) = router_configs(ccfg, cprog)
    assert rcfg.residual and prog.residual


def test_a_plain_chain_keeps_a_router_without_the_residual_unit():
    net = load_net("lenet-digits")
    ccfg, cprog = _programs(net=net)
    assert not any(r.residual for r in router_configs(ccfg, cprog))


@pytest.mark.parametrize("mapping,match", [
    (Mapping(bands=2, split=False), r"^resnet-digits is a residual net: its adds and average pools run on whole"),
    (Mapping(schedule="cp", split=False), r"^resnet-digits is a residual net: the cluster trains it with a mini-batch"),
    (Mapping(cuts=(0, 1, 11)), None),
])
def test_what_the_compiler_does_not_map_is_refused_in_one_line(mapping, match):
    ccfg = ClusterConfig.homogeneous(2 if match is None else 1, engine_for_net(NET, "8"), None)
    params = quantize_params(NET, init_params_float64(NET, 0), "8")
    if match is None:  # conv1 (two of the 11 tiles of P = 4) split over the two nodes
        match = r"^resnet-digits is a residual net: conv1 is split over two nodes"
    with pytest.raises(ClusterError, match=match) as exc:
        part = choose_partition(NET, ccfg, 2, mapping)
        compile_cluster(NET, ccfg, part, params, TCFG, 1, mapping)
    assert "\n" not in str(exc.value)


def _zero_params(net):
    return {ly.name: {"w": np.zeros(net.conv_geometry(ly)["w_shape"], dtype=np.int64),
                      "b": np.zeros(net.conv_geometry(ly)["w_shape"][0], dtype=np.int64)}
            for ly in net.param_layers()}


@pytest.mark.parametrize("which,n,cuts", [("resnet", 1, None), ("resnet", 2, None), ("resnet", 3, None),
                                          ("resnet", 4, None), ("chain", 3, (0, 2, 3, 7)),
                                          ("proj", 3, (0, 2, 6, 15)), ("proj", 3, (0, 2, 10, 15))])
def test_the_storage_model_predicts_every_residual_region_exactly(which, n, cuts):
    """:func:`pymtl_fp.explore.node_storage.predict` with the residual terms
    (:mod:`pymtl_fp.explore.residual_terms`) gives every node's words in each of the six buffers
    the compiler allocates, from the shapes and the partition only: identity adds, projections,
    the average pool, skips kept, passing through and arriving, their gradient shares; weight
    gradients over the batch and per image, with and without overlap (compiled only)."""
    from pymtl_fp.cluster.compiler.compile import compile_pipeline
    from pymtl_fp.cluster.compiler.partition import layer_info
    from pymtl_fp.explore import node_storage

    net = {"resnet": NET, "chain": _chain_of_four(), "proj": _projections()}[which]
    ecfg = engine_for_net(net, "8", act_depth=65536, weight_depth=4096)
    ccfg = ClusterConfig.homogeneous(n, ecfg)
    for wgrad in ("batch", "image"):
        for overlap in (False, True):
            mapping = Mapping(cuts=cuts, wgrad=wgrad, overlap=overlap)
            part = choose_partition(net, ccfg, 4, mapping)
            _, cprog = compile_pipeline(net, ccfg, part, _zero_params(net), TCFG, 1, mapping)
            layers = [layer_info(net, i) for i in range(len(net.layers))]
            predicted = node_storage.predict(layers, part.nodes, ecfg, 4, wgrad=wgrad, overlap=overlap, net=net)
            for j, (pred, prog) in enumerate(zip(predicted, cprog.nodes)):
                assert pred.as_dict() == {b: u["used"] for b, u in prog.alloc.usage().items()}, (wgrad, overlap, j)


@pytest.mark.parametrize("layers,match", [
    ([("c1", 4), ("c2", 4), ("c3", 4), {"type": "add", "name": "a1", "from": "c1"},
      {"type": "add", "name": "a2", "from": "c1"}],
     r"^a2: 'c1' is also the skip of a1; the cluster maps one skip per source"),
    ([("c1", 4), {"type": "pool", "name": "p1", "k": 2}, ("c2", 4),
      {"type": "add", "name": "a1", "from": "c1", "project": True, "stride": 2}],
     r"^a1: its skip is the input of the max pool p1, which the node does not keep for the backward pass"),
])
def test_a_mapping_of_a_residual_net_the_compiler_does_not_build_is_refused_naming_the_layer(layers, match):
    doc = [{"type": "conv", "name": x[0], "out_channels": x[1], "kernel": 3, "pad": 1, "relu": True}
           if isinstance(x, tuple) else x for x in layers] + [{"type": "fc", "name": "fc", "out_features": 10}]
    net = net_from_dict({"name": "bad", "input_shape": [1, 8, 8], "formats": {"8": FORMATS8}, "layers": doc})
    ccfg = ClusterConfig.homogeneous(1, engine_for_net(net, "8"), None)
    with pytest.raises(ClusterError, match=match) as exc:
        part = choose_partition(net, ccfg, 2, Mapping())
        compile_cluster(net, ccfg, part, _zero_params(net), TCFG, 1, Mapping())
    assert "\n" not in str(exc.value)


def test_a_skip_crossing_between_nodes_of_different_array_sides_is_refused():
    from pymtl_fp.cluster.config import default_link

    engines = (engine_for_net(NET, "8", P=4), engine_for_net(NET, "8", P=2))
    ccfg = ClusterConfig(engines, default_link(engines[0].stream_bits))
    mapping = Mapping(cuts=(0, 4, 11))  # (conv1 conv2 | conv3 add1 ...: add1's skip crosses)
    with pytest.raises(ClusterError, match=r"^add1: its skip from 'conv1' crosses from node 0 to node 1, on nodes "
                                           r"of different array sides") as exc:
        compile_cluster(NET, ccfg, choose_partition(NET, ccfg, 2, mapping), _zero_params(NET), TCFG, 1, mapping)
    assert "\n" not in str(exc.value)


def test_the_train_command_runs_a_residual_net_on_the_cluster(capsys):
    """``pymtl-fp train --engine cluster --net resnet-digits`` with the default mapping (whole layers:
    no row bands, no split layers for a residual net): bit-exact, the skips in the link table."""
    import argparse

    from pymtl_fp.cli import cmd_train

    parser = argparse.ArgumentParser()
    cmd_train.add_arguments(parser)
    argv = ["--engine", "cluster", "--net", "resnet-digits", "--nodes", "2", "--batch", "2", "--steps", "1"]
    assert cmd_train.main(parser.parse_args(argv)) == 0
    out = capsys.readouterr().out
    assert "final weights equal the golden model's: yes" in out
    assert "split layers: none" in out
    assert "(1024 of residual skips)" in out
