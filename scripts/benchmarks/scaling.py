"""``pymtl-fp bench scaling``: FPDeep's scaling figure from simulation -- images/s of the layer
pipeline against the number of nodes, the simulated points drawn on the analytical step model's
curve (:mod:`pymtl_fp.explore.step_model`), one curve per link speed.

For every node count from 1 to the most the net can be cut into (at most 64), the model predicts the
cycles of a training step (1F1B, serial engines, the cluster's own partition) and the
pipeline-full bound (the slowest node's forward + backward + share of the weight phase per image,
or the busiest link); at the ``--nodes`` given, the cluster (``--level cl`` or ``verilator``)
trains ``--steps`` steps, checked bit for bit against the golden model, and its last step is
measured.  ``--link-flits 1,4``: links of one message a cycle (as fast as the engines' streams)
and four times slower, so that the link-bound knee (the node count from which the busiest link,
not compute, bounds the pipeline) falls inside the range.  Throughput is at the clock the nodes'
RTL reaches (:mod:`pymtl_fp.clock`, stated in the output), the same for every point.
``--simulated`` redraws the figure and the table from the points an earlier run recorded (when
only the model changed; their images/s from their recorded cycles at that clock).  Figures only:
nothing passes or fails on time.
"""

from __future__ import annotations

import json

from pymtl_fp.cli import validate
from pymtl_fp.cli.benchmarks.digits import fitted_cluster, int_list, pipelines_named, run_inputs, run_jobs, zoo_net
from pymtl_fp.cli.errors import UserError

HELP = "images/s against nodes (1..64) for the layer pipeline: simulated points on the step model's curve, per link speed"
LEVELS = ("cl", "verilator")


def add_arguments(parser):
    parser.add_argument("--net", default="deep-mnist", help="zoo net (default deep-mnist: 32 layers with weights, "
                                                            "a pipeline to 64 nodes)")
    parser.add_argument("--precision", default="8", metavar="P", help="fixed-point precision (default 8)")
    parser.add_argument("--nodes", default="1,2,4,8,16", metavar="N0,N1,...",
                        help="node counts to simulate (default 1,2,4,8,16; the curve covers every count)")
    parser.add_argument("--batch", type=int, default=32, metavar="B", help="mini-batch (default 32)")
    parser.add_argument("--link-flits", default="1,4", metavar="F0,F1,...",
                        help="link speeds: cycles per message (default 1,4)")
    parser.add_argument("--curve-to", type=int, default=64, metavar="N",
                        help="the model's curve covers 1..N nodes (default 64; fewer if the net cannot be cut into N)")
    parser.add_argument("--level", default="cl", choices=LEVELS, help="simulation level (default cl)")
    parser.add_argument("--pipeline", metavar="PARTS",
                        help="the nodes' engine pipelines, as train --pipeline (default all; with --simulated: the "
                             "recorded points')")
    parser.add_argument("--steps", type=int, default=2, metavar="S", help="steps per run, the last measured (default 2)")
    parser.add_argument("--workers", type=int, default=2, metavar="W", help="processes (default 2)")
    parser.add_argument("--plot", metavar="FILE.png", help="write the figure")
    parser.add_argument("--markdown", metavar="FILE.md", help="write the table as Markdown")
    parser.add_argument("--json", metavar="FILE.json", help="write the figures as JSON")
    parser.add_argument("--simulated", metavar="FILE.json",
                        help="take the simulated points from the JSON an earlier run wrote (--json; its nodes and "
                             "link speeds replace --nodes and --link-flits): the model's curve and errors are "
                             "computed again, nothing is simulated")


def _simulate(job) -> dict:
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
    from pymtl_fp.net import load_net

    net_name, prec, n, batch, flits, level, steps, ccfg = job
    net = load_net(net_name)
    images, labels, params, tcfg = run_inputs(net, prec, steps, batch)
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg, Mapping(), steps=steps, batch=batch,
                           levels=[level] * n)
    want, _ = golden_steps(net, params, images, labels, tcfg, steps, batch)
    if not params_equal(run.params, want):
        raise UserError(f"bench scaling: {net_name} on {n} nodes ({level}) differs from the golden model")
    rep = run.report
    from pymtl_fp.clock import pipelines_key

    return {"nodes": n, "flits": flits, "level": level, "batch": batch, "pipelines": pipelines_key(ccfg.engines[0]),
            "cycles_per_step": rep["cycles_per_step"][-1],
            "images_s": batch * ccfg.clock.mhz * 1e6 / rep["cycles_per_step"][-1],
            "build_s": rep["wall_seconds"]["build"], "simulate_s": rep["wall_seconds"]["simulate"],
            "node_cycles_per_s": rep["cycles_total"] * n / max(rep["wall_seconds"]["simulate"], 1e-9)}


def _fitted(net, prec, n, batch, flits, steps, pipelines):
    """The cluster of ``n`` nodes on links of ``flits`` cycles a message, every buffer the depth the
    run needs (compiled here, before any simulation: a batch the engines' fields cannot address is
    a one-line error)."""
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.config import ClusterError

    try:
        return fitted_cluster(net, prec, n, Mapping(), steps=steps, batch=batch, flits=flits, pipelines=pipelines)
    except ClusterError as exc:
        raise UserError(f"bench scaling: {net.name} on {n} nodes, batch {batch}: {exc}") from None


#: what a recorded simulated point must hold (``--simulated``), and its nodes' engine pipelines
#: (``pipelines``: ``none`` or the parts, as :func:`pymtl_fp.clock.pipelines_key` names them)
RECORDED = ("nodes", "flits", "cycles_per_step", "images_s")


def _recorded(path) -> list:
    """The simulated points of an earlier run's ``--json``, each checked (one-line errors)."""
    from pymtl_fp.documents import DocumentError, read_document

    try:
        doc = read_document(path, (".json",))
    except DocumentError as exc:
        raise UserError(f"--simulated {exc}") from None
    points = doc.get("simulated") if isinstance(doc, dict) else None
    if not isinstance(points, list) or not points:
        raise UserError(f"--simulated {path}: no 'simulated' list of points (what --json writes)")
    for i, p in enumerate(points):
        if not isinstance(p, dict) or any(isinstance(p.get(k), bool) or not isinstance(p.get(k), (int, float))
                                          or not p.get(k) > 0 for k in RECORDED):
            raise UserError(f"--simulated {path}: point {i} needs positive numbers {', '.join(RECORDED)}")
        if p["nodes"] != int(p["nodes"]) or not 1 <= p["nodes"] <= 64 or p["flits"] != int(p["flits"]) \
                or not 1 <= p["flits"] <= 64:
            raise UserError(f"--simulated {path}: point {i}: nodes and flits are integers in 1..64")
    keys = {p.get("pipelines") for p in points}
    if len(keys) != 1 or not isinstance(points[0].get("pipelines"), str):
        raise UserError(f"--simulated {path}: every point needs the same 'pipelines' (the nodes' engine pipelines: "
                        "none or requant,mac,addr,cmd, ...)")
    validate.pipelines(points[0]["pipelines"])
    return [{k: (int(p[k]) if k in ("nodes", "flits") else p[k]) for k in (*RECORDED, "level", "batch", "pipelines")
             if k in p} for p in points]


def _plot(path, curve, sims, net, batch, level):
    from pymtl_fp.explore.report import _plt, _save

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 5))
    for k, flits in enumerate(sorted({c["flits"] for c in curve})):
        color = f"C{k}"
        pts = [c for c in curve if c["flits"] == flits]
        ns = [c["nodes"] for c in pts]
        ax.plot(ns, [c["images_s"] for c in pts], color=color,
                label=f"step model, links of {flits} cycle(s)/message, batch {batch}")
        ax.plot(ns, [c["bound_images_s"] for c in pts], color=color, linestyle=":",
                label=f"pipeline-full bound, {flits} cycle(s)/message")
        mine = [s for s in sims if s["flits"] == flits]
        ax.plot([s["nodes"] for s in mine], [s["images_s"] for s in mine], "o", color=color,
                label=f"simulated ({level}), {flits} cycle(s)/message")
        knee = next((c["nodes"] for c in pts if c["bound"] == "link"), None)
        if knee:
            ax.axvline(knee, color=color, linestyle="--", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("nodes (layer pipeline)")
    ax.set_ylabel(f"images/s at {curve[0]['clock_mhz']:.1f} MHz (the RTL's clock)")
    ax.set_title(f"{net}: training throughput against nodes (dashed: the link-bound knee)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def main(args) -> int:
    from pymtl_fp.explore.against_cluster import scaling_point
    from pymtl_fp.net import load_net

    plot_path = validate.output_file(args.plot, "--plot", ".png")
    md_path = validate.output_file(args.markdown, "--markdown", ".md")
    json_path = validate.output_file(args.json, "--json", ".json")
    net = load_net(zoo_net(args.net, args.precision).name)
    recorded = _recorded(args.simulated) if args.simulated else None
    if recorded and args.pipeline is not None:
        raise UserError("--pipeline: with --simulated the pipelines are the recorded points'")
    pipes = validate.pipelines(recorded[0]["pipelines"] if recorded else args.pipeline)
    if recorded:
        if any(p.get("batch", args.batch) != args.batch for p in recorded):
            raise UserError(f"--simulated {args.simulated}: its points are of another batch than --batch {args.batch}")
        nodes = sorted({p["nodes"] for p in recorded})
        flits = sorted({p["flits"] for p in recorded})
    else:
        nodes = int_list(args.nodes, "--nodes", 1, 64)
        flits = int_list(args.link_flits, "--link-flits", 1, 64)
    validate.integer(args.batch, "--batch", 1, 256)
    validate.integer(args.steps, "--steps", 2, 20)
    validate.integer(args.workers, "--workers", 1, 64)
    validate.integer(args.curve_to, "--curve-to", 1, 64)
    too_many = [n for n in nodes if n > args.curve_to]
    if too_many:
        raise UserError(f"--nodes {too_many[0]}: more than --curve-to {args.curve_to}")
    curve = [p for f in flits for n in range(1, args.curve_to + 1)
             if (p := scaling_point(net, args.precision, n, args.batch, f, pipes)) is not None]
    most = max(c["nodes"] for c in curve)
    too_many = [n for n in nodes if n > most]
    if too_many:
        raise UserError(f"--nodes {too_many[0]}: {net.name} can be cut into at most {most} nodes")
    level = recorded[0].get("level", args.level) if recorded else args.level
    print(f"bench scaling: {net.name}, batch {args.batch}, 1F1B, the layer pipeline on 1..{most} nodes "
          f"(model) and {','.join(map(str, nodes))} ({level}, "
          + (f"recorded in {args.simulated}" if recorded else f"{args.steps} steps, the last measured")
          + f"); engine pipelines {pipelines_named(pipes)}; "
          f"images/s at {curve[0]['clock']}")
    if recorded:
        sims = [dict(p, images_s=args.batch * curve[0]["clock_mhz"] * 1e6 / p["cycles_per_step"]) for p in recorded]
    else:
        jobs = [(net.name, args.precision, n, args.batch, f, args.level, args.steps,
                 _fitted(net, args.precision, n, args.batch, f, args.steps, pipes)) for f in flits for n in nodes]
        sims = run_jobs(_simulate, jobs, args.workers)
    model = {(c["nodes"], c["flits"]): c for c in curve}
    lines = ["| nodes | link cycles/message | cycles per step: simulated / model (error) | images/s simulated "
             "| images/s model | pipeline-full bound | bound by |", "|---|---|---|---|---|---|---|"]
    for s in sims:
        m = model[s["nodes"], s["flits"]]
        err = m["cycles_per_step"] / s["cycles_per_step"] - 1
        s["model_cycles_per_step"], s["error"] = m["cycles_per_step"], err
        lines.append(f"| {s['nodes']} | {s['flits']} | {s['cycles_per_step']:,} / {m['cycles_per_step']:,.0f} "
                     f"({100 * err:+.1f}%) | {s['images_s']:,.0f} | {m['images_s']:,.0f} | {m['bound_images_s']:,.0f} "
                     f"| {m['bound']} |")
    for f in flits:
        knee = next((c["nodes"] for c in curve if c["flits"] == f and c["bound"] == "link"), None)
        lines.append("")
        lines.append(f"* links of {f} cycle(s) a message: " + (f"link-bound from {knee} nodes" if knee
                                                               else f"compute-bound up to {most} nodes"))
    errs = [abs(s["error"]) for s in sims]
    lines.append(f"* the step model's largest error in cycles per step: {100 * max(errs):.1f}% over {len(sims)} "
                 f"simulated points")
    print("\n".join(lines))
    for s in sims if not recorded else ():
        print(f"  {s['nodes']} nodes, {s['flits']} cycle(s)/message: build {s['build_s']:.1f} s, "
              f"simulation {s['simulate_s']:.1f} s ({s['node_cycles_per_s']:,.0f} node-cycles/s)")
    if plot_path:
        print(f"  wrote {_plot(plot_path, curve, sims, net.name, args.batch, level)}")
    if md_path:
        md_path.write_text("\n".join(lines) + "\n")
        print(f"  wrote {md_path}")
    if json_path:
        json_path.write_text(json.dumps({"curve": curve, "simulated": sims}, indent=1))
        print(f"  wrote {json_path}")
    return 0
