"""Run the cycle-level engine (:class:`~pymtl_fp.engine.EngineCL.EngineCL`) like the test harness
runs the other levels, and record per-cycle handshake traces to compare levels cycle by cycle.

* :func:`run_op_cl` is :func:`tb.engine_harness.run_op` for level ``cl`` (same validation,
  program, stream driver, stall patterns and returned keys, including ``cycles``,
  ``compute_cycles``, ``macs`` and ``total_cycles``), usable whether or not the harness itself
  knows the ``cl`` level.
* :func:`handshake_trace` drives any engine level with the harness's stall patterns and returns,
  for every cycle, ``(cmd.rdy, din.rdy, dout.val, busy)`` and the element of each transfer,
  so two levels can be compared exactly.
"""

from __future__ import annotations

import numpy as np

_CL_MODELS: dict = {}


def get_cl_model(cfg):
    """An elaborated, simulatable :class:`EngineCL` for ``cfg`` (cached per process)."""
    key = repr(cfg.params())
    if key not in _CL_MODELS:
        from pymtl3 import DefaultPassGroup

        from pymtl_fp.engine.EngineCL import EngineCL

        m = EngineCL(cfg)
        m.elaborate()
        m.apply(DefaultPassGroup())
        _CL_MODELS[key] = m
    return _CL_MODELS[key]


def get_any_model(level: str, cfg):
    if level == "cl":
        return get_cl_model(cfg)
    from tb.engine_harness import get_model

    return get_model(level, cfg)


def run_op_cl(cfg, op: str, *, stall=(0.0, 0.0, 0.0), stall_seed=0, check=False, **case) -> dict:
    """:func:`tb.engine_harness.run_op` at level ``cl``."""
    from pymtl_fp.engine import program
    from tb import engine_harness as eh

    case = eh.validate_case(cfg, op, case)
    prog = program.build(cfg, op, case)
    model = get_cl_model(cfg)
    elements, t = eh.drive(model, cfg, prog, stall=stall, seed=stall_seed)
    res = prog.unpack(elements)
    res["bits"] = eh.result_bits(cfg, op)
    res["cycles"] = t["cycles"]
    res["compute_cycles"] = t["compute_cycles"]
    res["macs"] = program.useful_macs(op, case)
    res["total_cycles"] = t["total_cycles"]
    if check:
        for key, val in eh.golden_op(cfg, op, case).items():
            if res[key].shape != val.shape or not np.array_equal(res[key], val):
                raise AssertionError(f"cl {op} {key} differs from golden")
    return res


def handshake_trace(level: str, cfg, op: str, *, stall=(0.0, 0.0, 0.0), stall_seed=0, max_cycles=200_000,
                    **case) -> tuple[list, list]:
    """Drive ``op`` through the engine of ``level`` with :func:`tb.engine_harness.drive` (same
    stall patterns); return ``(per-cycle (cmd.rdy, din.rdy, dout.val, busy) tuples,
    received elements)``."""
    from pymtl_fp.engine import program
    from tb import engine_harness as eh

    case = eh.validate_case(cfg, op, case)
    prog = program.build(cfg, op, case)
    trace: list = []
    out, _ = eh.drive(get_any_model(level, cfg), cfg, prog, stall=stall, seed=stall_seed,
                      max_cycles=max_cycles, trace=trace)
    return trace, out
