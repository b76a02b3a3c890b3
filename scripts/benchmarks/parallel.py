"""``pymtl-fp bench parallel``: FPDeep's question on the simulated cluster: one pipeline over the
nodes (model/layer parallelism) against data-parallel replicas (the baseline FPDeep beats, and
CATERPILLAR's collectives) and hybrid (replicas of shorter pipelines), measured side by side.

Each run is a CL cluster training ``--steps`` mini-batches of the digits data, checked bit-exact
against the golden model's one-node ``train_step`` (a mismatch is an error, not a figure); per
method, node count and batch: the cycles of the last step, images/s at the clock, the cluster's
MAC utilization (useful MACs over ``nodes x P x P x cycles`` of the whole run) and, for replicas,
the longest weight phase (raw ``bwd_weight``, the all-reduces, one rounding, the updates).

Methods: ``pipeline`` (FPDeep's partition, 1F1B), ``data`` (a replica per node), ``hybrid``
(``N/2``-node pipelines, 2 replicas; 4 nodes and more).  Figures only: nothing passes or fails on
time.
"""

from __future__ import annotations

import json

from pymtl_fp.cli import validate
from pymtl_fp.cli.benchmarks.digits import int_list, last_step_figures, pipelines_named, run_inputs, run_jobs, zoo_net
from pymtl_fp.cluster.compiler.mapping import Mapping

HELP = "pipeline vs data-parallel vs hybrid training on the CL cluster: images/s and MAC utilization"


def add_arguments(parser):
    parser.add_argument("--net", default="lenet-digits", metavar="NAME", help="zoo net (default lenet-digits)")
    parser.add_argument("--precision", default="8", metavar="P", help="fixed-point precision (default 8)")
    parser.add_argument("--nodes", default="1,2,4", metavar="N0,N1,...", help="node counts (default 1,2,4)")
    parser.add_argument("--batches", default="8,16,32", metavar="B0,B1,...", help="mini-batches (default 8,16,32)")
    parser.add_argument("--steps", type=int, default=2, metavar="S", help="steps per run (default 2: the last is measured)")
    parser.add_argument("--act-depth", type=int, default=8192, metavar="WORDS",
                        help="activation buffer words per node (default 8192: a whole batch of 32 on one node)")
    parser.add_argument("--pipeline", metavar="PARTS",
                        help="the nodes' engine pipelines, as train --pipeline (default all; none: without)")
    parser.add_argument("--workers", type=int, default=2, metavar="W", help="processes (default 2)")
    parser.add_argument("--json", metavar="FILE.json", help="write the figures as JSON")
    parser.add_argument("--plot", metavar="FILE.png", help="images/s per method vs batch, one panel per node count")


def _methods(n: int) -> list:
    """(method, groups) pairs that exist on ``n`` nodes."""
    out = [("pipeline", None)]
    if n > 1:
        out.append(("data", None))
    if n >= 4 and n % 2 == 0:
        out.append(("hybrid", 2))
    return out


def _run(job):
    """One CL cluster run (bit-exact checked): the figures of its last step."""
    from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
    from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
    from pymtl_fp.net import load_net

    net_name, prec, method, groups, n, batch, steps, act_depth, pipes = job
    net = load_net(net_name)
    images, labels, params, tcfg = run_inputs(net, prec, steps, batch)
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(net, prec, act_depth=act_depth).replace(**pipes))
    row = {"method": method, "groups": groups, "nodes": n, "batch": batch}
    try:
        run = train_on_cluster(net, params, images, labels, tcfg, ccfg,
                               Mapping(overlap=True, parallel=method, groups=groups), steps=steps, batch=batch,
                               levels=["cl"] * n)
    except ClusterError as exc:  # (e.g. a batch that does not fit one node's buffers)
        return dict(row, error=str(exc))
    want, _ = golden_steps(net, params, images, labels, tcfg, steps, batch)
    if not params_equal(run.params, want):
        return dict(row, error="the final weights differ from the golden model's")
    reps = run.report.get("replicas")
    return dict(row, **last_step_figures(run, ccfg, batch),
                weight_phase_cycles=reps["weight_phase_cycles_max"] if reps else None)


def _plot(path, rows, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes = sorted({r["nodes"] for r in rows})
    fig, axes = plt.subplots(1, len(nodes), figsize=(4.2 * len(nodes), 3.8), sharey=True, squeeze=False)
    for ax, n in zip(axes[0], nodes):
        for method, groups in _methods(n):
            pts = sorted((r["batch"], r["images_per_s"]) for r in rows
                         if r["nodes"] == n and r["method"] == method and "images_per_s" in r)
            if pts:
                label = method + (f" ({groups} replicas)" if groups else "")
                ax.plot([p[0] for p in pts], [p[1] / 1e3 for p in pts], marker="o", label=label)
        ax.set_title(f"{n} node{'s' if n > 1 else ''}")
        ax.set_xlabel("mini-batch")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("thousand images/s (simulated, CL)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(args) -> int:
    json_path = validate.output_file(args.json, "--json", ".json")
    plot_path = validate.output_file(args.plot, "--plot", ".png")
    net = zoo_net(args.net, args.precision)
    nodes = int_list(args.nodes, "--nodes", 1, 16)
    batches = int_list(args.batches, "--batches", 1, 256)
    validate.integer(args.steps, "--steps", 1, 100)
    validate.integer(args.act_depth, "--act-depth", 1, 1 << 20)
    validate.integer(args.workers, "--workers", 1, 64)
    pipes = validate.pipelines(args.pipeline)
    jobs = [(net.name, args.precision, m, g, n, b, args.steps, args.act_depth, pipes)
            for n in nodes for m, g in _methods(n) for b in batches]
    print(f"{net.name} ({args.precision}-bit), CL cluster of 4x4 engines (pipelines {pipelines_named(pipes)}), "
          f"{args.steps} steps per run "
          f"(the last measured), {len(jobs)} runs on {args.workers} processes; every run checked bit-exact "
          "against the golden model's one-node step", flush=True)
    rows = run_jobs(_run, jobs, args.workers)
    print(f"{'nodes':>5} {'method':<18} {'batch':>5} {'cycles/step':>12} {'images/s':>10} {'MAC util':>9} "
          f"{'weight phase':>13}")
    for r in rows:
        label = r["method"] + (f" ({r['groups']} repl.)" if r["groups"] else "")
        if "error" in r:
            print(f"{r['nodes']:>5} {label:<18} {r['batch']:>5}  -- {r['error']}")
            continue
        wp = f"{r['weight_phase_cycles']:,}" if r["weight_phase_cycles"] else "-"
        print(f"{r['nodes']:>5} {label:<18} {r['batch']:>5} {r['cycles_per_step']:>12,} "
              f"{r['images_per_s']:>10,.0f} {100 * r['mac_utilization']:>8.1f}% {wp:>13}")
    for n in nodes:
        for b in batches:
            ok = [r for r in rows if r["nodes"] == n and r["batch"] == b and "images_per_s" in r]
            if len(ok) > 1:
                best = max(ok, key=lambda r: r["images_per_s"])
                print(f"  {n} nodes, batch {b}: fastest {best['method']} "
                      + ", ".join(f"{r['method']} {r['images_per_s'] / best['images_per_s']:.2f}x" for r in ok
                                  if r is not best))
    if json_path:
        json_path.write_text(json.dumps({"net": net.name, "precision": args.precision, "steps": args.steps,
                                         "runs": rows}, indent=2) + "\n")
        print(f"  wrote {json_path}")
    if plot_path:
        _plot(plot_path, rows, f"{net.name}: pipeline vs data-parallel vs hybrid (CL cluster, bit-exact)")
        print(f"  wrote {plot_path}")
    return 0
