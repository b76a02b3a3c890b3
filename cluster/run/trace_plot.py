"""A picture of a cluster run's timeline, drawn from its trace-event document
(:mod:`pymtl_fp.cluster.run.trace`) with matplotlib: for each node its engine's compute commands
(coloured by op), its LOADs and STOREs, and its router's state in every cycle; below, the
messages in flight on every link.  The same events a trace viewer shows, as a PNG for a report
or a README."""

from __future__ import annotations

from pathlib import Path

from pymtl_fp.cluster.run.trace import HOST_PID, LINKS_PID

OP_COLOURS = {"fwd": "#1f77b4", "bwd_data": "#ff7f0e", "bwd_weight": "#2ca02c", "pool_fwd": "#9467bd",
              "pool_bwd": "#8c564b", "update": "#d62728"}
STATE_COLOURS = {"compute": "#98df8a", "io": "#aec7e8", "stall_in": "#ff9896", "stall_out": "#ffbb78",
                 "engine": "#c7c7c7", "done": "#f0f0f0"}


def plot_timeline(doc: dict, path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    clock = doc["otherData"]["clock_mhz"]
    ev = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    nodes = sorted(p for p in names if p not in (LINKS_PID, HOST_PID))
    rows = []  # (label, pid, cat)
    for pid in nodes:
        rows += [(f"{names[pid]} engine", pid, "compute"), (f"{names[pid]} load", pid, "load"),
                 (f"{names[pid]} store", pid, "store"), (f"{names[pid]} router", pid, "state")]
    index = {(pid, cat): i for i, (_, pid, cat) in enumerate(rows)}
    fig, (ax, axl) = plt.subplots(2, 1, figsize=(16, 2 + 0.45 * len(rows) + 2.5), sharex=True,
                                  gridspec_kw={"height_ratios": [len(rows), 6]})
    bars = {}
    for e in ev:
        if e["ph"] != "X" or (e["pid"], e.get("cat")) not in index:
            continue
        cat = e["cat"]
        colour = (OP_COLOURS.get(e["args"].get("op"), "#17becf") if cat == "compute"
                  else STATE_COLOURS.get(e["name"], "#cccccc") if cat == "state"
                  else "#bcbd22" if cat == "load" else "#e377c2")
        bars.setdefault((index[(e["pid"], cat)], colour), []).append((e["ts"] * clock, e["dur"] * clock))
    for (row, colour), spans in bars.items():
        ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=colour, linewidth=0)
    for e in ev:
        if e["ph"] == "i" and e["name"].startswith("step"):
            ax.axvline(e["ts"] * clock, color="black", linewidth=0.6, linestyle=":")
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    legend = [Patch(color=c, label=op) for op, c in OP_COLOURS.items()]
    legend += [Patch(color=c, label=f"router {s}") for s, c in STATE_COLOURS.items()]
    legend += [Patch(color="#bcbd22", label="LOAD"), Patch(color="#e377c2", label="STORE")]
    ax.legend(handles=legend, fontsize=7, ncol=8, loc="upper center", bbox_to_anchor=(0.5, 1.0 + 0.9 / len(rows)))
    counters = {}
    for e in ev:
        if e["ph"] == "C":
            counters.setdefault(e["name"], []).append((e["ts"] * clock, e["args"]["messages"]))
    for name, pts in counters.items():
        axl.step([t for t, _ in pts], [v for _, v in pts], where="post", linewidth=0.8,
                 label=name.replace(" in flight", ""))
    axl.set_ylabel("messages\nin flight", fontsize=8)
    axl.set_xlabel("cycle")
    axl.legend(fontsize=7, ncol=5, loc="upper right")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
