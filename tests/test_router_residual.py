"""The router's residual kinds (ADD, MASK, GAP, GAPB): their instructions and one-line refusals, their
semantics against the golden model (:mod:`pymtl_fp.golden.residual`), and the router running them at
every level with random stalls -- CL against the golden model, RTL and Verilator cycle for cycle
against CL (and so against the golden model), with and without pipelined units -- and a node at FL
and CL (the FL level of a node is an FL engine behind the cycle-level router) passing the results
through its engine's buffer X to a link."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.router_config import RouterConfig
from pymtl_fp.engine.msgs import from_word
from pymtl_fp.numerics import QFormat
from pymtl_fp.tb.hypothesis_profiles import examples
from pymtl_fp.tb.residual_cases import case_inputs, case_program, residual_cases, run_node_case
from pymtl_fp.tb.router_harness import run_router

#: the configuration of tests/test_router.py's CL == RTL property (its Verilator builds are shared)
CFG = RouterConfig(prog_depth=128, table_depth=64, scratch_depth=256, out_depth=16, residual=True)
STALLS = st.sampled_from([0.0, 0.3, 0.6])


# ---- instructions -------------------------------------------------------------------------------

def test_residual_instructions_round_trip_and_carry_the_reciprocal():
    for ins in (isa.add(7, 8, True), isa.mask(5, 16), isa.gap((2, 5, 3, 3), 4, 8, stoch=1, seed=9, tid=3),
                isa.gapb((1, 3, 7, 7), 2, 16, relu=True, stoch=1, seed=2**32 - 1, tid=254)):
        word = isa.encode(ins)
        assert isa.encode(isa.decode(word)) == word and isa.decode(word).kind == ins.kind
    g = isa.gapb((2, 5, 7, 7), 4, 8, relu=True)
    # 49 pixels: F = 16 + 6, M = floor(2**22 / 49 + 1/2); 2 images x 2 tiles x 49 pixels x 4 lanes
    assert (g.field("shift"), g.field("rs"), g.count, g.field("crs")) == (22, 85598, 784, 16)
    assert isa.residual.inputs(g) == 16 + 784 and isa.unit_cycles(g, [], 17) == 784 + 2 + 17


def test_bad_residual_instructions_are_one_line_errors_naming_the_layer():
    with pytest.raises(isa.IsaError, match=r"^add2: the add's operands have different formats") as e:
        isa.add(8, 8, name="add2", formats=(QFormat(8, 3), QFormat(8, 4)))
    assert "\n" not in str(e.value)
    with pytest.raises(isa.IsaError, match=r"^add2: operands of 16 bits added into 8"):
        isa.add(8, 8, name="add2", formats=(QFormat(16, 3), QFormat(16, 3)))
    with pytest.raises(isa.IsaError, match=r"^gap: average pool area 66049 too large"):
        isa.gap((1, 1, 257, 257), 4, 8)
    with pytest.raises(isa.IsaError, match=r"^fc_in: saturation width 1"):
        isa.gapb((1, 1, 2, 2), 4, 1, name="fc_in")
    with pytest.raises(isa.IsaError, match=r"^add1: an add needs at least one element"):
        isa.add(0, 8, name="add1")
    with pytest.raises(isa.IsaError, match=r"^add1: saturation width 65"):
        isa.mask(4, 65, name="add1")
    with pytest.raises(isa.IsaError, match=r"^add1: an add needs at least one element, got True"):
        isa.add(True, 8, name="add1")
    with pytest.raises(isa.IsaError, match=r"^pool: shape \(1, 3, 2, 2\) on P = 2.5"):
        isa.gap((1, 3, 2, 2), 2.5, 8, name="pool")
    with pytest.raises(isa.IsaError, match=r"^pool5: command field count=33554432 does not fit"):
        isa.gap((64, 512, 32, 32), 16, 8, name="pool5")
    with pytest.raises(isa.IsaError, match=r"^gapb: "):
        isa.gapb((64, 512, 32, 32), 16, 8)


@given(case=residual_cases(lanes=(1, 2, 3, 4, 5), max_hw=5, max_c=9, max_n=3))
@settings(max_examples=examples(150), deadline=None)
def test_residual_semantics_are_the_golden_model(case):
    """The instruction's defined result (what CL computes and RTL must match) is the golden model's."""
    got = isa.residual.apply_residual([v for op in case["operands"] for v in op], case["ins"], case["seed"], 32)
    assert got == case["want"]


# ---- the router at every level ------------------------------------------------------------------

def _run(level, case, stall, sseed, pipelined=False):
    cfg = CFG.replace(pipelined_units=pipelined)
    r = run_router(level, cfg, case_program(case), [], seed=sseed, stall=stall,
                   inputs=case_inputs(case, cfg.stream_bits))
    assert [from_word(v, cfg.stream_bits) for v in r["loaded"]] == case["want"], f"{level}: not the golden result"
    return r


@given(case=residual_cases(), stall=STALLS, sseed=st.integers(0, 2**16))
@settings(max_examples=examples(12), deadline=None)
def test_router_cl_computes_the_golden_result(case, stall, sseed):
    for pipelined in (False, True):
        _run("cl", case, stall, sseed, pipelined)


@pytest.mark.parametrize("pipelined", [False, True], ids=["units", "pipelined_units"])
@pytest.mark.parametrize("level", ["rtl", "verilator"])
@given(case=residual_cases(bits=(8,), max_hw=2, max_c=4), stall=STALLS, sseed=st.integers(0, 2**16))
@settings(max_examples=examples(3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_router_rtl_equals_cl_every_cycle_on_residual_kinds(level, pipelined, case, stall, sseed):
    """The golden result, and every port and status output equal to CL's in every cycle."""
    a = _run("cl", case, stall, sseed, pipelined)
    b = _run(level, case, stall, sseed, pipelined)
    for ra, rb in zip(a["trace"], b["trace"]):
        assert ra == rb, f"cycle {ra[0]}: cl {ra} vs {level} {rb}"
    assert len(a["trace"]) == len(b["trace"])


# ---- a node at FL and CL --------------------------------------------------------------------------

@pytest.mark.parametrize("level", ["fl", "cl"])
@given(case=residual_cases(lanes=(2,), bits=(8,), max_hw=3, max_c=3), stall=STALLS, sseed=st.integers(0, 2**16))
@settings(max_examples=examples(4), deadline=None)
def test_node_runs_residual_kinds_through_its_engine(level, case, stall, sseed):
    """A node (tiny engine, P = 2) whose program runs the residual kind on link input and stores the
    result from buffer X to fwd_out: the golden result arrives."""
    node, got = run_node_case(level, case, stall, sseed, scratch_depth=256)
    assert node.router.is_done(), node.router.describe()
    assert got == case["want"]
