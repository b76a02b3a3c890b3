"""The hostile-input sweep (``python -m pymtl_fp.tb.hostile_sweep``) classifies how a probe ended:
a few probes, one of them a real refusal by the CLI and the others small stand-in commands that end
in each way the sweep tells apart, and the sweep's list covering every command.  The sweep itself
runs outside the default suite (it takes tens of minutes)."""

from __future__ import annotations

import json
import sys

from pymtl_fp.tb.hostile_sweep import CLASSES, Probe, all_probes, sweep


def _py(code: str) -> tuple:
    return (sys.executable, "-c", code)


def test_the_sweep_classifies_how_each_probe_ended(tmp_path):
    probes = [
        Probe("refused", ["train", "--engine", "cluster", "--nodes", "0"]),
        Probe("valid", [], expect="valid", cmd=_py("print('ok')")),
        Probe("traceback", [], expect="valid", cmd=_py("raise RuntimeError('boom')")),
        Probe("silent", [], cmd=_py("pass")),
        Probe("stray-in-cwd", [], expect="valid", cmd=_py("open('stray.txt', 'w').close()")),
        Probe("stray-in-tmp", [], expect="valid", cmd=_py("import tempfile; tempfile.mkstemp()")),
        Probe("hang", [], expect="valid", timeout=1, cmd=_py("import time; time.sleep(30)")),
        Probe("two-lines", [], cmd=_py("import sys; print('started'); sys.exit('one\\ntwo')")),
        Probe("signal", [], expect="valid", cmd=_py("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")),
        Probe("refused-valid", [], expect="valid", cmd=_py("import sys; sys.exit('no')")),
    ]
    rows = sweep(probes, {}, tmp_path / "out", say=lambda line: None)
    got = {r["id"]: r["class"] for r in rows}
    assert got == {"refused": "clear", "valid": "valid", "traceback": "traceback", "silent": "silent",
                   "stray-in-cwd": "outside", "stray-in-tmp": "outside", "hang": "hang", "two-lines": "unclear",
                   "signal": "segfault", "refused-valid": "rejected"}
    assert rows[0]["stderr_tail"].strip() == "pymtl-fp train: error: --nodes must be in 1..64, got 0"
    assert rows[4]["stray"] == ["cwd/stray.txt"]
    report = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert report["counts"] == {c: sum(v == c for v in got.values()) for c in CLASSES}
    assert [r["id"] for r in report["probes"]] == [p.id for p in probes]


def test_the_sweep_probes_every_command():
    probes, files = all_probes()
    assert len(probes) >= 300
    argvs = [p.argv for p in probes]
    commands = {a[0] for a in argvs if a}
    assert commands >= {"train", "translate", "fuzz", "explore", "bench", "doctor", "run-op"}
    studies = {a[1] for a in argvs if a[:1] == ["explore"] and len(a) > 1}
    assert studies >= {"scaling", "partition", "design", "parallelism", "modes", "zoo"}
    targets = {a[1] for a in argvs if a[:1] == ["bench"] and len(a) > 1}
    from pymtl_fp.cli.cmd_bench import TARGETS

    assert targets >= set(TARGETS)
    assert {p.expect for p in probes} == {"refuse", "valid", "either"}
    named = {a.split("{f:", 1)[1].split("}", 1)[0] for p in probes for a in p.argv + list(p.env.values())
             if "{f:" in a}
    assert named <= set(files) | {"NOTADIR"}, named - set(files)
