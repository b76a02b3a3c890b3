"""The cycle-level engine (:class:`EngineCL`) against the RTL: same values, same cycles.

* every operation, random shapes and configs (Hypothesis; the configs also draw the
  ``bwd_weight`` drain's rows per cycle among the divisors of ``P``), random stalls on all three streams
  (probabilities 0, 0.3, 0.7, including none): CL and RTL (through Verilator) accept and send
  on every port in the *same cycles* (the per-cycle ``(cmd.rdy, din.rdy, dout.val, busy)``
  traces are identical) and send the same elements, which equal the golden model; so the cycle
  error of CL vs RTL is 0, with and without stalls;
* the same against the PyMTL3 (Python) RTL simulation on a few cases;
* CL's compute occupancy equals the timing model on shapes too large for RTL simulation;
* CL has the ports and message types of FL and RTL.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.engine import program
from pymtl_fp.engine.cases import golden_op, validate_case
from pymtl_fp.engine.config import EngineConfig, pipeline_fields, preset
from pymtl_fp.tb.engine_harness import get_model, handshake_trace, random_case, run_op
from pymtl_fp.tb.engine_strategies import engine_cases
from pymtl_fp.tb.hypothesis_profiles import examples
from pymtl_fp.timing import COMPUTE_OPS

CFG = preset("tiny")
OPS = list(COMPUTE_OPS)
PIPELINED = preset("small").replace(stream_lanes=2, drain_rows=2, pipelined_requant=True, pipelined_mac=True,
                                     pipelined_addr=True, pipelined_cmd=True)


def _compare(level, cfg, op, case, stall, seed, eager=False):
    tr_cl, out_cl = handshake_trace("cl", cfg, op, stall=stall, stall_seed=seed, eager=eager, **case)
    tr_rtl, out_rtl = handshake_trace(level, cfg, op, stall=stall, stall_seed=seed, eager=eager, **case)
    assert out_cl == out_rtl, (op, "values differ")
    assert len(tr_cl) == len(tr_rtl), (op, stall, f"CL {len(tr_cl)} cycles, RTL {len(tr_rtl)}")
    first = next((i for i, (a, b) in enumerate(zip(tr_cl, tr_rtl)) if a != b), None)
    assert first is None, (op, stall, f"first differing cycle {first}: CL {tr_cl[first]} RTL {tr_rtl[first]}")


@pytest.mark.cl
@pytest.mark.verilator
@pytest.mark.parametrize("op", OPS)
@settings(max_examples=examples(12))
@given(data=st.data())
def test_cl_equals_rtl_cycle_by_cycle(cmdline_opts, op, data):
    """Without stalls and with the drawn stall pattern: identical traces, so 0 cycle error."""
    case, stall, seed = data.draw(engine_cases(CFG, op))
    _compare("verilator", CFG, op, case, (0.0, 0.0, 0.0), seed)
    if any(stall):
        _compare("verilator", CFG, op, case, stall, seed)
    res = run_op("cl", CFG, op, stall=stall, stall_seed=seed, **case)
    for key, val in golden_op(CFG, op, validate_case(CFG, op, case)).items():
        assert np.array_equal(res[key], val), (op, key)


@pytest.mark.cl
@pytest.mark.verilator
@pytest.mark.parametrize("lanes", [1, 2, 4])
@pytest.mark.parametrize("op", ["fwd", "bwd_weight", "update"])
def test_cl_equals_rtl_on_a_4x4_engine(cmdline_opts, op, lanes):
    """``small`` with 1, 2 and 4 elements per stream beat (``stream_lanes``; at 2 also two drain
    rows, one Verilator build for this test and the next; at 4 without the preset's pipelines,
    ``--pipeline none``): CL and Verilator handshake in the same cycles with and without stalls,
    and the results equal the golden model."""
    cfg = PIPELINED if lanes == 2 else preset("small").replace(
        stream_lanes=lanes, **(pipeline_fields("none") if lanes == 4 else {}))
    assert (cfg.wb_latency > 0) == (lanes != 4)
    case = random_case(cfg, op, np.random.default_rng(11), n=2, c=5, k=6, h=5, w=5, stride=2, pad=1,
                       mode="stochastic")
    for stall, seed in (((0.0, 0.0, 0.0), 0), ((0.5, 0.5, 0.5), 4)):
        _compare("verilator", cfg, op, case, stall, seed)
    run_op("verilator", cfg, op, stall=(0.5, 0.5, 0.5), stall_seed=5, check=True, **case)


@pytest.mark.cl
@pytest.mark.verilator
@pytest.mark.parametrize("op", OPS)
def test_cl_equals_rtl_with_the_four_pipelines(cmdline_opts, op):
    """``small`` with two drain rows, two elements a beat, the command register, the address
    stage, the pipelined MAC array and the pipelined requantizer (``wb_latency`` cycles more per
    compute command, ``cmd_latency`` per command offered to an idle engine): CL and Verilator
    handshake in the same cycles with and without stalls, with the commands offered once the
    engine is idle and at once (so commands wait in the command register); every compute command
    takes ``wb_latency + cmd_latency`` cycles more than without the pipelines and the program
    ``cmd_latency`` more per command (offered to an idle engine) or once (offered at once), all
    measured on the RTL; the results equal the golden model."""
    cfg = PIPELINED
    assert cfg.wb_latency > 0 and cfg.cmd_latency > 0
    kw = dict(n=1, c=3, h=4, w=4) if op.startswith("pool") else dict(n=2, c=5, k=6, h=5, w=5, stride=2, pad=1)
    case = random_case(cfg, op, np.random.default_rng(12), mode="stochastic", **kw)
    for stall, seed in (((0.0, 0.0, 0.0), 0), ((0.5, 0.5, 0.5), 4)):
        for eager in (False, True):
            _compare("verilator", cfg, op, case, stall, seed, eager)
    res = run_op("verilator", cfg, op, check=True, **case)  # measured on the RTL
    plain = cfg.replace(pipelined_requant=False, pipelined_mac=False, pipelined_addr=False, pipelined_cmd=False)
    vcase = validate_case(plain, op, case)
    want = program.op_timing(plain, op, vcase)
    assert res["compute_cycles"] == want["compute_cycles"] + cfg.wb_latency + cfg.cmd_latency
    ncmd = len(program.build(plain, op, vcase).cmds)
    assert res["total_cycles"] == want["total_cycles"] + cfg.wb_latency + ncmd * cfg.cmd_latency
    trace, _ = handshake_trace("verilator", cfg, op, eager=True, **case)
    assert len(trace) == want["total_cycles"] + cfg.wb_latency + cfg.cmd_latency


@pytest.mark.cl
@pytest.mark.verilator
@pytest.mark.parametrize("op", ["fwd", "fwd-bp", "bwd_data", "bwd_weight"])
def test_cl_equals_rtl_with_the_mac_array_accumulating_in_the_dsps(cmdline_opts, op):
    """``small`` with the four pipelines, its MAC pipeline accumulating in the DSP blocks
    (``dsp_mac``, MacArrayDspRTL: every lane accumulates its own products, reduce mode sums a row
    when it reads it), in every mode of the array (reduce with the bias, transposed, outer, and outer
    with the bias: a batch-parallel ``fwd``): CL and Verilator handshake in the same cycles with and
    without stalls, the results equal the golden model, and the command takes as many cycles as
    with the fabric MAC pipeline."""
    cfg = PIPELINED.replace(dsp_mac=True)
    name, bp = op.split("-")[0], op.endswith("-bp")
    case = random_case(cfg, name, np.random.default_rng(13), n=5 if bp else 2, c=5, k=6, h=5, w=5, stride=2, pad=1,
                       mode="stochastic")
    if bp:
        case = dict(case, bp=1)
    for stall, seed in (((0.0, 0.0, 0.0), 0), ((0.5, 0.5, 0.5), 4)):
        _compare("verilator", cfg, name, case, stall, seed)
    res = run_op("verilator", cfg, name, check=True, **case)
    assert res["compute_cycles"] == program.op_timing(PIPELINED, name, validate_case(PIPELINED, name, case))[
        "compute_cycles"]


@pytest.mark.cl
@pytest.mark.verilator
@pytest.mark.parametrize("op", ["fwd", "fwd-bp", "bwd_data", "bwd_weight"])
def test_cl_equals_rtl_with_the_tap_bounds_in_registers(cmdline_opts, op):
    """``small`` with the four pipelines and the address generator's tap bounds in registers
    (``registered_taps``, AddrGenRegRTL), strides 2 (with and without stalls) and 1, with padding:
    CL and Verilator handshake in the same cycles, the results equal the golden model, and the
    command takes as many cycles as without the registers."""
    cfg = PIPELINED.replace(registered_taps=True)
    name, bp = op.split("-")[0], op.endswith("-bp")
    for stride, seed, stalls in ((2, 14, ((0.0, 0.0, 0.0), (0.5, 0.5, 0.5))), (1, 15, ((0.0, 0.0, 0.0),))):
        kw = dict(n=5 if bp else 2, c=5, k=6, h=5, w=6, stride=stride, pad=1)
        case = random_case(cfg, name, np.random.default_rng(seed), mode="stochastic", **kw)
        if bp:
            case = dict(case, bp=1)
        for stall in stalls:
            _compare("verilator", cfg, name, case, stall, 4)
        res = run_op("verilator", cfg, name, check=True, **case)
        assert res["compute_cycles"] == program.op_timing(PIPELINED, name, validate_case(PIPELINED, name, case))[
            "compute_cycles"]


@pytest.mark.cl
@pytest.mark.rtl
@pytest.mark.parametrize("op", ["fwd", "bwd_data", "bwd_weight", "pool_fwd"])
def test_cl_equals_pymtl_rtl(op):
    case = random_case(CFG, op, np.random.default_rng(5), n=1, c=2, k=3, h=2, w=2 if op.startswith("pool") else 3,
                       r=1 if op == "bwd_data" else 3, s=1 if op == "bwd_data" else 3, stride=1,
                       pad=0 if op == "bwd_data" else 1)
    _compare("rtl", CFG, op, case, (0.3, 0.5, 0.5), 9)


@st.composite
def _configs(draw):
    P = draw(st.integers(1, 3))
    dr = draw(st.sampled_from([d for d in range(1, P + 1) if P % d == 0]))
    bits = [draw(st.integers(3, 10)) for _ in range(3)]
    acc = draw(st.integers(2 * max(bits) + 2, 40))
    mac = draw(st.booleans())
    return EngineConfig(rows=P, cols=P, act_bits=bits[0], weight_bits=bits[1], grad_bits=bits[2], acc_bits=acc,
                        stream_bits=draw(st.integers(acc, 64)), act_depth=draw(st.sampled_from([64, 256])),
                        weight_depth=draw(st.sampled_from([64, 128])), bias_depth=16,
                        drain_rows=dr, stochastic=draw(st.booleans()), pipelined_requant=draw(st.booleans()),
                        pipelined_mac=mac, dsp_mac=mac and draw(st.booleans()), pipelined_addr=draw(st.booleans()),
                        pipelined_cmd=draw(st.booleans()), registered_taps=draw(st.booleans()),
                        stream_lanes=draw(st.sampled_from([e for e in range(P, 0, -1) if P % e == 0])),
                        name="random")


@pytest.mark.cl
@pytest.mark.rtl
@settings(max_examples=examples(6))
@given(data=st.data())
def test_cl_equals_pymtl_rtl_over_random_configs(data):
    """Random elaboration parameters (array side, word widths, depths, drain rows per cycle,
    stochastic rounding built or not, each of the four pipelines built or not, the MAC pipeline
    accumulating in the DSP blocks or not, the tap bounds in registers or not, elements per stream beat): the
    PyMTL3 RTL and CL handshake in the same cycles and send the same elements, which equal the
    golden model (and FL's)."""
    cfg = data.draw(_configs())
    op = data.draw(st.sampled_from(OPS))
    case, stall, seed = data.draw(engine_cases(cfg, op, max_hw=3, max_ch=3, max_n=1))
    _compare("rtl", cfg, op, case, stall, seed)
    for level in ("cl", "fl"):
        run_op(level, cfg, op, stall=stall, stall_seed=seed, check=True, **case)


@pytest.mark.cl
@pytest.mark.parametrize("op", OPS)
def test_cl_compute_cycles_follow_the_timing_model_on_larger_shapes(op):
    cfg = EngineConfig(rows=8, cols=8, act_depth=4096, weight_depth=256, bias_depth=16, name="cl-test")
    case = random_case(cfg, op, np.random.default_rng(2), n=2, c=20, k=12, h=10, w=10, stride=2, pad=1)
    res = run_op("cl", cfg, op, check=True, **case)
    want = program.op_timing(cfg, op, validate_case(cfg, op, case))
    assert {k: res[k] for k in want} == want
    assert get_model("cl", cfg).compute_log[-1][2] == want["compute_cycles"]


@pytest.mark.cl
def test_cl_has_the_ports_of_fl_and_rtl():
    from pymtl_fp.engine.EngineCL import EngineCL
    from pymtl_fp.engine.EngineFL import EngineFL

    def ports(cls):
        m = cls(CFG)
        m.elaborate()
        out = {name: (type(getattr(m, name)).__name__, getattr(m, name).msg._dsl.Type)
               for name in ("cmd", "din", "dout")}
        out["busy"] = (type(m.busy).__name__, m.busy._dsl.Type)
        return out

    from pymtl_fp.engine.EngineRTL import EngineRTL

    assert ports(EngineCL) == ports(EngineFL) == ports(EngineRTL)


@pytest.mark.cl
@pytest.mark.verilator
def test_bench_reports_exact_agreement(cmdline_opts):
    """The benchmark runs (PyMTL3 RTL speed run skipped); its cycle figures agree exactly (wall-clock
    speed is printed, never asserted)."""
    from pymtl_fp.cli.benchmarks.engine_cl import bench

    lines = []
    res = bench("small", ops=("pool_fwd", "update"), pymtl=False, out=lines.append)
    assert set(res["speed"]["rate"]) == {"cl", "verilator"}
    assert res["speed"]["cycles"]["cl"] == res["speed"]["cycles"]["verilator"]
    assert len(res["accuracy"]) == 3 * 2 and all(r["err"] == 0 and r["err_total"] == 0 for r in res["accuracy"].values())
    assert any("VGG-16 conv3_2" in line for line in lines)


@pytest.mark.cl
def test_run_op_and_the_cli_at_level_cl(tmp_path, capsys):
    """``run_op("cl", ...)`` and ``pymtl-fp run-op --level cl`` run EngineCL and report the RTL's
    cycles (the timing model's)."""
    from pymtl_fp.cli.main import main
    from pymtl_fp.tb.engine_harness import run_op

    case = random_case(CFG, "bwd_weight", np.random.default_rng(4), n=1, c=3, k=3, h=4, w=4)
    res = run_op("cl", CFG, "bwd_weight", check=True, **case)
    want = program.op_timing(CFG, "bwd_weight", validate_case(CFG, "bwd_weight", case))
    assert {k: res[k] for k in want} == want
    path, out = tmp_path / "case.npz", tmp_path / "out.npz"
    np.savez(path, **{k: np.asarray(v) for k, v in case.items()})
    assert main(["run-op", "--level", "cl", "--op", "bwd_weight", "--case", str(path), "--out", str(out),
                 "--check"]) == 0
    z = np.load(out)
    assert int(z["compute_cycles"]) == want["compute_cycles"] and int(z["cycles"]) == want["cycles"]
    assert "(golden: equal)" in (printed := capsys.readouterr().out)
    assert "with pipelines requant,mac,addr,cmd" in printed  # (the preset's)
    # --pipeline none: the engine without them, its compute command 18 cycles shorter (wb + cmd latency)
    assert main(["run-op", "--level", "cl", "--op", "bwd_weight", "--case", str(path), "--out", str(out),
                 "--check", "--pipeline", "none"]) == 0
    assert "with pipelines none" in capsys.readouterr().out
    bare = CFG.replace(**pipeline_fields("none"))
    assert CFG.wb_latency + CFG.cmd_latency == 13 + 3 + 1 + 1
    assert int(np.load(out)["compute_cycles"]) == want["compute_cycles"] - CFG.wb_latency - CFG.cmd_latency == (
        program.op_timing(bare, "bwd_weight", validate_case(bare, "bwd_weight", case))["compute_cycles"])
    assert main(["run-op", "--level", "cl", "--op", "fwd", "--pipeline", "fast", "--case", str(path),
                 "--out", str(out)]) == 1
    assert "--pipeline 'fast': choose from" in capsys.readouterr().err


@pytest.mark.cl
@pytest.mark.verilator
@pytest.mark.parametrize("op", OPS)
@settings(max_examples=examples(3))
@given(data=st.data())
def test_cl_equals_rtl_on_overlapped_programs(cmdline_opts, op, data):
    """Every command of the operation's program with ``ovl = 1`` (the compute command waits for
    the LOADs it reads, the STOREs for the compute command): identical traces, golden values.
    Programs that really overlap: ``tests/test_engine_overlap.py``."""
    from pymtl_fp.engine import program
    from pymtl_fp.engine.msgs import cmd_fields, make_cmd
    from pymtl_fp.tb.engine_harness import drive

    case, stall, seed = data.draw(engine_cases(CFG, op))
    case = validate_case(CFG, op, case)
    prog = program.build(CFG, op, case)
    prog.cmds = [make_cmd(**dict(cmd_fields(c), ovl=1)) for c in prog.cmds]
    runs = {}
    for level in ("cl", "verilator"):
        trace = []
        out, t = drive(get_model(level, CFG), CFG, prog, stall=stall, seed=seed, trace=trace)
        runs[level] = (out, t, trace)
    assert runs["cl"] == runs["verilator"]
    res = prog.unpack(runs["cl"][0])
    for key, val in golden_op(CFG, op, case).items():
        assert np.array_equal(res[key], val), (op, key)
