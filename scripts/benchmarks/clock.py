"""``pymtl-fp bench clock``: the clock each recorded unit reaches (:mod:`pymtl_fp.clock`).

One row per recorded pre-route path (``pymtl_fp/clock/pre_route.toml``: Yosys ``sta`` after
``synth_xilinx``, cell delays only): the path, the routing allowance applied to it (post-route /
logic delay of a placed-and-routed unit, ``pymtl_fp/pnr_records.toml``) and the clock that gives; then the
place-and-route runs themselves.  These are the clocks that turn cycles into time in ``train``'s
report, the benches and the cluster-scale studies.  Nothing is run: the table is built from the
records (``python -m pymtl_fp.cli.record_clock DIR`` records a new ``translate`` run).
"""

from __future__ import annotations

from pymtl_fp.cli import validate

HELP = "the clock each synthesized unit reaches: recorded pre-route paths times the routing allowance"


def add_arguments(parser):
    parser.add_argument("--markdown", metavar="FILE.md", help="write the tables as Markdown")


def table() -> list:
    """The tables' Markdown lines."""
    from pymtl_fp import clock
    from pymtl_fp.engine.config import PRESETS
    from pymtl_fp.pnr import routing_allowance

    lines = ["| unit | preset | engine pipelines | pre-route path (Yosys sta, xc7 cells) | routing allowance "
             "| clock | the path passes through |", "|---|---|---|---|---|---|---|"]
    for r in clock.pre_route_records():
        side = PRESETS[r["preset"]].rows
        est = clock.estimate(r["unit"], side, r["pipelines"])
        lines.append(f"| {r['unit']} | {r['preset']} | {r['pipelines']} | {r['ns']:g} ns | x {est.allowance:.2f} "
                     f"| {est.mhz:.1f} MHz ({r['ns'] * est.allowance:.1f} ns) | {r.get('through', '')} |")
    lines += ["", "| place-and-route of | part | engine pipelines | post-route path | logic | routing "
              "| allowance |", "|---|---|---|---|---|---|---|"]
    for r in clock.routing_records():
        lines.append(f"| {r['unit']} {r['preset']} | {r['part']} | {r['pipelines']} | {r['post_route_ns']:g} ns "
                     f"({1000 / r['post_route_ns']:.1f} MHz) | {r['logic_ns']:g} ns | {r['routing_ns']:g} ns "
                     f"| x {routing_allowance(r):.2f} |")
    lines += ["", "A node with no place-and-route of its own takes its engine's allowance (same preset and pipelines), "
              "else the largest recorded among the runs without a structure option (dsp, taps)."]
    return lines


def main(args) -> int:
    md = validate.output_file(args.markdown, "--markdown", ".md")
    lines = table()
    print("\n".join(lines))
    if md:
        md.write_text("\n".join(lines) + "\n")
        print(f"wrote {md}")
    return 0
