"""Regenerate the documentation's results: run every bench and explore study whose files the pages
include, each writing its Markdown table and figure into ``docs/results/generated/`` (the results
pages, ``docs/results/``) or its figure into ``docs/figures/`` (the cluster benches' figures, shown
by the concept pages).

    python -m pymtl_fp.cli.regenerate_docs --list            # the commands, with what each writes
    python -m pymtl_fp.cli.regenerate_docs --only zoo,design # some of them
    python -m pymtl_fp.cli.regenerate_docs --fast            # the ones that take seconds
    python -m pymtl_fp.cli.regenerate_docs                   # all of them (the simulations: hours)

No number of those pages is typed by hand: each is in a file a command below writes.  A command runs
``pymtl-fp`` in a child process (the same interpreter), from the repository's root, and a failed one
stops the script with its exit status.  The files are committed, so the site builds without running
anything; run the script after a change that moves a figure, then commit what it rewrote.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: where the commands write, relative to the repository's root (the results pages include from here)
OUT = "docs/results/generated"


@dataclass(frozen=True)
class Job:
    """One command: its name (``--only``), its ``pymtl-fp`` arguments, the files it writes that the
    documentation uses (relative to the repository's root), and roughly how long it takes on a
    2-core machine."""

    name: str
    args: tuple
    writes: tuple
    cost: str
    fast: bool = False

    def argv(self) -> list:
        return [sys.executable, "-m", "pymtl_fp.cli.main", *self.args]

    def shell(self) -> str:
        return "pymtl-fp " + shlex.join(self.args)


def _explore(study: str, *args: str, out: str = OUT) -> tuple:
    return ("explore", study, *args, "--out", out)


def _gen(*names: str) -> tuple:
    return tuple(f"{OUT}/{n}" for n in names)


#: the cluster benches' figures sit beside the concept pages that show them
FIG = "docs/figures"
#: the Verilated scaling run's measured points (bench scaling --json), which bench-scaling-recorded redraws
SCALING_RECORD = "docs/results/data/scaling_deep-mnist_verilator.json"

JOBS = (
    Job("zoo", _explore("zoo"), _gen("zoo.md"), "a second", fast=True),
    Job("clock", ("bench", "clock", "--markdown", f"{OUT}/clock.md"), _gen("clock.md"), "a second", fast=True),
    Job("scaling-vgg16", _explore("scaling", "--net", "vgg16", "--device", "xc7vx690t", "--fpgas", "1..128",
                                  "--link", "6x10G,6x13.1G,250G,inf", "--optimal"),
        _gen("scaling_vgg16_xc7vx690t.md", "scaling_vgg16_xc7vx690t.png"), "seconds", fast=True),
    Job("scaling-alexnet", _explore("scaling", "--net", "alexnet", "--device", "xc7vx690t", "--fpgas", "1..128",
                                    "--link", "6x10G,6x13.1G,250G,inf"),
        _gen("scaling_alexnet_xc7vx690t.md", "scaling_alexnet_xc7vx690t.png"), "seconds", fast=True),
    Job("partition-resnet152", _explore("partition", "--net", "resnet152"),
        _gen("partition_resnet152_asymmetric16.md", "partition_resnet152_asymmetric16.png"), "seconds", fast=True),
    Job("partition-resnet152-8bit", _explore("partition", "--net", "resnet152", "--bits", "8", "--memory-limit",
                                             "--no-plot", out=f"{OUT}/memory-limit"),
        _gen("memory-limit/partition_resnet152_asymmetric16.md"), "seconds", fast=True),
    Job("design", _explore("design", "--net", "vgg-cifar", "--device", "xcvu9p", "--batch", "128", "--bits", "8"),
        _gen("design_vgg-cifar_xcvu9p_b128.md", "design_vgg-cifar_xcvu9p_b128.png"), "seconds", fast=True),
    Job("parallelism", _explore("parallelism", "--net", "vgg16", "--device", "xc7vx690t", "--link", "6x10G"),
        _gen("parallelism_vgg16_xc7vx690t_6x10G.md", "parallelism_vgg16_xc7vx690t_6x10G.png"), "seconds", fast=True),
    Job("modes", _explore("modes", "--net", "vgg-cifar", "--arrays", "16,32", "--batches", "4,32"),
        _gen("modes_vgg-cifar.md"), "seconds", fast=True),
    Job("bench-model", ("bench", "model", "--nets", "lenet-digits,vgg-digits,vgg-digits16,lenet5-mnist,vgg-mnist",
                        "--nodes", "1,2,4,8", "--batches", "4,8", "--markdown", f"{OUT}/model_cluster.md"),
        _gen("model_cluster.md"), "20 minutes (38 CL cluster runs)"),
    Job("bench-model-residual", ("bench", "model", "--nets", "resnet-digits,resnet8-mnist,resnet8fc-mnist",
                                 "--nodes", "1,2,4,8",
                                 "--batches", "4", "--markdown", f"{OUT}/model_residual.md"),
        _gen("model_residual.md"), "a quarter of an hour (the 28x28 maps)"),
    Job("bench-model-deep", ("bench", "model", "--nets", "deep-mnist,deep-digits,deep-strided16", "--nodes", "16,32,64",
                             "--batches", "4,8", "--markdown", f"{OUT}/model_deep.md"),
        _gen("model_deep.md"), "20-30 minutes (18 CL clusters of 16 to 64 nodes)"),
    Job("bench-model-slow-links", ("bench", "model", "--nets", "deep-mnist", "--nodes", "2,4,8", "--batches", "4",
                                   "--link-flits", "8", "--pipeline", "none",
                                   "--markdown", f"{OUT}/model_deep-mnist_flits8.md"),
        _gen("model_deep-mnist_flits8.md"), "a few minutes"),
    Job("bench-model-slow-links-b16", ("bench", "model", "--nets", "lenet-digits,vgg-digits,lenet5-mnist", "--nodes",
                                       "2,4", "--batches", "4,16", "--link-flits", "4", "--pipeline", "none",
                                       "--markdown", f"{OUT}/model_slow-links_b16.md"),
        _gen("model_slow-links_b16.md"), "fifteen minutes"),
    Job("bench-model-slow-links-8", ("bench", "model", "--nets", "lenet-digits,vgg-digits", "--nodes", "2,4",
                                     "--batches", "4,8", "--link-flits", "8", "--pipeline", "none",
                                     "--markdown", f"{OUT}/model_slow-links_f8.md"),
        _gen("model_slow-links_f8.md"), "five minutes"),
    Job("bench-scaling", ("bench", "scaling", "--level", "verilator", "--nodes", "1,2,4,8,16,32,64", "--batch", "16",
                          "--link-flits", "1,4", "--pipeline", "none", "--plot", f"{FIG}/scaling_deep-mnist_sim.png",
                          "--markdown", f"{OUT}/scaling_deep-mnist_sim.md", "--json", SCALING_RECORD),
        (f"{FIG}/scaling_deep-mnist_sim.png", f"{OUT}/scaling_deep-mnist_sim.md", SCALING_RECORD),
        "hours (14 Verilated clusters to 64 nodes, without engine pipelines as recorded)"),
    Job("bench-scaling-recorded", ("bench", "scaling", "--simulated", SCALING_RECORD, "--batch", "16",
                                   "--plot", f"{FIG}/scaling_deep-mnist_sim.png",
                                   "--markdown", f"{OUT}/scaling_deep-mnist_sim.md"),
        (f"{FIG}/scaling_deep-mnist_sim.png", f"{OUT}/scaling_deep-mnist_sim.md"),
        "seconds (the model against the points bench-scaling recorded)"),
    Job("bench-schedules", ("bench", "schedules", "--pipeline", "none", "--plot", f"{FIG}/schedules_lenet-digits.png",
                            "--json", f"{OUT}/schedules_lenet-digits.json"),
        (f"{FIG}/schedules_lenet-digits.png", f"{OUT}/schedules_lenet-digits.json"), "tens of minutes"),
    Job("bench-schedules-vgg", ("bench", "schedules", "--net", "vgg-digits", "--nodes", "1,2,4", "--act-depth", "16384",
                                "--pipeline", "none",
                                "--plot", f"{FIG}/schedules_vgg-digits.png", "--json", f"{OUT}/schedules_vgg-digits.json"),
        (f"{FIG}/schedules_vgg-digits.png", f"{OUT}/schedules_vgg-digits.json"), "an hour or more"),
    Job("bench-parallel", ("bench", "parallel", "--pipeline", "none", "--plot", f"{FIG}/parallel_lenet-digits.png",
                           "--json", f"{OUT}/parallel_lenet-digits.json"),
        (f"{FIG}/parallel_lenet-digits.png", f"{OUT}/parallel_lenet-digits.json"), "tens of minutes"),
    Job("bench-parallel-vgg", ("bench", "parallel", "--net", "vgg-digits", "--act-depth", "16384", "--pipeline", "none",
                               "--plot", f"{FIG}/parallel_vgg-digits.png", "--json", f"{OUT}/parallel_vgg-digits.json"),
        (f"{FIG}/parallel_vgg-digits.png", f"{OUT}/parallel_vgg-digits.json"), "an hour or more"),
)


def select(only: str | None, fast: bool) -> list:
    """The jobs ``--only`` names (comma-separated; all when None), the fast ones with ``fast``."""
    jobs = list(JOBS)
    if only:
        names = [n.strip() for n in only.split(",") if n.strip()]
        unknown = sorted(set(names) - {j.name for j in JOBS})
        if unknown:
            raise SystemExit(f"regenerate_docs: unknown job(s) {', '.join(unknown)}; known: "
                             + ", ".join(j.name for j in JOBS))
        jobs = [j for j in JOBS if j.name in names]
    if fast:
        jobs = [j for j in jobs if j.fast]
    return jobs


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pymtl_fp.cli.regenerate_docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the commands and what each writes, run nothing")
    parser.add_argument("--only", metavar="NAME[,NAME...]", help="run only these jobs (names as --list prints them)")
    parser.add_argument("--fast", action="store_true", help="run only the jobs that take seconds (the explore studies)")
    args = parser.parse_args(argv)
    jobs = select(args.only, args.fast)
    if args.list:
        for j in jobs:
            print(f"{j.name} [{j.cost}]: {j.shell()}")
            print("    writes " + ", ".join(j.writes))
        return 0
    if not (ROOT / "mkdocs.yml").is_file():
        print(f"regenerate_docs: {ROOT} is not a checkout of pymtl-fp (no mkdocs.yml): run it from an editable "
              "install of the repository", file=sys.stderr)
        return 1
    (ROOT / OUT).mkdir(parents=True, exist_ok=True)
    for j in jobs:
        print(f"== {j.name}: {j.shell()}", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run(j.argv(), cwd=ROOT, check=False)
        if proc.returncode != 0:
            print(f"regenerate_docs: {j.name} failed (exit {proc.returncode})", file=sys.stderr)
            return proc.returncode
        missing = [w for w in j.writes if not (ROOT / w).is_file()]
        if missing:
            print(f"regenerate_docs: {j.name} did not write {', '.join(missing)}", file=sys.stderr)
            return 1
        print(f"== {j.name}: {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
