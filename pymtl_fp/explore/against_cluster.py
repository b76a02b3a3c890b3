"""The analytical models of a cluster run against the simulated run: what ``pymtl-fp bench model``
prints per configuration.

The models take what a user gives ``explore`` -- the net's layer shapes, the partition's items per
node, the engines, the links, the batch and the schedule -- and never the compiled programs:

* cycles per step, the steady-state interval, the pipeline fill and the longest weight phase from
  :mod:`.step_model` (over :mod:`.node_model`'s pass occupancies);
* each node's words in its six buffers from :mod:`.node_storage`;
* each link's elements per step from the tensors :mod:`.node_model` sends.

:func:`compare` sets them beside the CL cluster's report of the same configuration (its last
step: the steady state, no initial weight loads) with the error of each figure.
"""

from __future__ import annotations

from pymtl_fp.cluster.compiler.partition import layer_info
from pymtl_fp.cluster.config import link_plan
from pymtl_fp.cluster.hw.node import router_config_for
from pymtl_fp.cost.latency import router_unit_latency
from pymtl_fp.explore import node_model, node_storage
from pymtl_fp.explore.step_model import NodePasses, predict_steps, steady_interval

#: the figures compared, each ``(key, what)``: cycles, relative error reported
TIMES = (("cycles_per_step", "cycles per step"),
         ("interval", "steady-state interval (cycles per image; node N-1's forward completions, the median of the later "
                      "half of their gaps)"),
         ("fill", "pipeline fill (cycles to the step's first logits)"),
         ("weight_phase", "longest weight phase of a node (cycles)"))


def _timing(net, part, ccfg, batch: int, schedule: str = "1f1b"):
    """``(layers, node cycles, step prediction, link elements per step)`` of the run: the node and
    step models and what each link carries."""
    ecfg = ccfg.engines[0]
    P = ecfg.P
    layers = [layer_info(net, i, i in part.packed) for i in range(len(net.layers))]
    cyc = node_model.predict(layers, part.nodes, P, batch, ecfg.drain_rows, ecfg.wb_latency, net=net,
                             unit_latency=router_unit_latency(ecfg), held=ecfg.pipelined_cmd)
    passes = [NodePasses.of(c, batch) for c in cyc]
    steps = predict_steps(passes, batch, ccfg.link.latency, ccfg.lanes, ccfg.link.throughput_msgs, schedule,
                          out_buffer=router_config_for(ecfg).out_depth)
    f0 = layers[part.nodes[0][0].layer]
    images = batch * -(-f0["c"] // P) * P * f0["h"] * f0["w"]
    links = {}
    for name, _, carries in link_plan(ccfg.n, ccfg.topology):
        if carries == "images":
            links[name] = images
        elif carries in ("logits", "grads"):
            links[name] = cyc[-1].sent.get("fwd", 0)
        else:
            d, j = carries
            links[name] = cyc[j].sent.get("fwd", 0) if d == "fwd" else cyc[j + 1].sent.get("bwd", 0)
    return layers, cyc, passes, steps, links


def predict_run(net, part, ccfg, batch: int, schedule: str = "1f1b", wgrad: str = "batch",
                overlap: bool = False) -> dict:
    """The models' figures of training ``net`` on ``ccfg`` cut as ``part`` (a
    :class:`~pymtl_fp.cluster.compiler.partition.Partition`), ``batch`` images a step."""
    layers, cyc, _, steps, links = _timing(net, part, ccfg, batch, schedule)
    words = node_storage.predict(layers, part.nodes, ccfg.engines[0], batch, wgrad=wgrad, overlap=overlap,
                                 schedule=schedule, net=net)
    return {"cycles_per_step": steps.cycles_per_step, "interval": steps.interval, "fill": steps.fill,
            "weight_phase": steps.weight_phase, "busy": [c.per_step() for c in cyc],
            "words": [w.as_dict() for w in words], "links": links}


def measured(rep: dict) -> dict:
    """The same figures from a cluster run's report (its last step)."""
    return {"cycles_per_step": rep["cycles_per_step"][-1],
            "interval": steady_interval(rep["steady_state"]["fwd"]["completions"]),
            "fill": rep["pipeline"]["fill_cycles_last_step"],
            "weight_phase": max(nd["weight_phase_cycles"] for nd in rep["node"]),
            "busy": [nd["step_cycles"][-1]["busy"] for nd in rep["node"]],
            "words": [{b: u["used"] for b, u in nd["buffers"].items()} for nd in rep["node"]],
            "links": {lk["link"]: lk["elements_per_step"] for lk in rep["links"]}}


def error(model, sim) -> float | None:
    """``model / sim - 1`` (None where the run has no such figure)."""
    if model is None or sim in (None, 0):
        return None
    return float(model) / float(sim) - 1.0


def compare(model: dict, sim: dict) -> dict:
    """Per figure ``(simulated, predicted, error)``; buffer words and link elements as the count
    of nodes (links) whose every figure is exact, and the largest difference."""
    out = {key: (sim[key], model[key], error(model[key], sim[key])) for key, _ in TIMES}
    busy = [error(m, s) for m, s in zip(model["busy"], sim["busy"])]
    out["busy_worst"] = max(busy, key=abs)
    words = [(m, s) for m, s in zip(model["words"], sim["words"])]
    out["words_exact"] = (sum(m == s for m, s in words), len(words))
    out["words_max_diff"] = max(abs(m[b] - s[b]) for m, s in words for b in s)
    links = [(model["links"].get(name), v) for name, v in sim["links"].items()]
    out["links_exact"] = (sum(m == s for m, s in links), len(links))
    out["links_max_diff"] = max(abs((m or 0) - s) for m, s in links)
    return out


def cluster_for(net, precision: str, nodes: int, flits: int = 1, pipelines: dict | None = None):
    """The CL cluster :func:`predict_run` and the scaling curve describe: ``nodes`` default engines
    for ``net`` (buffers deep enough for any plan: the partition does not depend on them; ``pipelines``:
    ``EngineConfig`` fields replacing the default pipelines) on links of ``flits`` cycles a message
    (:func:`~pymtl_fp.cluster.config.link_flits`)."""
    from pymtl_fp.cluster.config import ClusterConfig, engine_for_net, link_flits

    eng = engine_for_net(net, precision, act_depth=1 << 16, weight_depth=1 << 16, bias_depth=1 << 12)
    eng = eng.replace(**(pipelines or {}))
    return link_flits(ClusterConfig.homogeneous(nodes, eng), flits)


def scaling_point(net, precision: str, nodes: int, batch: int, flits: int = 1,
                  pipelines: dict | None = None) -> dict | None:
    """The models' throughput of ``net`` on ``nodes`` nodes in the layer pipeline (1F1B, the
    cluster's own partition), or None where the partition does not exist: images/s of a step at
    the cluster's clock, and the pipeline-full bound (the slowest node's forward, backward and
    share of the weight phase per image, or the busiest link), and which of the two binds."""
    from pymtl_fp.cluster.compiler.compile import choose_partition
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.config import ClusterError
    from pymtl_fp.cost.link import transfer_cycles

    ccfg = cluster_for(net, precision, nodes, flits, pipelines)
    try:  # (the partition does not depend on the links)
        part = choose_partition(net, cluster_for(net, precision, nodes, pipelines=pipelines), batch, Mapping())
    except ClusterError:
        return None
    _, _, passes, steps, links = _timing(net, part, ccfg, batch)
    node = max(p.fwd + p.bwd + p.wg / batch for p in passes)
    link = max(transfer_cycles(v / batch, ccfg.lanes, ccfg.link_cfg(k).throughput_msgs) for k, v in links.items())
    clock = ccfg.clock.mhz * 1e6
    return {"nodes": nodes, "flits": flits, "batch": batch, "cycles_per_step": steps.cycles_per_step,
            "images_s": batch * clock / steps.cycles_per_step, "bound_images_s": clock / max(node, link),
            "bound": "link" if link > node else "compute", "clock_mhz": ccfg.clock.mhz,
            "clock": ccfg.clock.describe()}
