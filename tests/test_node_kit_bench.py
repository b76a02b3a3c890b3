"""The node kit as an outside team takes it (cluster/hw/kit_axi.py, kit_bench.py, cluster/run/kit_case.py):
``pymtl-fp translate --unit node --config medium --name nodekit --case DIR`` writes the AXI4-Stream wrapper
``nodekit`` (flat ports, short names, registered ready), its C++ bench and a case (one training step of
lenet-digits on the one node, the expected outputs from the golden model).  The wrapper lints clean
``-Wall`` with only the kit's waiver file; the bench, built by a plain ``verilator --cc --exe --build -Wall``
in a shell set up only by the line ``pymtl-fp doctor`` prints, passes the case bit-exact and fails on a
corrupted expected file.  The build is cached by the content of its sources (a cold one took ~50 s of
wall time here, ~20 s of CPU; the run takes 0.1 s)."""

import os
import re
import shutil
import subprocess

import pytest

from pymtl_fp.build_dirs import build_once, digest, shared_build_dir
from pymtl_fp.tb.plain_shell import run_verilator

NAME = "nodekit"
#: the bench's build: quick C++ optimization (a training step is ~13k cycles)
QUICK = "OPT_FAST=-O1 OPT_SLOW=-O0 OPT_GLOBAL=-O0"


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    from pymtl_fp.cli.main import main

    out = tmp_path_factory.mktemp("nodekit")
    assert main(["translate", "--unit", "node", "--config", "medium", "--name", NAME, "--case", str(out / "case"),
                 "--out", str(out), "--no-synth"]) == 0
    return out


def _module_ports(text: str, module: str) -> list:
    m = re.search(rf"^module {module} \((.*?)^\);", text, re.S | re.M)
    assert m, module
    return [ln.split("//")[0].strip().rstrip(",") for ln in m.group(1).splitlines() if ln.split("//")[0].strip()]


@pytest.mark.verilator
def test_the_node_wrapper_has_flat_short_ports_a_registered_ready_and_lints_clean(kit):
    from pymtl_fp.toolchain import make_env, setup_verilator

    text = (kit / f"{NAME}.sv").read_text()
    listed = (kit / f"{NAME}.f").read_text().split()
    assert listed[0] == f"{NAME}_pkg.sv" and listed[-1] == f"{NAME}.sv" and listed[1].startswith("NodeRTL_")
    ports = _module_ports(text, NAME)
    names = [p.split()[-1] for p in ports]
    assert all(len(n) <= 24 and "__" not in n for n in names), names  # short, no PyMTL3 `__` names
    assert not [p for p in ports if re.search(r"\w+\s*\[\d+:\d+\]\s*$", p)]  # no unpacked array ports
    for p in ports:  # tdata a byte multiple
        if p.endswith("_tdata"):
            assert (int(re.search(r"\[(\d+):0\]", p).group(1)) + 1) % 8 == 0, p
    for s in ("fwd_in", "bwd_in", "host_in"):
        assert f"s_axis_{s}_tready" in names and f"m_axis_{s.replace('_in', '_out')}_tvalid" in names
    assert {"st_cnt_compute", "st_sent_host", "st_halted", "cmd_err", "cmd_err_code", "load_err"} <= set(names)
    # every ready the wrapper drives is a register: the program stream's rdy_q, each slice's !skid_v; and
    # the slices' valid main_v; each assigned only in the clocked block
    assert "assign s_axis_prog_tready = rdy_q;" in text and "assign s_ready = !skid_v;" in text
    assert "assign m_valid = main_v;" in text
    for reg in ("rdy_q", "skid_v", "main_v"):
        writes = [ln for ln in text.splitlines() if re.search(rf"\b{reg}\s*(<=|=)[^=]", ln)]
        assert writes and all(re.search(rf"\b{reg}\s*<=", ln) for ln in writes), writes
    for s in ("fwd_in", "bwd_in", "host_in"):
        assert re.search(rf"\.s_ready\(s_axis_{s}_tready\)", text)
    info = setup_verilator()
    proc = subprocess.run([info.executable, "--lint-only", "-Wall", f"{NAME}_waivers.vlt", "-f", f"{NAME}.f",
                           "--top-module", NAME], cwd=kit, capture_output=True, text=True,
                          env=make_env(dict(os.environ)), check=False)
    warnings = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("%Warning", "%Error"))]
    assert proc.returncode == 0 and not warnings, warnings


@pytest.mark.slow
@pytest.mark.verilator
def test_the_cpp_bench_runs_a_training_step_bit_exact_and_fails_on_a_corrupted_expectation(kit, tmp_path):
    from pymtl_fp.cli.cmd_doctor import shell_line
    from pymtl_fp.toolchain import setup_verilator

    sources = [f"{NAME}_waivers.vlt", f"{NAME}.f", *(kit / f"{NAME}.f").read_text().split(), f"{NAME}.h",
               f"{NAME}_bench.cpp"]
    info = setup_verilator()
    key = digest(info.version, shell_line(info), *((kit / s).read_text() for s in sources))

    def make(d):
        """Build in a plain shell set up by the one line `pymtl-fp doctor` prints (no Python environment)."""
        for s in sources:
            shutil.copy(kit / s, d / s)
        command = (f"verilator --cc --exe --build -Wall -j 2 {NAME}_waivers.vlt -f "
                   f"{NAME}.f {NAME}_bench.cpp --top-module {NAME}")
        proc, warnings = run_verilator(shell_line(info), d, command, QUICK)
        assert proc.returncode == 0 and not warnings, warnings or proc.stderr[-2000:]

    exe = build_once(shared_build_dir("node_kit_bench") / key, make) / "obj_dir" / f"V{NAME}"

    def run(case):
        return subprocess.run([str(exe), str(case)], capture_output=True, text=True, timeout=120, check=False)

    good = run(kit / "case")
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.match(r"PASS: one training step of 2 images .* lenet-digits .*: 32 fwd_out beats \(the logits\) and "
                    r"2792 host_out beats \(the trained weights and biases\) equal the golden model's, in \d+ cycles "
                    r"after start; a LOAD past X was refused \(cmd_err code 4\), a frame ending inside an instruction set "
                    r"load_err$", good.stdout.strip()), good.stdout
    for stem, line, want in (("host_out", 2000, "FAIL: host_out beat 1999 is"), ("fwd_out", 7, "FAIL: fwd_out beat 6 is")):
        bad = tmp_path / stem
        shutil.copytree(kit / "case", bad)
        lines = (bad / f"{stem}.hex").read_text().splitlines()  # (line 0: the comment)
        lines[line] = f"{int(lines[line], 16) ^ 1:08x}"
        (bad / f"{stem}.hex").write_text("\n".join(lines) + "\n")
        out = run(bad)
        assert out.returncode == 1 and out.stdout.startswith(want), out.stdout


def test_the_case_expects_what_the_golden_model_stores_and_refuses_a_node_too_small(tmp_path, capsys):
    """The expected host_out is the golden weights packed as the node stores them: the compiler's own
    unpacking gives the golden weights back; a preset that cannot hold the net is refused in one line."""
    from pymtl_fp.cli.main import main
    from pymtl_fp.cluster.compiler.compile import host_out_elements, host_out_params, params_equal
    from pymtl_fp.cluster.config import ClusterConfig, default_link
    from pymtl_fp.cluster.run.train import compile_run
    from pymtl_fp.engine.config import PRESETS
    from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
    from pymtl_fp.net import load_net

    net = load_net("lenet-digits")
    params = quantize_params(net, init_params_float64(net, 3), "8")
    e = PRESETS["medium"]
    _, part, _, cprog = compile_run(net, ClusterConfig((e,), default_link(32, 8)), params, TrainConfig("8"), steps=1,
                                    batch=2)
    elems = host_out_elements(net, part, cprog.nodes[0], e.P, params)
    assert params_equal(host_out_params(net, part, cprog, [e.P], [elems], params), params)
    assert main(["translate", "--unit", "node", "--config", "tiny", "--case", str(tmp_path / "c"),
                 "--out", str(tmp_path), "--no-synth"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--case:" in err[0] and "buffer" in err[0], err
    assert not any(tmp_path.glob("*.sv"))  # refused before anything was translated
    for argv, want in ((["--unit", "engine", "--config", "tiny", "--name", "e"], "--name is a --unit node option"),
                       (["--unit", "node", "--config", "tiny", "--name", "a__b"], "--name 'a__b': a module name")):
        assert main(["translate", *argv, "--out", str(tmp_path), "--no-synth"]) == 1
        assert want in capsys.readouterr().err


@pytest.mark.verilator
def test_the_node_wrapper_pads_tdata_to_whole_bytes_and_lints_clean(tmp_path):
    """36-bit elements: tdata of 5 bytes, the padding ignored in and zero out; the wrapper adds no warning."""
    from pymtl_fp.cluster.hw import ipkit
    from pymtl_fp.cluster.hw.lint import CLUSTER_WAIVERS
    from pymtl_fp.cluster.hw.node import NodeRTL, node_module_name, router_config_for
    from pymtl_fp.cluster.hw.router_config import RouterConfig
    from pymtl_fp.engine.config import PRESETS
    from pymtl_fp.lint import lint_waiver_file, translate_verilog
    from pymtl_fp.toolchain import make_env, setup_verilator
    from pymtl_fp.verilog_names import prefix_names

    e = PRESETS["tiny"].replace(stream_bits=36)
    r = router_config_for(e, RouterConfig())
    top = node_module_name(e, r)
    v = translate_verilog(NodeRTL(e, r), top, tmp_path)
    (tmp_path / f"{top}.sv").write_text(prefix_names(v.read_text(), top))
    ipkit.write(tmp_path, top, (e, r), "n36")
    text = (tmp_path / "n36.sv").read_text()
    assert "input  logic [39:0] s_axis_fwd_in_tdata" in text
    assert "assign m_axis_host_out_tdata = {4'b0, host_out_data};" in text
    lint_waiver_file(tmp_path / "n36_waivers.vlt", CLUSTER_WAIVERS)
    info = setup_verilator()
    proc = subprocess.run([info.executable, "--lint-only", "-Wall", "n36_waivers.vlt", "n36_pkg.sv", f"{top}.sv", "n36.sv",
                           "--top-module", "n36"], cwd=tmp_path, capture_output=True, text=True,
                          env=make_env(dict(os.environ)), check=False)
    warnings = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("%Warning", "%Error"))]
    # the engine at this unusual width has its own unused bits (translate waives them); none in the wrapper
    assert not [ln for ln in warnings if "n36.sv" in ln or "n36_pkg.sv" in ln], warnings
    assert all("din__msg" in ln or "Exiting due to" in ln for ln in warnings), warnings
