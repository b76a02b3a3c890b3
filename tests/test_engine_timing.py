"""The RTL's compute cycles equal the closed form of :func:`pymtl_fp.engine.program.compute_cycles`
(whatever the stalls on the streams: a compute command does not touch them), and the steady
state keeps the array busy: utilization is the share of non-padding taps."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.engine import program
from pymtl_fp.engine.cases import validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.tb.engine_harness import run_op
from pymtl_fp.tb.engine_strategies import engine_cases
from pymtl_fp.tb.hypothesis_profiles import examples
from pymtl_fp.timing import COMPUTE_OPS

CFG = preset("tiny")


@pytest.mark.verilator
@settings(max_examples=examples(25))
@given(data=st.data())
def test_compute_cycles_closed_form(cmdline_opts, data):
    op = data.draw(st.sampled_from(COMPUTE_OPS))
    case, stall, seed = data.draw(engine_cases(CFG, op))
    res = run_op("verilator", CFG, op, stall=stall, stall_seed=seed, **case)
    assert res["compute_cycles"] == program.compute_cycles(CFG, op, validate_case(CFG, op, case))


@pytest.mark.verilator
def test_fwd_utilization_without_padding(cmdline_opts):
    """C and K multiples of the array, no padding: every cycle but the 3 of the array's pipeline and
    the preset's pipelines (its write-back stages and command register) is useful."""
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, size=(1, 4, 6, 6))
    w = rng.integers(-128, 128, size=(4, 4, 3, 3))
    res = run_op("verilator", CFG, "fwd", x=x, w=w, b=np.zeros(4, dtype=np.int64), stride=1, pad=0,
                 shift=8, relu=0)
    fixed = 3 + CFG.wb_latency + CFG.cmd_latency
    assert CFG.wb_latency > 0 and CFG.cmd_latency > 0  # (the preset is pipelined)
    assert res["compute_cycles"] - fixed == res["macs"] // CFG.macs_per_cycle
    assert res["macs"] / (CFG.macs_per_cycle * (res["compute_cycles"] - fixed)) == 1.0


@pytest.mark.verilator
def test_bwd_weight_overlaps_drain_and_db(cmdline_opts):
    """dw tiles drain while the next accumulates and db is summed on the side: only the last
    drain and the pipelines (the array's 3 stages, the preset's write-back stages and command
    register) are not overlapped."""
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, size=(2, 4, 6, 6))
    dy = rng.integers(-128, 128, size=(2, 4, 4, 4))
    res = run_op("verilator", CFG, "bwd_weight", x=x, dy=dy, w_shape=np.array([4, 4, 3, 3]), stride=1, pad=0,
                 shift=8, bias_shift=2)
    busy = res["macs"] // CFG.macs_per_cycle
    pipe = 3 + CFG.wb_latency + CFG.cmd_latency
    assert res["compute_cycles"] == busy + pipe + CFG.P  # the last tile (ct = 1) drains its P dw rows
    res1 = run_op("verilator", CFG, "bwd_weight", x=x[:, :2], dy=dy, w_shape=np.array([4, 2, 3, 3]), stride=1,
                  pad=0, shift=8, bias_shift=2)
    busy1 = res1["macs"] // CFG.macs_per_cycle
    assert res1["compute_cycles"] == busy1 + pipe + CFG.P + 1  # one C tile: the last tile also ends a db sum


@pytest.mark.verilator
@pytest.mark.parametrize("dr", [2, 4])
def test_bwd_weight_drains_dr_rows_a_cycle(cmdline_opts, dr):
    """A 4x4 engine whose drain writes ``drain_rows`` dw rows a cycle: fully connected shapes at
    batch 1 and 2 (tiles of 1-2 steps, shorter than the drain: its pace is the bottleneck), and a
    3x3 conv, bit-exact with the golden model (stochastic rounding: every row's element indices),
    compute cycles equal to the closed form, faster than one row a cycle; CL hands shake in the
    same cycles as the RTL under stalls."""
    from pymtl_fp import timing
    from pymtl_fp.engine.config import preset as get_preset
    from pymtl_fp.tb.engine_harness import handshake_trace, random_case

    cfg = get_preset("small").replace(drain_rows=dr, name="")
    rng = np.random.default_rng(dr)
    for n, c, k, h, r, pad in ((1, 6, 9, 1, 1, 0), (2, 8, 5, 1, 1, 0), (2, 5, 4, 3, 3, 1)):
        case = validate_case(cfg, "bwd_weight", random_case(cfg, "bwd_weight", rng, n=n, c=c, k=k, h=h, w=h, r=r,
                                                             s=r, pad=pad, mode="stochastic"))
        res = run_op("verilator", cfg, "bwd_weight", check=True, **case)
        f = program.op_fields(cfg, "bwd_weight", case)
        pipes = cfg.wb_latency + cfg.cmd_latency  # (the preset's pipelines: a fixed latency per command)
        assert res["compute_cycles"] == timing.bwd_weight_cycles(cfg.P, f, dr) + pipes == program.compute_cycles(
            cfg, "bwd_weight", case)
        if h == 1:  # drain-bound: one row a cycle would take longer
            assert res["compute_cycles"] < timing.bwd_weight_cycles(cfg.P, f) + pipes
    stall = (0.3, 0.5, 0.5)
    assert handshake_trace("cl", cfg, "bwd_weight", stall=stall, stall_seed=3, **case) == \
        handshake_trace("verilator", cfg, "bwd_weight", stall=stall, stall_seed=3, **case)
