"""Run a PyMTL3 simulation until it is done, with a watchdog instead of a hang (any level).

:func:`build_sim` turns a constructed test-bench top into a running simulation at a level:
``fl``/``cl``/``rtl`` simulate in Python (PyMTL3), ``verilator`` translates the design under test
(the top itself, or the child given as ``dut``) and imports it through Verilator.

:func:`run_until` ticks a simulated top (elaborated, simulator built and reset) until ``done()``
returns true.  It raises :class:`SimulationHang` when ``max_cycles`` pass, or when ``progress()``
(any value that changes while the design makes progress, e.g. the number of messages moved)
stays the same for ``idle_limit`` cycles — naming what is stuck and showing the last line traces.

:func:`stall_pattern` is the random stall schedule shared by the test-bench endpoints
(:mod:`pymtl_fp.tb.stream`) and the cluster's router (a pure function of seed and cycle).

The library (the cluster's training run) and the test benches both use this module; it imports
nothing above PyMTL3 and the Verilator glue.
"""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path

from pymtl_fp.levels import LEVELS
from pymtl_fp.sim_passes import default_passes


def stall_pattern(seed: int, stall_prob: float):
    """Generator of booleans: ``True`` at cycle t means "stall at cycle t"."""
    if not 0.0 <= stall_prob < 1.0:
        raise ValueError(f"stall probability must be in [0, 1), got {stall_prob}")
    rng = random.Random(seed)
    while True:
        yield rng.random() < stall_prob


class SimulationHang(RuntimeError):
    """The simulation did not finish: a deadlock, a livelock or a cycle budget too small."""


def build_sim(top, level: str, *, dut: str | None = None, name: str | None = None, params: dict | None = None,
              vcd: str | None = None, reset: bool = True):
    """Elaborate ``top`` and build its simulator at ``level``; optionally reset it.

    ``vcd``: a file stem; Python levels write ``<stem>.vcd`` (PyMTL3's VCD pass), ``verilator``
    writes ``<stem>.verilator1.vcd``.  The written path is ``sim.vcd_path`` (None without vcd).
    ``dut`` (``verilator`` only): the dotted child name of the unit to import, default the top.
    ``name`` (required for ``verilator``) is the Verilog module name of the unit imported; make
    it with :func:`pymtl_fp.verilate.module_name` so it encodes every elaboration parameter."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    if level == "verilator":
        if not name:
            raise ValueError("level 'verilator' needs the Verilog module name (name=...)")
        from pymtl_fp.verilate import translate_import

        sim = translate_import(top, name, dut=dut, params=params, vcd=bool(vcd), vcd_file=vcd and vcd + ".vcd")
    else:
        top.elaborate()
        sim = top
        sim.apply(default_passes(linetrace=False, vcdwave=vcd))
        sim.vcd_path = Path(vcd + ".vcd") if vcd else None
    if reset:
        sim.sim_reset()
    return sim


def run_until(top, done, *, max_cycles=100_000, progress=None, idle_limit=5_000, trace=False,
              keep_traces=0, describe_stuck=None, check_every=1) -> int:
    """Tick ``top`` until ``done()``; return the number of cycles ticked.

    ``top.sim_tick()`` may return how many cycles it advanced (the direct scheduler of
    :mod:`pymtl_fp.direct` skips quiet spans, during which ``done()`` and ``progress()`` cannot
    change); PyMTL3's returns nothing (one cycle).  ``progress()`` is compared every
    ``check_every`` ticks (building it costs time; the watchdog's limit is then met to within
    that many ticks).  ``trace`` prints every tick's line trace; ``keep_traces=N`` keeps the last
    N for the hang message (building a line trace every cycle costs time, so by default only the
    line trace at the moment of the hang is shown)."""
    history = deque(maxlen=keep_traces)
    last = progress() if progress else None
    idle = since = ticks = 0
    cycle = 0
    while cycle < max_cycles:
        if done():
            return cycle
        cycle += top.sim_tick() or 1
        ticks += 1
        if trace or keep_traces > 0:
            line = f"{cycle - 1:6d}: {top.line_trace()}"
            history.append(line)
            if trace:
                print(line)
        if progress is not None:
            if ticks % check_every == 0:
                now = progress()
                if now == last:
                    idle += cycle - since
                    if idle >= idle_limit:
                        raise SimulationHang(_hang_message(
                            f"no progress for {idle_limit} cycles at cycle {cycle - 1}", top, history,
                            describe_stuck))
                else:
                    idle, last = 0, now
                since = cycle
    if done():
        return cycle
    raise SimulationHang(_hang_message(f"not done after {max_cycles} cycles", top, history,
                                       describe_stuck))


def _hang_message(what, top, history, describe_stuck):
    stuck = f"; stuck: {describe_stuck()}" if describe_stuck else ""
    lines = "\n".join(history) if history else f"now: {top.line_trace()}"
    return f"simulation hang: {what}{stuck}\nline traces:\n{lines}"
