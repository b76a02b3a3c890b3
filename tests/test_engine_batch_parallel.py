"""The engine's batch-parallel fwd (``bp=1``: DarkFPGA's batch-level parallelism as a runtime mode).

The property tests of every level are in ``tests/test_engine_ops.py`` (``test_fwd_batch_parallel``,
FL, PyMTL3 RTL and Verilator against the golden model), ``tests/test_engine_bands.py`` (a row band
of a batch-parallel fwd) and ``tests/test_timing.py`` (the closed form against the RTL's cycles and
a brute-force enumeration).  Here: the batch-innermost layout word for word, the writes (only the
``N x K`` outputs: the lanes of images past ``N`` and the words past the map keep their values, at
every level), CL against Verilator handshake for handshake under stalls, and the refusals.
"""

import numpy as np
import pytest

from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.cases import CaseError, golden_op, validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.engine.msgs import BUF_O, cmd_fields, make_cmd, pack_act_bp, tiles, unpack_act_bp
from pymtl_fp.tb.engine_harness import drive, get_model, random_case

CFG = preset("tiny")
SENTINEL = -77


def test_the_batch_innermost_layout_word_for_word():
    P = 3
    x = np.arange(5 * 2 * 3 * 4).reshape(5, 2, 3, 4) - 40
    words = pack_act_bp(x, P)
    assert words.shape == (tiles(5, P) * 2 * 3 * 4, P)
    for n, c, h, w in np.ndindex(*x.shape):
        assert words[((n // P * 2 + c) * 3 + h) * 4 + w, n % P] == x[n, c, h, w]
    assert np.all(words.reshape(2, 2, 3, 4, P)[1, :, :, :, 2] == 0)  # image 5 of the last tile: padding
    assert np.array_equal(unpack_act_bp(words, x.shape, P), x)


def sentinel_program(cfg, seed, n=3, c=3, k=3, h=4, w=4, r=3, pad=1, stride=1):
    """A batch-parallel fwd whose result region of O (and 8 words past it) first holds SENTINEL in
    every lane, STOREd whole afterwards; ``(program, expected words)``: the golden ``y`` where
    the layout puts a real output, SENTINEL everywhere else."""
    P = cfg.P
    case = validate_case(cfg, "fwd", dict(random_case(cfg, "fwd", np.random.default_rng(seed), n=n, c=c, k=k, h=h,
                                                      w=w, r=r, s=r, stride=stride, pad=pad, mode="stochastic"),
                                          bp=1))
    y = golden_op(cfg, "fwd", case)["y"]
    prog = program.build(cfg, "fwd", case)
    ci = prog.compute_index
    span = tiles(n, P) * k * y.shape[2] * y.shape[3] + 8
    want = np.full((span, P), SENTINEL, dtype=np.int64)
    for i, kk, a, b in np.ndindex(*y.shape):
        want[((i // P * k + kk) * y.shape[2] + a) * y.shape[3] + b, i % P] = y[i, kk, a, b]
    fill = make_cmd(op=msgs.OP_LOAD, target=BUF_O, addr=0, count=span * P)
    prog.cmds.insert(ci, fill)
    prog.din.extend([SENTINEL] * (span * P))
    prog.compute_index = ci + 1
    prog.cmds[ci + 2] = make_cmd(op=msgs.OP_STORE, target=BUF_O, addr=0, count=span * P)
    prog.stores[0] = program.Store("o", BUF_O, 0, span, P, lambda a: np.asarray(a))
    return prog, want


@pytest.mark.parametrize("level", ["fl", "cl", "rtl", "verilator"])
def test_only_the_real_outputs_are_written(level):
    """3 images and 3 output channels on a 2 x 2 array: the last image tile's second lane and the
    last channel tile's second row are padding, and keep what was there, as do the words past the
    map (the RTL masks the drain's writes by lane and row)."""
    for seed, shape in enumerate(({}, dict(n=1, k=1, r=1, pad=0), dict(n=5, c=1, k=4, stride=2))):
        prog, want = sentinel_program(CFG, seed, **shape)
        out, _ = drive(get_model(level, CFG), CFG, prog)
        assert np.array_equal(prog.unpack(out)["o"], want), (level, shape)


@pytest.mark.cl
@pytest.mark.verilator
def test_cl_equals_verilator_handshake_for_handshake():
    """With stalls on every stream: the same handshakes every cycle, the golden results."""
    for seed, stall in enumerate(((0.0, 0.0, 0.0), (0.5, 0.3, 0.6))):
        prog, want = sentinel_program(CFG, seed + 10, n=5, c=2, k=3, h=3, w=5)
        runs = {}
        for level in ("cl", "verilator"):
            trace = []
            out, t = drive(get_model(level, CFG), CFG, prog, stall=stall, seed=seed, trace=trace)
            assert np.array_equal(prog.unpack(out)["o"], want)
            runs[level] = (trace, t["total_cycles"])
        assert runs["cl"] == runs["verilator"], stall


def test_what_the_mode_cannot_do_is_refused():
    case = validate_case(CFG, "fwd", dict(random_case(CFG, "fwd", np.random.default_rng(1), n=3), bp=1))
    f = cmd_fields(program.build(CFG, "fwd", case).cmds[3])
    assert f["bp"] == 1 and f["nt"] == 2
    msgs.check_cmd(f, CFG)
    with pytest.raises(ValueError, match=r"nt=1 must be the image tiles ceil\(n / P\) = 2"):
        msgs.check_cmd(dict(f, nt=1), CFG)
    with pytest.raises(ValueError, match=r"bp=1 \(batch-parallel\) and nt are only for fwd"):
        msgs.check_cmd(dict(f, op=msgs.OP_BWD_DATA), CFG)
    bwd = random_case(CFG, "bwd_data", np.random.default_rng(1))
    with pytest.raises(CaseError, match=r"unknown key\(s\) bp"):
        validate_case(CFG, "bwd_data", dict(bwd, bp=1))
    with pytest.raises(CaseError, match="y needs 288 words of buffer O"):
        validate_case(CFG, "fwd", dict(random_case(CFG, "fwd", np.random.default_rng(1), n=3, c=1, k=9, h=4, w=4),
                                       bp=1))
