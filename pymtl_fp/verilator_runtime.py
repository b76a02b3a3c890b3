"""Verilator's runtime library (``verilated.cpp``, ``verilated_threads.cpp``, ...) compiled once and
linked into every Verilated build, instead of once per build.

Every Verilated model links Verilator's runtime sources.  Compiling them is a fixed cost of every
build: about 4.5 CPU-s at PyMTL3's ``-O0`` (6 s traced) and 7.5 s at the ``-O2`` of the compiled
cluster benches (g++ 12), as much as a small unit's own code.  Both flows here
compile them once per build directory (:func:`pymtl_fp.build_dirs.shared_build_dir`) and per exact
compiler command, under a lock, and reuse them:

* **PyMTL3's Verilator import** (:func:`install`).  PyMTL3 3.1.17 concatenates the C wrapper, the
  model's sources *and* the runtime sources into one file (``<top>_v__ALL_pickled.cpp``) and builds
  it with one ``g++ -shared``.  The patched method writes the model and the wrapper only and adds
  a static PIC archive of the runtime to the link.  Each shared library still gets its own copy of
  the runtime (a static archive, as before), so models loaded side by side stay independent.
  Compiling the runtime apart is also how Verilator's own makefiles build it, and it removes the
  Verilator 5 failure of one concatenated file with ``--trace`` ("specialization of
  ``VerilatedTrace<...>`` after instantiation", seen with 5.006 and 5.048).
* **make-based builds** (:mod:`pymtl_fp.cxxsim`): :func:`make_with_cached_runtime` runs the
  generated makefile with the runtime objects copied in from an earlier build whose dry-run
  commands for them (``make -n``: compiler, every flag and define) were the same.

The patch overrides a private method of PyMTL3 (``VerilogVerilatorImportConfigs._get_c_src_files``),
so it lives here alone and checks that the method exists; ``tests/test_verilator_runtime.py`` runs
real builds, traced and untraced, through it.
"""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
from pathlib import Path

from pymtl_fp.build_dirs import build_once, digest, shared_build_dir

#: flags of the runtime objects linked into PyMTL3-imported models: PIC (a shared library) and no
#: ``STB_GNU_UNIQUE`` symbols (PyMTL3's own flag, so that a library can be unloaded); the runtime is
#: not on a model's fast path, so it is compiled without optimization, as PyMTL3 compiles it
PYMTL3_FLAGS = ("-O0", "-fPIC", "-fno-gnu-unique")

_installed = False


def _runtime_dir(key: str) -> Path:
    return shared_build_dir("verilator-runtime") / key


@functools.cache
def _compiler_version(cxx: str = "g++") -> str:
    return subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout


# -- PyMTL3's Verilator import -------------------------------------------------------------------


def pymtl3_archive(sources: list, include_dirs: list, extra_flags: list) -> Path:
    """The static archive of the runtime ``sources`` compiled with :data:`PYMTL3_FLAGS`,
    ``extra_flags`` and ``include_dirs`` (built on first use, then shared)."""
    flags = [*PYMTL3_FLAGS, *extra_flags, *(f"-I{d}" for d in include_dirs)]
    texts = [Path(s).read_text(errors="replace") for s in sources]
    key = digest(" ".join(flags), *sources, *texts, _compiler_version())

    def make(tmp: Path):
        objs = []
        for src in sources:
            obj = tmp / (Path(src).stem + ".o")
            proc = subprocess.run(["g++", *flags, "-c", src, "-o", str(obj)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"compiling Verilator's runtime {src} failed:\n{proc.stderr[-3000:]}")
            objs.append(str(obj))
        subprocess.run(["ar", "rcs", str(tmp / "libverilated_rt.a"), *objs], check=True)

    return build_once(_runtime_dir(f"pymtl3_{key}"), make) / "libverilated_rt.a"


def _c_src_files(cfg) -> list:
    """Replacement of ``VerilogVerilatorImportConfigs._get_c_src_files``: one file that includes the
    model's sources and the C wrapper, and the runtime archive (a linker input after it)."""
    top = cfg.translated_top_module
    with open(f"{cfg.vl_mk_dir}/V{top}_classes.mk") as fh:
        lines = fh.readlines()
    runtime = []
    for label in ("VM_GLOBAL_FAST", "VM_GLOBAL_SLOW"):
        runtime += cfg._get_srcs_from_vl_class_mk(lines, cfg.vl_include_dir, label)
    model = []
    for label in ("VM_CLASSES_FAST", "VM_SUPPORT_FAST", "VM_CLASSES_SLOW", "VM_SUPPORT_SLOW"):
        model += cfg._get_srcs_from_vl_class_mk(lines, cfg.vl_mk_dir, label)
    wrapper = list(cfg.c_srcs) + [cfg.get_c_wrapper_path()]
    out_name = f"{top}_v__ALL_pickled.cpp"
    with open(out_name, "w") as out:
        out.write("\n".join(f'#include "{src}"' for src in model + wrapper) + "\n")
    extra = []
    if cfg.vl_coverage or cfg.vl_line_coverage or cfg.vl_toggle_coverage:
        extra.append("-DVM_COVERAGE")
    if not cfg.is_default("c_flags"):
        extra += shlex.split(cfg.c_flags)
    includes = [p for p in cfg._get_all_includes() if p]
    return [out_name, shlex.quote(str(pymtl3_archive(runtime, includes, extra)))]


def install() -> None:
    """Patch PyMTL3's Verilator import to link the shared runtime archive (idempotent)."""
    global _installed
    if _installed:
        return
    from pymtl3.passes.backends.verilog.import_.VerilogVerilatorImportConfigs import (
        VerilogVerilatorImportConfigs,
    )

    for name in ("_get_c_src_files", "_get_srcs_from_vl_class_mk", "_get_all_includes"):
        if not hasattr(VerilogVerilatorImportConfigs, name):
            raise RuntimeError(f"pymtl3's VerilogVerilatorImportConfigs has no {name}: the runtime patch in "
                               "pymtl_fp/verilator_runtime.py does not fit this pymtl3 version")
    VerilogVerilatorImportConfigs._get_c_src_files = _c_src_files
    _installed = True


# -- make-based builds ---------------------------------------------------------------------------


def _global_objects(obj_dir: Path, make: list, env: dict) -> list:
    """The runtime objects the generated makefile builds (``$(VK_GLOBAL_OBJS)``, asked of make)."""
    goal = "pymtl_fp_global_objects"
    proc = subprocess.run([*make, f"--eval={goal}: ; @echo $(VK_GLOBAL_OBJS)", goal], cwd=obj_dir, env=env,
                          capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else []


def make_with_cached_runtime(obj_dir: Path, prefix: str, env: dict, jobs: int, run) -> None:
    """Run ``make -f <prefix>.mk`` in ``obj_dir`` (a directory Verilator just wrote, without
    ``--build``), with the runtime objects taken from the cache when an earlier build compiled them
    with the same commands, and put into it otherwise.  ``run(cmd, cwd, env, what)`` runs a
    command and raises on failure."""
    obj_dir = Path(obj_dir)
    make = ["make", "-f", f"{prefix}.mk"]
    objs = _global_objects(obj_dir, make, env)
    dry = subprocess.run([*make, "-n", "-B", *objs], cwd=obj_dir, env=env, capture_output=True, text=True)
    cached = None
    if dry.returncode == 0 and objs:
        key = digest(dry.stdout, _compiler_version(env.get("CXX", "g++")))
        cached = _runtime_dir(f"make_{key}")
        if cached.exists():  # (complete: build_once renames a directory into place when it is done)
            for o in objs:
                shutil.copyfile(cached / o, obj_dir / o)  # a fresh modification time: newer than the .mk
    run([*make, "-j", str(jobs)], obj_dir, env, "make")
    if cached is not None and not cached.exists():
        build_once(cached, lambda tmp: [shutil.copyfile(obj_dir / o, tmp / o) for o in objs])
