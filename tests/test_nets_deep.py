"""The zoo's deep nets for the cluster's depth studies (deep-mnist, deep-digits, deep-strided16):
their shapes as their files describe them, and the layer pipeline's partition of each into 64 nodes
(every node some work, every layer's output channels covered once by at most two neighbouring
nodes), without simulation (``pymtl-fp bench model`` runs them on 16 to 64 CL nodes)."""

from __future__ import annotations

import itertools

import pytest

from pymtl_fp.cluster.compiler.partition import max_nodes, partition
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
from pymtl_fp.net import Conv, load_net, presets


def _stage(shape, n):
    return [shape] * n


#: each net's shapes (input, then every layer's output), written from the shapes its file's header
#: describes: 3x3 convs of pad 1 keep a map's side, a stride of 2 or a 2x2 pool halves it
SHAPES = {
    "deep-mnist": [(1, 28, 28), (8, 14, 14), (8, 7, 7)] + _stage((8, 7, 7), 29) + [(32, 1, 1), (10, 1, 1)],
    "deep-digits": ([(1, 8, 8)] + _stage((8, 8, 8), 8) + [(8, 4, 4)] + _stage((16, 4, 4), 12) + [(16, 2, 2)]
                    + _stage((32, 2, 2), 10) + [(32, 1, 1), (10, 1, 1)]),
    "deep-strided16": ([(1, 16, 16)] + _stage((8, 8, 8), 6) + _stage((12, 4, 4), 11) + _stage((24, 2, 2), 13)
                       + [(24, 1, 1), (10, 1, 1)]),
}
#: the layers with a stride of 2
STRIDED = {"deep-mnist": ["conv1"], "deep-digits": [], "deep-strided16": ["conv1", "conv7", "conv18"]}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_deep_nets_have_the_shapes_their_files_describe(name):
    net = load_net(name)
    assert name in presets()
    assert net.shapes() == SHAPES[name]
    assert len(net.param_layers()) == 32  # 30 conv layers and 2 fc: a layer pipeline to 64 nodes
    assert [ly.name for ly in net.layers if isinstance(ly, Conv) and ly.stride == 2] == STRIDED[name]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_deep_nets_cut_into_64_nodes_of_4x4_arrays(name):
    net = load_net(name)
    eng = engine_for_net(net, "8")
    assert max_nodes(net, eng.P) == 64  # every layer has two channel tiles or more: one cut inside each
    part = partition(net, ClusterConfig.homogeneous(64, eng), batch=4)
    assert len(part.nodes) == 64 and all(part.nodes)
    for layer in net.param_layers():
        li = net.layers.index(layer)
        holders = [j for j, items in enumerate(part.nodes) for it in items if it.layer == li and not it.pool]
        pieces = sorted((it.k0, it.k1) for items in part.nodes for it in items if it.layer == li and not it.pool)
        assert pieces[0][0] == 0 and pieces[-1][1] == net.conv_geometry(layer)["w_shape"][0]
        assert all(a[1] == b[0] for a, b in itertools.pairwise(pieces))
        assert len(holders) <= 2 and holders == list(range(holders[0], holders[0] + len(holders)))
    # at layer boundaries only, one node a layer: 33 nodes are refused in one line
    with pytest.raises(ClusterError, match="32 conv/fc layers") as exc:
        partition(net, ClusterConfig.homogeneous(33, eng), batch=4, split=False)
    assert "\n" not in str(exc.value)
