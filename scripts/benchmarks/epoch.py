"""``pymtl-fp bench epoch``: how long one epoch of a net's training split takes on the Verilated RTL
cluster, extrapolated from a few measured steps, and the simulation's node-cycles per second.

The cluster (``--nodes``, ``--array``, ``--tap-pack``, ``--stream-lanes``, ``--batch``, buffers fitted
to the run) trains ``--steps`` mini-batches at ``--level verilator`` (or ``cl``), checked bit for bit
against the golden model.  Every step after the first runs the same program on other images, so
the epoch's cycles are extrapolated as the measured run's cycles (weights loaded, ``--steps`` steps,
weights read back) plus the last step's cycles for each of the epoch's remaining steps
(``training images // batch`` steps in all); its simulation time is those cycles at the measured
cycles per wall-clock second and per CPU second of the simulation (the build, the compile and the
golden model apart).  Node-cycles per second: cycles per second times the nodes.  Two threads:
``PYMTL_FP_SIM_THREADS=2`` (the joined top's second thread).  Figures only: nothing passes or fails
on time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError

HELP = "one epoch on the Verilated cluster: seconds extrapolated from measured steps, node-cycles/s"
LEVELS = ("verilator", "cl")


def add_arguments(parser):
    parser.add_argument("--net", default="lenet5-mnist", help="zoo net (default lenet5-mnist)")
    parser.add_argument("--precision", default="8", metavar="P", help="fixed-point precision (default 8)")
    parser.add_argument("--nodes", type=int, default=4, metavar="N", help="nodes (default 4)")
    parser.add_argument("--array", type=int, default=8, metavar="P", help="MAC array side of every node (default 8)")
    parser.add_argument("--tap-pack", choices=("auto", "on", "off"), default="on",
                        help="the first conv layer tap-packed (as train --tap-pack; default on)")
    parser.add_argument("--stream-lanes", type=int, default=8, metavar="E",
                        help="elements per stream beat (as train --stream-lanes; default 8)")
    parser.add_argument("--pipeline", metavar="PARTS",
                        help="the nodes' engine pipelines, as train --pipeline (default all, the presets')")
    parser.add_argument("--batch", type=int, default=8, metavar="B", help="mini-batch (default 8)")
    parser.add_argument("--steps", type=int, default=3, metavar="S", help="steps measured (default 3)")
    parser.add_argument("--level", default="verilator", choices=LEVELS, help="simulation level (default verilator)")
    parser.add_argument("--json", metavar="FILE.json", help="write the figures as JSON")


def _cluster(args, net):
    from pymtl_fp.cluster.config import cluster_for_net

    try:
        return cluster_for_net(net, args.precision, [args.array] * args.nodes, stream_lanes=args.stream_lanes,
                               pipelines=validate.pipelines(args.pipeline))
    except (ValueError, TypeError) as exc:
        raise UserError(f"bench epoch: {exc}") from None


def epoch_figures(report: dict, steps: int, epoch_steps: int, nodes: int) -> dict:
    """The epoch extrapolated from a run's ``report`` of ``steps`` steps (module docstring)."""
    total, last = report["cycles_total"], report["cycles_per_step"][-1]
    cycles = total + (epoch_steps - steps) * last
    wall = report["wall_seconds"]["simulate"]
    cpu = report.get("cpu_seconds", {}).get("simulate")
    rate = total / wall
    out = {"cycles_measured": total, "cycles_per_step": list(report["cycles_per_step"]), "epoch_steps": epoch_steps,
           "epoch_cycles": cycles, "seconds": wall, "cycles_per_s": rate, "node_cycles_per_s": rate * nodes,
           "epoch_seconds": cycles / rate, "build_seconds": report["wall_seconds"]["build"],
           "quiet_share": report.get("quiet_share", 0.0),
           "evaluated": {name: 1.0 - share for name, share in report.get("quiet_each", {}).items()}}
    if cpu:
        out.update(cpu_seconds=cpu, cycles_per_cpu_s=total / cpu, epoch_cpu_seconds=cycles * cpu / total)
    return out


def main(args) -> int:
    from pymtl_fp.cli.benchmarks.digits import zoo_net
    from pymtl_fp.clock import pipelines_key
    from pymtl_fp.cluster.compiler.mapping import TRAIN_DEFAULT
    from pymtl_fp.cluster.config import MAX_NODES
    from pymtl_fp.cluster.run.session import run_training
    from pymtl_fp.data import dataset_for
    from pymtl_fp.engine.config import MAX_ARRAY_SIDE
    from pymtl_fp.joined_quiet import ENV as QUIET_ENV
    from pymtl_fp.joined_top import THREADS_ENV
    from pymtl_fp.sim import SimulationHang

    net = zoo_net(args.net, args.precision)
    validate.integer(args.nodes, "--nodes", 1, MAX_NODES)
    validate.integer(args.array, "--array", 1, MAX_ARRAY_SIDE)
    validate.integer(args.stream_lanes, "--stream-lanes", 1, 16)
    train_images = len(dataset_for(net).y_train)
    validate.integer(args.batch, "--batch", 1, train_images)
    epoch_steps = train_images // args.batch
    validate.integer(args.steps, "--steps", 1, epoch_steps)
    validate.output_file(args.json, "--json", ".json")
    threads = int(os.environ.get(THREADS_ENV) or 1)  # (checked by the command line: validate.environment)
    ccfg = _cluster(args, net)
    mapping = TRAIN_DEFAULT.replace(pack=args.tap_pack)
    print(f"epoch: {net.name} ({args.precision}-bit), {args.nodes} nodes of {args.array}x{args.array} at "
          f"{args.level}, engine pipelines {pipelines_key(ccfg.engines[0])}, tap-pack {args.tap_pack}, "
          f"{args.stream_lanes} stream lanes, batch {args.batch}: "
          f"{args.steps} of the epoch's {epoch_steps} steps measured"
          + (f", {threads} simulation thread(s) (${THREADS_ENV})" if args.level == "verilator" else ""),
          flush=True)
    try:
        result = run_training(net, ccfg, mapping, steps=args.steps, batch=args.batch, levels=[args.level] * args.nodes,
                              precision=args.precision, fitted=True)
    except SimulationHang as exc:
        raise UserError(f"bench epoch: {str(exc).splitlines()[0]}") from None
    if not result.weights_equal:
        raise UserError("bench epoch: the cluster's weights differ from the golden model's")
    fig = epoch_figures(result.report, args.steps, epoch_steps, args.nodes)
    cps = ", ".join(f"{c:,}" for c in fig["cycles_per_step"])
    print(f"  measured: {fig['cycles_measured']:,} cycles (steps {cps}; weights loaded and read back) in "
          f"{fig['seconds']:.2f} s: {fig['cycles_per_s']:,.0f} cycles/s, {fig['node_cycles_per_s']:,.0f} "
          f"node-cycles/s" + (f"; {fig['cycles_per_cpu_s']:,.0f} cycles per CPU second" if "cpu_seconds" in fig
                              else "") + f"; build {fig['build_seconds']:.1f} s; weights equal the golden model's"
          + (f"; quiet nodes and links skipped in {fig['quiet_share']:.0%} of their cycles (${QUIET_ENV})"
             if args.level == "verilator" else ""))
    if fig["evaluated"]:  # what each instance cost: the share of the cycles it was evaluated in
        ev = fig["evaluated"]
        links = [v for name, v in ev.items() if name.startswith("link")]
        print("  evaluated in: " + ", ".join(f"{name} {v:.0%}" for name, v in ev.items() if name.startswith("node"))
              + (f"; links {min(links):.0%}-{max(links):.0%}" if links else "") + " of the cycles")
    print(f"  epoch ({epoch_steps} steps): {fig['epoch_cycles']:,} cycles -> {fig['epoch_seconds']:.0f} s of "
          f"simulation ({fig['epoch_seconds'] / 60:.1f} min)"
          + (f", {fig['epoch_cpu_seconds']:.0f} s of CPU" if "epoch_cpu_seconds" in fig else ""))
    if args.json:
        config = {k: v for k, v in vars(args).items() if not k.startswith("_") and isinstance(v, (int, str))}
        doc = dict(config=dict(config, threads=threads), figures=fig)
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
        print(f"  wrote {args.json}")
    return 0
