"""A sweep of careless and hostile input over every command of ``pymtl-fp``, each probe run as a
subprocess, and a count of how each one ended.

    python -m pymtl_fp.tb.hostile_sweep --out DIR [--only SUBSTRING] [--timeout S] [--list]

Every probe runs ``python -m pymtl_fp.cli ARGS`` in a fresh temporary working directory with
``$TMPDIR`` and ``$HOME`` pointed at private folders and a time limit, and ends as one of:

* ``clear``: meant to be refused, and it was: non-zero exit, exactly one line on stderr, nothing on
  stdout (a probe whose failure can only come after the work, such as a full disk, may print the
  work's output first: ``stdout_ok``); a Ctrl-C probe (``interrupt_after``): exit 130 with
  ``interrupted`` on its last line;
* ``valid``: meant to run (or interrupted, but done before the Ctrl-C), and it exited 0;
* ``rejected``: meant to run, refused (one clean line or not);
* ``unclear``: refused, but not in one line on stderr with nothing on stdout;
* ``silent``: meant to be refused, but it exited 0;
* ``traceback``: a Python traceback on stdout or stderr;
* ``hang``: the time limit passed (or a process of its session was left running);
* ``segfault``: ended by a signal (a negative return code);
* ``outside``: a file appeared outside the probe's output folder (its working directory, the
  temporary folder, the home directory apart from the tool chain's documented caches), or anywhere
  at all for a probe that was refused.

A probe's placeholders are those of :mod:`pymtl_fp.tb.cli_probe`: ``{tmp}`` is the probe's own
folder (its inputs and its outputs), ``{f:NAME}`` a prepared input file in it.  The probes are the
rows of the hostile-input tables (``tests/test_hostile_*.py``, read from the source tree when it is
there), the list of issue 52 and a sweep of every option of every subcommand with bad values
(negative, zero, huge, NaN, infinities, empty, wrong type, directories, missing or unwritable paths,
special files, contradicting combinations), plus small runs that must work.  The sweep prints a
table of counts and writes ``DIR/sweep.json`` with every probe (its argv, what it expected, how it
ended, its status, time, the tail of its output and any stray files).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pymtl_fp.tb.cli_probe import devices_doc, fill, kill_session, net_doc, settle

#: classes in report order; the ones after ``valid`` are defects
CLASSES = ("clear", "valid", "rejected", "unclear", "silent", "traceback", "hang", "segfault", "outside")
BAD = ("rejected", "unclear", "silent", "traceback", "hang", "segfault", "outside")

#: folders under the home directory the tool chain documents as caches (pymtl-fp's build and
#: Hypothesis caches, matplotlib's font cache, YoWASP's compiled WebAssembly): not stray files
HOME_CACHES = (".cache/pymtl-fp", ".cache/matplotlib", ".config/matplotlib", ".cache/YoWASP", ".cache/yowasp")

CLI = (sys.executable, "-m", "pymtl_fp.cli")
DEFAULT_TIMEOUT = 90.0


@dataclass
class Probe:
    """One run of the CLI (or of ``cmd``, a whole command line, for tests of the harness)."""

    id: str
    argv: list
    expect: str = "refuse"  # refuse | valid | either
    timeout: float = DEFAULT_TIMEOUT
    env: dict = field(default_factory=dict)
    stdout_ok: bool = False  # a refusal that can only come after the work (a full disk)
    interrupt_after: float | None = None  # SIGINT to the process group after this many seconds
    twice: bool = False  # two copies at once (``{i}`` in argv: 0 and 1)
    allow: tuple = ()  # working-directory paths a valid run may create (its default output folder)
    cmd: tuple | None = None
    source: str = "sweep"


# -- input files

CONV = {"type": "conv", "name": "c1", "out_channels": 4, "kernel": 3, "pad": 1}
FC = {"type": "fc", "name": "fc", "out_features": 10}


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _full(path: Path) -> None:
    """A file name whose writes fail as on a full disk."""
    os.symlink("/dev/full", path)


def _dir(path: Path) -> None:
    path.mkdir()


SWEEP_FILES = {
    "ok.json": net_doc([1, 8, 8], [CONV, FC]),
    "tiny.json": net_doc([1, 8, 8], [dict(CONV, out_channels=2), {"type": "pool", "k": 2}, FC]),
    "pool_first.json": net_doc([1, 8, 8], [{"type": "pool", "k": 2}, FC]),
    "max_layers.json": net_doc([1, 8, 8], [CONV] + [{"type": "pool", "k": 1}] * 1022 + [FC]),
    "many_layers.json": net_doc([1, 8, 8], [CONV] + [{"type": "pool", "k": 1}] * 120_000 + [FC]),
    "count24.json": net_doc([1, 8, 8], [dict(CONV, out_channels=128), {"type": "fc", "name": "f1", "out_features": 16384},
                                     FC]),
    "empty.toml": b"",
    "garbage.json": b"{not json",
    "list.json": b"[1, 2, 3]",
    "null.json": b"null",
    "no_layers.json": json.dumps({"name": "t", "input_shape": [1, 8, 8], "layers": []}).encode(),
    "neg_shape.json": net_doc([1, -8, 8], [CONV, FC]),
    "zero_shape.json": net_doc([0, 8, 8], [CONV, FC]),
    "float_ch.json": net_doc([1, 8, 8], [dict(CONV, out_channels=4.5), FC]),
    "bool_ch.json": net_doc([1, 8, 8], [dict(CONV, out_channels=True), FC]),
    "str_ch.json": net_doc([1, 8, 8], [dict(CONV, out_channels="4"), FC]),
    "kernel_big.json": net_doc([1, 8, 8], [dict(CONV, kernel=9, pad=0), FC]),
    "stride0.json": net_doc([1, 8, 8], [dict(CONV, stride=0), FC]),
    "pad_neg.json": net_doc([1, 8, 8], [dict(CONV, pad=-1), FC]),
    "pool0.json": net_doc([1, 8, 8], [CONV, {"type": "pool", "k": 0}, FC]),
    "bad_type.json": net_doc([1, 8, 8], [dict(CONV, type="lstm"), FC]),
    "dup_names.json": net_doc([1, 8, 8], [CONV, dict(CONV), FC]),
    "train_batch0.json": net_doc([1, 8, 8], [CONV, FC], batch=0),
    "train_seed_neg.json": net_doc([1, 8, 8], [CONV, FC], seed=-1),
    "train_str.json": net_doc([1, 8, 8], [CONV, FC], epochs="3"),
    "fmt_bits.json": json.dumps({"name": "t", "input_shape": [1, 8, 8], "layers": [CONV, FC],
                                 "formats": {"8": {"act": [99, 4], "weight": [8, 6], "grad": [8, 7]}}}).encode(),
    "fmt_none.json": json.dumps({"name": "t", "input_shape": [1, 8, 8], "layers": [CONV, FC], "formats": {}}).encode(),
    "unknown_key.json": json.dumps({"name": "t", "input_shape": [1, 8, 8], "layers": [CONV, FC], "colour": 1}).encode(),
    "rgb.json": net_doc([3, 8, 8], [CONV, FC]),
    "out5.json": net_doc([1, 8, 8], [CONV, dict(FC, out_features=5)]),
    "dev_empty.json": devices_doc(fpga=[]),
    "dev_count0.json": devices_doc(fpga=[{"part": "xcvu9p", "count": 0}]),
    "dev_count_neg.json": devices_doc(fpga=[{"part": "xcvu9p", "count": -3}]),
    "dev_nolink.json": json.dumps({"name": "rack", "fpga": [{"part": "xcvu9p", "count": 2}]}).encode(),
    "dev_links_short.json": devices_doc(links=[{"gbps": 10}] * 5),
    "dev_bram_neg.json": devices_doc(fpga=[{"name": "x", "dsp": 100, "bram36": -1}]),
    "dev_frac.json": devices_doc(fpga=[{"part": "xcvu9p", "count": 2, "dsp_fraction": 0}]),
    "dev_one.json": devices_doc(fpga=[{"part": "xcvu9p", "count": 1}]),
    "dev_unicode.json": devices_doc(name="r\u00e4ck\u202e"),
    "dev_name_long.json": devices_doc(name="x" * 300),
    "case_empty.json": b"",
    "case_list.json": b"[1, 2]",
    "case_garbage.json": b"{\"acc_bits\": ",
    "case_nan.json": b"{\"acc_bits\": NaN, \"out_bits\": 8, \"vectors\": []}",
    "case_cl_nodes.json": json.dumps({"nodes": 99, "latency": 8, "extra_credits": 0, "split": False, "steps": 1,
                                      "batch": 2, "param_seed": 0, "first_image": 0, "lr_log2": 4, "train_seed": 0,
                                      "stall": 0.0, "stall_seed": 0}).encode(),
    "case_cl_batch.json": json.dumps({"nodes": 1, "latency": 8, "extra_credits": 0, "split": False, "steps": 1,
                                      "batch": 10**9, "param_seed": 0, "first_image": 0, "lr_log2": 4,
                                      "train_seed": 0, "stall": 0.0, "stall_seed": 0}).encode(),
    "case_link_lat.json": json.dumps({"cfg": {"msg_bits": 16, "phit_bits": 8, "latency": 10**9, "credits": 4,
                                              "credit_latency": 2, "crc": True, "window": None}, "msgs": [1],
                                      "src_stall": 0.0, "sink_stall": 0.0, "seed": 1, "faults": None}).encode(),
    "case_link_msgs.json": json.dumps({"cfg": {"msg_bits": 16, "phit_bits": 8, "latency": 2, "credits": 4,
                                               "credit_latency": 2, "crc": True, "window": None},
                                       "msgs": list(range(200_000)), "src_stall": 0.0, "sink_stall": 0.0,
                                       "seed": 1, "faults": None}).encode(),
    "fifo.toml": _fifo,
    "fifo.json": _fifo,
    "full.json": _full,
    "full.npz": _full,
    "full.png": _full,
    "adir.toml": _dir,
    "adir.npz": _dir,
}


# -- the rows of the hostile-input tables

def _tables() -> list:
    """The test modules ``tests/test_hostile_*.py`` of the source tree (none in an installed copy)."""
    tests = Path(__file__).resolve().parents[1] / "tests"
    mods = []
    for name in ("test_hostile_inputs", "test_hostile_options", "test_hostile_paths"):
        path = tests / f"{name}.py"
        if not path.is_file():
            continue
        spec = importlib.util.spec_from_file_location(f"_sweep_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods.append((name, mod))
    return mods


def table_files(mods) -> dict:
    """Every input file the tables prepare (``FILES``, and ``CASES`` as JSON), by name."""
    files = {}
    for _, mod in mods:
        made = dict(getattr(mod, "FILES", {}))
        made.update({k: json.dumps(v).encode() for k, v in getattr(mod, "CASES", {}).items()})
        for name, content in made.items():
            if name in files and files[name] != content:
                raise ValueError(f"two tables make {name} differently")
            files[name] = content
    return files


def table_probes(mods) -> list:
    probes = []
    for name, mod in mods:
        for row in mod.ROWS:
            env = row[4] if len(row) > 4 else {}
            probes.append(Probe(f"{name[5:]}:{row[0]}", list(row[1]), env=dict(env), source=name))
    return probes


# -- the sweep's own probes

HUGE = "99999999999999999999"
BAD_VALUES = {
    "pos": ["0", "-1", HUGE, "abc", "", "1.5"],
    "nonneg": ["-1", HUGE, "abc", ""],
    "seed": ["-1", "4294967296", "x"],
    "float+": ["0", "-1", "nan", "inf", "1e400", "abc", ""],
    "float0+": ["-1", "nan", "inf", "-inf", "abc", ""],
    "prob": ["-0.1", "1.5", "nan", "inf", ""],
    "list": ["", ",", "0", "-1", "a,b", HUGE, "1,,2"],
    "word": ["", "nope", "../x"],
    "json": ["", "{tmp}/adir.json", "{tmp}/NOTADIR/x.json", "{tmp}/missing/x.json", "{tmp}/x.txt", "/proc/sweep-x.json"],
    "png": ["", "{tmp}/adir.json", "{tmp}/NOTADIR/x.png", "{tmp}/x.pdf", "/proc/sweep-x.png"],
    "npz": ["", "{tmp}/adir.npz", "{tmp}/NOTADIR/x.npz", "{tmp}/x.json"],
    "md": ["", "{tmp}/adir.json", "{tmp}/NOTADIR/x.md", "{tmp}/x.json"],
    "outdir": ["", "{f:NOTADIR}", "{tmp}/NOTADIR/sub", "/proc/sweep-out"],
    "innet": ["", "{tmp}/none.toml", "{tmp}/adir.toml", "{f:fifo.toml}", "/dev/zero", "{f:empty.toml}",
              "{f:garbage.json}", "{f:list.json}", "{f:null.json}"],
    "indev": ["", "{tmp}/none.json", "{tmp}/adir.toml", "{f:fifo.json}", "/dev/zero", "{f:empty.toml}",
              "{f:garbage.json}", "{f:list.json}"],
    "injson": ["", "{tmp}/none.json", "{tmp}/adir.json", "{f:fifo.json}", "/dev/zero", "{f:garbage.json}",
               "{f:list.json}", "{f:null.json}", "{f:empty.toml}"],
    "netout": ["", "{tmp}/adir.json", "{tmp}/NOTADIR/x.toml", "{tmp}/x.txt", "/proc/sweep-x.toml"],
    "incase": ["", "{tmp}/none.json", "{f:fifo.json}", "{f:case_empty.json}", "{f:case_list.json}",
               "{f:case_garbage.json}", "{f:case_nan.json}"],
}

TR = ["train", "--precision", "8", "--epochs", "1"]  # (a bad value accepted by mistake runs a short study)
TC = ["train", "--engine", "cluster"]
TX = ["translate", "--out", "{tmp}/t"]
FZR = ["fuzz", "--target", "requant", "--level", "fl"]
FZB = FZR + ["--seconds", "1"]
FZ = FZB + ["--out", "{tmp}/o", "--db", "{tmp}/db"]
RO = ["run-op", "--op", "fwd", "--make-case", "{tmp}/c.npz"]


def _option_sweep() -> list:
    """(prefix, option, kind) for every value-taking option of every subcommand; each bad value of
    its kind is a probe meant to be refused."""
    spec = [
        (TR, "--net", "innet"), (TR, "--dataset", "word"), (TR, "--precision", "word"), (TR, "--epochs", "pos"),
        (TR, "--batch", "pos"), (TR, "--seed", "seed"), (TR, "--lr-log2", "nonneg"), (TR, "--momentum", "pos"),
        (TR, "--schedule", "word"), (TR, "--max-memory", "word"), (TR, "--plot", "png"), (TR, "--report", "json"),
        (TC, "--net", "innet"), (TC, "--nodes", "pos"), (TC, "--level", "word"), (TC, "--node-levels", "word"),
        (TC, "--steps", "pos"), (TC, "--batch", "pos"), (TC, "--faults", "prob"), (TC, "--array", "pos"),
        (TC, "--arrays", "list"), (TC, "--act-depth", "pos"), (TC, "--weight-depth", "pos"),
        (TC, "--bias-depth", "pos"), (TC, "--weight-home", "word"), (TC, "--link-latency", "pos"),
        (TC, "--stream-lanes", "pos"), (TC, "--pipeline", "word"), (TC, "--clock-mhz", "float+"),
        (TC, "--fpga-family", "word"), (TC, "--cuts", "list"), (TC, "--tap-pack", "word"),
        (TC, "--parallel", "word"), (TC, "--groups", "pos"), (TC, "--partition", "word"), (TC, "--wgrad", "word"),
        (TC, "--bands", "nonneg"), (TC, "--topology", "word"), (TC, "--save-weights", "npz"),
        (TC, "--trace", "json"), (TC, "--timeline", "png"), (TC, "--kernel", "word"), (TC, "--report", "json"),
        (TC, "--seed", "seed"), (TC, "--lr-log2", "nonneg"), (TC, "--max-memory", "word"),
        (TX, "--config", "word"), (TX, "--unit", "word"), (TX, "--stream-lanes", "pos"), (TX, "--pipeline", "word"),
        (["translate"], "--out", "outdir"), (TX + ["--build"], "--cycles", "pos"), (TX, "--synth-timeout", "float+"),
        (TX, "--clock-ns", "float+"), (TX + ["--no-synth"], "--pnr", "word"),
        (TX + ["--unit", "cluster"], "--nodes", "pos"), (TX + ["--unit", "cluster"], "--arrays", "list"),
        (FZ, "--seconds", "float+"), (FZR + ["--out", "{tmp}/o", "--db", "{tmp}/db"], "--minutes", "float+"),
        (FZ, "--max-examples", "pos"), (FZ, "--workers", "pos"), (FZ, "--seed", "seed"), (FZ, "--out", "outdir"),
        (FZ, "--db", "outdir"), (FZ, "--inject-bug", "word"),
        (FZ, "--shrink-seconds", "float0+"), (FZ, "--json", "json"), (FZR, "--replay", "incase"),
        (FZ, "--scheduler", "word"),
        (RO, "--config", "word"), (RO, "--pipeline", "word"), (RO, "--seed", "seed"), (RO, "--stall-seed", "seed"),
        (["run-op", "--op", "fwd"], "--make-case", "npz"), (["run-op", "--op", "fwd", "--out", "{tmp}/o.npz"],
                                                           "--case", "incase"),
        (["run-op", "--op", "fwd", "--case", "{f:float.npz}"], "--out", "npz"),
    ]
    ex = {"scaling": ["explore", "scaling", "--out", "{tmp}/r", "--no-plot"],
          "partition": ["explore", "partition", "--out", "{tmp}/r", "--no-plot"],
          "design": ["explore", "design", "--out", "{tmp}/r", "--no-plot"],
          "parallelism": ["explore", "parallelism", "--out", "{tmp}/r", "--no-plot"],
          "modes": ["explore", "modes", "--out", "{tmp}/r"], "zoo": ["explore", "zoo", "--out", "{tmp}/r"]}
    spec += [(ex["scaling"], o, k) for o, k in (("--net", "innet"), ("--bits", "pos"), ("--batch", "pos"),
                                                ("--device", "word"), ("--array", "word"), ("--fpgas", "list"),
                                                ("--link", "word"), ("--pieces", "pos"), ("--split", "word"))]
    spec += [(ex["partition"], o, k) for o, k in (("--devices", "indev"), ("--pieces", "pos"), ("--bits", "pos"),
                                                  ("--batch", "pos"))]
    spec += [(ex["design"], o, k) for o, k in (("--device", "word"), ("--dram-gbs", "float+"), ("--top", "pos"),
                                               ("--modes", "word"), ("--batch", "pos"), ("--bits", "pos"))]
    spec += [(ex["parallelism"], o, k) for o, k in (("--fpgas", "list"), ("--batches", "list"), ("--link", "word"),
                                                    ("--grad-bits", "pos"), ("--pieces", "pos"))]
    spec += [(ex["modes"], o, k) for o, k in (("--arrays", "list"), ("--batches", "list"), ("--layers", "word"),
                                              ("--net", "innet"))]
    spec += [(["explore", s], "--out", "outdir") for s in ("zoo", "modes")]
    spec += [(ex["zoo"], "--net", "innet")]
    bench = {
        "engine": (("--config", "word"), ("--channels", "pos"), ("--size", "pos"), ("--ops", "word"),
                   ("--stream-lanes", "pos"), ("--drain-rows", "pos"), ("--pipeline", "word"), ("--stream", "pos"),
                   ("--json", "json")),
        "engine-cl": (("--config", "word"), ("--ops", "word"), ("--speed-op", "word"), ("--validate", "nonneg")),
        "modes": (("--layer", "word"), ("--array", "pos"), ("--engines", "pos"), ("--config", "word"),
                  ("--batch", "pos"), ("--seed", "seed")),
        "bands": (("--net", "innet"), ("--config", "word"), ("--heights", "list"), ("--json", "json")),
        "link": (("--msg-bits", "pos"), ("--phits", "list"), ("--latencies", "list"), ("--credit-latency", "pos"),
                 ("--credits", "list"), ("--messages", "pos"), ("--load", "prob"), ("--fault-rate", "prob"),
                 ("--seed", "seed")),
        "cluster": (("--nodes", "pos"), ("--batch", "pos"), ("--steps", "pos"), ("--pymtl-cycles", "nonneg"),
                    ("--json", "json")),
        "schedules": (("--net", "innet"), ("--precision", "word"), ("--epochs", "pos"), ("--batch", "pos"),
                      ("--seeds", "list"), ("--nodes", "list"), ("--time-nodes", "pos"), ("--steps", "pos"),
                      ("--act-depth", "pos"), ("--workers", "pos"), ("--json", "json"), ("--plot", "png")),
        "parallel": (("--net", "innet"), ("--precision", "word"), ("--nodes", "list"), ("--batches", "list"),
                     ("--steps", "pos"), ("--act-depth", "pos"), ("--workers", "pos"), ("--json", "json"),
                     ("--plot", "png")),
        "storage": (("--nets", "word"), ("--precision", "word"), ("--nodes", "list"), ("--batches", "list"),
                    ("--steps", "pos"), ("--act-depth", "pos"), ("--stream-lanes", "pos"), ("--wgrads", "word"),
                    ("--bands", "list"), ("--band-passes", "word"), ("--workers", "pos"), ("--json", "json")),
        "weights": (("--nets", "word"), ("--precision", "word"), ("--nodes", "list"), ("--batches", "list"),
                    ("--steps", "pos"), ("--array", "pos"), ("--stream-lanes", "pos"), ("--workers", "pos"),
                    ("--json", "json")),
        "model": (("--nets", "word"), ("--precision", "word"), ("--nodes", "list"), ("--batches", "list"),
                  ("--schedule", "word"), ("--link-flits", "pos"), ("--steps", "pos"), ("--workers", "pos"),
                  ("--markdown", "md"), ("--json", "json")),
        "scaling": (("--net", "innet"), ("--precision", "word"), ("--nodes", "list"), ("--batch", "pos"),
                    ("--link-flits", "list"), ("--curve-to", "pos"), ("--level", "word"), ("--steps", "pos"),
                    ("--workers", "pos"), ("--plot", "png"), ("--markdown", "md"), ("--json", "json"),
                    ("--simulated", "injson")),
        "clock": (("--markdown", "md"),),
        "epoch": (("--net", "innet"), ("--precision", "word"), ("--nodes", "pos"), ("--array", "pos"),
                  ("--stream-lanes", "pos"), ("--batch", "pos"), ("--steps", "pos"), ("--json", "json")),
    }
    spec += [(["bench", b], o, k) for b, opts in bench.items() for o, k in opts]
    imp = ["import", "{f:avgpool.onnx}"]
    spec += [(imp, "--out", "netout")]
    spec += [(imp + ["--out", "{tmp}/n.toml"], o, k) for o, k in (("--input-shape", "list"), ("--name", "word"),
                                                                  ("--like", "word"))]
    spec += [(["doctor"], "--prefer", "word")]
    return spec


#: (option, value) pairs the kinds list that are valid for that option (``bench storage --bands 0``:
#: whole layers; ``bench schedules --seeds 0``)
VALID_VALUES = {("--bands", "0"), ("--seeds", "0")}


def _without(prefix: list, option: str) -> list:
    """``prefix`` without ``option`` and its value (the option swept replaces it)."""
    out, skip = [], False
    for a in prefix:
        if skip:
            skip = False
            continue
        if a == option:
            skip = True
            continue
        out.append(a)
    return out


def sweep_probes() -> list:
    """One probe per (option, bad value); a value is written ``--opt=value`` so that a value
    starting with ``-`` stays the option's."""
    probes, seen = [], set()
    for prefix, option, kind in _option_sweep():
        for value in BAD_VALUES[kind]:
            if (option, value) in VALID_VALUES:
                continue
            argv = _without(prefix, option) + [f"{option}={value}"]
            pid = "opt:" + " ".join(argv)
            if pid in seen:
                continue
            seen.add(pid)
            probes.append(Probe(pid, argv))
    return probes


def issue_probes() -> list:
    """The list of issue 52, as a careless or hostile user would try it, and runs that must work."""
    cl1 = TC + ["--nodes", "1", "--steps", "1", "--batch", "2"]
    tmp_db = {"PYMTL_FP_HYPOTHESIS_DB": "{tmp}/db"}
    P = Probe
    return [
        # field overflows and nets that pass every limit but cannot run
        P("issue:batch-719", TC + ["--steps", "epoch", "--batch", "719"]),
        P("issue:count-24bit", TC + ["--nodes", "1", "--net", "{f:count24.json}"], expect="either"),
        P("issue:count-24bit-golden", ["train", "--net", "{f:count24.json}", "--max-memory", "512M"]),
        P("issue:big-input-golden", TR + ["--net", "{f:big_input.json}"]),
        P("issue:big-input-cluster", TC + ["--nodes", "1", "--net", "{f:big_input.json}"]),
        P("issue:wide-conv-golden", ["train", "--net", "{f:wide.json}", "--max-memory", "512M"]),
        P("issue:wide-conv-cluster", TC + ["--nodes", "1", "--net", "{f:wide.json}"]),
        P("issue:many-layers-train", TR + ["--net", "{f:many_layers.json}"]),
        P("issue:many-layers-partition", ["explore", "partition", "--net", "{f:many_layers.json}", "--out", "{tmp}/r"]),
        P("issue:many-layers-scaling", ["explore", "scaling", "--net", "{f:many_layers.json}", "--out", "{tmp}/r"]),
        P("issue:max-layers-partition", ["explore", "partition", "--net", "{f:max_layers.json}", "--out", "{tmp}/r",
                                         "--no-plot"], expect="either"),
        P("issue:max-layers-scaling", ["explore", "scaling", "--net", "{f:max_layers.json}", "--out", "{tmp}/r",
                                       "--no-plot", "--fpgas", "1..8"], expect="either"),
        P("issue:max-layers-golden", TR + ["--net", "{f:max_layers.json}", "--epochs", "1", "--precision", "8"],
          expect="either", timeout=120),
        P("issue:max-layers-cluster", TC + ["--net", "{f:max_layers.json}", "--nodes", "1", "--steps", "1"],
          expect="either", timeout=120),
        P("issue:net-epochs", TR + ["--net", "{f:epochs.json}"]),
        # Dask addresses and interrupts
        P("issue:design-scheduler-unreachable", ["explore", "design", "--out", "{tmp}/r", "--no-plot",
                                                 "--scheduler", "tcp://127.0.0.1:9"]),
        P("issue:fuzz-scheduler-unreachable", FZ + ["--scheduler", "tcp://127.0.0.1:9"]),
        P("issue:fuzz-scheduler-host", FZ + ["--scheduler", "tcp://no-such-host.invalid:8786"]),
        P("issue:fuzz-scheduler-ipv6-garbage", FZ + ["--scheduler", "tcp://[zz]:1"]),
        *[P(f"issue:ctrl-c-dask-{t}s", FZR + ["--seconds", "600", "--workers", "2", "--force-workers", "--out",
                                                "{tmp}/o", "--db", "{tmp}/db"], interrupt_after=t, timeout=60,
            expect="either")
          for t in (0.5, 2.0, 4.0, 8.0)],
        P("issue:ctrl-c-processes", FZR + ["--seconds", "600", "--scheduler", "processes", "--out", "{tmp}/o",
                                             "--db", "{tmp}/db"], interrupt_after=5.0, timeout=60, expect="either"),
        P("issue:ctrl-c-train", TC + ["--steps", "epoch"], interrupt_after=6.0, timeout=60, expect="either"),
        P("issue:ctrl-c-design-dask", ["explore", "design", "--out", "{tmp}/r", "--scheduler", "local"],
          interrupt_after=3.0, timeout=60, expect="either"),
        P("issue:ctrl-c-synth", ["translate", "--unit", "requant", "--config", "small", "--out", "{tmp}/t"],
          interrupt_after=5.0, timeout=60, expect="either"),
        # late write failures (a full disk): one line naming the file
        P("issue:trace-full-disk", cl1 + ["--trace", "{f:full.json}"], stdout_ok=True),
        P("issue:report-full-disk", cl1 + ["--report", "{f:full.json}"], stdout_ok=True),
        P("issue:weights-full-disk", cl1 + ["--save-weights", "{f:full.npz}"], stdout_ok=True),
        P("issue:timeline-full-disk", cl1 + ["--timeline", "{f:full.png}"], stdout_ok=True),
        P("issue:fuzz-json-full-disk", FZ + ["--seconds", "5", "--max-examples", "3", "--json", "{f:full.json}",
                                             "--scheduler", "processes"], stdout_ok=True),
        P("issue:make-case-full-disk", ["run-op", "--op", "update", "--make-case", "{f:full.npz}"], stdout_ok=True),
        # replay files
        P("issue:replay-garbage", ["fuzz", "--target", "requant", "--level", "fl", "--replay", "{f:case_garbage.json}"]),
        P("issue:replay-cluster-nodes", ["fuzz", "--target", "cluster", "--level", "fl", "--replay",
                                         "{f:case_cl_nodes.json}"]),
        P("issue:replay-cluster-batch", ["fuzz", "--target", "cluster", "--level", "fl", "--replay",
                                         "{f:case_cl_batch.json}"]),
        P("issue:replay-link-latency", ["fuzz", "--target", "link", "--level", "fl", "--replay",
                                        "{f:case_link_lat.json}"]),
        P("issue:replay-link-msgs", ["fuzz", "--target", "link", "--level", "fl", "--replay",
                                     "{f:case_link_msgs.json}"]),
        P("issue:replay-wrong-target", ["fuzz", "--target", "link", "--level", "fl", "--replay", "{f:rq_ok.json}"]),
        P("issue:replay-with-scheduler", ["fuzz", "--target", "requant", "--level", "fl", "--replay",
                                          "{f:rq_ok.json}", "--scheduler", "processes"]),
        # contradictions
        P("combo:golden-trace", TR + ["--trace", "{tmp}/t.json"]),
        P("combo:golden-steps", TR + ["--steps", "3"]),
        P("combo:cluster-plot", TC + ["--plot", "{tmp}/p.png"]),
        P("combo:groups-pipeline", TC + ["--groups", "2"]),
        P("combo:groups-not-dividing", TC + ["--parallel", "hybrid", "--groups", "3"]),
        P("combo:data-cuts", TC + ["--parallel", "data", "--cuts", "0,1,2,3,4"]),
        P("combo:bands-all-no-bands", TC + ["--bands", "0", "--bands-all"]),
        P("combo:bands-backward-no-bands", TC + ["--bands", "0", "--bands-backward"]),
        P("combo:arrays-and-array", TC + ["--arrays", "4,4,4,4", "--array", "8"]),
        P("combo:node-levels-no-mixed", TC + ["--node-levels", "cl,cl,cl,cl"]),
        P("combo:fit-buffers-depth", TC + ["--fit-buffers", "--act-depth", "4096"]),
        P("combo:translate-vcd-no-synth-timeout", TX + ["--no-synth", "--synth-timeout", "1"]),
        P("combo:translate-cluster-config", ["translate", "--unit", "cluster", "--config", "tiny", "--out", "{tmp}/t"]),
        P("combo:translate-link-lanes", ["translate", "--unit", "link", "--stream-lanes", "2", "--out", "{tmp}/t"]),
        P("combo:translate-requant-pipeline", ["translate", "--unit", "requant", "--config", "small", "--pipeline", "all",
                                               "--out", "{tmp}/t"]),
        P("combo:fuzz-minutes-seconds", ["fuzz", "--target", "requant", "--minutes", "1", "--seconds", "1"]),
        P("combo:fuzz-no-target", ["fuzz", "--seconds", "1"]),
        P("combo:fuzz-inject-unknown", FZ + ["--inject-bug", "nope"]),
        P("combo:fuzz-inject-fl", FZ + ["--inject-bug", "round_half_up"]),
        P("combo:fuzz-level-requant-verilator-replay", ["fuzz", "--target", "requant", "--level", "cl", "--replay",
                                                        "{f:rq_ok.json}"]),
        P("combo:run-op-no-case", ["run-op", "--op", "fwd"]),
        P("combo:run-op-case-and-make", ["run-op", "--op", "fwd", "--case", "{f:float.npz}", "--make-case",
                                         "{tmp}/c.npz"]),
        P("combo:run-op-same-file", ["run-op", "--op", "fwd", "--make-case", "{tmp}/c.npz", "--out", "{tmp}/c.npz"]),
        P("combo:design-workers-local-0", ["explore", "design", "--out", "{tmp}/r", "--scheduler", "local",
                                           "--workers", "0"]),
        P("combo:scaling-link-dup", ["explore", "scaling", "--out", "{tmp}/r", "--link", "inf,inf"]),
        P("combo:parallelism-two-links", ["explore", "parallelism", "--out", "{tmp}/r", "--link", "inf,250G"]),
        P("combo:modes-layer-unknown", ["explore", "modes", "--out", "{tmp}/r", "--layers", "nope"]),
        P("combo:partition-devices-one", ["explore", "partition", "--out", "{tmp}/r", "--no-plot", "--devices",
                                          "{f:dev_one.json}"], expect="either"),
        P("combo:bench-schedules-time-nodes", ["bench", "schedules", "--nodes", "1,2", "--time-nodes", "5"]),
        P("combo:bench-model-same-file", ["bench", "model", "--json", "{tmp}/m.json", "--markdown", "{tmp}/m.json"]),
        P("combo:bench-scaling-same-file", ["bench", "scaling", "--plot", "{tmp}/s.png", "--json", "{tmp}/s.png"]),
        P("combo:bench-parallel-same-file", ["bench", "parallel", "--plot", "{tmp}/s.json", "--json", "{tmp}/s.json"]),
        P("combo:doctor-extra", ["doctor", "--bogus"]),
        P("combo:no-command", []),
        P("combo:unknown-command", ["fly"]),
        # more net files
        *[P(f"net:{n}", TC + ["--nodes", "1", "--net", "{f:" + n + "}"]) for n in (
            "no_layers.json", "neg_shape.json", "zero_shape.json", "float_ch.json", "bool_ch.json", "str_ch.json",
            "kernel_big.json", "stride0.json", "pad_neg.json", "pool0.json", "bad_type.json", "dup_names.json",
            "train_batch0.json", "train_seed_neg.json", "train_str.json", "fmt_bits.json", "fmt_none.json",
            "unknown_key.json")],
        P("net:pool-first-cluster", TC + ["--nodes", "1", "--net", "{f:pool_first.json}"]),
        P("net:pool-first-golden", TR + ["--net", "{f:pool_first.json}"], expect="valid"),
        P("net:rgb-digits", TR + ["--net", "{f:rgb.json}"]),
        P("net:out5-digits", TR + ["--net", "{f:out5.json}"]),
        P("net:rgb-explore", ["explore", "zoo", "--net", "{f:garbage.json}", "--out", "{tmp}/r"]),
        P("net:bench-bands-many-layers", ["bench", "bands", "--net", "{f:many_layers.json}"]),
        P("net:bench-scaling-wide", ["bench", "scaling", "--net", "{f:wide.json}"]),
        # more devices files
        *[P(f"devices:{n}", ["explore", "partition", "--out", "{tmp}/r", "--no-plot", "--devices", "{f:" + n + "}"])
          for n in ("dev_empty.json", "dev_count0.json", "dev_count_neg.json", "dev_links_short.json",
                    "dev_bram_neg.json", "dev_frac.json", "dev_unicode.json", "dev_name_long.json")],
        P("devices:nolink", ["explore", "partition", "--out", "{tmp}/r", "--no-plot", "--devices",
                             "{f:dev_nolink.json}"], expect="either"),
        # environment
        P("env:build-dir-file", TC + ["--level", "verilator", "--steps", "1"],
          env={"PYMTL_FP_BUILD_DIR": "{f:NOTADIR}"}),
        P("env:build-dir-ro", ["translate", "--unit", "requant", "--config", "small", "--out", "{tmp}/t", "--build",
                                 "--no-synth"], env={"PYMTL_FP_BUILD_DIR": "/proc/sweep-build"}),
        P("env:verilator-bogus", ["doctor"], env={"PYMTL_FP_VERILATOR": "bogus"}),
        P("env:sim-threads", TC + ["--level", "verilator", "--steps", "1"], env={"PYMTL_FP_SIM_THREADS": "-3"}),
        P("env:profile", FZ + ["--max-examples", "2"], env={"PYMTL_FP_PROFILE": "nope"}, expect="either"),
        P("env:threads-word", TC + ["--level", "verilator", "--steps", "1"], env={"PYMTL_FP_SIM_THREADS": "two"}),
        P("env:verilator-bogus-translate", ["translate", "--unit", "requant", "--config", "small", "--out",
                                            "{tmp}/t", "--no-synth"], env={"PYMTL_FP_VERILATOR": "nope"}),
        P("env:db-file", ["fuzz", "--target", "requant", "--level", "fl", "--seconds", "1", "--out", "{tmp}/o"],
          env={"PYMTL_FP_HYPOTHESIS_DB": "{f:NOTADIR}"}),
        # runs that must work (small), one per command and level
        P("valid:doctor", ["doctor"], expect="valid"),
        P("valid:train-golden-8", TR + ["--precision", "8", "--epochs", "1", "--report", "{tmp}/r.json"],
          expect="valid"),
        P("valid:train-cl", cl1 + ["--report", "{tmp}/r.json", "--trace", "{tmp}/t.json", "--save-weights",
                                   "{tmp}/w.npz"], expect="valid"),
        P("valid:train-fl", cl1 + ["--level", "fl"], expect="valid"),
        P("valid:train-cl-4", TC + ["--link-latency", "511"], expect="valid"),
        P("valid:train-rtl", TC + ["--nodes", "1", "--steps", "1", "--batch", "1", "--level", "rtl",
                                   "--net", "{f:tiny.json}"], expect="valid", timeout=300),
        P("valid:train-verilator", TC + ["--level", "verilator", "--steps", "1", "--nodes", "2"], expect="valid",
          timeout=300),
        P("valid:train-mixed", TC + ["--level", "mixed", "--node-levels", "cl,fl,fl,fl", "--steps", "1"],
          expect="valid"),
        P("valid:translate-engine", TX + ["--config", "tiny", "--no-synth"], expect="valid"),
        P("valid:translate-link", ["translate", "--unit", "link", "--config", "tiny", "--out", "{tmp}/t", "--no-synth"],
          expect="valid"),
        P("valid:translate-requant", ["translate", "--unit", "requant", "--config", "small", "--out", "{tmp}/t",
                                       "--no-synth"],
          expect="valid"),
        P("valid:translate-node", ["translate", "--unit", "node", "--config", "tiny", "--out", "{tmp}/t",
                                   "--no-synth"], expect="valid", timeout=150),
        P("valid:translate-cluster", ["translate", "--unit", "cluster", "--out", "{tmp}/t", "--no-synth"],
          expect="valid", timeout=150),
        P("valid:fuzz-requant-processes", FZ + ["--max-examples", "5", "--scheduler", "processes"], expect="valid"),
        P("valid:fuzz-requant-dask", FZ + ["--max-examples", "5", "--seconds", "3"], expect="valid", timeout=120),
        P("valid:fuzz-link-fl", ["fuzz", "--target", "link", "--level", "fl", "--seconds", "2", "--max-examples",
                                 "3", "--scheduler", "processes", "--out", "{tmp}/o"], env=tmp_db, expect="valid"),
        P("valid:fuzz-replay", ["fuzz", "--target", "requant", "--level", "fl", "--replay", "{f:rq_ok.json}"],
          expect="valid"),
        P("valid:fuzz-list", ["fuzz", "--list"], expect="valid"),
        P("valid:run-op", ["run-op", "--op", "update", "--make-case", "{tmp}/c.npz"], expect="valid"),
        *[P(f"valid:explore-{s}", ["explore", s, "--out", "{tmp}/r"] + a, expect="valid") for s, a in (
            ("scaling", ["--fpgas", "1..8", "--no-plot"]), ("partition", ["--no-plot"]),
            ("design", ["--no-plot", "--net", "lenet-digits"]), ("parallelism", ["--fpgas", "1,2", "--batches", "8",
                                                                                  "--no-plot"]),
            ("modes", ["--arrays", "16", "--batches", "4"]), ("zoo", ["--net", "vgg16"]))],
        P("valid:explore-zoo-default-out", ["explore", "zoo", "--net", "vgg16"], expect="valid", allow=("reports",)),
        P("valid:bench-bands", ["bench", "bands", "--heights", "1,all", "--json", "{tmp}/b.json"], expect="valid"),
        P("valid:bench-cluster", ["bench", "cluster", "--nodes", "1", "--steps", "1", "--batch", "2",
                                  "--pymtl-cycles", "0"], expect="either", timeout=150),
        P("valid:bench-link", ["bench", "link", "--quick", "--level", "cl"], expect="valid", timeout=120),
        # the Verilator build cache: two runs building one model at once
        P("issue:build-lock", ["translate", "--unit", "requant", "--config", "small", "--out", "{tmp}/t{i}", "--build",
                               "--no-synth"],
          expect="valid", twice=True, env={"PYMTL_FP_BUILD_DIR": "{tmp}/build"}, timeout=240),
    ]


def all_probes(mods=None) -> tuple:
    """``(probes, files)``: the tables' rows, the issue's list, the option sweep; every input file."""
    mods = _tables() if mods is None else mods
    files = table_files(mods)
    for name, content in SWEEP_FILES.items():
        files.setdefault(name, content)
    probes = table_probes(mods) + issue_probes() + sweep_probes()
    ids = [p.id for p in probes]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate probe ids: " + ", ".join(sorted({i for i in ids if ids.count(i) > 1})))
    return probes, files


# -- running and classifying

def _walk(root: Path, skip=()) -> set:
    """Every file and folder under ``root`` (not following links), relative, minus ``skip`` prefixes."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        keep = []
        for d in dirnames:
            r = os.path.normpath(os.path.join(rel, d))
            if any(r == s or r.startswith(s + os.sep) for s in skip):
                continue
            if not any(s.startswith(r + os.sep) for s in skip):  # (not a cache's parent, such as .cache)
                found.add(r)
            keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            found.add(os.path.normpath(os.path.join(rel, f)))
    return found


def _prepare(work: Path, probe: Probe, files: dict) -> None:
    text = " ".join(probe.argv) + " " + " ".join(probe.env.values())
    for name, content in files.items():
        if name in text:
            path = work / name
            if callable(content):
                content(path)
            else:
                path.write_bytes(content)
    if not (work / "NOTADIR").exists():
        (work / "NOTADIR").write_bytes(b"a file, not a directory")
    if not (work / "adir.json").exists():
        (work / "adir.json").mkdir()


def _start(probe: Probe, argv: list, cwd: Path, env: dict):
    cmd = list(probe.cmd) if probe.cmd is not None else list(CLI) + argv
    # (SIGINT as a terminal leaves it: a sweep started in the background has it ignored, and Python
    # then never sees a Ctrl-C)
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True, stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _finish(proc, probe: Probe, started: float) -> tuple:
    """``(rc, out, err, timed_out, left)``."""
    timed_out = False
    try:
        if probe.interrupt_after is not None:
            try:
                out, err = proc.communicate(timeout=probe.interrupt_after)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGINT)
                out, err = proc.communicate(timeout=max(1.0, probe.timeout - (time.monotonic() - started)))
        else:
            out, err = proc.communicate(timeout=probe.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_session(proc.pid)
        out, err = proc.communicate()
    left = settle(proc.pid, 30)
    kill_session(proc.pid)
    return proc.returncode, out or "", err or "", timed_out, left


def classify(probe: Probe, rc, out: str, err: str, timed_out: bool, left: list, stray: list) -> str:
    """How a probe ended (one of :data:`CLASSES`)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if timed_out or left:
        return "hang"
    if rc is not None and rc < 0:
        return "segfault"
    if "Traceback (most recent call last)" in err or "Traceback (most recent call last)" in out:
        return "traceback"
    if stray:
        return "outside"
    if probe.interrupt_after is not None:
        if rc == 0 and probe.expect != "refuse":
            return "valid"
        ok = rc == 130 and lines and lines[-1].endswith(": interrupted")
        return "clear" if ok else "unclear"
    if probe.stdout_ok and rc not in (0, None):  # (a campaign's progress lines come before its last line)
        return "clear" if lines and ": error: " in lines[-1] else "unclear"
    if rc == 0:
        return "valid" if probe.expect in ("valid", "either") else "silent"
    one_line = len(lines) == 1 and (probe.stdout_ok or not out.strip())
    if probe.expect == "valid":
        return "rejected"
    return "clear" if one_line else "unclear"


def run_probe(probe: Probe, files: dict, base: Path, home: Path, env: dict | None = None) -> dict:
    """Run one probe in a fresh folder under ``base``; the result row of the JSON report."""
    root = Path(tempfile.mkdtemp(prefix="probe-", dir=base))
    work, cwd, tmpdir = root / "work", root / "cwd", root / "tmpdir"
    for d in (work, cwd, tmpdir):
        d.mkdir()
    _prepare(work, probe, files)
    run_env = dict(os.environ if env is None else env)
    run_env.update({"TMPDIR": str(tmpdir), "HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"})
    run_env.update({k: fill(v, work) for k, v in probe.env.items()})
    home_before = _walk(home, HOME_CACHES)
    work_before = _walk(work)
    started = time.monotonic()
    copies = [[fill(a.replace("{i}", str(i)), work) for a in probe.argv] for i in range(2 if probe.twice else 1)]
    procs = [_start(probe, argv, cwd, run_env) for argv in copies]
    results = [_finish(p, probe, started) for p in procs]
    seconds = time.monotonic() - started
    rc = next((r[0] for r in results if r[0] != 0), results[0][0])
    out = "\n".join(r[1] for r in results)
    err = "\n".join(r[2] for r in results)
    timed_out = any(r[3] for r in results)
    left = [pid for r in results for pid in r[4]]
    stray = [f"cwd/{p}" for p in sorted(_walk(cwd)) if not any(p == a or p.startswith(a + os.sep)
                                                                for a in probe.allow)]
    stray += [f"$TMPDIR/{p}" for p in sorted(_walk(tmpdir))]
    stray += [f"$HOME/{p}" for p in sorted(_walk(home, HOME_CACHES) - home_before)]
    cls_stray = list(stray)
    new_work = sorted(_walk(work) - work_before)
    refused = rc != 0
    if refused and probe.interrupt_after is None and not probe.stdout_ok:
        cls_stray += [f"{{tmp}}/{p}" for p in new_work]  # a refusal writes nothing at all
    cls = classify(probe, rc, out, err, timed_out, left, cls_stray)
    row = {"id": probe.id, "source": probe.source, "argv": probe.argv, "expect": probe.expect, "class": cls,
           "returncode": rc, "seconds": round(seconds, 2), "stderr_tail": err[-1500:], "stdout_tail": out[-600:],
           "stray": cls_stray, "left_processes": left}
    os.chmod(root, 0o700)
    for dirpath, dirnames, _ in os.walk(root):
        for d in dirnames:
            try:
                os.chmod(os.path.join(dirpath, d), 0o700)
            except OSError:
                pass
    shutil.rmtree(root, ignore_errors=True)
    return row


def _home(base: Path) -> Path:
    """A private home directory; YoWASP's compiled cache (minutes to make) linked from the real one."""
    home = base / "home"
    home.mkdir(exist_ok=True)
    real = Path.home() / ".cache" / "YoWASP"
    if real.is_dir() and not (home / ".cache" / "YoWASP").exists():
        (home / ".cache").mkdir(exist_ok=True)
        os.symlink(real, home / ".cache" / "YoWASP")
    return home


def count_table(rows: list) -> str:
    counts = {c: 0 for c in CLASSES}
    for r in rows:
        counts[r["class"]] += 1
    lines = [f"{'class':<10} {'probes':>6}"] + [f"{c:<10} {n:>6}" for c, n in counts.items()]
    lines.append(f"{'total':<10} {len(rows):>6}")
    return "\n".join(lines)


def sweep(probes: list, files: dict, out: Path, say=print) -> list:
    """Run ``probes`` one after the other; write ``out/sweep.json`` as it goes; the rows."""
    out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="hostile-sweep-"))
    env = dict(os.environ)
    env.setdefault("PYMTL_FP_BUILD_DIR", str(Path.home() / ".cache" / "pymtl-fp" / "build"))
    home = _home(base)
    rows = []
    try:
        for i, probe in enumerate(probes):
            row = run_probe(probe, files, base, home, env)
            rows.append(row)
            mark = "" if row["class"] in ("clear", "valid") else "   <--"
            say(f"[{i + 1}/{len(probes)}] {row['class']:<9} {row['seconds']:6.1f} s  {probe.id}{mark}")
            (out / "sweep.json").write_text(json.dumps({"counts": _counts(rows), "probes": rows}, indent=1) + "\n")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return rows


def _counts(rows) -> dict:
    return {c: sum(r["class"] == c for r in rows) for c in CLASSES}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pymtl_fp.tb.hostile_sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for sweep.json")
    ap.add_argument("--only", action="append", help="run only the probes whose id contains this (repeatable)")
    ap.add_argument("--timeout", type=float, help="time limit of every probe (default: each probe's own)")
    ap.add_argument("--list", action="store_true", help="list the probes and exit")
    args = ap.parse_args(argv)
    probes, files = all_probes()
    if args.only:
        probes = [p for p in probes if any(s in p.id for s in args.only)]
    if args.timeout:
        for p in probes:
            p.timeout = args.timeout
    if args.list:
        for p in probes:
            print(f"{p.expect:<7} {p.id}")
        print(f"{len(probes)} probes")
        return 0
    rows = sweep(probes, files, Path(args.out))
    print(count_table(rows))
    bad = [r for r in rows if r["class"] in BAD]
    for r in bad:
        print(f"  {r['class']:<9} {r['id']}: {r['stderr_tail'].strip().splitlines()[-1:] or r['stdout_tail'][-200:]}")
    print(f"wrote {Path(args.out) / 'sweep.json'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

