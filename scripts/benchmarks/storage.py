"""``pymtl-fp bench storage``: what a node keeps on chip while the cluster trains, and what it costs
in time, for the weight gradients over the batch (``--wgrad batch``: every image's layer inputs and
output gradients kept until one ``bwd_weight`` at the step's end) against per image (``--wgrad
image``: each image's sums added in B after its backward pass, rounded once at the step's end; a
node keeps only the images in flight) and ``--wgrad auto`` (per image where it costs the engine at
most 5 % more: the conv layers; the fc layers over the batch), side by side on the CL cluster
(1F1B), every run checked bit for bit against the golden mini-batch step (a difference fails the
run).  ``--bands 0,1,2`` adds FPDeep's fine-grained pipeline (``train --bands``: forward passes in
row bands of that many rows, each sent on at once) beside whole layers (0), on the same cuts (the
default partition, split layers included; ``--no-split`` cuts at layer boundaries, as
``--bands-backward`` needs).
``--band-passes fill,all`` runs the bands in the pipeline's fill only (``train --bands``' default:
label ``R``) and in every forward pass (``train --bands-all``: label ``Rall``).

Printed per net, node count, batch and mode: the largest node's activation words (X + D, the
words the batch multiplies), its B words (the un-rounded sums), its buffers' bits (all six, each
word at its width), the router's scratch FIFO peak (the rounding's stream), the cycles to the first
logits (fill: the run's, from node 0's start, and, ``fill2``, the last step's, from node 0's start of
it: no initial weight loads), the last step's cycles and the steady state against its bound (cycles per image
with the pipeline full; per-image weight gradients count in the bound, the batch's weight phase
does not).  Figures only: nothing passes or fails on time.
"""

from __future__ import annotations

import json

from pymtl_fp.cli import validate
from pymtl_fp.cli.benchmarks.digits import int_list, run_inputs, run_jobs, zoo_net
from pymtl_fp.cli.errors import UserError
from pymtl_fp.cluster.compiler.mapping import Mapping

HELP = ("weight gradients over the batch vs per image vs auto, row bands vs whole layers: buffer words per node, "
        "fill, steady state (CL cluster)")
WGRADS = ("batch", "image", "auto")


def add_arguments(parser):
    parser.add_argument("--nets", default="lenet-digits,vgg-digits", metavar="N1,N2",
                        help="zoo nets (default lenet-digits,vgg-digits)")
    parser.add_argument("--precision", default="8", metavar="P", help="fixed-point precision (default 8)")
    parser.add_argument("--nodes", default="2,3,4", metavar="N0,N1,...", help="node counts (default 2,3,4)")
    parser.add_argument("--batches", default="8,32", metavar="B0,B1,...", help="mini-batch sizes (default 8,32)")
    parser.add_argument("--steps", type=int, default=2, metavar="S", help="steps per run, the last measured (default 2)")
    parser.add_argument("--act-depth", type=int, default=65536, metavar="WORDS",
                        help="activation buffer depth the runs compile against (default 65536: every plan fits; "
                             "the figures are the words a plan uses)")
    parser.add_argument("--stream-lanes", type=int, default=1, metavar="E",
                        help="elements per beat on every stream (as train --stream-lanes; default 1)")
    parser.add_argument("--wgrads", default="batch,image,auto", metavar="M0,M1,...",
                        help="--wgrad modes (default batch,image,auto)")
    parser.add_argument("--bands", default="0", metavar="R0,R1,...",
                        help="rows per band of the forward passes, 0: whole layers (default 0; e.g. 0,1,2: the "
                             "fine-grained pipeline beside the layer pipeline, on the same cuts)")
    parser.add_argument("--no-split", action="store_true",
                        help="cut every net at layer boundaries (as train --no-split; --bands-backward needs it)")
    parser.add_argument("--band-passes", default="fill", metavar="fill,all",
                        help="with --bands: which forward passes run in bands: fill (the pipeline's fill, as train "
                             "--bands), all (every one, as train --bands-all) or both, side by side (default fill)")
    parser.add_argument("--bands-backward", action="store_true",
                        help="with --bands: the backward passes in row bands too (as train --bands-backward)")
    parser.add_argument("--workers", type=int, default=2, metavar="W", help="processes (default 2)")
    parser.add_argument("--json", metavar="FILE.json", help="write the figures as JSON")


def buffer_bits(usage: dict, ecfg) -> int:
    """Bits of the words a node's plan uses in its six buffers (X, D, O: ``P`` data elements a word;
    W, G: ``P x P``; B: ``P`` accumulators)."""
    P, db, acc = ecfg.P, ecfg.data_bits, ecfg.acc_bits
    width = {"X": P * db, "D": P * db, "O": P * db, "W": P * P * db, "G": P * P * db, "B": P * acc}
    return sum(usage[b]["used"] * width[b] for b in width)


def _run(job) -> dict:
    from pymtl_fp.cluster.config import ClusterConfig, engine_for_net
    from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
    from pymtl_fp.net import load_net

    net_name, prec, n, batch, wgrad, (bands, passes), backward, split, steps, act_depth, lanes = job
    net = load_net(net_name)
    images, labels, params, tcfg = run_inputs(net, prec, steps, batch)
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(net, prec, act_depth=act_depth).replace(stream_lanes=lanes))
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg,
                           Mapping(overlap=True, wgrad=wgrad, bands=bands, bands_backward=backward and bands > 0,
                                   split=split, bands_all=passes == "all"),
                           steps=steps, batch=batch, levels=["cl"] * n)
    want, _ = golden_steps(net, params, images, labels, tcfg, steps, batch)
    if not params_equal(run.params, want):
        raise UserError(f"bench storage: {net_name} on {n} nodes, batch {batch}, --wgrad {wgrad} --bands {bands} "
                        f"({passes} passes) differs from the golden model")
    rep = run.report
    nodes = rep["node"]
    ss = rep["steady_state"]
    return {"net": net_name, "nodes": n, "batch": batch, "wgrad": wgrad, "bands": bands,
            "band_passes": passes if bands else None,
            "act_words": [nd["buffers"]["X"]["used"] + nd["buffers"]["D"]["used"] for nd in nodes],
            "b_words": [nd["buffers"]["B"]["used"] for nd in nodes],
            "buffer_bits": [buffer_bits(nd["buffers"], e) for nd, e in zip(nodes, ccfg.engines)],
            "scratch_peak": [nd["router_scratch_max"] for nd in nodes],
            "fill_cycles": rep["pipeline"]["fill_cycles_first_logits"],
            "fill_cycles_last_step": rep["pipeline"]["fill_cycles_last_step"],
            "step_cycles": rep["cycles_per_step"][-1],
            "steady_cycles_per_image": ss["cycles_per_image"], "bound_cycles_per_image": ss["bound_cycles_per_image"],
            "steady_efficiency": ss["efficiency"]}


def main(args) -> int:
    json_path = validate.output_file(args.json, "--json", ".json")
    nets = [zoo_net(name.strip(), args.precision) for name in args.nets.split(",")]
    nodes = int_list(args.nodes, "--nodes", 1, 64)
    batches = int_list(args.batches, "--batches", 1, 1024)
    validate.integer(args.steps, "--steps", 1, 100)
    validate.integer(args.act_depth, "--act-depth", 1, 1 << 20)
    validate.integer(args.workers, "--workers", 1, 64)
    validate.integer(args.stream_lanes, "--stream-lanes", 1, 16)
    wgrads = [w.strip() for w in args.wgrads.split(",")]
    bad = [w for w in wgrads if w not in WGRADS]
    if bad or not wgrads:
        raise UserError(f"--wgrads: unknown mode {bad[0] if bad else '(none)'!r}; choose from {', '.join(WGRADS)}")
    bands = int_list(args.bands, "--bands", 0, 64)
    passes = [p.strip() for p in args.band_passes.split(",")]
    if not passes or any(p not in ("fill", "all") for p in passes) or len(set(passes)) < len(passes):
        raise UserError(f"--band-passes {args.band_passes!r}: fill, all or fill,all")
    split = not (args.no_split or args.bands_backward)  # (backward bands run whole layers)
    variants = [(r, p) for r in bands for p in (passes if r else ["fill"])]
    jobs = [(net.name, args.precision, n, b, w, v, args.bands_backward, split, args.steps, args.act_depth,
             args.stream_lanes)
            for net in nets for n in nodes for b in batches for w in wgrads for v in variants]
    from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net

    try:
        for net in nets:  # (a bad --stream-lanes is refused before any run)
            ClusterConfig.homogeneous(1, engine_for_net(net, args.precision).replace(stream_lanes=args.stream_lanes))
    except (ClusterError, ValueError) as exc:
        raise UserError(f"bench storage: {exc}") from None
    print(f"--wgrad {'/'.join(wgrads)}"
          + (f", --bands {'/'.join(map(str, bands))}" + (", backward passes in bands too" if args.bands_backward else "")
             if bands != [0] else "")
          + (" (no split layers)" if not split else " (split layers allowed)")
          + f", CL cluster (1F1B, {args.stream_lanes}-element beats, {args.steps} steps, the last measured; every run "
          f"bit-exact with the golden model)", flush=True)
    try:
        rows = run_jobs(_run, jobs, args.workers)
    except (ClusterError, ValueError) as exc:
        raise UserError(f"bench storage: {exc}") from None
    print(f"{'net':<13} {'N':>2} {'B':>3} {'wgrad':<5} {'bands':>5} {'X+D words (per node)':<30} {'B words':>7} "
          f"{'kbit':>6} {'scratch':>7} {'fill':>6} {'fill2':>6} {'cycles/step':>11} {'steady/img':>10} {'bound':>6} "
          f"{'eff':>6}")
    for r in rows:
        print(f"{r['net']:<13} {r['nodes']:>2} {r['batch']:>3} {r['wgrad']:<5} {_label(r):>5} "
              f"{'/'.join(str(v) for v in r['act_words']):<30} {max(r['b_words']):>7} "
              f"{max(r['buffer_bits']) / 1024:>6.1f} {max(r['scratch_peak']):>7} {r['fill_cycles']:>6} "
              f"{r['fill_cycles_last_step'] or '-':>6} "
              f"{r['step_cycles']:>11,} {r['steady_cycles_per_image']:>10.0f} {r['bound_cycles_per_image']:>6.0f} "
              f"{100 * r['steady_efficiency']:>5.1f}%")
    by = {(r["net"], r["nodes"], r["batch"], r["wgrad"], _label(r)): r for r in rows}
    if "batch" in wgrads and len(wgrads) > 1:
        _against_batch(by, nets, nodes, batches, [w for w in wgrads if w != "batch"], _label(rows[0]))
    if 0 in bands and len(bands) > 1:
        _against_layers(by)
    if json_path:
        json_path.write_text(json.dumps(rows, indent=2))
        print(f"wrote {json_path}")
    return 0


def _label(r) -> str:
    """A run's bands column: ``layer`` (whole layers), ``R`` (bands in the fill) or ``Rall``."""
    if not r["bands"]:
        return "layer"
    return f"{r['bands']}" + ("all" if r["band_passes"] == "all" else "")


def _against_layers(by):
    """Each banded run against the same run with whole layers (``by``: the rows by their keys)."""
    print("row bands against whole layers (same --wgrad): cycles to the first logits (the run's; the last "
          "step's from node 0's start of it), cycles per step, steady state")
    for key, r in by.items():
        if key[-1] == "layer":
            continue
        a = by[key[:-1] + ("layer",)]
        r_bands = f"{r['bands']} rows" + (", every forward pass" if r["band_passes"] == "all" else ", the fill's passes")
        last = (f", last step {r['fill_cycles_last_step']} vs {a['fill_cycles_last_step']} "
                f"({a['fill_cycles_last_step'] / r['fill_cycles_last_step']:.2f}x)" if r["fill_cycles_last_step"] else "")
        print(f"  {key[0]} on {key[1]} nodes, batch {key[2]}, --wgrad {key[3]}, bands of {r_bands}: fill "
              f"{r['fill_cycles']} vs {a['fill_cycles']} ({a['fill_cycles'] / r['fill_cycles']:.2f}x shorter){last}, "
              f"{r['step_cycles'] / a['step_cycles']:.3f}x the cycles per step, steady state "
              f"{100 * r['steady_efficiency']:.1f}% of its bound (whole layers {100 * a['steady_efficiency']:.1f}%)")


def _against_batch(by, nets, nodes, batches, modes, bands):
    print("image and auto against batch (largest node): activation words, all buffer bits, cycles per step")
    for net in nets:
        for n in nodes:
            for b in batches:
                a = by[net.name, n, b, "batch", bands]
                line = []
                for mode in modes:
                    i = by[net.name, n, b, mode, bands]
                    line.append(f"{mode} {max(a['act_words']) / max(i['act_words']):.1f}x fewer words, "
                                f"{max(a['buffer_bits']) / max(i['buffer_bits']):.1f}x fewer bits, "
                                f"{i['step_cycles'] / a['step_cycles']:.3f}x the cycles")
                print(f"  {net.name} on {n} nodes, batch {b}: " + "; ".join(line))
