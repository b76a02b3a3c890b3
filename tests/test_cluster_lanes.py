"""A cluster whose streams carry E elements per beat (``stream_lanes``): the engines' din/dout, the
routers, the links (E x 32-bit messages) and the host.  Training leaves the golden model's
weights at every level and E, each link carries the compiled elements in E-element messages, and
configurations the hardware cannot run are refused before simulation."""

import numpy as np
import pytest

from pymtl_fp.cluster.config import ClusterConfig, ClusterError, default_link, engine_for_net
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import SMALL_ROUTER, mapping_options, tiny_digits_net

NET = load_net("lenet-digits")
PREC = "8"
TCFG = TrainConfig(PREC, lr_log2=3, seed=7)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:16], NET.precision(PREC).act), split.y_train[:16]


def _cluster(n, lanes, P=4, topology="chain"):
    eng = engine_for_net(NET, PREC, P=P).replace(stream_lanes=lanes)
    return ClusterConfig.homogeneous(n, eng, topology=topology)


def _train(data, ccfg, levels, *, steps=2, batch=2, net=NET, **kw):
    images, labels = data
    params = quantize_params(net, init_params_float64(net, 0), PREC)
    mapping, kw = mapping_options(kw)
    run = train_on_cluster(net, params, images, labels, TCFG, ccfg, mapping, steps=steps, batch=batch, levels=levels,
                           **kw)
    want, losses = golden_steps(net, params, images, labels, TCFG, steps, batch)
    assert params_equal(run.params, want)
    assert np.allclose(run.losses, losses)
    return run


@pytest.mark.parametrize("lanes,n,topology", [(2, 3, "chain"), (4, 4, "chain"), (4, 2, "ring")])
def test_cl_cluster_with_wide_beats_equals_golden(data, lanes, n, topology):
    """FL and CL nodes mixed, random stalls: the weights are the golden model's, and every link
    carried its compiled elements in messages of ``lanes`` elements (a message is a beat)."""
    ccfg = _cluster(n, lanes, topology=topology)
    assert ccfg.link.msg_bits == 32 * lanes
    run = _train(data, ccfg, ["cl", "fl"] * (n // 2) + ["cl"] * (n % 2), stall=(0.2, 5))
    assert run.report["link"]["elements_per_cycle"] == pytest.approx(lanes * ccfg.link.throughput_msgs)
    one = _train(data, _cluster(n, 1, topology=topology), ["cl"] * n)
    # the same program moves the same elements in 1/lanes of the messages, so the run is faster
    assert run.cycles < one.cycles


def test_link_messages_are_the_compiled_elements_in_beats(data):
    """The routers count messages: the bits they sent on their link outputs (messages x E x 32) are
    the elements compiled for those links times 32, so each message carried E elements (every
    tensor is padded to the array side: a whole number of beats)."""
    lanes, steps = 4, 2
    run = _train(data, _cluster(3, lanes), ["cl"] * 3, steps=steps)
    rep = run.report
    planned = sum(lk["elements_per_step"] for lk in rep["links"] if lk["link"].startswith("node"))
    measured = sum(a["link_bits"] for a in rep["energy"]["activity"])
    assert measured == planned * steps * 32 > 0


@pytest.mark.slow
@pytest.mark.rtl
def test_rtl_node_with_wide_beats_beside_fl_nodes(data):
    """A PyMTL3 RTL node (engine and router at E = 2) between FL nodes: golden weights (batch 1 of
    the tiny net: the PyMTL3 simulation is the suite's slowest kind of test; lenet-digits at batch 2
    runs Verilated below)."""
    _train(data, _cluster(3, 2), ["fl", "rtl", "fl"], steps=1, batch=1, net=tiny_digits_net(), router=SMALL_ROUTER)


@pytest.mark.verilator
@pytest.mark.parametrize("lanes,n", [(4, 3)])
def test_verilated_cluster_with_wide_beats_equals_cl_cycles(data, lanes, n):
    """The whole RTL cluster at E = 4 (128-bit link messages, kept as 32-bit words by the compiled
    bench) Verilated: golden weights and the CL cluster's cycle count.  (E = 2 runs
    as a PyMTL3 RTL node above and at CL; each E is one more Verilator build of the cluster.)"""
    ccfg = _cluster(n, lanes)
    rtl = _train(data, ccfg, ["verilator"] * n, steps=1, batch=2)
    cl = _train(data, ccfg, ["cl"] * n, steps=1, batch=2)
    assert rtl.cycles == cl.cycles


def test_refusals(data):
    eng = engine_for_net(NET, PREC, P=4)
    with pytest.raises(ClusterError, match="stream_lanes"):  # nodes must share the beat
        ClusterConfig((eng.replace(stream_lanes=2), eng), default_link(32, lanes=2))
    with pytest.raises(ClusterError, match="msg_bits"):  # the link must carry one beat per message
        ClusterConfig((eng.replace(stream_lanes=2),) * 2, default_link(32))
    with pytest.raises(ValueError, match="stream_lanes"):  # E divides every array side
        ClusterConfig.homogeneous(2, engine_for_net(NET, PREC, P=2).replace(stream_lanes=4))
