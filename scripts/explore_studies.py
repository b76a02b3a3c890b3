"""The studies of ``pymtl-fp explore`` (:mod:`pymtl_fp.cli.cmd_explore`): each reads its options, runs the
analytic model of :mod:`pymtl_fp.explore`, writes its CSV, Markdown and PNG files and prints a summary."""

from __future__ import annotations

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError
from pymtl_fp.cli.explore_options import (
    DEFAULT_LINKS,
    MAX_BATCH,
    MAX_MODES_CONFIGS,
    MAX_PARALLELISM_CONFIGS,
    MAX_PIECES,
    MAX_SCALING_CONFIGS,
    MAX_SCALING_OPTIMAL_CONFIGS,
    file_stem,
    output_folder,
    parse_fpgas,
    parse_sizes,
    read_device,
    read_links,
    read_modes,
    read_network,
    read_precision,
)
from pymtl_fp.clock import assumed, rtl_note
from pymtl_fp.explore.fpga_fit import describe as fit_describe


def scaling(args) -> int:
    from pymtl_fp.explore import report
    from pymtl_fp.explore.scaling import sweep

    net = read_network(args.net)
    dev = read_device(args.device, args.array)
    prec = read_precision(args.bits)
    sizes = parse_fpgas(args.fpgas)
    links = read_links(args.link or [DEFAULT_LINKS])
    validate.integer(args.batch, "--batch", 1, MAX_BATCH)
    validate.integer(args.pieces, "--pieces", 1, MAX_PIECES)
    validate.study_size(len(sizes) * len(links), MAX_SCALING_OPTIMAL_CONFIGS if args.optimal else MAX_SCALING_CONFIGS,
                        "(cluster size, link) configurations",
                        f"--fpgas {args.fpgas} x {len(links)} links" + (" --optimal" if args.optimal else ""))
    out = output_folder(args)
    res = sweep(net, dev, sizes, links, prec, args.batch, args.pieces, args.split,
                optimal=args.optimal)
    stem = file_stem("scaling", net.name, dev.name)
    files = [report.write_csv(out / f"{stem}.csv", res.rows)]
    md = report.scaling_markdown(res)
    (out / f"{stem}.md").write_text(md + "\n", encoding="utf-8")
    files.append(out / f"{stem}.md")
    if not args.no_plot:
        files.append(report.scaling_plot(res, out / f"{stem}.png"))
    print(f"{net.name} on 1 x .. {max(sizes)} x {dev.name} (engines {res.array.E} x {res.array.P}x{res.array.P}, "
          f"{assumed(dev.clock_mhz, res.array.P)}, {prec.act_bits}-bit): {len(sizes)} cluster sizes x "
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


def parallelism(args) -> int:
    from pymtl_fp.explore import parallelism_report, report
    from pymtl_fp.explore.parallelism import crossover

    net = read_network(args.net)
    dev = read_device(args.device)
    prec = read_precision(args.bits)
    links = read_links([args.link])
    if len(links) != 1:
        raise UserError(f"--link {args.link}: give one link model")
    link = links[0]
    sizes = parse_fpgas(args.fpgas)
    batches = parse_sizes(args.batches, "--batches", MAX_BATCH, "mini-batch")
    validate.integer(args.grad_bits, "--grad-bits", 1, 64)
    validate.integer(args.pieces, "--pieces", 1, MAX_PIECES)
    validate.study_size(len(sizes) * len(batches), MAX_PARALLELISM_CONFIGS, "(cluster size, mini-batch) configurations",
                        f"--fpgas {args.fpgas} x --batches {args.batches}")
    out = output_folder(args)
    res = crossover(net, dev, sizes, batches, link, prec, args.grad_bits, args.pieces)
    stem = file_stem("parallelism", net.name, dev.name, link.name)
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


def partition(args) -> int:
    import numpy as np

    from pymtl_fp.explore import report
    from pymtl_fp.explore.clusterfile import ClusterFileError
    from pymtl_fp.explore.partition_study import study

    net = read_network(args.net)
    prec = read_precision(args.bits)
    validate.integer(args.batch, "--batch", 1, MAX_BATCH)
    validate.integer(args.pieces, "--pieces", 1, MAX_PIECES)
    try:
        res = study(net, prec, args.batch, args.pieces, args.split, args.devices, args.memory_limit)
    except (ClusterFileError, ValueError) as exc:
        raise UserError(str(exc)) from None
    out = output_folder(args)
    chain, cluster, name, evals, summary = res.chain, res.cluster, res.devices, res.evals, res.summary
    stem = file_stem("partition", net.name, name)
    rows = res.rows
    files = [report.write_csv(out / f"{stem}.csv", rows)]
    md = [f"### Partition: {net.name} on {name} ({cluster.n} FPGAs)", "",
          res.description, "", "Assumptions:", "",
          "* devices (chain order): " + ", ".join(
              f"{d.name} {a} @{d.clock_mhz:g} MHz" for d, a in
              zip(cluster.devices, cluster.arrays)),
          f"* clocks: each part's nominal clock, assumed ({rtl_note(max(a.P for a in cluster.arrays))})",
          "* engines: " + "; ".join(sorted({f"{d.name} {fit_describe(d, prec, a)}" for d, a in
                                            zip(cluster.devices, cluster.arrays)})),
          "* links (Gb/s per direction): " + ", ".join(f"{lk.gbps:.1f}" for lk in cluster.links),
          (f"* precision {prec.act_bits}-bit, mini-batch {args.batch}, up to {args.pieces} "
           f"pieces per layer, split={args.split}, engine cycles from pymtl_fp.timing, memory limit "
           f"{'on' if args.memory_limit else 'off'}"),
          f"* {chain.M} cut positions; {len(evals)} partitions computed in {res.seconds:.2f} s"
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
          f"{res.seconds:.2f} s")
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


def design(args) -> int:
    from pymtl_fp.explore import report
    from pymtl_fp.explore.design import search

    net = read_network(args.net)
    dev = read_device(args.device)
    prec = read_precision(args.bits)
    validate.integer(args.batch, "--batch", 1, MAX_BATCH)
    validate.integer(args.top, "--top", 1, 100_000)
    validate.number(args.dram_gbs, "--dram-gbs", 0, None, lo_open=True)
    if args.workers is not None and args.scheduler != "local":
        raise UserError(f"--workers {args.workers}: the worker processes of --scheduler local; "
                        + ("give --scheduler local with it" if args.scheduler is None
                           else "a running scheduler's workers are its own"))
    validate.integer(args.workers, "--workers", 1, 256)
    if args.scheduler not in (None, "local"):
        validate.dask_address(args.scheduler)
    modes = read_modes(args.modes)
    out = validate.output_dir(args.out, "--out")  # (made once there is something to write: not for a
    if args.scheduler is None:                    # scheduler that does not answer)
        res = search(net, dev, args.batch, prec, args.dram_gbs, modes=modes)
    else:
        res = _design_on_dask(args, net, dev, prec, modes, out)
    if not res.count:
        raise UserError(f"no design point fits {dev.name} for {net.name} at batch {args.batch}")
    out = output_folder(args)
    stem = file_stem("design", net.name, dev.name, f"b{args.batch}")
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


def modes(args) -> int:
    from pymtl_fp.explore import report
    from pymtl_fp.explore.fpga_model import P_MAX
    from pymtl_fp.explore.modes import study, study_markdown

    net = read_network(args.net)
    arrays = parse_sizes(args.arrays, "--arrays", P_MAX, "array side")
    batches = parse_sizes(args.batches, "--batches", MAX_BATCH, "batch")
    layers = [x.strip() for x in args.layers.split(",")] if args.layers else None
    if layers is not None and not all(layers):
        raise UserError(f"--layers {args.layers}: an empty item; give layer names, comma-separated")
    validate.study_size(len(arrays) * len(batches), MAX_MODES_CONFIGS, "(array side, batch) configurations",
                        f"--arrays {args.arrays} x --batches {args.batches}")
    validate.output_dir(args.out, "--out")  # (probed before the work; made once the study has run)
    try:
        res = study(net, arrays, batches, layers)
    except ValueError as exc:
        raise UserError(f"explore modes: {exc}") from None
    out = output_folder(args)
    stem = file_stem("modes", net.name)
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


def _design_on_dask(args, net, dev, prec, modes, out):
    """The same search, one Dask task per engine array, with a progress bar on a terminal (a local
    cluster's scratch files inside ``out``, removed at the end)."""
    from pymtl_fp.cli.progress import TaskProgress
    from pymtl_fp.distributed import SchedulerError, close, connect, mapper
    from pymtl_fp.explore.design import search

    try:
        client, cluster = connect(args.scheduler, args.workers or 2, scratch_in=out)
    except SchedulerError as exc:
        raise UserError(str(exc)) from None
    bar = TaskProgress("design points by engine array")
    try:
        return search(net, dev, args.batch, prec, args.dram_gbs, map_fn=mapper(client, bar), modes=modes)
    finally:
        bar.close()
        close(client, cluster)


def zoo(args) -> int:
    from pymtl_fp.explore import report
    from pymtl_fp.explore.zoo import NETWORKS

    names = [read_network(args.net).name] if args.net else list(NETWORKS)
    validate.output_dir(args.out, "--out")  # (probed before the table is printed)
    rows = []
    for name in names:
        net = read_network(name)
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
    out = output_folder(args)
    files = [report.write_csv(out / "zoo.csv", rows, cols)]
    md = ["### The networks' operation counts", "",
          "Multiply-accumulates per image of the forward pass (FP), the data gradient (BP) and the weight "
          "gradient (WG), training GOP per image (2 per MAC of all three), and the forward count against the "
          "published total where there is one.", "", text]
    (out / "zoo.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    files.append(out / "zoo.md")
    if args.layers:
        for name in names:
            files.append(report.write_csv(out / f"{file_stem('zoo', name, 'layers')}.csv",
                                          read_network(name).per_layer_table()))
    for f in files:
        print(f"  wrote {f}")
    return 0
