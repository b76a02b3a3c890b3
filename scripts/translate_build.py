"""The Verilator builds of ``pymtl-fp translate`` (:mod:`pymtl_fp.cli.cmd_translate`): the plain
``verilator --cc --build -Wall`` of the emitted files a hardware team would run, the build imported into
PyMTL3 with its smoke run, VCD and GTKWave save file, and the random-input smoke run of a unit without one
of its own."""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

from pymtl_fp.cli.errors import UserError


def input_ports(top):
    """The top-level input ports (interface ports included), clock and reset excluded."""
    from pymtl3 import InPort

    ports = top.get_all_object_filter(lambda x: isinstance(x, InPort) and x.get_host_component() is top)
    return sorted((p for p in ports if p._dsl.my_name not in ("clk", "reset")), key=repr)


def smoke_run(sim, cycles: int, seed: int = 0) -> int:
    """Drive every input port (``Bits`` typed) with seeded random values for ``cycles`` cycles.
    Returns the number of ports driven.  A smoke run checks nothing but that the model runs and
    its signals toggle; the unit's own tests check behaviour."""
    from pymtl3 import Bits

    rng = random.Random(seed)
    ports = [(p, p.get_type().nbits) for p in input_ports(sim) if issubclass(p.get_type(), Bits)]
    for _ in range(cycles):
        for p, nbits in ports:
            value = _value_of(p)  # the simulator's Bits object, set in place
            value @= rng.getrandbits(nbits)
        sim.sim_tick()
    return len(ports)


def _value_of(port):
    """The object a simulated component holds for ``port`` (``top.recv.msg``, ``top.wen[3]``)."""
    obj = getattr(port.get_parent_object(), port._dsl._my_name)
    for idx in getattr(port._dsl, "_my_indices", None) or ():
        obj = obj[idx]
    return obj


def plain_build(sources: list, name: str, out: Path) -> dict:
    """``verilator --cc --build -Wall`` of the emitted files (the waiver file first, no other
    waiver), top ``name``, as a user would run it."""
    import os

    from pymtl_fp.toolchain import make_env, setup_verilator

    info = setup_verilator()
    cmd = [info.executable, "--cc", "--build", "-Wall", "-j", "2", "--Mdir", "obj_dir_plain",
           *(Path(p).name for p in sources), "--top-module", name]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=out, capture_output=True, text=True, env=make_env(dict(os.environ)), check=False)
    seconds = time.perf_counter() - t0
    warnings = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("%Warning", "%Error"))]
    if proc.returncode != 0 or warnings:
        raise UserError(f"plain Verilator build of {name} failed ({proc.returncode}): "
                        + (" | ".join(warnings[:5]) or (proc.stdout + proc.stderr)[-600:]))
    print(f"plain build: {' '.join(cmd[1:])} -> clean, {seconds:.1f} s")
    return dict(command=" ".join(["verilator"] + cmd[1:]), seconds=round(seconds, 1), clean=True)


def build_model(unit, cfg, name, out, args) -> dict:
    import gc

    from pymtl_fp.verilate import translate_import

    stem = out / name
    t0 = time.perf_counter()
    try:
        sim = translate_import(unit.build(cfg), name, params=None, vcd=args.vcd, vcd_file=str(stem) + ".vcd")
    except Exception as exc:
        raise UserError(f"Verilator build of {name} failed: {str(exc).strip()[:800]}") from None
    seconds = time.perf_counter() - t0
    sim.sim_reset()
    t1 = time.perf_counter()
    if unit.smoke is not None:
        what = unit.smoke(sim, cfg, args.cycles)
        driven = None
    else:
        driven = smoke_run(sim, args.cycles)
        what = f"smoke run of {args.cycles} cycles with random inputs on {driven} ports"
    run_s = time.perf_counter() - t1
    vcd = getattr(sim, "vcd_path", None)
    del sim
    gc.collect()  # the Verilated model closes its trace file when it is destroyed
    gtkw = None
    if vcd and Path(vcd).is_file():
        from pymtl_fp.gtkwave import write_save_file

        gtkw = write_save_file(vcd, unit.wave_state)
    info = dict(seconds=round(seconds, 1), smoke=what, ports_driven=driven, smoke_seconds=round(run_s, 2),
                vcd=str(vcd) if vcd else None, gtkwave=str(gtkw) if gtkw else None)
    print(f"Verilator model built in {seconds:.1f} s (an unchanged design is reused from the build cache)")
    print(what + (f"\nVCD -> {vcd}" if vcd else "") + (f"\nGTKWave save file -> {gtkw} (gtkwave {gtkw.name})"
                                                         if gtkw else ""))
    return info
