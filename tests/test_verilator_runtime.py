"""Verilator's runtime is compiled once and linked into every build (pymtl_fp.verilator_runtime):
PyMTL3-imported models, traced and untraced, and make-based builds (the compiled cluster benches)."""

import subprocess

import pytest

from pymtl_fp import verilator_runtime
from pymtl_fp.primitives.MacRTL import MacRTL
from pymtl_fp.toolchain import make_env, setup_verilator
from pymtl_fp.verilate import shared_build_dir, translate_import

pytestmark = pytest.mark.verilator


def _mac(model, a, b):
    model.sim_reset()
    model.clear @= 0
    model.en @= 1
    model.a @= a
    model.b @= b
    model.sim_tick()
    model.en @= 0
    model.sim_eval_combinational()
    return int(model.acc.int())


def test_pymtl3_models_link_one_runtime_archive_traced_or_not(tmp_path, monkeypatch):
    """Fresh models (a new build directory) linked with the runtime archives of the suite's build
    directory (compiled there once, by whichever test came first)."""
    runtime = shared_build_dir("verilator-runtime")
    monkeypatch.setattr(verilator_runtime, "_runtime_dir", lambda key: runtime / key)
    monkeypatch.setenv("PYMTL_FP_BUILD_DIR", str(tmp_path / "b"))
    linked = {}
    build = verilator_runtime.pymtl3_archive

    def spy(sources, include_dirs, extra_flags):
        path = build(sources, include_dirs, extra_flags)
        linked.setdefault(tuple(sorted(sources)), set()).add(path)
        return path

    monkeypatch.setattr(verilator_runtime, "pymtl3_archive", spy)
    built = {}
    for name, (a, acc, vcd) in {"MacRTL_rt_one": (8, 24, False), "MacRTL_rt_two": (6, 20, False),
                                "MacRTL_rt_vcd": (8, 24, True)}.items():
        built[name] = m = translate_import(MacRTL(a, a, acc), name, params=dict(a=a, acc=acc), vcd=vcd)
        assert _mac(m, -3, 5) == -15  # the model runs (and the traced one writes its VCD)
    # two sets of runtime sources (untraced; traced, with verilated_vcd_c), one archive each
    assert len(linked) == 2 and all(len(paths) == 1 for paths in linked.values()), linked
    assert all(p.is_file() and p.parent.parent == runtime for paths in linked.values() for p in paths)
    for name in built:
        tu = next((tmp_path / "b").rglob(f"{name}*_v__ALL_pickled.cpp")).read_text()
        assert "verilated.cpp" not in tu and f"V{name}" in tu  # the model alone; the runtime is linked
    assert built["MacRTL_rt_vcd"].vcd_path.stat().st_size > 0


COUNTER = """module Counter(input clk, input reset, output reg [7:0] count);
  always @(posedge clk) count <= reset ? 8'd0 : count + 8'd1;
endmodule
"""


def test_make_builds_reuse_the_runtime_objects_compiled_with_the_same_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("PYMTL_FP_BUILD_DIR", str(tmp_path / "b"))
    info = setup_verilator()
    env = make_env()
    env["MAKEFLAGS"] = (env.get("MAKEFLAGS", "") + " OPT_GLOBAL=-O0").strip()
    (tmp_path / "Counter.v").write_text(COUNTER)
    made = []

    def run(cmd, cwd, env, what):
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        made.append(proc.stdout)

    for i in range(2):
        obj = tmp_path / f"obj{i}"
        subprocess.run([info.executable, "--cc", "--Mdir", str(obj), str(tmp_path / "Counter.v")], env=env, check=True,
                       capture_output=True)
        verilator_runtime.make_with_cached_runtime(obj, "VCounter", env, 2, run)
        assert (obj / "libverilated.a").is_file() and (obj / "VCounter__ALL.a").is_file()
    assert "verilated.cpp" in made[0] and "verilated.cpp" not in made[1]  # compiled once, then reused
    assert "VCounter" in made[1]  # the model itself is compiled every time
