"""Tables (CSV, Markdown) and plots (PNG, matplotlib's Agg backend) of the explore studies."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np


# -- generic tables -----------------------------------------------------------------------------
def _fmt(v, spec: str | None = None) -> str:
    if v is None:
        return "-"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        if math.isinf(v):
            return "inf"
        if math.isnan(v):
            return "-"
        return format(float(v), spec or ".4g")
    return str(v)


def write_csv(path: Path, rows: list, columns: list | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = columns or (list(rows[0]) if rows else [])
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in rows:
            w.writerow([_csv_val(r.get(c)) for c in columns])
    return path


def _csv_val(v):
    if isinstance(v, (np.floating, float)):
        return repr(float(v))
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


def markdown_table(rows: list, columns: list, headers: dict | None = None,
                   formats: dict | None = None) -> str:
    headers = headers or {}
    formats = formats or {}
    head = [headers.get(c, c) for c in columns]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---:" if _numeric(rows, c) else "---" for c in columns) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c), formats.get(c)) for c in columns) + " |")
    return "\n".join(lines)


def _numeric(rows, col) -> bool:
    return bool(rows) and isinstance(rows[0].get(col), (int, float, np.integer, np.floating)) \
        and not isinstance(rows[0].get(col), bool)


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


# -- scaling ------------------------------------------------------------------------------------
SCALING_COLUMNS = ["fpgas", "link", "images_s", "gops", "opt_gops", "speedup", "efficiency",
                   "bound",
                   "link_need_gbps", "util_mean", "util_min", "balance", "fine_mb_max",
                   "fine_bal_mb_max", "fine_bal_fit_frac", "weights_balance", "weights_balance_bal",
                   "wstream_mbit_per_image", "bal_gops", "whole_mb_max", "flight_mb_max", "flight_conv_mb_max",
                   "onchip_mb", "fine_fit_frac", "whole_fit_frac",
                   "flight_fit_frac", "fc_dram_gbs", "gops_per_j", "images_per_j", "watts_per_fpga"]
SCALING_HEADERS = {"fpgas": "FPGAs", "images_s": "images/s", "gops": "GOPS",
                   "opt_gops": "GOPS (optimal partition)",
                   "efficiency": "eff.", "link_need_gbps": "busiest link need (Gb/s)",
                   "util_mean": "util. mean", "util_min": "util. min",
                   "fine_mb_max": "fine-grained Mb/FPGA", "whole_mb_max": "whole-map Mb/FPGA",
                   "fine_bal_mb_max": "fine-grained, weights balanced, Mb/FPGA",
                   "fine_bal_fit_frac": "balanced fits", "weights_balance": "weights max/mean",
                   "weights_balance_bal": "weights max/mean, balanced",
                   "wstream_mbit_per_image": "weight stream, busiest cut, Mb/image",
                   "bal_gops": "GOPS, weights balanced",
                   "flight_mb_max": "in-flight (1F1B) Mb/FPGA",
                   "flight_conv_mb_max": "in-flight, FPGAs without fc, Mb", "flight_fit_frac": "in-flight fits",
                   "onchip_mb": "on-chip Mb", "fine_fit_frac": "fine fits",
                   "whole_fit_frac": "whole fits", "fc_dram_gbs": "fc DRAM GB/s",
                   "gops_per_j": "GOPs/J", "images_per_j": "images/J", "watts_per_fpga": "W/FPGA"}
SCALING_FORMATS = {"images_s": ".1f", "gops": ".0f", "opt_gops": ".0f", "speedup": ".1f",
                   "efficiency": ".2f",
                   "link_need_gbps": ".1f", "util_mean": ".2f", "util_min": ".2f",
                   "balance": ".2f", "fine_mb_max": ".1f", "fine_bal_mb_max": ".1f",
                   "fine_bal_fit_frac": ".0%", "weights_balance": ".2f", "weights_balance_bal": ".2f",
                   "wstream_mbit_per_image": ".2f", "bal_gops": ".0f", "whole_mb_max": ".0f", "flight_mb_max": ".0f",
                   "flight_conv_mb_max": ".0f", "flight_fit_frac": ".0%",
                   "onchip_mb": ".1f", "fine_fit_frac": ".0%", "whole_fit_frac": ".0%",
                   "fc_dram_gbs": ".1f", "gops_per_j": ".1f", "images_per_j": ".2f", "watts_per_fpga": ".1f"}
TABLE_SIZES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128)


def _save(fig, path) -> Path:
    """Lay out, write (creating the folder) and close a figure; return its path."""
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    _plt().close(fig)
    return path


def scaling_markdown(res, sizes=TABLE_SIZES) -> str:
    sizes = set(sizes)
    rows = [r for r in res.rows if r["fpgas"] in sizes or r["fpgas"] == max(
        x["fpgas"] for x in res.rows)]
    title = (f"### Scaling: {res.network} on {res.device.name} "
             f"({len({r['fpgas'] for r in res.rows})} cluster sizes, {res.seconds:.2f} s)")
    parts = [title, "", "Assumptions:", ""]
    parts += [f"* {a}" for a in res.assumptions]
    parts += ["", ("Knee (first N where the busiest link, not compute, sets the pace) and "
                   "last N before parallel efficiency first drops under 80 %:"), "",
              markdown_table([{"link": lk.name, "gbps": lk.gbps, "knee": res.knees[lk.name],
                               "linear": res.linear_to[lk.name]} for lk in res.links],
                             ["link", "gbps", "knee", "linear"],
                             {"gbps": "Gb/s per link & direction", "knee": "knee N",
                              "linear": "linear (eff >= 0.8) to N"}, {"gbps": ".1f"}), ""]
    for lk in res.links:
        mine = [r for r in rows if r["link"] == lk.name]
        cols = [c for c in SCALING_COLUMNS if c != "link" and (c in mine[0] if mine else True)]
        parts += [f"#### link {lk.name} ({lk.gbps:.1f} Gb/s per link and direction)", "",
                  markdown_table(mine, cols,
                                 SCALING_HEADERS, SCALING_FORMATS), ""]
    return "\n".join(parts)


def scaling_plot(res, path: Path) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.2))
    ax = axes[0]
    n1 = None
    has_opt = bool(res.rows) and "opt_gops" in res.rows[0]
    colors = {}
    for lk in res.links:
        n, g = res.series(lk.name, "gops")
        line, = ax.plot(n, g / 1e3, label=f"{lk.name} ({lk.gbps:.0f} Gb/s/link)"
                        if math.isfinite(lk.gbps) else "unlimited links")
        colors[lk.name] = line.get_color()
        if has_opt:
            _, go = res.series(lk.name, "opt_gops")
            ax.plot(n, go / 1e3, ls="--", lw=0.8, color=line.get_color())
        knee = res.knees[lk.name]
        if knee is not None:
            ax.plot([knee], [g[list(n).index(knee)] / 1e3], "kx")
        n1 = (n, g)
    if n1 is not None:
        base = n1[1][0] / n1[0][0]
        ax.plot(n1[0], base * n1[0] / 1e3, "k:", lw=0.8, label="linear")
    ax.set_xlabel("FPGAs in the chain")
    ax.set_ylabel("training throughput (TOPS)")
    ax.set_title(f"{res.network} on {res.device.name}: FPDeep balancing, x = knee"
                 + ("\n(dashed: optimal partition)" if has_opt else ""), fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    ax = axes[1]
    lk0 = res.links[0]
    n, need = res.series(lk0.name, "link_need_gbps")
    ax.plot(n, need, "k-", label="busiest link need (compute-bound)")
    top = 1.6 * float(np.max(need)) if len(need) else 1.0
    for lk in res.links:
        if math.isfinite(lk.gbps) and lk.gbps <= top:
            ax.axhline(lk.gbps, ls="--", lw=1.0, color=colors[lk.name],
                       label=f"{lk.name}: {lk.gbps:.0f} Gb/s")
    ax.set_ylim(0, top)
    ax.set_xlabel("FPGAs in the chain")
    ax.set_ylabel("Gb/s per link and direction")
    ax.set_title("busiest link: need vs bandwidth")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    ax = axes[2]
    n, fine = res.series(lk0.name, "fine_mb_max")
    _, whole = res.series(lk0.name, "whole_mb_max")
    _, flight = res.series(lk0.name, "flight_mb_max")
    _, flight_conv = res.series(lk0.name, "flight_conv_mb_max")
    _, fine_bal = res.series(lk0.name, "fine_bal_mb_max")
    ax.semilogy(n, fine, label="fine-grained pipeline")
    ax.semilogy(n, fine_bal, color=ax.lines[-1].get_color(), ls="--",
                label="the same, weights balanced (FPDeep)")
    ax.semilogy(n, whole, label="whole-map buffering")
    ax.semilogy(n, flight, label="simulated cluster, 1F1B in flight (fc on chip)")
    ax.semilogy(n[1:], flight_conv[1:], color=ax.lines[-1].get_color(), ls=":",
                label="the same, FPGAs without an fc layer")
    ax.axhline(res.device.onchip_bits / 1e6, color="k", ls="--", lw=0.8,
               label=f"on-chip RAM ({res.device.onchip_bits / 1e6:.0f} Mb)")
    ax.set_xlabel("FPGAs in the chain")
    ax.set_ylabel("largest on-chip need per FPGA (Mb)")
    ax.set_title("storage (fc in DRAM but for the cluster's line)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    ax = axes[3]
    for lk in res.links:
        n, e = res.series(lk.name, "gops_per_j")
        ax.plot(n, e, color=colors[lk.name], label=lk.name)
    n, lo = res.series(lk0.name, "gops_per_j_low")
    _, hi = res.series(lk0.name, "gops_per_j_high")
    ax.fill_between(n, lo, hi, color=colors[lk0.name], alpha=0.12,
                    label=f"{lk0.name}: constants' range")
    ax.set_yscale("log")
    ax.set_xlabel("FPGAs in the chain")
    ax.set_ylabel("GOPs/J (whole cluster)")
    fam = res.rows[0].get("energy_family", "?") if res.rows else "?"
    ax.set_title(f"energy efficiency ({fam} constants)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, path)


# -- partition ----------------------------------------------------------------------------------
def partition_rows(chain, cluster, evals: dict) -> list:
    rows = []
    for method, ev in evals.items():
        for i, (dev, arr) in enumerate(zip(cluster.devices, cluster.arrays)):
            a, b = int(ev.cuts[i]), int(ev.cuts[i + 1])
            rows.append({
                "method": method, "fpga": i, "device": dev.name, "array": str(arr),
                "first": chain.describe_position(a) if b > a else "-",
                "last_cut": chain.describe_position(b) if b > a else "-",
                "stage_ms": ev.stage_s[i] * 1e3,
                "util": ev.stage_util[i],
                "link_out_ms": ev.link_s[i] * 1e3 if i < len(ev.link_s) else None,
                "link_out_mbit": (max(ev.fwd_bits[i], ev.bwd_bits[i]) / 1e6
                                  if i < len(ev.link_s) else None),
                "storage_mb": ev.storage_bits[i] / 1e6,
                "onchip_mb": ev.onchip_bits[i] / 1e6,
            })
    return rows


def partition_summary(evals: dict, energies: dict | None = None) -> list:
    """One row per method; ``energies``: method -> :func:`pymtl_fp.energy.estimate.chain_energy`."""
    base = evals.get("even")
    out = []
    for method, ev in evals.items():
        en = (energies or {}).get(method)
        out.append({"method": method, "ii_ms": ev.ii * 1e3, "images_s": ev.images_per_s,
                    "mj_per_image": en["joules"]["value"] * 1e3 if en else None,
                    "gops_per_j": en["gops_per_j"]["value"] if en else None,
                    "gops": ev.gops, "vs_even": (ev.images_per_s / base.images_per_s
                                                 if base and base.images_per_s else None),
                    "bottleneck": ev.bottleneck,
                    "util_mean": float(np.mean(ev.stage_util)),
                    "fits_onchip": f"{int(np.sum(ev.storage_bits <= ev.onchip_bits))}/"
                                   f"{len(ev.storage_bits)}"})
    return out


def partition_plot(chain, cluster, evals: dict, path: Path, title: str) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    n = cluster.n
    x = np.arange(n)
    w = 0.8 / max(1, len(evals))
    ax = axes[0]
    for j, (method, ev) in enumerate(evals.items()):
        ax.bar(x + (j - (len(evals) - 1) / 2) * w, ev.stage_s * 1e3, w,
               label=f"{method}: II {ev.ii * 1e3:.2f} ms, {ev.images_per_s:.0f} img/s")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{i}\n{d.name.replace('xc', '')}" for i, d in
                        enumerate(cluster.devices)], fontsize=6)
    ax.set_ylabel("compute time per image (ms)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    ax = axes[1]
    xl = np.arange(n - 1)
    for j, (method, ev) in enumerate(evals.items()):
        ax.bar(xl + (j - (len(evals) - 1) / 2) * w, ev.link_s * 1e3, w, label=method)
    ax.set_xlabel("link (i joins FPGAs i and i+1)")
    ax.set_ylabel("transfer time per image (ms)")
    ax.set_title("per-link transfer time")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, path)


# -- design -------------------------------------------------------------------------------------
DESIGN_COLUMNS = ["array", "Tb", "Tk", "Tc", "Th", "dsps", "dsp_pct", "ram_mb", "ram_pct",
                  "gops", "images_s", "mem_bound_pct", "peak_gops", "mj_per_image", "gops_per_j"]
DESIGN_FORMATS = {"dsp_pct": ".0f", "ram_mb": ".1f", "ram_pct": ".0f", "gops": ".0f",
                  "images_s": ".0f", "mem_bound_pct": ".0f", "peak_gops": ".0f", "mj_per_image": ".3f",
                  "gops_per_j": ".1f"}


def design_plot(res, path: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    p = res.points
    if len(p["gops"]):
        sc = ax.scatter(p["dsps"], p["gops"], c=np.log10(np.maximum(p["ram_mb"], 1e-3)), s=3,
                        cmap="viridis", alpha=0.4, rasterized=True)
        fig.colorbar(sc, ax=ax, label="log10 on-chip RAM (Mb)")
        front = res.front()
        ax.plot([f["dsps"] for f in front], [f["gops"] for f in front], "r.",
                label="Pareto front (GOPS vs DSPs vs RAM vs J/image)")
        peak_x = np.unique(p["dsps"])
        ax.plot(peak_x, 2 * peak_x * res.precision.macs_per_dsp * res.device.clock_hz / 1e9,
                "k:", lw=0.8, label="peak")
    ax.set_xlabel("DSPs used")
    ax.set_ylabel("training throughput (GOPS)")
    ax.set_title(f"{res.network} on {res.device.name}, batch {res.batch} "
                 f"({res.count} feasible points)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _save(fig, path)
