"""The chain model ``explore partition`` runs on (:class:`pymtl_fp.explore.chain.Chain`, which
ResNet-152's partition uses) against the simulated cluster's skip-connection traffic: on the
residual nets the cluster trains (resnet-digits, resnet8-mnist; their shape-level view
:meth:`~pymtl_fp.explore.layers.Network.from_net`), cut where the cluster's own partition cuts them
(at layer boundaries), the elements the chain counts across each cut, per image, forward and
backward, equal what the cluster's link between those nodes carries per step over the batch, as
the node model (:mod:`pymtl_fp.explore.node_model`) predicts it -- the figure ``pymtl-fp bench model``
finds exact on every link of every residual run (docs/results/generated/model_residual.md).  Every
cut of resnet8-mnist on 3 to 8 nodes has a skip crossing it except the one right after an add; one
cut's figure is also derived by hand."""

from __future__ import annotations

import functools

import pytest

from pymtl_fp.cluster.compiler.compile import choose_partition
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.residual import skips
from pymtl_fp.explore.against_cluster import _timing, cluster_for
from pymtl_fp.explore.chain import Chain
from pymtl_fp.explore.layers import Network
from pymtl_fp.net import Add, load_net

BATCH = 4
CASES = [("resnet-digits", n) for n in (2, 3, 4, 5)] + [("resnet8-mnist", n) for n in (2, 3, 4, 5, 6, 8)]


@functools.cache
def _case(name, nodes):
    """``(net, partition, P, cluster link elements per step, chain, chain position of each cut)``."""
    net = load_net(name)
    ccfg = cluster_for(net, "8", nodes)
    part = choose_partition(net, ccfg, BATCH, Mapping(split=False))
    _, _, _, _, links = _timing(net, part, ccfg, BATCH)
    chain = Chain(Network.from_net(net), batch=BATCH)
    positions = []
    for j in range(1, nodes):
        layer = net.layers[part.nodes[j][0].layer]
        first = layer.name + ("_proj" if isinstance(layer, Add) and layer.project else "")
        positions.append(int(chain.offset[chain.unit_of[first]]))
    return net, part, ccfg.engines[0].P, links, chain, positions


@pytest.mark.parametrize("name,nodes", CASES)
def test_chain_counts_the_cluster_links_elements_at_every_cut(name, nodes):
    _, _, P, links, chain, positions = _case(name, nodes)
    fwd, bwd = chain._crossing(P)
    for j, m in enumerate(positions):
        assert fwd[m] * BATCH == links[f"node{j}->node{j + 1}"], (name, nodes, j)
        assert bwd[m] * BATCH == links[f"node{j + 1}->node{j}"], (name, nodes, j)


def test_the_cuts_compared_have_skips_crossing_them():
    crossed = 0
    for name, nodes in CASES:
        net, part, *_ = _case(name, nodes)
        crossed += sum(1 for _, _, js, ja in skips(net, part.nodes) if js < ja)
    assert crossed >= 10


def test_a_cut_inside_a_block_by_hand():
    """resnet8-mnist on 3 nodes: the second cut is before the last block's second conv (b3b), so
    its first conv's output (64 x 4 x 4) and the block's skip (its input, 32 x 7 x 7, projected on
    the add's node) cross it, each way, per image."""
    net, part, P, links, chain, positions = _case("resnet8-mnist", 3)
    assert net.layers[part.nodes[2][0].layer].name == "b3b"
    per_image = 64 * 4 * 4 + 32 * 7 * 7
    assert links["node1->node2"] == links["node2->node1"] == BATCH * per_image
    fwd, bwd = chain._crossing(P)
    assert fwd[positions[1]] == bwd[positions[1]] == per_image
