"""Careless and hostile input to the bench, explore, distributed and replay paths: a one-line error
naming the option or field (and the limit), exit status 1, no traceback, nothing written but the
inputs the row made, and no work started (no cluster contacted, nothing simulated or swept).

Each row: ``(id, argv, pattern)``.  ``argv`` may name a prepared case file (``{f:NAME}``, made from
``CASES``) and ``{tmp}``.  The end of the file checks what the table cannot: a fuzz campaign writes
nothing outside its folders, a replayed case within its limits still runs, and Ctrl-C leaves no
process behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pymtl_fp.cli.main import main as cli_main
from pymtl_fp.tb.cli_probe import fill, kill_session, listing, settle

RQ_VECTOR = {"acc": 300, "shift": 2, "stochastic": False, "relu": False, "seed": 0, "tensor_id": 0, "index": 0}
RQ = {"acc_bits": 16, "out_bits": 8, "vectors": [RQ_VECTOR]}
LINK = {"cfg": {"msg_bits": 16, "phit_bits": 8, "latency": 2, "credits": 4, "credit_latency": 2, "crc": True,
                "window": None}, "msgs": [1, 2, 3], "src_stall": 0.2, "sink_stall": 0.0, "seed": 1, "faults": None}
CLUSTER = {"nodes": 1, "latency": 8, "extra_credits": 0, "split": False, "steps": 1, "batch": 2, "param_seed": 0,
           "first_image": 0, "lr_log2": 4, "train_seed": 0, "stall": 0.0, "stall_seed": 0}
ENGINE = {"config": "tiny", "op": "update", "stall": [0.0, 0.0, 0.0], "stall_seed": 0, "case": {}}

CASES = {
    "rq_ok.json": RQ,
    "rq_str.json": dict(RQ, acc_bits="16"),
    "rq_vec.json": dict(RQ, vectors=[5]),
    "rq_empty.json": dict(RQ, vectors=[]),
    "rq_shift.json": dict(RQ, vectors=[dict(RQ_VECTOR, shift=10**6)]),
    "rq_bool.json": dict(RQ, out_bits=True),
    "cl_neg.json": dict(CLUSTER, first_image=-5),
    "cl_past.json": dict(CLUSTER, first_image=60, steps=2, batch=6),
    "cl_stall.json": dict(CLUSTER, stall=0.9999),
    "cl_sched.json": dict(CLUSTER, schedule="chaos"),
    "link_stall.json": dict(LINK, src_stall=0.9999),
    "link_msg.json": dict(LINK, msgs=[2**20]),
    "link_fault.json": dict(LINK, faults={"seed": 1, "bit_rate": 0.9, "burst_rate": 0.0, "drop_rate": 0.0}),
    "link_cfg.json": dict(LINK, cfg=dict(LINK["cfg"], bogus=1)),
    "eng_stall.json": dict(ENGINE, stall=[0.9999, 0, 0]),
    "eng_two.json": dict(ENGINE, stall=[0.0, 0.0]),
    "eng_preset.json": dict(ENGINE, config="huge"),
    "eng_case.json": dict(ENGINE, op="fwd", case={"x": 1}),
}

FZ = ["fuzz", "--target", "requant", "--level", "fl", "--seconds", "1", "--scheduler"]
RP = ["fuzz", "--level", "fl", "--target"]
DS = ["explore", "design", "--out", "{tmp}/r", "--no-plot"]
ROWS = [
    # bench: refused before any run, through the CLI's error edge
    ("bench-cluster-nodes-64", ["bench", "cluster", "--nodes", "64"], r"bench cluster --nodes 64: .*at most 6 nodes"),
    ("bench-cluster-nodes-tiles", ["bench", "cluster", "--nodes", "12"], r"at most 6 nodes"),
    ("bench-cluster-pymtl-cycles", ["bench", "cluster", "--pymtl-cycles", "10000000"],
     r"--pymtl-cycles must be in 0\.\.100000"),
    ("bench-weights-array", ["bench", "weights", "--array", "64"], r"--array must be in 1\.\.32, got 64"),
    ("bench-weights-nodes", ["bench", "weights", "--nodes", "16"], r"lenet-digits on 16 nodes.*at most 6 nodes"),
    ("bench-weights-lanes", ["bench", "weights", "--array", "6", "--stream-lanes", "3", "--nodes", "2"],
     r"stream_lanes=3"),
    ("bench-bands-json-suffix", ["bench", "bands", "--json", "{tmp}/b.txt"], r"--json .*must end in \.json"),
    ("bench-bands-json-notadir", ["bench", "bands", "--json", "{tmp}/none/b.json"], r"--json .*does not exist"),
    ("bench-parallel-net-missing", ["bench", "parallel", "--net", "{tmp}/none.toml"], r"--net .*none.toml"),
    # explore: unbounded studies refused with their count
    ("explore-parallelism-batches", ["explore", "parallelism", "--batches", "1..1048576", "--out", "{tmp}/r"],
     r"8,388,608 .*configurations.*at most 2,048"),
    ("explore-modes-batches", ["explore", "modes", "--batches", "1..1048576", "--out", "{tmp}/r"],
     r"2,097,152 .*at most 4,096"),
    ("explore-scaling-optimal", ["explore", "scaling", "--fpgas", "1..4096", "--optimal", "--out", "{tmp}/r"],
     r"--optimal: 20,480 .*at most 1,024"),
    ("explore-scaling-sizes", ["explore", "scaling", "--fpgas", "1..4096", "--out", "{tmp}/r"],
     r"20,480 .*at most 4,096"),
    ("explore-range-end", ["explore", "scaling", "--fpgas", "1..99999999999999", "--out", "{tmp}/r"],
     r"--fpgas: 99999999999999 is outside 1\.\.4096"),
    ("explore-batches-end", ["explore", "modes", "--batches", "1..99999999999999999", "--out", "{tmp}/r"],
     r"--batches: 99999999999999999 is outside"),
    ("explore-design-top", DS + ["--top", "99999999999999999999"], r"--top must be in 1\.\.100000"),
    ("explore-empty-item", ["explore", "scaling", "--fpgas", "1,,2", "--out", "{tmp}/r"], r"--fpgas 1,,2: an empty item"),
    ("explore-link-empty-item", ["explore", "scaling", "--link", "inf,,250G", "--out", "{tmp}/r"],
     r"--link inf,,250G: an empty item"),
    # explore design: --workers and --scheduler
    ("design-workers-alone", DS + ["--workers", "3"], r"--workers 3: .*give --scheduler local"),
    ("design-workers-remote", DS + ["--workers", "3", "--scheduler", "tcp://127.0.0.1:8786"],
     r"a running scheduler's workers are its own"),
    ("design-scheduler-garbage", DS + ["--scheduler", "garbage"], r"--scheduler garbage: give local or a Dask"),
    ("design-scheduler-scheme", DS + ["--scheduler", "foo://bar:1"], r"scheme 'foo' is not one of tcp://, tls://"),
    # fuzz: Dask addresses checked before any connection
    ("fuzz-scheduler-no-port", FZ + ["tcp://garbage"], r"tcp://HOST:PORT"),
    ("fuzz-scheduler-scheme", FZ + ["foo://bar"], r"scheme 'foo'"),
    ("fuzz-scheduler-empty-host", FZ + ["tcp://"], r"tcp://HOST:PORT"),
    ("fuzz-scheduler-inproc", FZ + ["inproc://x"], r"scheme 'inproc'"),
    ("fuzz-scheduler-ucx", FZ + ["ucx://1.2.3.4:1"], r"scheme 'ucx'"),
    ("fuzz-scheduler-port", FZ + ["tcp://host:99999"], r"port 1\.\.65535"),
    ("fuzz-scheduler-word", FZ + ["somewhere"], r"give local, processes or a Dask scheduler address"),
    # fuzz --replay: the case's fields against its target's limits, before any simulation
    ("replay-string-width", RP + ["requant", "--replay", "{f:rq_str.json}"], r"acc_bits must be an integer"),
    ("replay-bool-width", RP + ["requant", "--replay", "{f:rq_bool.json}"], r"out_bits must be an integer"),
    ("replay-vector-type", RP + ["requant", "--replay", "{f:rq_vec.json}"], r"vectors\[0\] must be a table"),
    ("replay-no-vectors", RP + ["requant", "--replay", "{f:rq_empty.json}"], r"vectors must be a list of 1\.\."),
    ("replay-shift", RP + ["requant", "--replay", "{f:rq_shift.json}"], r"vectors\[0\]\.shift must be in 0\.\.32"),
    ("replay-negative-image", RP + ["cluster", "--replay", "{f:cl_neg.json}"], r"first_image must be in 0\.\.63, got -5"),
    ("replay-images-past", RP + ["cluster", "--replay", "{f:cl_past.json}"], r"passes the 64 images"),
    ("replay-cluster-stall", RP + ["cluster", "--replay", "{f:cl_stall.json}"], r"stall must be a finite .*\[0, 0\.95\]"),
    ("replay-cluster-schedule", RP + ["cluster", "--replay", "{f:cl_sched.json}"], r"schedule must be one of"),
    ("replay-link-stall", RP + ["link", "--replay", "{f:link_stall.json}"], r"src_stall .*\[0, 0\.95\], got 0\.9999"),
    ("replay-link-message", RP + ["link", "--replay", "{f:link_msg.json}"], r"msgs\[0\] must be in 0\.\.65535"),
    ("replay-link-fault", RP + ["link", "--replay", "{f:link_fault.json}"], r"faults\.bit_rate .*\[0, 0\.1\]"),
    ("replay-link-cfg", RP + ["link", "--replay", "{f:link_cfg.json}"], r"cfg: .*bogus"),
    ("replay-engine-stall", RP + ["engine", "--replay", "{f:eng_stall.json}"], r"stall\[0\] .*\[0, 0\.95\]"),
    ("replay-engine-stall-count", RP + ["engine", "--replay", "{f:eng_two.json}"], r"stall must list 3"),
    ("replay-engine-preset", RP + ["engine", "--replay", "{f:eng_preset.json}"], r"config must be one of"),
    ("replay-engine-case", RP + ["engine", "--replay", "{f:eng_case.json}"], r"case: "),
    ("replay-with-seconds", RP + ["requant", "--replay", "{f:rq_ok.json}", "--seconds", "nan"],
     r"--seconds: option\(s\) of a campaign"),
    ("replay-with-workers", RP + ["requant", "--replay", "{f:rq_ok.json}", "--workers", "0", "--out", "{tmp}/o"],
     r"--workers, --out: option\(s\) of a campaign"),
]




@pytest.mark.parametrize("argv,pattern", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_hostile_path_input_is_a_one_line_error_before_any_work(argv, pattern, tmp_path, monkeypatch, capsys):
    for name, case in CASES.items():
        (tmp_path / name).write_text(json.dumps(case))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYMTL_FP_HYPOTHESIS_DB", str(tmp_path / "db"))
    before = listing(tmp_path)
    try:
        rc = cli_main([fill(a, tmp_path) for a in argv])
    except SystemExit as exc:  # (argparse usage errors: none expected here)
        rc = exc.code
    out, err = capsys.readouterr()
    assert rc == 1, (rc, out[-500:], err[-800:])
    assert "Traceback" not in err and "Traceback" not in out
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert re.search(pattern, err), err
    assert out.strip() == "", out  # no work started, nothing printed before the refusal
    assert listing(tmp_path) == before, "files appeared: " + ", ".join(sorted(listing(tmp_path) - before))


def test_the_table_covers_every_path():
    assert len(ROWS) >= 40 and len({r[0] for r in ROWS}) == len(ROWS)
    assert {r[1][0] for r in ROWS} == {"bench", "explore", "fuzz"}


def test_a_replayed_case_within_its_limits_still_runs(tmp_path, capsys):
    (tmp_path / "rq.json").write_text(json.dumps(RQ))
    assert cli_main(RP + ["requant", "--replay", str(tmp_path / "rq.json")]) == 0
    assert capsys.readouterr().out.startswith("PASS")


def _within_limits(target):
    """A Hypothesis test: every case ``target`` draws (at fl, or its first level) passes its limits."""
    from hypothesis import HealthCheck, given, settings

    from pymtl_fp.tb.fuzz import cases

    @settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=target.strategy("fl" if "fl" in target.levels else target.levels[0]))
    def within(case):
        target.limits(cases.loads(cases.dumps(case)))

    return within


def test_every_drawn_case_is_within_its_targets_limits():
    """The limits refuse no case a campaign draws (after the case file's JSON round trip)."""
    from pymtl_fp.tb.fuzz import targets

    for name in targets.names():
        assert targets.get(name).limits is not None, name
        _within_limits(targets.get(name))()


def _env(tmp: Path) -> dict:
    (tmp / "tmpdir").mkdir()
    return dict(os.environ, PYMTL_FP_HYPOTHESIS_DB=str(tmp / "db"), TMPDIR=str(tmp / "tmpdir"))


def test_a_dask_fuzz_campaign_writes_nothing_outside_its_folders(tmp_path):
    """Hypothesis's storage folder and Dask's scratch space: not in the working directory, not in
    the temporary folder; the scratch folder inside ``--out`` is removed at the end."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "pymtl_fp.cli", "fuzz", "--target", "requant", "--level", "fl", "--seconds", "2",
         "--max-examples", "20", "--workers", "1", "--out", str(tmp_path / "out")],
        cwd=cwd, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "PASS" in proc.stdout
    assert list(cwd.iterdir()) == []
    assert list((tmp_path / "tmpdir").iterdir()) == []
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".dask-scratch-")]


def _finish(proc, timeout: float) -> tuple:
    """``(stdout, stderr, processes of its session still alive)`` once ``proc`` has exited (within
    ``timeout`` seconds: a hang guard); a worker's interpreter may take a moment more to exit."""
    out, err = proc.communicate(timeout=timeout)
    return out, err, settle(proc.pid, 50)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_in_a_dask_campaign_leaves_no_process_behind(tmp_path):
    """Ctrl-C to the whole process group (as a terminal sends it) while a local Dask cluster's
    workers run: exit 130, one line, no traceback, and every process of the session gone."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pymtl_fp.cli", "fuzz", "--target", "requant", "--level", "fl", "--seconds", "600",
         "--workers", "2", "--force-workers", "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=_env(tmp_path),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = proc.stderr.readline()
        for _ in range(5):  # (past a warning a library may print first)
            if "examples" in line:
                break
            line = proc.stderr.readline()
        assert "examples" in line, line
        os.killpg(proc.pid, signal.SIGINT)
        out, err, left = _finish(proc, 60)
    finally:
        kill_session(proc.pid)
    assert proc.returncode == 130, (out, err)
    assert err.strip().splitlines()[-1] == "pymtl-fp fuzz: interrupted", err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert left == [], left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigint_to_the_parent_alone_stops_a_bench_and_its_worker_processes(tmp_path):
    """SIGINT to ``bench parallel``'s own process only (``kill -INT <pid>``, not the terminal's
    Ctrl-C to the group) while its two worker processes run jobs of several seconds each: exit
    130 with one line, and no worker left behind (the workers ignore SIGINT; the parent terminates
    them instead of waiting for the six runs, which take over a minute: the 30 s limit below is
    a hang guard that waiting would hit)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pymtl_fp.cli", "bench", "parallel", "--nodes", "4", "--batches", "64,128",
         "--steps", "11", "--workers", "2", "--json", str(tmp_path / "b.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=_env(tmp_path),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert "runs on 2 processes" in proc.stdout.readline()
        time.sleep(3)  # (the workers are running their first jobs, or still starting: either way)
        os.kill(proc.pid, signal.SIGINT)
        out, err, left = _finish(proc, 30)
    finally:
        kill_session(proc.pid)
    assert proc.returncode == 130, (out, err)
    assert err.strip().splitlines()[-1] == "pymtl-fp bench: interrupted", err
    assert "Traceback" not in err, err
    assert left == [], left
    assert not (tmp_path / "b.json").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv,name", [(["run-op", "--op", "update", "--make-case", "{tmp}/full.npz"], "full.npz"),
                                       (["explore", "zoo", "--net", "vgg16", "--out", "{tmp}/r"], "r/zoo.csv")])
def test_a_full_disk_is_one_line_naming_the_file(argv, name, tmp_path, capsys):
    """A write that fails on a full disk (a file name that is a link to ``/dev/full``; NumPy's
    ``savez`` and the study's CSV writer, whose errors carry no file name): one line naming the file."""
    (tmp_path / "r").mkdir()
    os.symlink("/dev/full", tmp_path / name)
    rc = cli_main([fill(a, tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(f"No space left on device: {tmp_path / name}"), err
