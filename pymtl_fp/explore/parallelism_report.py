"""Outputs of the parallelism study (:mod:`.parallelism`): the Markdown winner table, the crossover
batches per cluster size, and a heat map of the winning mode's images/s."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pymtl_fp.explore.report import _plt, _save, markdown_table

COLUMNS = ["fpgas", "batch", "mode", "groups", "fpgas_per_group", "images_per_group", "ii_ms", "pipeline_ms",
           "allreduce_ms", "step_ms", "images_s", "weights_mb_per_fpga", "weights_fit_onchip"]


def markdown(res, fpgas, batches) -> str:
    parts = [f"### Parallelism: {res.network} on N x {res.device.name}, link {res.link.name} "
             f"({len(res.rows)} configurations in {res.seconds:.2f} s)", "", "Assumptions:", ""]
    parts += [f"* {a}" for a in res.assumptions]
    parts += ["", "Fastest mode per cluster size (rows) and mini-batch (columns), images/s in brackets:", "",
              markdown_table(res.winner_table(fpgas, batches), ["fpgas"] + list(batches),
                             {"fpgas": "FPGAs", **{b: f"B={b}" for b in batches}}), "",
              "Smallest mini-batch at which each mode is the fastest:", "",
              markdown_table([{"fpgas": n, **{m: (b if b is not None else "never")
                                              for m, b in res.crossover_batches(n).items()}} for n in fpgas],
                             ["fpgas", "pipeline", "hybrid", "data"], {"fpgas": "FPGAs"})]
    return "\n".join(parts)


def plot(res, fpgas, batches, path: Path) -> Path:
    plt = _plt()
    colors = {"pipeline": 0, "hybrid": 1, "data": 2}
    grid = np.array([[colors[res.best[(n, b)]["mode"]] for b in batches] for n in fpgas])
    fig, ax = plt.subplots(figsize=(1.0 + 0.8 * len(batches), 1.0 + 0.5 * len(fpgas)))
    cmap = plt.get_cmap("Pastel1", 3)
    ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=2.5, aspect="auto", origin="lower")
    for i, n in enumerate(fpgas):
        for j, b in enumerate(batches):
            r = res.best[(n, b)]
            tag = {"pipeline": "P", "hybrid": f"H{r['groups']}", "data": "D"}[r["mode"]]
            ax.text(j, i, f"{tag}\n{r['images_s']:.0f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(batches)), [str(b) for b in batches])
    ax.set_yticks(range(len(fpgas)), [str(n) for n in fpgas])
    ax.set(xlabel="mini-batch", ylabel="FPGAs",
           title=f"{res.network}, {res.link.name}: fastest of pipeline (P), hybrid (H<groups>), data parallel (D); "
                 "images/s")
    ax.title.set_fontsize(9)
    return _save(fig, path)
