"""The chain model ``explore partition`` runs on (:class:`pymtl_fp.explore.chain.Chain`, ResNet-152's) against
the node and storage models' residual terms (:mod:`pymtl_fp.explore.residual_terms`, which the simulated
cluster validates): on the residual nets the cluster trains (resnet-digits, resnet8-mnist; their
shape-level view :meth:`~pymtl_fp.explore.layers.Network.from_net`), cut where the cluster's own partition
cuts them, each node's busy cycles per image in its adds, projections' adds, average pools and forks
(what :func:`pymtl_fp.explore.node_model.predict` spends inside the residual terms, measured by wrapping
them) equal the chain's (:func:`pymtl_fp.explore.chain_residual.cycles` over the node's units), but for
the two terms the chain charges to the links (a projected skip crossing a cut: the cluster LOADs it, the
chain copies it; a node's first item sends its data gradient, the chain copies it), each derived here
from the LOAD/STORE closed forms; and each node's residual words (the adds' and pools' inputs, the skips
held and passing through, the gradient shares) equal :func:`~pymtl_fp.explore.residual_terms.words` on
the cluster's own skips, and :meth:`Chain.skip_bits` in bits."""

from __future__ import annotations

import functools

import pytest

from pymtl_fp.cli.benchmarks.storage import buffer_bits
from pymtl_fp.cluster.compiler.compile import choose_partition
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.partition import layer_info
from pymtl_fp.cluster.config import ClusterConfig, engine_for_net
from pymtl_fp.cost.engine import load_cycles, store_cycles
from pymtl_fp.cost.latency import ISSUE_CYCLES
from pymtl_fp.cost.layer import layer_cycles
from pymtl_fp.explore import chain_residual, node_model, node_storage, residual_terms
from pymtl_fp.explore.against_cluster import cluster_for
from pymtl_fp.explore.chain import Chain
from pymtl_fp.explore.devices import Precision
from pymtl_fp.explore.fpga_model import EngineArray
from pymtl_fp.explore.layers import Network
from pymtl_fp.net import Add, load_net

BATCH = 4
CASES = [("resnet-digits", n) for n in (1, 2, 3, 4, 5)] + [("resnet8-mnist", n) for n in (1, 2, 3, 4, 5, 6, 8)]


def _measured(net, part, layers, P) -> list:
    """Busy cycles per image each node spends in the residual terms' calls (their LOADs, STOREs and
    unit instructions with one issue cycle each; a projection's conv commands left out)."""
    spent = {}

    def wrap(fn):
        def call(a, *args, **kw):
            io, cmds, convs = a.c.io, a.c.commands, []
            conv = a.compute
            a.compute = lambda cycles: (convs.append(cycles), conv(cycles))
            try:
                return fn(a, *args, **kw)
            finally:
                del a.compute
                spent[a.c.node] = spent.get(a.c.node, 0) + a.c.io - io \
                    + ISSUE_CYCLES * (a.c.commands - cmds - len(convs))
        return call

    with pytest.MonkeyPatch.context() as mp:
        for name in ("forward", "backward", "fork", "place"):
            mp.setattr(residual_terms, name, wrap(getattr(residual_terms, name)))
        node_model.predict(layers, part.nodes, P, BATCH, net=net)
    return [spent.get(j, 0) / BATCH for j in range(len(part.nodes))]


def _first_unit(chain, net, items) -> int:
    """The chain's unit offset where a node of the cluster's partition starts: its first layer, or
    that add's projection (which the chain places before it)."""
    layer = net.layers[items[0].layer]
    return int(chain.offset[chain.unit_of[layer.name + ("_proj" if isinstance(layer, Add) and layer.project else "")]])


@functools.cache
def _case(name, nodes):
    net = load_net(name)
    ccfg = cluster_for(net, "8", nodes)
    part = choose_partition(net, ccfg, BATCH, Mapping(split=False))
    P = ccfg.engines[0].P
    layers = [layer_info(net, i, i in part.packed) for i in range(len(net.layers))]
    chain = Chain(Network.from_net(net), batch=BATCH)
    cuts = [0] + [_first_unit(chain, net, part.nodes[j]) for j in range(1, nodes)] + [chain.M]
    return net, part, P, layers, chain, cuts


def _charged_to_links(net, part, layers, P, j) -> int:
    """What the chain counts on node ``j`` and the cluster does as a cut's traffic instead."""
    elems = {}

    def act(c, h, w):
        return -(-c // P) * P * h * w

    for li, _t, js, ja in residual_terms.Skips(net, part.nodes).all:
        f = layers[li]
        if ja == j and js != j and f["res"] == "proj":  # copied into the projection's input, not LOADed
            elems.setdefault("copy", []).append(act(f["c"], f["h"], f["w"]))
    extra = sum(store_cycles(n, P) + load_cycles(n) + 2 * ISSUE_CYCLES for n in elems.get("copy", []))
    it = part.nodes[j][0]
    f = layers[it.layer]
    if f.get("res") and net.needs_grad(it.layer):  # its data gradient: sent, not copied
        gap = f["res"] == "gap"
        dx = act(f["c"], f["h"], f["w"]) if gap else act(f["k"], f["ho"], f["wo"])
        extra -= store_cycles(dx, P) + ISSUE_CYCLES
        if not gap and not net.rectified(it.layer):  # (else already in place: no copy)
            extra += store_cycles(dx, P) + load_cycles(dx) + 2 * ISSUE_CYCLES
    return extra


@pytest.mark.parametrize("name,nodes", CASES)
def test_chain_add_cycles_are_the_node_models(name, nodes):
    net, part, P, layers, chain, cuts = _case(name, nodes)
    res = chain.residuals
    measured = _measured(net, part, layers, P)
    for j in range(nodes):
        units = range(chain.start_u[cuts[j]], len(chain.units) if cuts[j + 1] == chain.M else chain.start_u[cuts[j + 1]])
        ours = sum(chain_residual.cycles(res, [res.index[ly.name] for ly in chain.units[u].members], P,
                                         (chain.units[u].axis, 1.0, 1)) for u in units)
        assert ours == measured[j] + _charged_to_links(net, part, layers, P, j), (name, nodes, j)


def test_some_nodes_compared_have_adds_and_the_link_terms_occur():
    busy = linked = 0
    for name, nodes in CASES:
        net, part, P, layers, *_ = _case(name, nodes)
        busy += sum(1 for v in _measured(net, part, layers, P) if v)
        linked += sum(1 for j in range(nodes) if _charged_to_links(net, part, layers, P, j))
    assert busy >= 20 and linked >= 4


@pytest.mark.parametrize("name", ["resnet-digits", "resnet8-mnist"])
def test_chain_stage_cycles_include_the_residual_terms(name):
    """One node: the chain's stage cycles are its layers' engine cycles plus the node model's residual
    cycles (no cut: nothing charged to a link)."""
    net, part, P, layers, chain, _ = _case(name, 1)
    res = chain.residuals
    arr = EngineArray(P)
    engine = sum(sum(layer_cycles(ly, arr, chain.units[chain.unit_of[ly.name]].needs_dx, batch=BATCH).values())
                 for ly in chain.network.layers if res.index[ly.name] not in res.kind)
    assert chain.node_cycles(arr, 0, chain.M) == engine + _measured(net, part, layers, P)[0]


@pytest.mark.parametrize("name,nodes", CASES)
def test_chain_skip_words_are_the_storage_models(name, nodes):
    net, part, P, layers, chain, cuts = _case(name, nodes)
    sk = residual_terms.Skips(net, part.nodes)
    slots = [node_storage.in_flight("1f1b", j, nodes, BATCH) for j in range(nodes)]
    ours = chain_residual.skip_words(chain.residuals, chain, cuts, P, slots)
    bits = chain.skip_bits(cuts, P)
    prec = chain.precision
    for j, items in enumerate(part.nodes):
        theirs = node_storage.NodeWords(j)
        residual_terms.words(theirs, sk, j, items, layers, P, slots[j])
        assert (ours[j].X, ours[j].D) == (theirs.X, theirs.D), (name, nodes, j)
        assert bits[j] == P * (theirs.X * prec.act_bits + theirs.D * prec.grad_bits)


def test_a_skip_passing_through_by_hand():
    """resnet8-mnist on 8 nodes: add2's skip (add1's output, 8 x 14 x 14, read by b2a on node 2) passes
    through node 3 (b2b) to node 4 (add2, which projects it): one image of it in X on node 3, and on
    nodes 2 and 3 one image of its gradient share arriving in D (chain layer 8 is add2)."""
    net, part, P, _, chain, cuts = _case("resnet8-mnist", 8)
    assert [[net.layers[it.layer].name for it in items] for items in part.nodes[2:5]] == [["b2a"], ["b2b"], ["add2"]]
    slots = [node_storage.in_flight("1f1b", j, 8, BATCH) for j in range(8)]
    words = chain_residual.skip_words(chain.residuals, chain, cuts, P, slots)
    skip = 2 * 14 * 14  # 8 channels on P = 4 lanes
    assert words[3].terms[("X", "layer 8 skip passing through (one image)")] == skip
    assert words[3].terms[("D", "layer 8 skip share arriving (one image)")] == skip
    assert words[2].terms[("D", "layer 8 skip share arriving (one image)")] == skip


@pytest.mark.parametrize("name", ["resnet-digits", "resnet8-mnist"])
def test_cluster_bits_are_the_storage_models_words(name):
    """:meth:`Chain.cluster_bits` (the scaling study's in-flight line) against every buffer's words of
    :func:`node_storage.predict` at their widths, as ``tests/test_explore_scaling.py`` checks it on plain
    nets, on 1-4 nodes cut where the cluster cuts them, ``--wgrad image``, overlap, the first layer
    tap-packed (as the chain packs it), batch 8 and 32, ``P = 4``: equal to the bit (a skip crossing a
    cut is held in X and D, not in the O slots the crossing tensors take)."""
    net = load_net(name)
    checked = crossed = 0
    for nodes in (1, 2, 3, 4):
        for batch in (8, 32):
            ecfg = engine_for_net(net, "8", P=4, act_depth=65536, weight_depth=4096)
            part = choose_partition(net, ClusterConfig.homogeneous(nodes, ecfg), batch,
                                    Mapping(split=False, pack="on", overlap=True, wgrad="image"))
            layers = [layer_info(net, i, i in part.packed) for i in range(len(net.layers))]
            kept = node_storage.predict(layers, part.nodes, ecfg, batch, wgrad="image", overlap=True, net=net)
            want = [buffer_bits({b: {"used": w} for b, w in nw.as_dict().items()}, ecfg) for nw in kept]
            bits = ecfg.data_bits
            chain = Chain(Network.from_net(net), Precision(bits, bits, bits, ecfg.acc_bits), batch,
                          channel_tile=ecfg.P)
            assert chain.tap_packed(0, ecfg.P)
            cuts = [_first_unit(chain, net, items) for items in part.nodes]
            got = chain.cluster_bits(cuts + [chain.M], ecfg.P)
            assert got.tolist() == want, (name, nodes, batch, part.describe())
            crossed += sum(1 for _, _, js, ja in residual_terms.Skips(net, part.nodes).all if js < ja)
            checked += 1
    assert checked == 8 and crossed >= 4
