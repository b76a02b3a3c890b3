"""The analytical per-node storage model (:mod:`pymtl_fp.explore.node_storage`, from the layer
shapes and the buffer policy alone) against the words the cluster compiler allocates for the same
partition (each node program's buffer plan, ``alloc.usage()``: what the run's report gives as
``buffers``), node by node and buffer by buffer.

Asserted: every node's words in **each of the six buffers (X, D, O, W, G, B) equal** the
prediction exactly (so X + D and the total are within the issue's 10 % with no slack), on
lenet-digits and vgg-digits, 1-4 nodes (where the partition exists), batch 8 and 32, ``--wgrad``
batch, image and auto, with and without overlap, partitions with split layers and without, whole
layers and row bands of one row (bands run in place: the same words as whole layers, also
asserted).  Also: the in-flight ring against the schedule's count; GPipe,
``cp`` and ``sgd``; tap packing; array side 2; bands of two rows and backward passes in bands.
Programs are compiled only (no simulation: the report's words are the compiled plan's)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from pymtl_fp.cluster.compiler.compile import choose_partition, compile_pipeline
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.partition import layer_info
from pymtl_fp.cluster.compiler.schedule import images_in_flight
from pymtl_fp.cluster.compiler.weights_home import Placement
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
from pymtl_fp.explore import node_storage
from pymtl_fp.golden.train import TrainConfig
from pymtl_fp.net import load_net

PREC = "8"
NETS = ("lenet-digits", "vgg-digits")
#: (bands, split): whole layers and bands of one row, on the default partition (split layers
#: allowed) and on the partition cut at layer boundaries
PIPELINES = ((0, True), (1, True), (0, False), (1, False))


@functools.cache
def _net(name):
    return load_net(name)


def _params(net):
    return {ly.name: {"w": np.zeros(net.conv_geometry(ly)["w_shape"], dtype=np.int64),
                      "b": np.zeros(net.conv_geometry(ly)["w_shape"][0], dtype=np.int64)}
            for ly in net.param_layers()}


def case(net_name, nodes, batch, wgrad="batch", overlap=True, bands=0, split=True, schedule="1f1b", P=4,
         pack="off", bands_backward=False, homes=None, slots=2):
    """``(partition, engine config, predicted NodeWords per node, allocated {buffer: words} per node)``,
    or None where the partition does not exist (more nodes than the cuts allow)."""
    net = _net(net_name)
    # buffers deep enough for every plan: the words are what the plan uses, not the depths
    ecfg = engine_for_net(net, PREC, P=P, act_depth=65536, weight_depth=4096)
    ccfg = ClusterConfig.homogeneous(nodes, ecfg)
    try:
        part = choose_partition(net, ccfg, batch,
                                Mapping(split=split, pack=pack, overlap=overlap, schedule=schedule, wgrad=wgrad))
    except ClusterError:
        return None
    place = Placement(dict(homes or {}), {u: slots for u, _ in (homes or {})})
    _, cprog = compile_pipeline(net, ccfg, part, _params(net), TrainConfig(PREC, lr_log2=3), 1,
                                Mapping(overlap=overlap, schedule=schedule, wgrad=wgrad, bands=bands,
                                        bands_backward=bands_backward, weight_home=place))
    layers = [layer_info(net, i, i in part.packed) for i in range(len(net.layers))]
    predicted = node_storage.predict(layers, part.nodes, ecfg, batch, wgrad=wgrad, overlap=overlap, schedule=schedule,
                                     homes=homes, stage_slots=place.slots)
    allocated = [{b: u["used"] for b, u in prog.alloc.usage().items()} for prog in cprog.nodes]
    return part, ecfg, predicted, allocated


def _check(c, what):
    part, _, predicted, allocated = c
    assert len(predicted) == len(allocated) == part.n
    for j, (pred, alloc) in enumerate(zip(predicted, allocated)):
        assert pred.as_dict() == alloc, (what, j, part.describe()[j], pred.as_dict(), alloc)


@pytest.mark.parametrize("net_name", NETS)
@pytest.mark.parametrize("nodes", [1, 2, 3, 4])
def test_every_node_and_buffer_is_predicted_exactly(net_name, nodes):
    checked = 0
    for batch in (8, 32):
        for wgrad in ("batch", "image", "auto"):
            for overlap in (False, True):
                words = {}
                for bands, split in PIPELINES:
                    what = (net_name, nodes, batch, wgrad, overlap, bands, split)
                    c = case(net_name, nodes, batch, wgrad, overlap, bands, split)
                    if c is None:  # (lenet-digits has 3 conv/fc layers: no 4 nodes at layer boundaries)
                        assert not split and nodes > 3
                        continue
                    _check(c, what)
                    checked += 1
                    words[bands, split] = c[3]
                # row bands run in place: the same words as whole layers on the same partition
                for split in (True, False):
                    if (0, split) in words:
                        assert words[1, split] == words[0, split], (what, split)
    assert checked >= 12


def test_the_ring_of_images_in_flight_is_the_schedules_count():
    for schedule in ("1f1b", "gpipe", "cp", "sgd"):
        for n in range(1, 7):
            for batch in (1, 2, 3, 8, 32):
                for j in range(n):
                    want = images_in_flight(schedule, j, n, batch, late_wgrad=schedule in ("1f1b", "gpipe"))
                    assert node_storage.in_flight(schedule, j, n, batch) == want, (schedule, j, n, batch)


@pytest.mark.parametrize("net_name,nodes,kw", [
    ("lenet-digits", 3, dict(schedule="gpipe", wgrad="image")),
    ("vgg-digits", 4, dict(schedule="gpipe", wgrad="auto", overlap=False)),
    ("lenet-digits", 3, dict(schedule="cp", split=False)),
    ("vgg-digits", 4, dict(schedule="cp", split=False, overlap=False)),
    ("vgg-digits", 3, dict(schedule="sgd", split=False)),
    ("lenet-digits", 2, dict(pack="on", wgrad="auto")),
    ("vgg-digits", 1, dict(pack="on", wgrad="batch")),
    ("lenet-digits", 4, dict(P=2, wgrad="auto")),
    ("vgg-digits", 4, dict(P=2, wgrad="image", overlap=False)),
    ("vgg-digits", 3, dict(P=2, wgrad="batch", bands=1, split=False)),
    ("lenet-digits", 3, dict(wgrad="auto", bands=1, bands_backward=True, split=False)),
    ("vgg-digits", 4, dict(wgrad="image", bands=2, bands_backward=True, split=False, overlap=False)),
])
def test_other_schedules_tap_packing_and_array_sides(net_name, nodes, kw):
    for batch in (8, 32):
        c = case(net_name, nodes, batch, **kw)
        assert c is not None
        _check(c, (net_name, nodes, batch, kw))


def item_label(net, it) -> str:
    """``conv2[0:8]`` for a piece, the layer's name for a whole layer or a pool."""
    layer = net.layers[it.layer]
    if it.pool or (it.k0, it.k1) == (0, layer_info(net, it.layer)["k"]):
        return layer.name
    return f"{layer.name}[{it.k0}:{it.k1}]"


def comparison(net_name, nodes, batch, wgrad="auto", overlap=True, bands=0, split=True) -> str:
    """The predicted against the allocated words of one configuration, as a Markdown table."""
    part, _, predicted, allocated = case(net_name, nodes, batch, wgrad, overlap, bands, split)
    net = _net(net_name)
    rows = [(j, " ".join(item_label(net, it) for it in items), predicted[j], allocated[j])
            for j, items in enumerate(part.nodes)]
    return node_storage.table(rows)


def test_the_comparison_table():
    text = comparison("vgg-digits", 4, 32, "auto", bands=1, split=False)
    assert text.count("\n") == 5 and "conv4 pool2 fc" in text and "| 0.0% | +0.0% |" in text


if __name__ == "__main__":
    print("vgg-digits, 4 nodes, batch 32, --wgrad auto, --bands 1 (no split layers), overlap:")
    print(comparison("vgg-digits", 4, 32, "auto", bands=1, split=False))
    print("\nlenet-digits, 3 nodes, batch 32, --wgrad auto, whole layers (split layers allowed), overlap:")
    print(comparison("lenet-digits", 3, 32, "auto"))
    print("\nlenet-digits, 3 nodes, batch 32, --wgrad auto, --bands 1 (no split layers), overlap:")
    print(comparison("lenet-digits", 3, 32, "auto", bands=1, split=False))


@pytest.mark.parametrize("net_name,nodes,homes", [
    ("lenet-digits", 4, {(3, 4): 2}), ("lenet-digits", 2, {(1, 4): 0}), ("vgg-digits", 3, {(0, 0): 1}),
    ("vgg-digits", 4, {(3, 6): 2}), ("vgg-digits", 2, {(0, 0): 1, (0, 1): 1}), ("vgg-digits", 2, {(1, 6): 0})])
@pytest.mark.parametrize("wgrad", ["batch", "auto"])
@pytest.mark.parametrize("slots", [1, 2])
def test_weights_kept_by_a_neighbour_are_predicted_exactly(net_name, nodes, homes, wgrad, slots):
    """``train --weight-home``: the weights and gradients counted at the neighbour keeping them,
    the staging slots at the node streaming them in, its tile-by-tile weight gradient."""
    _check(case(net_name, nodes, 8, wgrad=wgrad, homes=homes, slots=slots), (net_name, nodes, homes))
