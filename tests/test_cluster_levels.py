"""The engine levels on 1, 2, 3 and 4 nodes: the final weights equal the golden model's.

CL clusters of 1-4 nodes; all-Verilated clusters (the compiled bench, RTL links) of 1-3 nodes;
mixed clusters whose Verilated nodes run beside CL and FL nodes with cycle-level links, which take
the same cycles as ``LinkRTL`` (``tests/test_link_levels.py``).  The PyMTL3-simulated RTL nodes
are in ``test_cluster_rtl.py`` (two RTL nodes and RTL links) and ``test_cluster_lanes.py`` (an RTL
node between FL nodes); the tap-packed first layer runs on Verilated nodes here, on the same RTL.
With 3 and 4 nodes the partition splits layers (asserted), so split-layer exchanges run at every
level too.  CL and Verilator clusters must also take the same number of cycles: the CL engine is
cycle-exact with the RTL.
"""

import pytest

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, engine_for_net
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.engine.config import pipeline_fields
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net

NET = load_net("lenet-digits")
PREC = "8"
FMT = NET.precision(PREC)
#: the Verilator tests' engine (test_cluster_verilated.py) with B as deep as its three-replica
#: all-reduce makes it: one build of the 3-node Verilated cluster serves both files; the cluster's
#: default engine, every pipeline built
ENGINE = engine_for_net(NET, PREC, act_depth=512, weight_depth=256, bias_depth=1024)
TCFG = TrainConfig(PREC, lr_log2=3, seed=5)
#: the same engine without pipelines (``train --pipeline none``): one more Verilator build
BARE = ENGINE.replace(**pipeline_fields("none"))


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[8:16], FMT.act), split.y_train[8:16]


def _run(data, levels, *, batch=2, link_level=None, pack="auto", engine=ENGINE):
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 2), PREC)
    ccfg = ClusterConfig.homogeneous(len(levels), engine)
    run = train_on_cluster(NET, params, images, labels, TCFG, ccfg, Mapping(pack=pack), steps=1, batch=batch, levels=levels,
                           link_level=link_level)
    want, losses = golden_steps(NET, params, images, labels, TCFG, 1, batch)
    assert params_equal(run.params, want), f"{levels}: final weights differ from the golden model's"
    assert run.losses == pytest.approx(losses)
    if len(levels) >= 3:
        assert run.report["partition"]["split_layers"], "expected a partition that splits a layer"
    return run


_CL_CYCLES = {}


@pytest.mark.cl
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_cl_cluster_equals_golden(data, n):
    _CL_CYCLES[n] = _run(data, ["cl"] * n, link_level="cl").cycles


@pytest.mark.verilator
@pytest.mark.parametrize("n", [1, 3])
def test_verilated_cluster_equals_golden_and_takes_the_cl_cycles(data, n):
    """1 and 3 Verilated nodes (the 3-node build also serves the overlap test below).  The 4-node
    Verilated chain with split layers, golden weights and the CL cluster's cycles is
    ``test_cluster_verilated.py::test_four_node_chains_equal_golden`` (a build of its own there)."""
    run = _run(data, ["verilator"] * n, link_level="cl")
    cl = _CL_CYCLES.get(n) or _run(data, ["cl"] * n, link_level="cl").cycles
    assert run.cycles == cl


@pytest.mark.verilator
def test_a_verilated_node_without_pipelines_takes_the_cl_cycles(data):
    """Every node's engine without its pipelines (no command register, address stage, pipelined
    MAC array or requantizer), and so its router without pipelined BIAS / REQUANT units: a Verilated
    node beside CL and FL nodes is bit-exact and the cluster takes exactly the cycles of the same
    cluster with that node at CL, fewer than with the default pipelined engines."""
    run = _run(data, ["verilator", "cl", "fl", "cl"], link_level="cl", engine=BARE)
    cl = _run(data, ["cl", "cl", "fl", "cl"], link_level="cl", engine=BARE)
    assert run.cycles == cl.cycles
    assert cl.cycles < _run(data, ["cl", "cl", "fl", "cl"], link_level="cl").cycles


@pytest.mark.verilator
def test_four_nodes_at_four_different_levels_equal_golden(data):
    run = _run(data, ["verilator", "cl", "fl", "cl"], link_level="cl")
    assert run.report["levels"] == ["verilator", "cl", "fl", "cl"]


@pytest.mark.verilator
@pytest.mark.parametrize("levels", [["verilator"], ["verilator", "cl", "fl", "cl"]], ids=["1", "4-mixed"])
def test_tap_packed_first_layer_equals_golden_and_cl_cycles(data, levels):
    """conv1 tap-packed (the host sends each image as 9 packed channels on the 8 x 8 output map;
    the node keeps conv1's weights as (6, 9, 1, 1)): bit-exact on a Verilated node and beside
    CL and FL nodes, in the CL cluster's cycles (batch 1: the packed input of 2 images does not
    fit this engine's 512-word X with the rest of node 0's layers).  The same cluster with the
    Verilated node at CL takes the same cycles."""
    run = _run(data, levels, batch=1, link_level="cl", pack="on")
    assert run.report["partition"]["tap_packed"] == ["conv1"]
    cl = _run(data, ["cl" if lv == "verilator" else lv for lv in levels], batch=1, link_level="cl", pack="on")
    assert run.cycles == cl.cycles


@pytest.mark.verilator
@pytest.mark.parametrize("n", [2, 3])
def test_overlapping_engines_equal_golden_take_fewer_cycles_and_cl_equals_verilator(data, n):
    """``overlap=True``: every engine command may overlap earlier ones (the engine's hazard check
    keeps the in-order results), so LOADs and STOREs run beside compute."""
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 2), PREC)
    ccfg = ClusterConfig.homogeneous(n, ENGINE)
    want, _ = golden_steps(NET, params, images, labels, TCFG, 1, 2)
    cycles = {}
    for level, overlap in (("cl", False), ("cl", True), ("verilator", True)):
        run = train_on_cluster(NET, params, images, labels, TCFG, ccfg, Mapping(overlap=overlap), steps=1, batch=2,
                               levels=[level] * n, link_level="cl")
        assert params_equal(run.params, want), (level, overlap)
        cycles[level, overlap] = run.cycles
    assert cycles["verilator", True] == cycles["cl", True]
    # the layers write their results in place; most of the overlap's gain needs a batch long enough
    # to fill the pipeline
    assert cycles["cl", True] < cycles["cl", False], cycles
