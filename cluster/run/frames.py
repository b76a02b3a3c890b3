"""A cluster run's report as pandas tables and matplotlib figures, for notebooks and scripts.

What it models: nothing new -- it reshapes the report :func:`~pymtl_fp.cluster.run.report.make_report`
builds from the simulated cluster (any level) into tables a user filters, joins and plots:

* ``nodes``: one row per node: its level, array side, the layers it holds, MACs and MAC
  utilization, its router's cycles in each state (``compute``, ``io``, ``stall_in``, ``stall_out``,
  ``engine``, ``done``), the weight phase, when it started and finished, and its buffers' words;
* ``steps``: one row per training step: the cycles between step ends, the loss the host measured
  and the golden model's loss for the same step (equal when the run is bit-exact);
* ``links``: one row per link: elements per step, latency and bandwidth utilization.

:class:`~pymtl_fp.cluster.run.session.TrainingResult` exposes them as ``to_dataframe()``,
``plot_nodes()`` and ``plot_losses()``.
"""

from __future__ import annotations

from pymtl_fp.cluster.run.trace_plot import STATE_COLOURS

TABLES = ("nodes", "steps", "links")


def nodes_frame(report: dict):
    """One row per node (module docstring)."""
    import pandas as pd

    rows = []
    for n in report["node"]:
        row = {"node": n["node"], "level": n["level"], "P": n["P"], "layers": n["items"].split("  (")[0],
               "macs": n["macs"], "mac_utilization": n["mac_utilization"]}
        row.update({f"cycles_{state}": c for state, c in n["cycles"].items()})
        row.update({"weight_phase_cycles": n["weight_phase_cycles"], "first_active_cycle": n["first_active_cycle"],
                    "finished_cycle": n["finished_cycle"]})
        row.update({f"words_{buf}": use["used"] for buf, use in n["buffers"].items()})
        rows.append(row)
    return pd.DataFrame(rows).set_index("node")


def steps_frame(report: dict, golden_losses=None):
    """One row per step: its cycles, the host's loss and (given) the golden model's."""
    import pandas as pd

    frame = pd.DataFrame({"step": range(len(report["cycles_per_step"])), "cycles": report["cycles_per_step"],
                          "loss": report["losses"]})
    if golden_losses is not None:
        frame["golden_loss"] = list(golden_losses)
    return frame.set_index("step")


def links_frame(report: dict):
    """One row per link of the topology."""
    import pandas as pd

    return pd.DataFrame(report["links"]).set_index("link")


def frame(report: dict, table: str = "nodes", golden_losses=None):
    """The report's ``table`` (one of :data:`TABLES`) as a DataFrame; ValueError for another name."""
    if table == "nodes":
        return nodes_frame(report)
    if table == "steps":
        return steps_frame(report, golden_losses)
    if table == "links":
        return links_frame(report)
    raise ValueError(f"table {table!r}: choose {', '.join(TABLES)}")


def _axes(ax, height: float = 3.0):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(8, height), layout="constrained")[1]


def plot_nodes(report: dict, ax=None):
    """Each node's cycles by router state, stacked (the trace's colours); returns the Axes."""
    nodes = nodes_frame(report)
    ax = _axes(ax, 1.5 + 0.4 * len(nodes))
    left = [0] * len(nodes)
    for state, colour in STATE_COLOURS.items():
        col = f"cycles_{state}"
        if col not in nodes:
            continue
        ax.barh([f"node {j}" for j in nodes.index], nodes[col], left=left, color=colour, label=state)
        left = [a + b for a, b in zip(left, nodes[col])]
    ax.invert_yaxis()
    ax.set_xlabel("cycles")
    ax.set_title(f"{report['net']} on {report['nodes']} nodes: {report['steps']} steps of {report['batch']} images")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return ax


def plot_losses(report: dict, golden_losses=None, ax=None):
    """The host's loss per step (and the golden model's, dashed); returns the Axes."""
    steps = steps_frame(report, golden_losses)
    ax = _axes(ax)
    ax.plot(steps.index, steps["loss"], marker="o", label="cluster")
    if "golden_loss" in steps:
        ax.plot(steps.index, steps["golden_loss"], linestyle="--", marker="x", label="golden model")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.legend()
    return ax
