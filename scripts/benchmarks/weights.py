"""``pymtl-fp bench weights``: FPDeep's weight balancing on the CL cluster (``train --weight-home
auto``): how small the nodes' W buffers may get once a neighbour may keep a node's layers, and
what streaming those layers' weights for every pass costs.

Per net, node count and batch, on the default partition (1F1B, whole layers, overlap): the W words
the busiest node needs with every layer's weights on its own node (``W need``), the smallest W depth
with which ``auto`` compiles (found by bisection over the compiler's buffer check) and the placement
it makes there; both runs trained for ``--steps`` steps on the CL cluster, each checked bit for bit
against the golden mini-batch step (a difference fails the run): the weights held per node
(parameters; max/mean), the elements per step on the busiest link, and the last step's cycles.
Figures only: nothing passes or fails on time.
"""

from __future__ import annotations

import json

from pymtl_fp.cli import validate
from pymtl_fp.cli.benchmarks.digits import int_list, run_inputs, run_jobs, zoo_net
from pymtl_fp.cli.errors import UserError
from pymtl_fp.cluster.compiler.mapping import Mapping

HELP = "weights kept by a neighbour (train --weight-home auto): smallest W per node, cost of streaming them (CL)"


def add_arguments(parser):
    parser.add_argument("--nets", default="lenet-digits,vgg-digits,vgg-digits16", metavar="N1,N2",
                        help="zoo nets (default lenet-digits,vgg-digits,vgg-digits16)")
    parser.add_argument("--precision", default="8", metavar="P", help="fixed-point precision (default 8)")
    parser.add_argument("--nodes", default="2,3,4", metavar="N0,N1,...", help="node counts (default 2,3,4)")
    parser.add_argument("--batches", default="8", metavar="B0,B1,...", help="mini-batch sizes (default 8)")
    parser.add_argument("--steps", type=int, default=2, metavar="S", help="steps per run, the last measured (default 2)")
    parser.add_argument("--array", type=int, default=4, metavar="P", help="MAC array side of every node (default 4)")
    parser.add_argument("--stream-lanes", type=int, default=1, metavar="E",
                        help="elements per beat on every stream (as train --stream-lanes; default 1)")
    parser.add_argument("--workers", type=int, default=1, metavar="W", help="runs in parallel processes (default 1)")
    parser.add_argument("--json", metavar="FILE.json", help="also write the rows as JSON")


def _ccfg(net, prec, n, P, E, weight_depth):
    from pymtl_fp.cluster.config import ClusterConfig, default_link, engine_for_net

    engines = tuple(engine_for_net(net, prec, P=P, act_depth=65536, weight_depth=weight_depth).replace(stream_lanes=E)
                    for _ in range(n))
    return ClusterConfig(engines, default_link(engines[0].stream_bits, 8, E))


def _fits(net, prec, n, P, E, depth, batch, params, tcfg) -> bool:
    from pymtl_fp.cluster.compiler.compile import choose_partition, compile_cluster
    from pymtl_fp.cluster.config import ClusterError

    ccfg = _ccfg(net, prec, n, P, E, depth)
    try:
        compile_cluster(net, ccfg, choose_partition(net, ccfg, batch), params, tcfg, 1, Mapping(overlap=True))
    except ClusterError:
        return False
    return True


def _run(job) -> dict:
    """One row: the W the busiest node needs, the smallest W ``auto`` fits, both runs' figures."""
    from pymtl_fp.cluster.compiler.compile import choose_partition, compile_cluster
    from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
    from pymtl_fp.net import load_net

    name, prec, n, P, E, batch, steps = job
    net = load_net(name)
    images, labels, params, tcfg = run_inputs(net, prec, steps, batch)
    deep = _ccfg(net, prec, n, P, E, 65536)
    part = choose_partition(net, deep, batch)
    plain = compile_cluster(net, deep, part, params, tcfg, 1, Mapping(overlap=True, weight_home="off"))
    need = max(p.alloc.usage()["W"]["used"] for p in plain.nodes)
    lo, hi = 2, need  # (hi fits: every layer on its node)
    while lo < hi:
        mid = (lo + hi) // 2
        if _fits(net, prec, n, P, E, mid, batch, params, tcfg):
            hi = mid
        else:
            lo = mid + 1
    want, _ = golden_steps(net, params, images, labels, tcfg, steps, batch)
    row = {"net": name, "nodes": n, "batch": batch, "w_need": need, "w_min": hi}
    for label, depth in (("own", need), ("home", hi)):
        ccfg = _ccfg(net, prec, n, P, E, depth)
        run = train_on_cluster(net, params, images, labels, tcfg, ccfg, Mapping(overlap=True, bands=0), steps=steps,
                               batch=batch, levels=["cl"] * n)
        if not params_equal(run.params, want):
            raise UserError(f"{name} on {n} nodes, W {depth}: the final weights differ from the golden model's")
        rep = run.report["partition"]
        held = rep.get("weights_held_per_node", rep["weights_per_node"])
        row[label] = {"cycles_per_step": run.report["cycles_per_step"][-1], "placement": rep["weight_home"],
                      "weights_held": held, "held_max_over_mean": max(held) / (sum(held) / len(held)),
                      "busiest_link_elements": max(lk["elements_per_step"] for lk in run.report["links"]),
                      "w_used": max(nd["buffers"]["W"]["used"] for nd in run.report["node"])}
    return row


def main(args) -> int:
    from pymtl_fp.engine.config import MAX_ARRAY_SIDE
    from pymtl_fp.net import load_net

    nets = [zoo_net(x, args.precision).name for x in args.nets.split(",")]
    nodes = int_list(args.nodes, "--nodes", 1, 16)
    batches = int_list(args.batches, "--batches", 1, 1024)
    validate.integer(args.steps, "--steps", 1, 100)
    validate.integer(args.array, "--array", 1, MAX_ARRAY_SIDE)
    validate.integer(args.stream_lanes, "--stream-lanes", 1, 16)
    if args.array % args.stream_lanes:
        raise UserError(f"--stream-lanes {args.stream_lanes} must divide --array {args.array}")
    validate.integer(args.workers, "--workers", 1, 64)
    out = validate.output_file(args.json, "--json", ".json")
    for name in nets:
        net = load_net(name)
        for n in nodes:
            for b in batches:
                validate.cluster_partition(net, lambda net=net, n=n: _ccfg(net, args.precision, n, args.array,
                                                                           args.stream_lanes, 65536),
                                           b, f"bench weights: {name} on {n} nodes, batch {b}")
    jobs = [(name, args.precision, n, args.array, args.stream_lanes, b, args.steps)
            for name in nets for n in nodes for b in batches]
    rows = run_jobs(_run, jobs, args.workers)
    print(f"weights kept by a neighbour (train --weight-home auto), CL cluster, P = {args.array}, E = {args.stream_lanes}, "
          "1F1B, whole layers, overlap; W in words of P*P elements; every run bit-exact with the golden model")
    print(f"{'net':<14}{'N':>3}{'B':>4}{'W need':>8}{'W min':>7}  {'cycles/step own':>16}{'home':>9}{'ratio':>7}  "
          f"{'held max/mean':>14}{'->':>7}  {'busiest link':>13}{'->':>8}  placement")
    for r in rows:
        o, h = r["own"], r["home"]
        print(f"{r['net']:<14}{r['nodes']:>3}{r['batch']:>4}{r['w_need']:>8}{r['w_min']:>7}  "
              f"{o['cycles_per_step']:>16}{h['cycles_per_step']:>9}{h['cycles_per_step'] / o['cycles_per_step']:>7.2f}  "
              f"{o['held_max_over_mean']:>14.2f}{h['held_max_over_mean']:>7.2f}  "
              f"{o['busiest_link_elements']:>13}{h['busiest_link_elements']:>8}  {'; '.join(h['placement']) or '-'}")
    if out:
        with open(out, "w") as fh:
            json.dump(rows, fh, indent=1)
        print(f"wrote {out}")
    return 0
