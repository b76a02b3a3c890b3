"""FPDeep's weight balancing on the cluster (:mod:`pymtl_fp.cluster.compiler.weights_home`): a layer's
weights kept by a neighbour and streamed in chunk by chunk for every pass, its gradient sent back
for the neighbour's update.  The final weights equal the golden step bit for bit for any whole
layer placed on either neighbour (1-4 nodes, split partitions, both mini-batch schedules, every
``--wgrad``, overlap on and off, random stalls, FL and CL); the links carry exactly the weights
the passes read; ``auto`` makes a mapping fit that does not fit without it; what cannot run is
refused in one line."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster.compiler.compile import choose_partition, compile_cluster
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.partition import layer_info
from pymtl_fp.cluster.compiler.weights_home import HomePlan, Placement, place_weights
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, default_link, engine_for_net
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden.train import TrainConfig
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import mapping_options, seeded_params
from pymtl_fp.tb.hypothesis_profiles import examples

PREC = "8"
TCFG = TrainConfig(PREC, lr_log2=3, seed=11)
NETS = {name: load_net(name) for name in ("lenet-digits", "vgg-digits")}


@pytest.fixture(scope="module")
def digits():
    return load_digits_split(seed=0)


def _ccfg(net, n, weight_depth=512):
    engines = tuple(engine_for_net(net, PREC, P=4, act_depth=4096, weight_depth=weight_depth, bias_depth=32)
                    for _ in range(n))
    return ClusterConfig(engines, default_link(engines[0].stream_bits))


def _data(digits, net):
    return quantize_images(digits.x_train[:24], net.precision(PREC).act), digits.y_train[:24]


def _candidates(net, n, split):
    """Every (user, layer, home) a placement may take: a whole conv/fc layer of a node, either neighbour."""
    part = choose_partition(net, _ccfg(net, n), 3, Mapping(split=split))
    return [(u, it.layer, h) for u, items in enumerate(part.nodes) for it in items
            if not it.pool and it.k0 == 0 and it.k1 == layer_info(net, it.layer)["k"]
            for h in (u - 1, u + 1) if 0 <= h < n]


def _train(digits, net, ccfg, level, batch, place, **kw):
    images, labels = _data(digits, net)
    params = seeded_params(net, PREC)
    mapping, kw = mapping_options(kw, weight_home=place)
    run = train_on_cluster(net, params, images, labels, TCFG, ccfg, mapping, steps=2, batch=batch,
                           levels=[level] * ccfg.n, **kw)
    want, losses = golden_steps(net, params, images, labels, TCFG, 2, batch)
    assert params_equal(run.params, want), "the final weights differ from the golden step"
    assert run.losses == pytest.approx(losses, abs=0)
    assert not params_equal(want, params)  # it did learn
    return run


@pytest.mark.slow
@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(NETS)), n=st.integers(2, 4), split=st.booleans(), pick=st.integers(0, 1000),
       level=st.sampled_from(["fl", "cl"]), schedule=st.sampled_from(["1f1b", "gpipe"]), overlap=st.booleans(),
       wgrad=st.sampled_from(["batch", "image", "auto"]), batch=st.integers(2, 5), stall=st.floats(0.0, 0.4),
       seed=st.integers(0, 1000))
def test_any_whole_layer_kept_by_either_neighbour_trains_bit_exact(digits, name, n, split, pick, level, schedule,
                                                                  overlap, wgrad, batch, stall, seed):
    net = NETS[name]
    try:
        cands = _candidates(net, n, split)
    except ClusterError:  # (more nodes than layers to cut at)
        return
    u, li, h = cands[pick % len(cands)]
    run = _train(digits, net, _ccfg(net, n), level, batch, Placement({(u, li): h}), split=split, schedule=schedule,
                 overlap=overlap, wgrad=wgrad, stall=(stall, seed))
    assert run.report["partition"]["weight_home"] == [f"{net.layers[li].name}'s weights kept by node {h} for node {u}"]


def test_two_layers_of_one_node_kept_downstream(digits):
    """Both conv layers of node 0 kept by node 1 (the forward link carries their gradients back
    beside the activations; the backward link their chunks beside the gradients)."""
    net = NETS["lenet-digits"]
    _train(digits, net, _ccfg(net, 2), "cl", 3, Placement({(0, 0): 1, (0, 2): 1}), cuts=[0, 6, 9])


@pytest.mark.parametrize("name,n,pick", [("lenet-digits", 4, -1), ("vgg-digits", 3, 0), ("vgg-digits", 2, -1)])
def test_the_links_carry_the_weights_each_pass_reads(name, n, pick):
    """Per step, the home sends its user the layer's weights (padded to whole tiles) once for every
    image's forward pass and once more for its bwd_data (not for a first layer), and the user sends
    the weight gradient back once; nothing else on the links changes."""
    net = NETS[name]
    ccfg, B = _ccfg(net, n), 3
    part = choose_partition(net, ccfg, B)
    u, li, h = _candidates(net, n, True)[pick]
    params = seeded_params(net, PREC)
    plain = compile_cluster(net, ccfg, part, params, TCFG, 1, Mapping(overlap=True))
    placed = compile_cluster(net, ccfg, part, params, TCFG, 1, Mapping(overlap=True, weight_home=Placement({(u, li): h})))
    f = layer_info(net, li)
    w_elems = tiles(f["k"], 4) * tiles(f["c"], 4) * f["r"] * f["s"] * 16
    passes = 1 + (f["p"] > 0)
    out, into, back, uback = (("fwd_out", "fwd_in", "bwd_in", "bwd_out") if h == u - 1
                              else ("bwd_out", "bwd_in", "fwd_in", "fwd_out"))
    extra = {(h, out): B * passes * w_elems, (u, into): B * passes * w_elems, (u, uback): w_elems, (h, back): w_elems}
    for j in range(n):
        for port in ("fwd_in", "fwd_out", "bwd_in", "bwd_out"):
            want = plain.nodes[j].link_elems.get(port, 0) + extra.get((j, port), 0)
            assert placed.nodes[j].link_elems.get(port, 0) == want, (j, port)


def test_auto_makes_a_mapping_fit_that_does_not_fit_without_it(digits):
    """LeNet on 4 nodes with 110-word W buffers: node 3 (conv2's second piece, the fc layer) needs
    120 words; with ``auto`` node 2 keeps the fc layer's 48 and node 3 keeps its 72 plus two 16-word
    chunks; without it the compiler refuses the mapping."""
    net = NETS["lenet-digits"]
    ccfg, B = _ccfg(net, 4, weight_depth=110), 3
    part = choose_partition(net, ccfg, B)
    params = seeded_params(net, PREC)
    with pytest.raises(ClusterError, match="node 3 buffer W needs 120 words, has 110"):
        compile_cluster(net, ccfg, part, params, TCFG, 1, Mapping(weight_home="off"))
    place = place_weights(net, ccfg, part)
    assert place.homes == {(3, 4): 2} and place.slots == {3: 2}
    cprog = compile_cluster(net, ccfg, part, params, TCFG, 1)
    used = [p.alloc.usage()["W"]["used"] for p in cprog.nodes]
    assert used == [9, 18, 54 + 48, 72 + 2 * 16]
    run = _train(digits, net, ccfg, "cl", B, "auto", overlap=True, bands="auto")
    assert run.report["bands"] == 0  # (auto: whole layers)
    assert run.report["partition"]["weights_held_per_node"][3] == run.report["partition"]["weights_per_node"][3] - 640


def test_no_placement_where_the_weights_fit():
    net = NETS["vgg-digits"]
    ccfg = _ccfg(net, 3)
    assert not place_weights(net, ccfg, choose_partition(net, ccfg, 8))


@pytest.mark.parametrize("n,place,kw,msg", [
    (3, Placement({(2, 4): 1}), dict(schedule="cp", split=False), "mini-batch schedule"),
    (4, Placement({(2, 2): 1}), {}, "not a whole conv/fc layer"),
    (4, Placement({(3, 4): 1}), {}, "a home is a neighbour"),
    (4, Placement({(3, 4): 2, (2, 2): 3}), dict(cuts=[0, 1, 2, 6, 9]), "a home keeps one node's layers"),
    (4, Placement({(3, 4): 2}), dict(bands=1), "not row bands"),
])
def test_refusals(digits, n, place, kw, msg):
    net = NETS["lenet-digits"]
    with pytest.raises(ClusterError, match=msg):
        _train(digits, net, _ccfg(net, n), "cl", 3, place, **kw)


def test_the_plan_places_each_chunk_between_what_the_user_takes_and_sends():
    """A user's step (home = user - 1): it takes 10 elements, a chunk, sends 5 back, takes a chunk
    and 7 elements; each chunk follows the home's elements before it (N) and precedes the home's
    LOAD of the first element the user sends after it (E)."""
    log = [("recv", "fwd_in", 10, None), ("recv", "fwd_in", 4, (1, "f", 0)), ("send", "bwd_out", 5, None),
           ("send", "fwd_out", 3, None), ("recv", "fwd_in", 4, (1, "f", 1)), ("recv", "fwd_in", 7, None)]
    plan = HomePlan.from_log(1, 0, log)
    assert (plan.out, plan.back) == ("fwd_out", "bwd_in")
    assert [(c["tag"], c["N"], c["E"]) for c in plan.chunks] == [((1, "f", 0), 10, 0), ((1, "f", 1), 10, 5)]
