"""resnet8fc-mnist, the residual net that trains as well as lenet5-mnist under the cluster's plain
SGD at 8 bits (docs/numerics.md, "Residual networks"), on eight nodes of 4x4 arrays: the
Verilated cluster (one joined model) and the CL cluster train it bit-exact with the golden model
in the same cycles, node for node.  In the long tier: its node modules are a build of their own;
the default run checks residual nets on the cluster on resnet-digits
(tests/test_cluster_residual.py, tests/test_cluster_verilated.py)."""

import pytest

from pymtl_fp.cluster.config import ClusterConfig, engine_for_net
from pymtl_fp.cluster.run.session import run_training
from pymtl_fp.net import load_net

pytestmark = [pytest.mark.slow, pytest.mark.verilator]


def test_resnet8fc_mnist_on_eight_verilated_nodes_equals_golden_and_the_cl_cycles():
    net = load_net("resnet8fc-mnist")
    ccfg = ClusterConfig.homogeneous(8, engine_for_net(net, "8"))
    runs = {level: run_training(net, ccfg, dataset="mnist", steps=1, batch=2, levels=[level] * 8, fitted=True)
            for level in ("cl", "verilator")}
    for level, result in runs.items():
        assert result.weights_equal, level
    cl, v = runs["cl"].run, runs["verilator"].run
    assert v.report["simulator"].startswith("verilated cluster") and len(v.report["node"]) == 8
    assert sum(lk["skip_elements_per_step"] for lk in v.report["links"]) > 0  # skips cross cuts
    assert v.cycles == cl.cycles and v.report["cycles_per_step"] == cl.report["cycles_per_step"]
    for nv, nc in zip(v.report["node"], cl.report["node"]):
        for key in ("cycles", "step_cycles", "macs", "first_active_cycle", "finished_cycle"):
            assert nv[key] == nc[key], (nv["node"], key)
