"""The cluster with RTL nodes simulated through PyMTL3: a Verilated node imported among FL nodes
(the per-cycle path a mixed cluster takes), and the PyMTL3-simulated RTL nodes and links (slow,
behind the ``slow`` marker), on the tiny digits net (every layer kind in a quarter of
``lenet-digits``' cycles: PyMTL3 simulates the RTL at tens of cycles per second).  The compiled
all-Verilator cluster on the full nets: ``test_cluster_verilated.py``."""

import pytest

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, engine_for_net
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.tb.cluster_setup import SMALL_ROUTER, tiny_digits_net

NET = tiny_digits_net()
PREC = "8"
FMT = NET.precision(PREC)
#: smaller buffers than the CLI's default: a smaller Verilator build, still enough for batch 2
ENGINE = engine_for_net(NET, PREC, act_depth=512, weight_depth=256, bias_depth=32)
TCFG = TrainConfig(PREC, lr_log2=3, seed=3)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:8], FMT.act), split.y_train[:8]


def _check(data, levels, *, steps=1, batch=2, cuts=None, router=None):
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 1), PREC)
    ccfg = ClusterConfig.homogeneous(len(levels), ENGINE)
    run = train_on_cluster(NET, params, images, labels, TCFG, ccfg, Mapping(cuts=cuts), steps=steps, batch=batch,
                           levels=levels, router=router)
    want, _ = golden_steps(NET, params, images, labels, TCFG, steps, batch)
    assert params_equal(run.params, want)
    return run


@pytest.mark.verilator
def test_mixed_verilator_and_fl_nodes_equal_golden(data):
    run = _check(data, ["fl", "verilator", "fl"], batch=1)
    assert run.report["levels"] == ["fl", "verilator", "fl"]


@pytest.mark.slow
@pytest.mark.rtl
def test_two_rtl_nodes_equal_golden_and_the_cl_cluster_cycles(data):
    """Two PyMTL3-simulated RTL nodes and RTL links (what only this level shows: the links' RTL
    under PyMTL3 and the routers' status counters feeding the energy model).  A PyMTL3 RTL node
    beside FL nodes runs in ``test_cluster_lanes.py`` (at E = 2)."""
    run = _check(data, ["rtl", "rtl"], batch=1, router=SMALL_ROUTER)
    cl = _check(data, ["cl", "cl"], batch=1, router=SMALL_ROUTER)
    assert run.report["link_level"] == "rtl" and cl.report["link_level"] == "cl"
    assert run.cycles == cl.cycles and run.report["node"][1]["cycles"] == cl.report["node"][1]["cycles"]
    # the RTL routers' status counters give the energy model the CL routers' activity
    assert run.report["energy"] == cl.report["energy"]
