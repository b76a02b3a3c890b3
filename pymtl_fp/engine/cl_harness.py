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
    """Drive ``op`` through the engine of ``level`` exactly as :func:`tb.engine_harness.drive`
    does (same stall patterns); return ``(per-cycle (cmd.rdy, din.rdy, dout.val, busy) tuples,
    received elements)``."""
    from pymtl_fp.engine import msgs, program
    from pymtl_fp.engine.msgs import from_word, to_word
    from tb import engine_harness as eh
    from tb.stream import stall_pattern

    case = eh.validate_case(cfg, op, case)
    prog = program.build(cfg, op, case)
    model = get_any_model(level, cfg)
    DataT, sb = msgs.data_type(cfg), cfg.stream_bits
    pc = stall_pattern(stall_seed * 3 + 0, stall[0])
    pd = stall_pattern(stall_seed * 3 + 1, stall[1])
    po = stall_pattern(stall_seed * 3 + 2, stall[2])
    cmds, din = prog.cmds, [DataT(to_word(v, sb)) for v in prog.din]
    n_out = prog.out_count()
    model.sim_reset()
    ci = di = 0
    out, trace = [], []
    t = 0
    while ci < len(cmds) or len(out) < n_out:
        if t >= max_cycles:
            raise RuntimeError(f"{level} engine not done after {max_cycles} cycles")
        vc = ci < len(cmds) and not next(pc)
        vd = di < len(din) and not next(pd)
        model.cmd.val @= vc
        if vc:
            model.cmd.msg @= cmds[ci]
        model.din.val @= vd
        if vd:
            model.din.msg @= din[di]
        model.dout.rdy @= not next(po)
        model.sim_eval_combinational()
        trace.append((int(model.cmd.rdy), int(model.din.rdy), int(model.dout.val), int(model.busy)))
        if vc and model.cmd.rdy:
            ci += 1
        if vd and model.din.rdy:
            di += 1
        if model.dout.val and model.dout.rdy:
            out.append(from_word(int(model.dout.msg), sb))
        model.sim_tick()
        t += 1
    return trace, out
