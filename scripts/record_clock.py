"""Record a unit's pre-route path in :mod:`pymtl_fp.clock`'s ``pre_route.toml`` from ``translate`` runs.

``python -m pymtl_fp.cli.record_clock DIR [DIR ...] [--toml FILE]`` reads each ``DIR/report.json``
that ``pymtl-fp translate --unit engine|node --config PRESET [--pipeline ...] --out DIR`` wrote
(with synthesis) and replaces, or adds, the record of that unit, preset and pipelines with the run's
Yosys ``sta`` path.  ``--toml`` writes another file instead of the package's (default).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pymtl_fp.cli.errors import UserError

_FIELDS = ("unit", "preset", "pipelines", "ns", "through")


def record_of(folder: Path) -> dict:
    """The record a translate output folder gives; UserError (one line) if it has none."""
    path = folder / "report.json"
    try:
        rep = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a translate report ({exc.__class__.__name__})") from None
    if rep.get("unit") not in ("engine", "node") or "pipelines" not in rep:
        raise UserError(f"{path}: not an engine or node translate report")
    timing = (rep.get("synth") or {}).get("timing") or {}
    if "ns" not in timing:
        raise UserError(f"{path}: no Yosys sta path (translate ran without synthesis, or sta failed)")
    through = " -> ".join(timing.get("through", [])[-3:]) or "unnamed nets"
    return dict(unit=rep["unit"], preset=rep["preset"], pipelines=rep["pipelines"], ns=timing["ns"], through=through)


def render(header: str, records: list) -> str:
    """The TOML text: ``header`` (the file's comment lines) then one ``[[path]]`` per record."""
    out = [header.rstrip("\n"), ""]
    for r in records:
        out.append("[[path]]")
        out += [f"{k} = {json.dumps(r[k])}" for k in _FIELDS if k in r]
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    """The command; a bad folder exits 2 with one line."""
    try:
        return _record(argv)
    except UserError as exc:
        print(f"record_clock: error: {exc}", file=sys.stderr)
        return 2


def _record(argv) -> int:
    import tomllib

    from pymtl_fp import clock

    ap = argparse.ArgumentParser(prog="python -m pymtl_fp.cli.record_clock", description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, metavar="DIR")
    ap.add_argument("--toml", type=Path, default=clock.HERE / "pre_route.toml", metavar="FILE")
    args = ap.parse_args(argv)
    new = [record_of(d) for d in args.folders]
    text = args.toml.read_text() if args.toml.is_file() else ""
    header = "\n".join(ln for ln in text.split("\n[[path]]", 1)[0].splitlines() if ln.startswith("#"))
    records = list(tomllib.loads(text).get("path", [])) if text else []
    for r in new:
        key = (r["unit"], r["preset"], r["pipelines"])
        records = [x for x in records if (x["unit"], x["preset"], x["pipelines"]) != key] + [r]
        print(f"{key[0]} {key[1]}, pipelines {key[2]}: {r['ns']} ns")
    args.toml.write_text(render(header, records))
    print(f"wrote {args.toml}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
