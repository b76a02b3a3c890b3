"""Engine configuration, message/layout helpers, case validation and the run-op CLI."""

import numpy as np
import pytest

from pymtl_fp.engine import msgs
from pymtl_fp.engine.cases import CaseError, validate_case
from pymtl_fp.engine.config import PRESETS, EngineConfig, pipeline_fields, preset
from pymtl_fp.tb.engine_harness import random_case, run_op

CFG = preset("tiny")


def test_presets_and_derived_fields():
    assert (preset("tiny").P, preset("small").P, preset("medium").P) == (2, 4, 8)
    assert preset("small").macs_per_cycle == 16
    names = {cfg.module_name() for cfg in PRESETS.values()}
    assert len(names) == len(PRESETS) and all("__" not in n for n in names)
    assert CFG.module_name() != CFG.replace(stochastic=False).module_name()
    assert CFG.module_name() != CFG.replace(act_depth=128).module_name()
    assert CFG.module_name() != CFG.replace(drain_rows=2).module_name()
    assert CFG.params()["drain_rows"] == 1 and CFG.replace(drain_rows=2).params()["drain_rows"] == 2
    assert all(cfg.drain_rows == 1 for cfg in PRESETS.values())
    with pytest.raises(ValueError, match="unknown engine preset"):
        preset("huge")


def test_dsp_mac_is_an_elaboration_parameter_chosen_by_the_pipeline_option():
    """``--pipeline dsp`` builds the MAC pipeline accumulating in the DSPs (``dsp_mac``, implying
    ``pipelined_mac``), with ``all`` too; its module name differs, its latencies do not."""
    off = dict(pipelined_requant=False, pipelined_mac=False, pipelined_addr=False, pipelined_cmd=False, dsp_mac=False,
               registered_taps=False)
    assert pipeline_fields("dsp") == dict(off, pipelined_mac=True, dsp_mac=True)
    assert pipeline_fields("all,dsp") == dict(pipeline_fields("all"), dsp_mac=True)
    assert pipeline_fields("all")["dsp_mac"] is False
    for bad in ("all,mac", "dsp,all,all", "dps", "none,mac", "all,none"):
        with pytest.raises(ValueError, match="choose from requant, mac, addr, cmd, dsp, taps"):
            pipeline_fields(bad)
    plain = preset("small").replace(**pipeline_fields("all"))
    dsp = plain.replace(dsp_mac=True)
    assert dsp.module_name() != plain.module_name() and "__" not in dsp.module_name()
    assert (dsp.mac_latency, dsp.wb_latency) == (plain.mac_latency, plain.wb_latency)


def test_registered_taps_is_an_elaboration_parameter_chosen_by_the_pipeline_option():
    """``--pipeline taps`` builds the address generator with its tap bounds in registers
    (``registered_taps``: AddrGenRegRTL), alone or with ``all``; not in the presets; its module name
    differs, its latencies do not."""
    assert pipeline_fields("taps") == dict(pipeline_fields("none"), registered_taps=True)
    assert pipeline_fields("all,taps") == dict(pipeline_fields("all"), registered_taps=True)
    assert pipeline_fields("all,dsp,taps") == dict(pipeline_fields("all,dsp"), registered_taps=True)
    assert not any(cfg.registered_taps for cfg in PRESETS.values())
    plain = preset("small")
    taps = plain.replace(registered_taps=True)
    assert taps.module_name() != plain.module_name() and "__" not in taps.module_name()
    assert (taps.wb_latency, taps.cmd_latency) == (plain.wb_latency, plain.cmd_latency)
    with pytest.raises(TypeError, match="registered_taps must be a bool"):
        plain.replace(registered_taps=1)


def test_presets_have_every_pipeline_and_the_option_names_the_exact_set():
    """The presets (and a cluster node's engine) are built with all four pipelines, the MAC array in
    the fabric; ``--pipeline`` gives the whole set (the parts named on, the others off), ``none``
    none of them."""
    from pymtl_fp.cluster.config import engine_for_net
    from pymtl_fp.net import load_net

    every = dict(pipelined_requant=True, pipelined_mac=True, pipelined_addr=True, pipelined_cmd=True, dsp_mac=False)
    node = engine_for_net(load_net("lenet-digits"), "8")
    for cfg in (*PRESETS.values(), node):
        assert {f: getattr(cfg, f) for f in every} == every
        assert cfg.wb_latency == 1 + 3 + 13 and cfg.cmd_latency == 1
    bare = preset("small").replace(**pipeline_fields("none"))
    assert not any(getattr(bare, f) for f in every) and bare.wb_latency == bare.cmd_latency == 0
    assert bare.module_name() != preset("small").module_name()
    two = preset("small").replace(**pipeline_fields("requant,mac"))
    assert (two.pipelined_requant, two.pipelined_mac, two.pipelined_addr, two.pipelined_cmd) == (True, True, False, False)


def test_stream_lanes_is_an_elaboration_parameter():
    """E (``stream_lanes``): default 1 in every preset; in ``params()`` and in the module name
    (E = 1 keeps the name it always had, so every E = 1 build is unchanged); ``din``/``dout`` are
    ``E * stream_bits`` wide."""
    small = preset("small")
    assert all(cfg.stream_lanes == 1 for cfg in PRESETS.values())
    names = {small.replace(stream_lanes=e).module_name() for e in (1, 2, 4)}
    assert len(names) == 3 and small.module_name() in names and all("__" not in n for n in names)
    assert "_e4_" in small.replace(stream_lanes=4).module_name()
    assert small.replace(stream_lanes=4).params()["stream_lanes"] == 4
    assert msgs.data_type(small.replace(stream_lanes=4)).nbits == 4 * small.stream_bits == small.replace(
        stream_lanes=4).beat_bits
    assert EngineConfig(rows=3, cols=3, stream_lanes=3).E == 3


@pytest.mark.parametrize("E", [0, 3, 8, -1])
def test_stream_lanes_must_divide_p(E):
    with pytest.raises(ValueError, match=r"stream_lanes \(E\) must divide the array side P = 4"):
        preset("small").replace(stream_lanes=E)


def test_a_cluster_shares_one_beat_width():
    """Every node of a cluster moves the same E elements per beat (routers and links carry one
    beat per message); a mix is refused in one line."""
    from pymtl_fp.cluster.config import ClusterConfig, ClusterError

    eng = preset("small")
    assert ClusterConfig.homogeneous(2, eng.replace(stream_lanes=2)).link.msg_bits == 2 * eng.stream_bits
    with pytest.raises(ClusterError, match="node 1: stream_lanes=2 differs from node 0's 1") as exc:
        ClusterConfig((eng, eng.replace(stream_lanes=2)), ClusterConfig.homogeneous(1, eng).link)
    assert isinstance(exc.value, ValueError) and "\n" not in str(exc.value)


def test_beats_pack_elements_per_command_and_back():
    """E elements per beat, lane i in bits [i*bits, (i+1)*bits); beats never span two commands;
    a STORE's surplus lanes must be zero."""
    from pymtl_fp.engine import encoding, program

    assert encoding.to_beats([1, -1, 3], 2, 8) == [0xFF01, 0x03]
    assert encoding.from_beats([0xFF01, 0x03], 3, 2, 8) == [1, -1, 3]
    with pytest.raises(ValueError, match="non-zero surplus"):
        encoding.from_beats([0xFF01, 0x0203], 3, 2, 8)
    rng = np.random.default_rng(2)
    for E in (1, 2, 4):
        counts = [int(n) for n in rng.integers(0, 11, size=4)]
        elems = [int(v) for v in rng.integers(-(1 << 31), 1 << 31, size=sum(counts))]
        beats = encoding.stream_beats(counts, elems, E, 32)
        assert len(beats) == sum(-(-n // E) for n in counts)
        assert encoding.stream_elements(counts, beats, E, 32) == elems
    cfg = preset("small").replace(stream_lanes=4)
    prog = program.Program("t", cmds=[msgs.make_cmd(op=msgs.OP_LOAD, target=msgs.BUF_X, count=5),
                                      msgs.make_cmd(op=msgs.OP_LOAD, target=msgs.BUF_W, count=3),
                                      msgs.make_cmd(op=msgs.OP_STORE, target=msgs.BUF_O, count=6)],
                           din=list(range(1, 9)))
    assert program.din_beats(prog, cfg) == [encoding.pack_beat(v, 32) for v in ([1, 2, 3, 4], [5], [6, 7, 8])]
    assert program.dout_beat_count(prog, cfg) == 2
    assert program.dout_elements(prog, cfg, [encoding.pack_beat([-1, 2, 3, 4], 32), encoding.pack_beat([5, -6], 32)]) \
        == [-1, 2, 3, 4, 5, -6]


@pytest.mark.parametrize("kw, match", [
    (dict(rows=2, cols=4), "square"),
    (dict(acc_bits=16), "acc_bits"),
    (dict(stream_bits=24), "stream_bits"),
    (dict(act_bits=1), "act_bits"),
    (dict(act_depth=1), "act_depth"),
    (dict(rows=2.0), "int"),
    (dict(drain_rows=0), "drain_rows must divide the array side P = 2"),
    (dict(drain_rows=4), "drain_rows must divide the array side P = 2"),
    (dict(rows=4, cols=4, drain_rows=3), "drain_rows must divide the array side P = 4"),
    (dict(drain_rows=True), "int"),
    (dict(dsp_mac=True), "dsp_mac needs pipelined_mac"),
    (dict(pipelined_mac=True, dsp_mac=1), "dsp_mac must be a bool"),
])
def test_config_rejects(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        EngineConfig(**kw)


def test_layout_round_trips():
    rng = np.random.default_rng(0)
    for P in (1, 2, 3, 4):
        x = rng.integers(-9, 9, size=(2, 5, 3, 4))
        assert np.array_equal(msgs.unpack_act(msgs.pack_act(x, P), x.shape, P), x)
        w = rng.integers(-9, 9, size=(3, 5, 3, 1))
        assert np.array_equal(msgs.unpack_weight(msgs.pack_weight(w, P), w.shape, P), w)
        b = rng.integers(-9, 9, size=5)
        assert np.array_equal(msgs.unpack_bias(msgs.pack_bias(b, P), 5, P), b)
    # element [n, c, h, w] is lane c % P of word ((n*CT + c//P)*H + h)*W + w
    x = np.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2)
    words = msgs.pack_act(x, 2)
    assert words[((1 * 2 + 1) * 2 + 1) * 2 + 0, 0] == x[1, 2, 1, 0]


def test_command_fields_checked():
    with pytest.raises(ValueError, match="does not fit"):
        msgs.make_cmd(op=1, n=1 << 16)
    with pytest.raises(ValueError, match="unknown command fields"):
        msgs.make_cmd(bogus=1)
    m = msgs.make_cmd(op=msgs.OP_FWD, n=3, seed=2**32 - 1)
    assert msgs.cmd_fields(m)["seed"] == 2**32 - 1 and msgs.cmd_fields(m)["n"] == 3


def _fwd_case(**over):
    rng = np.random.default_rng(3)
    case = random_case(CFG, "fwd", rng)
    case.update(over)
    return case


@pytest.mark.parametrize("change, match", [
    (dict(x=None), "missing key"),
    (dict(bogus=1), "unknown key"),
    (dict(x=np.zeros((1, 3, 6, 6), dtype=np.float64)), "integers"),
    (dict(x=np.full((1, 3, 6, 6), 128)), "outside its 8-bit"),
    (dict(w=np.full((3, 3, 3, 3), -129)), "outside its 8-bit"),
    (dict(x=np.zeros((1, 3, 6), dtype=np.int64)), "4-D"),
    (dict(x=np.zeros((1, 4, 6, 6), dtype=np.int64)), "channels"),
    (dict(x=np.zeros((9, 3, 20, 20), dtype=np.int64)), "needs .* words of buffer X"),
    (dict(stride=3), "power of two"),
    (dict(pad=3), "pad"),
    (dict(shift=33), "shift"),
    (dict(mode="up"), "mode"),
    (dict(b=np.full(3, 2**31 - 1)), "accumulator"),
])
def test_bad_cases_rejected_before_simulation(change, match):
    case = _fwd_case()
    for k, v in change.items():
        if v is None:
            case.pop(k)
        else:
            case[k] = v
    with pytest.raises(CaseError, match=match):
        validate_case(CFG, "fwd", case)
    with pytest.raises(CaseError, match=match):
        run_op("rtl", CFG, "fwd", **case)  # fails before any model is built or simulated


def test_other_ops_validation():
    rng = np.random.default_rng(4)
    case = random_case(CFG, "pool_bwd", rng)
    case["argmax"] = case["argmax"] + 4
    with pytest.raises(CaseError, match="argmax values"):
        validate_case(CFG, "pool_bwd", case)
    case = random_case(CFG, "pool_fwd", rng, h=5)
    with pytest.raises(CaseError, match="divisible"):
        validate_case(CFG, "pool_fwd", case)
    case = random_case(CFG, "update", rng)
    case["dw"] = case["dw"][:1]
    with pytest.raises(CaseError, match="differs"):
        validate_case(CFG, "update", case)
    case = random_case(CFG, "bwd_weight", rng)
    case["w_shape"] = np.array([3, 3, 3])
    with pytest.raises(CaseError, match="w_shape"):
        validate_case(CFG, "bwd_weight", case)
    case = random_case(CFG, "fwd", rng, mode="stochastic")
    with pytest.raises(CaseError, match="without stochastic"):
        validate_case(CFG.replace(stochastic=False), "fwd", case)


@pytest.mark.fl
def test_cli_run_op_round_trip(tmp_path, capsys):
    from pymtl_fp.cli.main import main

    case = tmp_path / "case.npz"
    out = tmp_path / "out.npz"
    assert main(["run-op", "--op", "bwd_weight", "--make-case", str(case)]) == 0
    assert main(["run-op", "--level", "fl", "--op", "bwd_weight", "--case", str(case), "--out", str(out),
                 "--check"]) == 0
    z = np.load(out)
    assert {"dw", "db", "bits"} <= set(z.files) and int(z["bits"]) == CFG.grad_bits
    assert "cycles" not in z.files  # fl is untimed
    capsys.readouterr()
    assert main(["run-op", "--level", "cl", "--op", "bwd_weight", "--case", str(case), "--out", str(out),
                 "--check"]) == 0
    assert "cycles" in np.load(out).files  # cl is timed
    capsys.readouterr()
    assert main(["run-op", "--op", "fwd", "--case", str(case), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "missing key" in err and len(err.strip().splitlines()) == 1
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    assert main(["run-op", "--op", "fwd", "--case", str(bad), "--out", str(out)]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.verilator
def test_cli_run_op_verilator_timed(tmp_path, cmdline_opts):
    from pymtl_fp.cli.main import main

    case = tmp_path / "case.npz"
    out = tmp_path / "out.npz"
    assert main(["run-op", "--op", "fwd", "--make-case", str(case), "--mode", "stochastic"]) == 0
    assert main(["run-op", "--level", "verilator", "--op", "fwd", "--case", str(case), "--out", str(out),
                 "--stall", "0.3", "0.3", "0.3", "--check"]) == 0
    z = np.load(out)
    assert int(z["cycles"]) > int(z["compute_cycles"]) > 0 and int(z["macs"]) > 0
