"""``pymtl-fp bench model``: the analytical models against the simulated cluster, figure by figure.

For every net, node count and batch, the CL cluster (direct scheduler, 1F1B, serial engines,
whole layers, weight gradients over the batch: ``Mapping()``, what the step model covers) trains
``--steps`` steps, checked bit for bit
against the golden model, and the models of :mod:`pymtl_fp.explore.against_cluster` predict the
same configuration from the layer shapes, the partition, the engines, the links and the batch
(not from the compiled programs).  Printed per configuration, simulated / predicted / error:
cycles per step, the steady-state interval, the pipeline fill and the longest weight phase (the
last step: no initial weight loads), the worst node's busy cycles, and how many nodes' buffer
words and links' elements per step the models give exactly.  ``--markdown`` writes the table;
``--json`` every figure.  Figures only: nothing passes or fails on the errors (the tests bound
them on small configurations: ``tests/test_step_model.py``).
"""

from __future__ import annotations

import json

from pymtl_fp.cli import validate
from pymtl_fp.cli.benchmarks.digits import fitted_cluster, int_list, pipelines_named, run_inputs, run_jobs, zoo_net
from pymtl_fp.cli.errors import UserError

HELP = "the analytical step, storage and link models against the CL cluster: cycles per step, interval, fill, weight phase"


def add_arguments(parser):
    parser.add_argument("--nets", default="lenet-digits,vgg-digits,lenet5-mnist", metavar="N1,N2",
                        help="zoo nets (default lenet-digits,vgg-digits,lenet5-mnist)")
    parser.add_argument("--precision", default="8", metavar="P", help="fixed-point precision (default 8)")
    parser.add_argument("--nodes", default="1,2,4,8", metavar="N0,N1,...",
                        help="node counts (default 1,2,4,8; counts a net cannot be cut into are listed, not run)")
    parser.add_argument("--batches", default="4,8", metavar="B0,B1,...", help="mini-batch sizes (default 4,8)")
    parser.add_argument("--schedule", default="1f1b", choices=("1f1b", "gpipe"), help="pipeline schedule (default 1f1b)")
    parser.add_argument("--link-flits", type=int, default=1, metavar="F",
                        help="cycles each link takes per message (its phit a 1/F of a message; default 1: a message "
                             "a cycle, as fast as a STORE; more makes the links the bottleneck)")
    parser.add_argument("--pipeline", metavar="PARTS",
                        help="the nodes' engine pipelines, as train --pipeline (default all, the presets')")
    parser.add_argument("--steps", type=int, default=2, metavar="S", help="steps per run, the last compared (default 2)")
    parser.add_argument("--workers", type=int, default=2, metavar="W", help="processes (default 2)")
    parser.add_argument("--markdown", metavar="FILE.md", help="write the table as Markdown")
    parser.add_argument("--json", metavar="FILE.json", help="write the figures as JSON")


def _run(job) -> dict:
    from pymtl_fp.cluster.compiler.compile import choose_partition
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.config import ClusterError
    from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
    from pymtl_fp.explore.against_cluster import compare, measured, predict_run
    from pymtl_fp.net import load_net

    net_name, prec, n, batch, schedule, steps, flits, pipes = job
    net = load_net(net_name)
    row = {"net": net_name, "nodes": n, "batch": batch, "schedule": schedule}
    mapping = Mapping(schedule=schedule)
    images, labels, params, tcfg = run_inputs(net, prec, steps, batch)
    try:
        ccfg = fitted_cluster(net, prec, n, mapping, steps=steps, batch=batch, flits=flits, pipelines=pipes)
        part = choose_partition(net, ccfg, batch, mapping)
    except ClusterError as exc:
        return {**row, "refused": str(exc)}
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg, mapping, steps=steps, batch=batch,
                           levels=["cl"] * n)
    want, _ = golden_steps(net, params, images, labels, tcfg, steps, batch)
    if not params_equal(run.params, want):
        raise UserError(f"bench model: {net_name} on {n} nodes, batch {batch} differs from the golden model")
    model, sim = predict_run(net, part, ccfg, batch, schedule), measured(run.report)
    return {**row, "partition": part.describe(), "model": model, "sim": sim, "compare": compare(model, sim),
            "sim_seconds": run.report["wall_seconds"]["simulate"]}


def _pct(e) -> str:
    return "-" if e is None else f"{100 * e:+.1f}%"


def _cell(t) -> str:
    s, m, e = t
    return "-" if s is None else f"{s:,.0f} / {m:,.0f} ({_pct(e)})"


def table(rows: list) -> list:
    head = ["net", "N", "B", "cycles per step", "interval", "fill", "weight phase", "worst node busy",
            "buffer words exact", "link elements exact"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "refused" in r:
            out.append(f"| {r['net']} | {r['nodes']} | {r['batch']} | not run: {r['refused']} |" + " |" * (len(head) - 4))
            continue
        c = r["compare"]
        we, wn = c["words_exact"]
        le, ln = c["links_exact"]
        out.append(f"| {r['net']} | {r['nodes']} | {r['batch']} | {_cell(c['cycles_per_step'])} | {_cell(c['interval'])} "
                   f"| {_cell(c['fill'])} | {_cell(c['weight_phase'])} | {_pct(c['busy_worst'])} "
                   f"| {we}/{wn} nodes" + ("" if we == wn else f" (off by up to {c['words_max_diff']:,})")
                   + f" | {le}/{ln} links" + ("" if le == ln else f" (off by up to {c['links_max_diff']:,})") + " |")
    return out


def summary(rows: list) -> list:
    ran = [r for r in rows if "refused" not in r]
    if not ran:
        return ["no configuration ran"]
    from pymtl_fp.explore.against_cluster import TIMES

    out = []
    for key, what in TIMES:
        errs = [r["compare"][key][2] for r in ran if r["compare"][key][2] is not None]
        if errs:
            worst = max(errs, key=abs)
            out.append(f"{what}: largest error {_pct(worst)}, mean |error| {100 * sum(map(abs, errs)) / len(errs):.1f}% "
                       f"over {len(errs)} configurations")
    words = [sum(r["compare"]["words_exact"][i] for r in ran) for i in (0, 1)]
    links = [sum(r["compare"]["links_exact"][i] for r in ran) for i in (0, 1)]
    out.append(f"buffer words exact on {words[0]} of {words[1]} nodes; link elements exact on {links[0]} of "
               f"{links[1]} links")
    return out


def main(args) -> int:
    md_path = validate.output_file(args.markdown, "--markdown", ".md")
    json_path = validate.output_file(args.json, "--json", ".json")
    nets = [zoo_net(name.strip(), args.precision).name for name in args.nets.split(",")]
    nodes = int_list(args.nodes, "--nodes", 1, 64)
    batches = int_list(args.batches, "--batches", 1, 256)
    validate.integer(args.steps, "--steps", 2, 20)
    validate.integer(args.workers, "--workers", 1, 64)
    validate.integer(args.link_flits, "--link-flits", 1, 64)
    pipes = validate.pipelines(args.pipeline)
    jobs = [(net, args.precision, n, b, args.schedule, args.steps, args.link_flits, pipes)
            for net in nets for n in nodes for b in batches]
    engines = f"engine pipelines {pipelines_named(pipes)}"
    print(f"bench model: {len(jobs)} configurations on the CL cluster ({args.schedule}, serial engines, {engines}, "
          f"whole layers, {args.steps} steps; the last compared; links of {args.link_flits} cycle(s) a message), "
          "simulated / predicted (error)")
    rows = run_jobs(_run, jobs, args.workers)
    lines = table(rows)
    print("\n".join(lines))
    print("\n".join(summary(rows)))
    if md_path:
        md_path.write_text("\n".join(lines + [""] + [f"* {s}" for s in summary(rows)] + [f"* {engines}"]) + "\n")
        print(f"  wrote {md_path}")
    if json_path:
        json_path.write_text(json.dumps(rows, indent=1, default=str))
        print(f"  wrote {json_path}")
    return 0
