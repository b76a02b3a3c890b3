"""``pymtl-fp explore``: design-space and scaling studies (analytic models, no simulation).

Sub-commands (each runs with no options, on built-in defaults):

* ``scaling``   -- FPDeep-style balanced partition of a network on 1..N identical FPGAs in a
  chain, under several link bandwidths: throughput, utilization, busiest link, knee, storage;
* ``partition`` -- the optimal contiguous partition (dynamic programming) of a network over a
  chain of FPGAs of different sizes, against an even split and FPDeep balancing;
* ``design``    -- DarkFPGA-style search over engines (P, E), tiling and batch tile on one FPGA:
  the best points and the Pareto front;
* ``parallelism`` -- FPDeep's pipeline vs data-parallel (ring all-reduce) vs hybrid training for
  every cluster size and mini-batch: which wins where;
* ``modes``     -- per MAC layer, the engine's dataflows (channel-parallel, tap-packed,
  batch-parallel): utilization of each pass under each, the fastest, the whole network's figure;
* ``zoo``       -- the networks' FP/BP/WG operation counts against their published totals.

Outputs go to ``--out DIR`` (default ``reports/`` in the current directory): CSV, Markdown and
PNG files named after the study.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError

HELP = "design-space and scaling studies: scaling, partition, design, parallelism, modes, zoo"

DEFAULT_LINKS = "6x10G,6x13.1G,250G,500G,inf"


# -- argument helpers -----------------------------------------------------------------------------
def parse_sizes(text: str, option: str, hi: int, what: str) -> list:
    """``"1..128"``, ``"1..128:4"``, ``"1,2,4,8"`` or a mix (``"1..8,16,32"``) -> sorted values in
    ``1..hi``; a bad one is a one-line error naming ``option``."""
    out = set()
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:\.\.|-)(\d+)(?::(\d+))?", part)
        try:
            if m:
                lo, top = int(m.group(1)), int(m.group(2))
                step = int(m.group(3) or 1)
                if lo < 1 or top < lo or step < 1:
                    raise UserError(f"{option}: bad range {part!r} (need 1 <= low <= high, "
                                    "step >= 1)")
                vals = list(range(lo, top + 1, step))
                if vals[-1] != top:
                    vals.append(top)
            else:
                vals = [int(part)]
        except ValueError:
            raise UserError(f"{option}: cannot read {part!r}; use e.g. 1..128, 1..128:4 or "
                            "1,2,4,8") from None
        for v in vals:
            if not 1 <= v <= hi:
                raise UserError(f"{option}: {v} is outside 1..{hi}")
        out.update(vals)
    if not out:
        raise UserError(f"{option}: no {what} given")
    return sorted(out)


def parse_fpgas(text: str) -> list:
    """Cluster sizes (:func:`parse_sizes` of ``--fpgas``)."""
    from pymtl_fp.explore.clusterfile import MAX_FPGAS

    return parse_sizes(text, "--fpgas", MAX_FPGAS, "cluster size")


def _network(name):
    from pymtl_fp.explore.zoo import NETWORKS, get_network
    from pymtl_fp.net import NetError
    try:
        return get_network(name)
    except NetError as exc:  # a net file that does not load: its own message
        raise UserError(f"--net {name}: {exc}") from None
    except KeyError:
        raise UserError(f"unknown network {name!r}; known: {', '.join(NETWORKS)}, or a "
                        "pymtl_fp.net preset or net file (.toml/.json)") from None


def _stem(*parts) -> str:
    """An output file stem from names (zoo or net-file names may hold spaces or brackets): only
    letters, digits, '.', '_' and '-' survive, so a name never reaches outside the folder."""
    return "_".join(re.sub(r"[^A-Za-z0-9._-]+", "-", str(p)).strip("-.") or "x" for p in parts)


def _device(name, array=None):
    from pymtl_fp.explore.devices import DeviceError, get_device
    from pymtl_fp.explore.fpga_model import EngineArray
    try:
        dev = get_device(name)
        if array:
            dev = dev.with_array(EngineArray.parse(array))
        return dev
    except (DeviceError, ValueError) as exc:
        raise UserError(str(exc)) from None


def _precision(bits):
    from pymtl_fp.explore.devices import DeviceError, Precision
    try:
        return Precision.bits(int(bits))
    except (DeviceError, ValueError) as exc:
        raise UserError(f"--bits: {exc}") from None


def _links(text):
    from pymtl_fp.explore.links import LinkError, parse_link
    specs = [s for chunk in text for s in str(chunk).split(",") if s.strip()]
    if not specs:
        raise UserError("--link: no link given")
    try:
        links = [parse_link(s) for s in specs]
    except LinkError as exc:
        raise UserError(str(exc)) from None
    names = [lk.name for lk in links]
    if len(set(names)) != len(names):
        raise UserError(f"--link: duplicate link models in {', '.join(names)}")
    return links


#: most pieces a layer may be split into (the cut positions, and the DP's work, grow with it)
MAX_PIECES = 1024
#: largest mini-batch of the analytic studies
MAX_BATCH = 1 << 20


def _out_dir(args) -> Path:
    """The output folder, probed first and created when the study is about to write."""
    out = validate.output_dir(args.out, "--out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out: cannot create {out}: {exc.strerror or exc}") from None
    return out


def _common(p, net, bits, batch=None):
    """--net, --bits, --batch (unless ``batch`` is None: a study over several), --out, --no-plot."""
    p.add_argument("--net", default=net, help=f"network from the zoo (default {net})")
    p.add_argument("--bits", type=int, default=bits,
                   help=f"word width of activations/weights/gradients (default {bits}; "
                   "<= 8 packs 2 MACs per DSP)")
    if batch is not None:
        p.add_argument("--batch", type=int, default=batch, help=f"mini-batch (default {batch})")
    p.add_argument("--out", default="reports", help="output folder (default ./reports)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="study", metavar="STUDY", required=True)

    p = sub.add_parser("scaling", help="FPDeep-style scaling over 1..N identical FPGAs",
                       description="FPDeep-style balanced partition for every cluster size; "
                       "throughput, utilization, busiest link, knee, storage.")
    _common(p, "vgg16", 16, 32)
    p.add_argument("--device", default="xc7vx690t", help="FPGA part (default xc7vx690t)")
    p.add_argument("--array", default=None, help="the FPGA's engines ENGINESxP: ENGINES engines of PxP, P <= 32 "
                   "(default: from the part's DSP budget)")
    p.add_argument("--fpgas", default="1..128",
                   help="cluster sizes: 1..128, 1..128:4, 1,2,4,8 or a mix (default 1..128)")
    p.add_argument("--link", action="append", default=None,
                   help=f"link model(s), repeatable or comma-separated: NxRG (transceivers "
                   f"per FPGA x line rate), AG (Gb/s per FPGA), linkAG (per link), inf "
                   f"(default {DEFAULT_LINKS})")
    p.add_argument("--pieces", type=int, default=64,
                   help="most pieces a layer may be split into (default 64)")
    p.add_argument("--split", choices=("auto", "rows", "channels"), default="auto",
                   help="how a layer is shared by neighbours (default auto)")
    p.add_argument("--optimal", action="store_true",
                   help="also find the best possible partition for every size and link "
                   "(exact, slower: seconds instead of a fraction of one)")

    p = sub.add_parser("partition", help="optimal (DP) partition over asymmetric FPGAs",
                       description="Optimal contiguous partition of a network over a chain of "
                       "FPGAs of different sizes by dynamic programming, against an even "
                       "split and FPDeep balancing.")
    _common(p, "resnet152", 16, 32)
    p.add_argument("--devices", default=None,
                   help="cluster file, TOML or JSON (default: the bundled asymmetric16.toml)")
    p.add_argument("--pieces", type=int, default=8,
                   help="most pieces a layer may be split into (default 8)")
    p.add_argument("--split", choices=("auto", "rows", "channels"), default="auto")
    p.add_argument("--memory-limit", action="store_true",
                   help="forbid stages whose fine-grained storage exceeds on-chip RAM")

    p = sub.add_parser("design", help="DarkFPGA-style single-FPGA parameter search",
                       description="Search engines (P, E), tiling and batch tile under the "
                       "device's DSP / RAM / DRAM-bandwidth budget; best points and Pareto "
                       "front.")
    _common(p, "vgg-cifar", 8, 128)
    p.add_argument("--device", default="xcvu9p", help="FPGA part (default xcvu9p)")
    p.add_argument("--dram-gbs", type=float, default=None,
                   help="DRAM bandwidth in GB/s (default: the part's typical board)")
    p.add_argument("--top", type=int, default=10, help="best points to list (default 10)")
    p.add_argument("--scheduler", metavar="local|ADDRESS",
                   help="fan the search out over Dask, one task per engine array: local (a local cluster of "
                        "--workers processes) or a running scheduler's address (tcp://host:8786); default: in "
                        "this process")
    p.add_argument("--workers", type=int, default=2, metavar="N",
                   help="worker processes of --scheduler local (default 2)")
    p.add_argument("--modes", default="channel,packed,batch",
                   help="dataflows a layer's passes may take, the fastest per layer: channel (always), packed "
                   "(a first layer tap-packed), batch (a forward pass batch-parallel); default all three")

    p = sub.add_parser("modes", help="per layer: channel-parallel, tap-packed or batch-parallel",
                       description="Per MAC layer and pass, the MAC utilization of each of the engine's "
                       "dataflows (timing model) and the fastest; the whole network's FP + BP + WG "
                       "utilization channel-only, with tap packing and with every mode.")
    p.add_argument("--net", default="vgg-cifar", help="network (default vgg-cifar)")
    p.add_argument("--arrays", default="16,32", help="array sides P, as --fpgas (default 16,32; at most 32)")
    p.add_argument("--batches", default="4,32", help="images per command, as --fpgas (default 4,32)")
    p.add_argument("--layers", default=None, help="only these MAC layers, comma-separated (default: all)")
    p.add_argument("--out", default="reports", help="output folder (default ./reports)")

    p = sub.add_parser("parallelism", help="pipeline vs data-parallel vs hybrid per mini-batch",
                       description="FPDeep's pipeline, data-parallel training with a ring all-reduce "
                       "(CATERPILLAR's collectives) and hybrids of both, for every cluster size and "
                       "mini-batch: the fastest, and the batch at which each wins.")
    _common(p, "vgg16", 16)
    p.add_argument("--device", default="xc7vx690t", help="FPGA part (default xc7vx690t)")
    p.add_argument("--link", default="6x10G", help="link model (default 6x10G; see explore scaling)")
    p.add_argument("--fpgas", default="1,2,4,8,16,32,64,128", help="cluster sizes (default 1,2,4,...,128)")
    p.add_argument("--batches", default="1,2,4,8,16,32,64,128,256",
                   help="mini-batches, as --fpgas (default 1,2,4,...,256)")
    p.add_argument("--grad-bits", type=int, default=None,
                   help="bits per gradient in the all-reduce (default: the accumulator width, as "
                        "bit-exact data-parallel training needs)")
    p.add_argument("--pieces", type=int, default=64, help="most pieces a layer may be split into (default 64)")

    p = sub.add_parser("zoo", help="operation counts of the networks vs published totals")
    p.add_argument("--net", default=None, help="one network (default: all)")
    p.add_argument("--layers", action="store_true", help="per-layer table")
    p.add_argument("--out", default="reports", help="output folder (default ./reports)")


def main(args) -> int:
    return {"scaling": _scaling, "partition": _partition, "design": _design,
            "parallelism": _parallelism, "modes": _modes, "zoo": _zoo}[args.study](args)


# -- studies --------------------------------------------------------------------------------------
def _scaling(args) -> int:
    from pymtl_fp.explore import report
    from pymtl_fp.explore.scaling import sweep

    net = _network(args.net)
    dev = _device(args.device, args.array)
    prec = _precision(args.bits)
    sizes = parse_fpgas(args.fpgas)
    links = _links(args.link or [DEFAULT_LINKS])
    validate.integer(args.batch, "--batch", 1, MAX_BATCH)
    validate.integer(args.pieces, "--pieces", 1, MAX_PIECES)
    out = _out_dir(args)
    res = sweep(net, dev, sizes, links, prec, args.batch, args.pieces, args.split,
                optimal=args.optimal)
    stem = _stem("scaling", net.name, dev.name)
    files = [report.write_csv(out / f"{stem}.csv", res.rows)]
    md = report.scaling_markdown(res)
    (out / f"{stem}.md").write_text(md + "\n", encoding="utf-8")
    files.append(out / f"{stem}.md")
    if not args.no_plot:
        files.append(report.scaling_plot(res, out / f"{stem}.png"))
    print(f"{net.name} on 1 x .. {max(sizes)} x {dev.name} (engines {res.array.E} x {res.array.P}x{res.array.P}, "
          f"{dev.clock_mhz:g} MHz, {prec.act_bits}-bit): {len(sizes)} cluster sizes x "
          f"{len(links)} links swept in {res.seconds:.3f} s")
    for lk in links:
        knee = res.knees[lk.name]
        best = max((r for r in res.rows if r["link"] == lk.name), key=lambda r: r["gops"])
        print(f"  {lk.name:>9} ({lk.gbps:6.1f} Gb/s/link): knee at "
              f"{knee if knee else '>' + str(max(sizes))} FPGAs; linear (eff >= 0.8) to "
              f"{res.linear_to[lk.name]}; best {best['gops']:.0f} GOPS "
              f"({best['images_s']:.0f} img/s, {best['gops_per_j']:.1f} GOPs/J) at {best['fpgas']} FPGAs" +
              (f"; optimal partition: {max(r['opt_gops'] for r in res.rows if r['link'] == lk.name):.0f} GOPS"
               if args.optimal else ""))
    for f in files:
        print(f"  wrote {f}")
    return 0


def _parallelism(args) -> int:
    from pymtl_fp.explore import parallelism_report, report
    from pymtl_fp.explore.parallelism import crossover

    net = _network(args.net)
    dev = _device(args.device)
    prec = _precision(args.bits)
    links = _links([args.link])
    if len(links) != 1:
        raise UserError(f"--link {args.link}: give one link model")
    link = links[0]
    sizes = parse_fpgas(args.fpgas)
    batches = parse_sizes(args.batches, "--batches", MAX_BATCH, "mini-batch")
    validate.integer(args.grad_bits, "--grad-bits", 1, 64)
    validate.integer(args.pieces, "--pieces", 1, MAX_PIECES)
    out = _out_dir(args)
    res = crossover(net, dev, sizes, batches, link, prec, args.grad_bits, args.pieces)
    stem = _stem("parallelism", net.name, dev.name, link.name)
    files = [report.write_csv(out / f"{stem}.csv", res.rows, parallelism_report.COLUMNS)]
    (out / f"{stem}.md").write_text(parallelism_report.markdown(res, sizes, batches) + "\n", encoding="utf-8")
    files.append(out / f"{stem}.md")
    if not args.no_plot:
        files.append(parallelism_report.plot(res, sizes, batches, out / f"{stem}.png"))
    print(f"{net.name} on 1 x .. {max(sizes)} x {dev.name}, link {link.name}, {res.grad_bits}-bit gradient "
          f"all-reduce: {len(res.rows)} configurations in {res.seconds:.2f} s")
    for n in sizes:
        cb = res.crossover_batches(n)
        print(f"  {n:>4} FPGAs: " + ", ".join(f"{m} from B={b}" for m, b in cb.items() if b is not None))
    for f in files:
        print(f"  wrote {f}")
    return 0


def _partition(args) -> int:
    import numpy as np

    from pymtl_fp.explore import report
    from pymtl_fp.explore.balanced_partition import compare_balanced
    from pymtl_fp.explore.chain import Chain
    from pymtl_fp.explore.clusterfile import (
        ClusterFileError,
        example_path,
        load_cluster,
    )

    net = _network(args.net)
    prec = _precision(args.bits)
    validate.integer(args.batch, "--batch", 1, MAX_BATCH)
    validate.integer(args.pieces, "--pieces", 1, MAX_PIECES)
    path = Path(args.devices) if args.devices else example_path()
    try:
        cluster, name, desc = load_cluster(path, prec, args.memory_limit)
    except (ClusterFileError, ValueError) as exc:
        raise UserError(str(exc)) from None
    out = _out_dir(args)
    t0 = time.perf_counter()
    chain = Chain(net, prec, args.batch, args.pieces, args.split)
    evals = compare_balanced(chain, cluster)
    seconds = time.perf_counter() - t0
    stem = _stem("partition", net.name, name)
    rows = report.partition_rows(chain, cluster, evals)
    from pymtl_fp.energy.estimate import chain_energy

    summary = report.partition_summary(evals, {m: chain_energy(net, cluster, ev, args.batch) for m, ev in evals.items()})
    files = [report.write_csv(out / f"{stem}.csv", rows)]
    md = [f"### Partition: {net.name} on {name} ({cluster.n} FPGAs)", "",
          desc, "", "Assumptions:", "",
          "* devices (chain order): " + ", ".join(
              f"{d.name} {a} @{d.clock_mhz:g} MHz" for d, a in
              zip(cluster.devices, cluster.arrays)),
          "* links (Gb/s per direction): " + ", ".join(f"{lk.gbps:.1f}" for lk in cluster.links),
          (f"* precision {prec.act_bits}-bit, mini-batch {args.batch}, up to {args.pieces} "
           f"pieces per layer, split={args.split}, engine cycles from pymtl_fp.timing, memory limit "
           f"{'on' if args.memory_limit else 'off'}"),
          f"* {chain.M} cut positions; {len(evals)} partitions computed in {seconds:.2f} s"
          + (" (dp+wb: the DP optimum without the memory limit, its weights balanced as FPDeep does: "
             "kept by FPGAs with room and streamed in)" if "dp+wb" in evals else ""), "",
          report.markdown_table(summary, ["method", "ii_ms", "images_s", "gops", "vs_even",
                                          "bottleneck", "util_mean", "fits_onchip", "mj_per_image", "gops_per_j"],
                                {"ii_ms": "II (ms)", "images_s": "images/s", "gops": "GOPS",
                                 "vs_even": "x even", "util_mean": "mean util.",
                                 "fits_onchip": "storage fits", "mj_per_image": "mJ/image",
                                 "gops_per_j": "GOPs/J"},
                                {"ii_ms": ".3f", "images_s": ".1f", "gops": ".0f",
                                 "vs_even": ".2f", "util_mean": ".2f", "mj_per_image": ".1f",
                                 "gops_per_j": ".1f"}), "",
          "Per FPGA (DP):", "",
          report.markdown_table([r for r in rows if r["method"] == "dp"],
                                ["fpga", "device", "array", "first", "last_cut", "stage_ms",
                                 "util", "link_out_ms", "link_out_mbit", "storage_mb",
                                 "onchip_mb"],
                                {"first": "starts at", "last_cut": "ends at",
                                 "stage_ms": "compute ms", "link_out_ms": "link ms",
                                 "link_out_mbit": "link Mb/img", "storage_mb": "storage Mb",
                                 "onchip_mb": "on-chip Mb"},
                                {"stage_ms": ".3f", "util": ".2f", "link_out_ms": ".3f",
                                 "link_out_mbit": ".2f", "storage_mb": ".0f",
                                 "onchip_mb": ".0f"})]
    (out / f"{stem}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    files.append(out / f"{stem}.md")
    if not args.no_plot:
        files.append(report.partition_plot(chain, cluster, evals, out / f"{stem}.png",
                                           f"{net.name} on {name}: compute per FPGA"))
    print(f"{net.name} on {name}: {cluster.n} FPGAs, {chain.M} cut positions, "
          f"{seconds:.2f} s")
    for s in summary:
        ev = evals[s["method"]]
        print(f"  {s['method']:>6}: II {ev.ii * 1e3:8.3f} ms  {ev.images_per_s:8.1f} img/s  "
              f"{ev.gops:8.0f} GOPS  x{(s['vs_even'] or 0):.2f} vs even  "
              f"bottleneck {s['bottleneck']}  storage fits {s['fits_onchip']}  {s['gops_per_j']:.1f} GOPs/J")
    wb = evals.get("dp+wb")
    if wb is not None and np.isfinite(wb.ii):
        print(f"   dp+wb: the DP optimum without the memory limit, FPDeep's weight balancing: "
              f"{wb.moved_bits / 1e9:.2f} Gb of weights kept by FPGAs with room, "
              f"{wb.bit_hops / max(wb.moved_bits, 1.0):.1f} hops on average")
    if not any(np.isfinite(evals[m].ii) for m in ("dp", "dp+wb") if m in evals):
        raise UserError("no partition fits the on-chip memory of these FPGAs, not even with weights "
                        "kept by FPGAs with room (drop --memory-limit, lower --bits, or add FPGAs)")
    for f in files:
        print(f"  wrote {f}")
    return 0


def _design(args) -> int:
    from pymtl_fp.explore import report
    from pymtl_fp.explore.design import search

    net = _network(args.net)
    dev = _device(args.device)
    prec = _precision(args.bits)
    validate.integer(args.batch, "--batch", 1, MAX_BATCH)
    validate.integer(args.top, "--top", 1)
    validate.number(args.dram_gbs, "--dram-gbs", 0, None, lo_open=True)
    out = _out_dir(args)
    if args.scheduler is None:
        res = search(net, dev, args.batch, prec, args.dram_gbs, modes=_modes_arg(args.modes))
    else:
        res = _design_on_dask(args, net, dev, prec)
    if not res.count:
        raise UserError(f"no design point fits {dev.name} for {net.name} at batch {args.batch}")
    stem = _stem("design", net.name, dev.name, f"b{args.batch}")
    best, front = res.best(args.top), res.front()
    files = [report.write_csv(out / f"{stem}_pareto.csv", front, report.DESIGN_COLUMNS),
             report.write_csv(out / f"{stem}_best.csv", best, report.DESIGN_COLUMNS)]
    md = [f"### Design search: {net.name} on {dev.name}, mini-batch {args.batch}", "",
          "Assumptions:", ""] + [f"* {a}" for a in res.assumptions] + [
          f"* {res.evaluated} points evaluated, {res.count} feasible, in {res.seconds:.2f} s",
          "", f"Best {len(best)} by throughput:", "",
          report.markdown_table(best, report.DESIGN_COLUMNS, formats=report.DESIGN_FORMATS),
          "", f"Pareto front ({len(front)} points; throughput vs DSPs vs on-chip RAM vs energy per image):", "",
          report.markdown_table(front, report.DESIGN_COLUMNS, formats=report.DESIGN_FORMATS)]
    (out / f"{stem}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    files.append(out / f"{stem}.md")
    if not args.no_plot:
        files.append(report.design_plot(res, out / f"{stem}.png"))
    print(f"{net.name} on {dev.name}, batch {args.batch}: {res.evaluated} points, "
          f"{res.count} feasible, {len(front)} on the Pareto front ({res.seconds:.2f} s)")
    for p in best[:min(5, len(best))]:
        print(f"  {p['array']:>7} Tb={p['Tb']:<4} Tk={p['Tk']:<5} Tc={p['Tc']:<5} "
              f"Th={p['Th']:<4} {p['dsps']:5d} DSPs {p['ram_mb']:7.1f} Mb  "
              f"{p['gops']:7.0f} GOPS ({p['mem_bound_pct']:.0f}% memory-bound)  {p['gops_per_j']:6.1f} GOPs/J")
    for f in files:
        print(f"  wrote {f}")
    return 0


def _modes_arg(text) -> tuple:
    from pymtl_fp.explore.modes import MODES

    modes = tuple(m.strip() for m in str(text).split(",") if m.strip())
    if "channel" not in modes or set(modes) - set(MODES):
        raise UserError(f"--modes {text}: a list of {', '.join(MODES)} that includes channel")
    return modes


def _modes(args) -> int:
    from pymtl_fp.explore import report
    from pymtl_fp.explore.fpga_model import P_MAX
    from pymtl_fp.explore.modes import study, study_markdown

    net = _network(args.net)
    arrays = parse_sizes(args.arrays, "--arrays", P_MAX, "array side")
    batches = parse_sizes(args.batches, "--batches", MAX_BATCH, "batch")
    layers = [x.strip() for x in args.layers.split(",") if x.strip()] if args.layers else None
    try:
        res = study(net, arrays, batches, layers)
    except ValueError as exc:
        raise UserError(f"explore modes: {exc}") from None
    out = _out_dir(args)
    stem = _stem("modes", net.name)
    md = study_markdown(res)
    files = [report.write_csv(out / f"{stem}.csv", res.rows, list(res.rows[0])),
             report.write_csv(out / f"{stem}_network.csv", res.totals, list(res.totals[0]))]
    (out / f"{stem}.md").write_text(md, encoding="utf-8")
    files.append(out / f"{stem}.md")
    print(f"{net.name}: {len(res.rows)} (layer, P, batch) rows")
    for t in res.totals:
        print(f"  P={t['P']:<3} batch {t['batch']:<5} FP+BP+WG utilization: " +
              ", ".join(f"{name} {100 * t[name]:.1f} %" for name in list(t)[2:]))
    for f in files:
        print(f"  wrote {f}")
    return 0


def _design_on_dask(args, net, dev, prec):
    """The same search, one Dask task per engine array, with a progress bar on a terminal."""
    from pymtl_fp.cli.progress import TaskProgress
    from pymtl_fp.distributed import SchedulerError, close, connect, mapper
    from pymtl_fp.explore.design import search

    validate.integer(args.workers, "--workers", 1, 256)
    try:
        client, cluster = connect(args.scheduler, args.workers)
    except SchedulerError as exc:
        raise UserError(str(exc)) from None
    bar = TaskProgress("design points by engine array")
    try:
        return search(net, dev, args.batch, prec, args.dram_gbs, map_fn=mapper(client, bar),
                      modes=_modes_arg(args.modes))
    finally:
        bar.close()
        close(client, cluster)


def _zoo(args) -> int:
    from pymtl_fp.explore import report
    from pymtl_fp.explore.zoo import NETWORKS

    names = [_network(args.net).name] if args.net else list(NETWORKS)
    rows = []
    for name in names:
        net = _network(name)
        m = net.macs()
        pub = net.published.get("fp_macs")
        rows.append({"network": name, "input": "x".join(map(str, net.input_shape)),
                     "layers": len(net.layers), "params_M": net.params / 1e6,
                     "fp_MMAC": m["fp"] / 1e6, "bp_MMAC": m["bp"] / 1e6,
                     "wg_MMAC": m["wg"] / 1e6, "train_GOP": 2 * m["train"] / 1e9,
                     "published_GMAC": pub[0] / 1e9 if pub else None,
                     "deviation": (m["fp"] / pub[0] - 1) if pub else None,
                     "source": pub[1] if pub else "no published total (hand-checked)"})
    cols = ["network", "input", "layers", "params_M", "fp_MMAC", "bp_MMAC", "wg_MMAC",
            "train_GOP", "published_GMAC", "deviation", "source"]
    text = report.markdown_table(rows, cols, formats={
        "params_M": ".4g", "fp_MMAC": ".6g", "bp_MMAC": ".6g", "wg_MMAC": ".6g",
        "train_GOP": ".4g", "published_GMAC": ".4g", "deviation": "+.2%"})
    print(text)
    out = _out_dir(args)
    files = [report.write_csv(out / "zoo.csv", rows, cols)]
    if args.layers:
        for name in names:
            files.append(report.write_csv(out / f"{_stem('zoo', name, 'layers')}.csv",
                                          _network(name).per_layer_table()))
    for f in files:
        print(f"  wrote {f}")
    return 0
