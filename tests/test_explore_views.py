"""The design-space tools' descriptions as views of the simulated hardware's: a
:class:`~pymtl_fp.net.Net` as an explore :class:`~pymtl_fp.explore.layers.Network`
(``Network.from_net``; the zoo's lenet-digits is the preset itself), a
:class:`~pymtl_fp.cluster.config.ClusterConfig` as an explore
:class:`~pymtl_fp.explore.partition.Cluster` (``Cluster.from_config``)."""

import pytest

from pymtl_fp.cluster.config import ClusterConfig, default_link, engine_for_net
from pymtl_fp.explore.chain import Chain
from pymtl_fp.explore.devices import Precision, get_device
from pymtl_fp.explore.fpga_model import EngineArray
from pymtl_fp.explore.layers import Network
from pymtl_fp.explore.partition import Cluster, evaluate
from pymtl_fp.explore.zoo import get_network
from pymtl_fp.net import Add, load_net, presets


@pytest.mark.parametrize("name", presets())
def test_network_from_net_has_the_nets_shapes_and_macs(name):
    net = load_net(name)
    view = Network.from_net(net)
    # an add with a projection is two layers of the view: the projection's conv (<add>_proj) and the add
    twice = {ly.name for ly in net.layers if isinstance(ly, Add) and ly.project}
    names = [n for ly in net.layers for n in ((ly.name + "_proj", ly.name) if ly.name in twice else (ly.name,))]
    shapes = [tuple(s) for ly, s in zip(net.layers, net.shapes()[1:]) for _ in range(1 + (ly.name in twice))]
    assert [ly.name for ly in view.layers] == names
    assert tuple(view.input_shape) == net.shapes()[0]
    assert [tuple(ly.out_shape) for ly in view.layers] == shapes
    theirs = {m.name + "_proj" * (m.name in twice): (m.fp, m.bp, m.wg) for m in net.macs()}
    assert {ly.name: tuple(view.layer_macs(ly).values()) for ly in view.mac_layers} == theirs


def test_the_zoos_lenet_is_the_preset():
    zoo, view = get_network("lenet-digits"), Network.from_net(load_net("lenet-digits"))
    assert zoo.layers == view.layers and zoo.input_shape == view.input_shape


def test_cluster_from_config():
    net = load_net("lenet-digits")
    eng = engine_for_net(net, "8", P=4)
    ccfg = ClusterConfig.homogeneous(3, eng, default_link(eng.stream_bits, 8), clock_mhz=200.0)
    slow = default_link(eng.stream_bits, 8).replace(credits=1)  # one message per round trip
    cl = Cluster.from_config(ccfg.replace(link_overrides={"node2->node1": slow}), get_device("xcvu9p"))
    assert cl.n == 3 and cl.arrays == [EngineArray(4, 1)] * 3
    assert all(d.clock_mhz == 200.0 for d in cl.devices)
    assert cl.precision == Precision(8, 8, 8, 32)
    # a 32-bit message every cycle at 200 MHz: 6.4 Gb/s; 1 + 1 flit + 8 cycles = 50 ns
    assert cl.links[0].gbps == pytest.approx(6.4) and cl.links[0].latency_ns == pytest.approx(50.0)
    assert cl.links[1].gbps < cl.links[0].gbps  # the slower direction sets the link's rate
    chain = Chain(Network.from_net(net), cl.precision, batch=4)
    ev = evaluate(chain, cl, [0, 1, 2, chain.M])
    assert list(ev.stage_cycles) == [chain.cycles(EngineArray(4, 1)).scalar(a, b)
                                     for a, b in ((0, 1), (1, 2), (2, chain.M))]
