"""The engine kit as an outside flow takes it: SystemVerilog sources named ``.sv``, a filelist ``T.f`` in
compile order, and the self-checking SystemVerilog testbench ``T_tb.sv`` (pymtl_fp/engine/kit_tb.py)
built by ``verilator --binary --timing -Wall`` from the waiver file, the filelist and the bench alone,
and run without Python: it passes through both wrappers (``T_axis``, and ``T_axi`` with its 32-bit
command stream framed by TLAST and a malformed frame first), and fails when an expected value is
corrupted; ``T_axi`` alone lints clean under ``-Wall`` with a registered ``s_axis_cmd_tready``.  The build runs in a
plain shell set up only by the line ``pymtl-fp doctor`` prints (PATH, VERILATOR_ROOT, MAKEFLAGS)."""

import os
import subprocess

import pytest

from pymtl_fp.build_dirs import build_once, digest, shared_build_dir
from pymtl_fp.engine.config import PRESETS
from pymtl_fp.tb.plain_shell import run_verilator

#: the testbench's build: quick C++ optimization (it runs a few hundred cycles)
QUICK = "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0"


def test_translate_writes_sv_sources_and_a_filelist_in_compile_order(tmp_path):
    from pymtl_fp.cli.cmd_translate import filelist_sources

    top = "T"
    kit = [tmp_path / f"T{s}" for s in ("_pkg.sv", ".h", "_axis.sv", ".md", "_tb.sv")]
    kit.append(tmp_path / "T_axi.sv")
    assert filelist_sources(top, kit) == ["T_pkg.sv", "T.sv", "T_axis.sv", "T_axi.sv"]
    assert filelist_sources(top, []) == ["T.sv"]  # a unit without a kit (link, requant)


@pytest.mark.slow
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
    assert listed == [f"{top}_pkg.sv", f"{top}.sv", f"{top}_axis.sv", f"{top}_axi.sv"]
    sources = [f"{top}_waivers.vlt", *listed, f"{top}_tb.sv"]
    info = setup_verilator()
    key = digest(info.version, shell_line(info), *((tmp_path / s).read_text() for s in sources))

    def make(d):
        """Build in a plain shell set up by the one line `pymtl-fp doctor` prints (no Python environment)."""
        for s in sources + [f"{top}.f"]:
            (d / s).write_text((tmp_path / s).read_text())
        command = (f"verilator --binary --timing -Wall -j 2 {top}_waivers.vlt -f {top}.f "
                   f"{top}_tb.sv --top-module {top}_tb")
        proc, warnings = run_verilator(shell_line(info), d, command, QUICK)
        assert proc.returncode == 0 and not warnings, warnings or proc.stderr[-2000:]

    built = build_once(shared_build_dir("kit_tb") / key, make)
    exe = built / "obj_dir" / f"V{top}_tb"
    run = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0 and run.stdout.startswith("PASS: 32 dout beats equal the golden model's through both"), \
        run.stdout + run.stderr
    bad = subprocess.run([str(exe), "+corrupt"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         check=False)
    assert bad.returncode != 0 and "FAIL: dout beat 0" in bad.stdout + bad.stderr


@pytest.mark.verilator
def test_the_axi_wrapper_lints_clean_with_a_registered_command_ready(tmp_path):
    import re

    from pymtl_fp.engine import ipkit, kit_axi
    from pymtl_fp.lint import translate_verilog
    from pymtl_fp.toolchain import make_env, setup_verilator
    from pymtl_fp.verilog_names import prefix_names

    cfg = PRESETS["tiny"].replace(stream_bits=36)  # 36-bit elements: tdata padded to 5 bytes
    top = cfg.module_name()
    from pymtl_fp.engine.EngineRTL import EngineRTL

    v = translate_verilog(EngineRTL(cfg), top, tmp_path)
    (tmp_path / f"{top}.sv").write_text(prefix_names(v.read_text(), top))
    (tmp_path / f"{top}_pkg.sv").write_text(ipkit.sv_package(top, cfg))
    text = kit_axi.axi_wrapper(top, cfg)
    (tmp_path / f"{top}_axi.sv").write_text(text)
    assert "input  logic [39:0] s_axis_din_tdata" in text and kit_axi.data_bytes(cfg) == 5
    # tready is a register: assigned from rdy_q, which only the clocked block writes
    assert "assign s_axis_cmd_tready = rdy_q;" in text
    assert all(re.search(r"\brdy_q\s*<=", ln) for ln in text.splitlines() if re.search(r"\brdy_q\s*(<=|=)[^=]", ln))
    from pymtl_fp.engine.verilog import ENGINE_WAIVERS
    from pymtl_fp.lint import lint_waiver_file

    vlt = lint_waiver_file(tmp_path / f"{top}_waivers.vlt", ENGINE_WAIVERS)
    info = setup_verilator()
    proc = subprocess.run([info.executable, "--lint-only", "-Wall", vlt.name, f"{top}_pkg.sv", f"{top}.sv",
                           f"{top}_axi.sv", "--top-module", f"{top}_axi"], cwd=tmp_path, capture_output=True,
                          text=True, env=make_env(dict(os.environ)), check=False)
    # the engine at this unusual width has its own unused bits (translate waives them); none in the wrapper
    warnings = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("%Warning", "%Error"))]
    assert not [ln for ln in warnings if f"{top}_axi.sv" in ln or f"{top}_pkg.sv" in ln], warnings
    assert all("din__msg" in ln or "Exiting due to" in ln for ln in warnings), warnings
