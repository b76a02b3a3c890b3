"""The analytical per-node model (:mod:`pymtl_fp.explore.node_model`, built on the timing model
the RTL validates) against the CL cluster simulation of the same partition on LeNet-digits:
every node's busy cycles (compute + stream I/O + command issue) per image in the steady-state
step agree within 5%."""

import pytest

from pymtl_fp.cluster.compiler.compile import choose_partition
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.partition import layer_info
from pymtl_fp.cluster.config import ClusterConfig, default_link, engine_for_net
from pymtl_fp.cluster.run.train import train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.explore.node_model import predict
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net

NET = load_net("lenet-digits")
PREC = "8"


@pytest.mark.cl
@pytest.mark.parametrize("nodes,batch,split", [(4, 4, True), (3, 4, False)])
def test_node_model_predicts_every_cl_node_within_5_percent(nodes, batch, split):
    fmt = NET.precision(PREC)
    data = load_digits_split(seed=0)
    steps = 2
    images = quantize_images(data.x_train[: steps * batch], fmt.act)
    labels = data.y_train[: steps * batch]
    params = quantize_params(NET, init_params_float64(NET, 0), PREC)
    # the cluster's engines with their requantizer, MAC and address pipelines (wb_latency 17 a compute
    # command, which the model adds); without the command register: with it, a compute handed to the
    # register while its input's LOAD still waits for the link counts as the router's "compute" state
    # (the last command a compute, the engine busy), so the busy cycles are not the engine's work
    eng = engine_for_net(NET, PREC, P=4, act_depth=2048).replace(pipelined_cmd=False)
    ccfg = ClusterConfig.homogeneous(nodes, eng, default_link(eng.stream_bits, 8))
    run = train_on_cluster(NET, params, images, labels, TrainConfig(PREC, lr_log2=4, seed=0), ccfg, Mapping(split=split),
                           steps=steps, batch=batch, levels=["cl"] * nodes)
    part = choose_partition(NET, ccfg, batch, Mapping(split=split))
    assert bool(part.split_layers()) == split
    layers = [layer_info(NET, i, i in part.packed) for i in range(len(NET.layers))]
    predicted = predict(layers, part.nodes, eng.P, batch, wb_latency=eng.wb_latency)
    assert eng.wb_latency == 17  # (the cluster's default engines: every pipeline)
    for j, node in enumerate(run.report["node"]):
        measured = node["step_cycles"][-1]["busy"] / batch  # the second (steady-state) step
        want = predicted[j].per_image(batch)
        assert abs(want - measured) <= 0.05 * measured, (j, want, measured)
        # the compute part is the timing model's closed forms: exact
        assert predicted[j].compute == node["step_cycles"][-1]["compute"]
