"""Fuzz target ``residual``: the router's residual kinds (ADD, MASK, GAP, GAPB) against the golden model.

A case is the parameters of :func:`pymtl_fp.tb.residual_cases.residual_params` (kind, array side, format,
map shape, rounding, ReLU, the values' seed) plus random stalls and, for the router, pipelined units.
The property, at each level:

* ``fl``: a node with the FL engine (``NodeFL``: the cycle-level router's units compute a whole
  instruction at once) runs the case and sends the result through buffer X to ``fwd_out``: it is the
  golden model's;
* ``cl``: the router alone (:class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`) hands the golden result to
  its engine;
* ``rtl`` / ``verilator``: :class:`~pymtl_fp.cluster.hw.RouterRTL.RouterRTL` does, and equals the CL
  router at every port and status output in every cycle.
"""

from __future__ import annotations

from hypothesis import strategies as st

from pymtl_fp.levels import LEVELS
from pymtl_fp.tb.fuzz.targets import FuzzTarget
from pymtl_fp.tb.residual_cases import (
    KINDS,
    build_case,
    case_inputs,
    case_program,
    footprint,
    residual_params,
    run_node_case,
)

#: the scratch FIFO of the router (and the node) a case runs on
SCRATCH = 256


@st.composite
def case_strategy(draw, level):
    small = level in ("rtl", "verilator")
    params = draw(residual_params(lanes=(2,) if level == "fl" else (1, 2, 3, 4), bits=(8,) if level == "fl" else (8, 16),
                                  max_hw=3 if small else 5, max_c=4 if small else 8, max_n=2 if small else 3,
                                  scratch=SCRATCH))
    return dict(params=params, stall=draw(st.sampled_from([0.0, 0.3, 0.6])), sseed=draw(st.integers(0, 2**16)),
                pipelined=draw(st.booleans()) and level != "fl")


def strategy(level):
    return case_strategy(level)


def check(case, level, ctx):
    from pymtl_fp.cluster.hw.router_config import RouterConfig
    from pymtl_fp.engine.msgs import from_word
    from pymtl_fp.tb.router_harness import run_router

    c = build_case(case["params"])
    if level == "fl":
        got = _node_fl(c, case["stall"], case["sseed"])
    else:
        cfg = RouterConfig(prog_depth=128, table_depth=64, scratch_depth=SCRATCH, out_depth=16,
                           pipelined_units=bool(case["pipelined"]), residual=True)
        runs = {lv: run_router(lv, cfg, case_program(c), [], seed=case["sseed"], stall=case["stall"],
                               inputs=case_inputs(c, cfg.stream_bits)) for lv in sorted({"cl", level})}
        for ra, rb in zip(runs["cl"]["trace"], runs[level]["trace"]):
            assert ra == rb, f"cycle {ra[0]}: cl {ra} vs {level} {rb}"
        assert len(runs["cl"]["trace"]) == len(runs[level]["trace"]), "the levels halt in different cycles"
        got = [from_word(v, cfg.stream_bits) for v in runs[level]["loaded"]]
    assert got == c["want"], f"{c['ins'].describe()}: {got} is not the golden model's {c['want']}"


def _node_fl(c, stall, sseed):
    node, got = run_node_case("fl", c, stall, sseed, scratch_depth=SCRATCH, max_cycles=20_000)
    assert node.router.is_done(), node.router.describe()
    return got


def limits(case):
    """A replayed residual case: the strategy's fields in their ranges."""
    from pymtl_fp.tb.fuzz import case_limits as cl

    p = case.get("params") if isinstance(case, dict) else None
    if not isinstance(p, dict):
        raise cl.CaseLimitError("params must be a table of the case's parameters")
    cl.choice(p, "kind", KINDS, "params")
    cl.integer(p, "P", 1, 8, "params")
    cl.choice(p, "bits", (8, 16), "params")
    shape = cl.integers(p, "shape", 1, 16, "params")
    if len(shape) != 4:
        raise cl.CaseLimitError("params.shape must be 4 integers (N, C, H, W)")
    cl.flag(p, "relu", "params")
    if footprint(p) > SCRATCH:
        raise cl.CaseLimitError(f"params: the case holds {footprint(p)} elements in a scratch FIFO of {SCRATCH}")
    cl.number(p, "extremes", 0.0, 1.0, "params")
    cl.choice(p, "mode", ("nearest", "stochastic"), "params")
    cl.integer(p, "seed", 0, 2**32 - 1, "params")
    cl.integer(p, "tid", 0, 255, "params")
    cl.integer(p, "vseed", 0, 2**32 - 1, "params")
    cl.number(case, "stall", 0.0, 0.95)
    cl.integer(case, "sseed", 0, 2**31)
    cl.flag(case, "pipelined")


def coverage(case):
    p = case["params"]
    return f"{p['kind']}/P{p['P']}/{p['bits']}b/{p['mode'][:4]}{'+relu' if p['relu'] else ''}" + \
        ("/piped" if case["pipelined"] else "")


TARGET = FuzzTarget(
    name="residual",
    description="the router's ADD / MASK / GAP / GAPB (node FL, router CL, RTL == CL every cycle) vs golden.residual",
    levels=LEVELS,
    strategy=strategy,
    check=check,
    coverage=coverage,
    case_keys=("params", "stall", "sseed", "pipelined"),
    limits=limits,
)
