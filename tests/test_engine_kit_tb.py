"""The engine kit as an outside flow takes it: SystemVerilog sources named ``.sv``, a filelist ``T.f`` in
compile order, and the self-checking SystemVerilog testbench ``T_tb.sv`` (pymtl_fp/engine/kit_tb.py)
built by ``verilator --binary --timing -Wall`` from the waiver file, the filelist and the bench alone,
and run without Python: it passes, and fails when an expected value is corrupted.  The build runs in a
plain shell set up only by the line ``pymtl-fp doctor`` prints (PATH, VERILATOR_ROOT, MAKEFLAGS)."""

import os
import subprocess

import pytest

from pymtl_fp.build_dirs import build_once, digest, shared_build_dir
from pymtl_fp.engine.config import PRESETS

#: the testbench's build: quick C++ optimization (it runs a few hundred cycles)
QUICK = "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0"


def test_translate_writes_sv_sources_and_a_filelist_in_compile_order(tmp_path):
    from pymtl_fp.cli.cmd_translate import filelist_sources

    top = "T"
    kit = [tmp_path / f"T{s}" for s in ("_pkg.sv", ".h", "_axis.sv", ".md", "_tb.sv")]
    assert filelist_sources(top, kit) == ["T_pkg.sv", "T.sv", "T_axis.sv"]
    assert filelist_sources(top, []) == ["T.sv"]  # a unit without a kit (link, requant)


@pytest.mark.verilator
def test_the_sv_testbench_passes_under_verilator_binary_timing(tmp_path):
    from pymtl_fp.cli.cmd_doctor import shell_line
    from pymtl_fp.cli.main import main
    from pymtl_fp.toolchain import setup_verilator

    cfg = PRESETS["tiny"]
    top = cfg.module_name()
    assert main(["translate", "--unit", "engine", "--config", "tiny", "--out", str(tmp_path), "--no-synth"]) == 0
    assert (tmp_path / f"{top}.sv").is_file() and not (tmp_path / f"{top}.v").exists()
    listed = (tmp_path / f"{top}.f").read_text().split()
    assert listed == [f"{top}_pkg.sv", f"{top}.sv", f"{top}_axis.sv"]
    sources = [f"{top}_waivers.vlt", *listed, f"{top}_tb.sv"]
    info = setup_verilator()
    key = digest(info.version, shell_line(info), *((tmp_path / s).read_text() for s in sources))

    def make(d):
        """Build in a plain shell set up by the one line `pymtl-fp doctor` prints (no Python environment)."""
        for s in sources + [f"{top}.f"]:
            (d / s).write_text((tmp_path / s).read_text())
        script = (f"{shell_line(info)}\nexport MAKEFLAGS=\"${{MAKEFLAGS:-}} {QUICK}\"\n"
                  f"verilator --binary --timing -Wall -j 2 {top}_waivers.vlt -f {top}.f {top}_tb.sv "
                  f"--top-module {top}_tb")
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
        proc = subprocess.run(["bash", "-c", script], cwd=d, capture_output=True, text=True, env=env, check=False)
        warnings = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("%Warning", "%Error"))]
        assert proc.returncode == 0 and not warnings, warnings or proc.stderr[-2000:]

    built = build_once(shared_build_dir("kit_tb") / key, make)
    exe = built / "obj_dir" / f"V{top}_tb"
    run = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0 and run.stdout.startswith("PASS: 32 dout beats"), run.stdout + run.stderr
    bad = subprocess.run([str(exe), "+corrupt"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         check=False)
    assert bad.returncode != 0 and "FAIL: dout beat 0" in bad.stdout + bad.stderr
