"""A training step of a two-layer CNN on one engine (fwd, bwd_data, bwd_weight, update for both
layers, results of one operation feeding the next) leaves exactly the golden weights."""

import numpy as np
import pytest

from pymtl_fp import golden
from pymtl_fp.engine.config import preset
from pymtl_fp.numerics import saturate
from pymtl_fp.tb.engine_harness import run_op

CFG = preset("tiny")


def _golden_step(x, w1, b1, w2, b2, target, rnd):
    kw = dict(stride=1, pad=1, out_bits=8)
    y1 = golden.conv_fwd(x, w1, b1, shift=7, relu=True, tensor_id=1, **kw, **rnd)
    y2 = golden.conv_fwd(y1, w2, b2, shift=7, relu=False, tensor_id=2, **kw, **rnd)
    dy2 = saturate(y2 - target, 8)
    dx2 = golden.conv_bwd_data(dy2, w2, y1, shift=6, relu=True, tensor_id=3, **kw, **rnd)
    dw2, db2 = golden.conv_bwd_weight(y1, dy2, w2.shape, shift=6, bias_shift=2, tensor_id=4, **kw, **rnd)
    dw1, db1 = golden.conv_bwd_weight(x, dx2, w1.shape, shift=6, bias_shift=2, tensor_id=6, **kw, **rnd)
    w2n = golden.sgd_update(w2, dw2, lr_shift=2, bits=8, tensor_id=8, **rnd)
    w1n = golden.sgd_update(w1, dw1, lr_shift=2, bits=8, tensor_id=9, **rnd)
    return dict(y1=y1, y2=y2, dx2=dx2, dw2=dw2, db2=db2, dw1=dw1, db1=db1, w1=w1n, w2=w2n)


def _engine_step(level, x, w1, b1, w2, b2, target, rnd):
    def op(name, **kw):
        return run_op(level, CFG, name, stall=(0.2, 0.2, 0.2), stall_seed=len(name), **kw, **rnd)

    conv = dict(stride=1, pad=1)
    y1 = op("fwd", x=x, w=w1, b=b1, shift=7, relu=1, tensor_id=1, **conv)["y"]
    y2 = op("fwd", x=y1, w=w2, b=b2, shift=7, relu=0, tensor_id=2, **conv)["y"]
    dy2 = saturate(y2 - target, 8)  # the loss gradient: computed by the host
    dx2 = op("bwd_data", dy=dy2, w=w2, x=y1, shift=6, relu=1, tensor_id=3, **conv)["dx"]
    r2 = op("bwd_weight", x=y1, dy=dy2, w_shape=np.array(w2.shape), shift=6, bias_shift=2, tensor_id=4, **conv)
    r1 = op("bwd_weight", x=x, dy=dx2, w_shape=np.array(w1.shape), shift=6, bias_shift=2, tensor_id=6, **conv)
    w2n = op("update", w=w2, dw=r2["dw"], lr_shift=2, tensor_id=8)["w"]
    w1n = op("update", w=w1, dw=r1["dw"], lr_shift=2, tensor_id=9)["w"]
    return dict(y1=y1, y2=y2, dx2=dx2, dw2=r2["dw"], db2=r2["db"], dw1=r1["dw"], db1=r1["db"], w1=w1n, w2=w2n)


@pytest.mark.rtl
@pytest.mark.parametrize("mode", ["nearest", pytest.param("stochastic", marks=pytest.mark.slow)])
def test_two_layer_training_step(cmdline_opts, mode):
    level = "verilator" if cmdline_opts.get("test_verilog") else "rtl"
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, size=(1, 2, 4, 4))
    w1 = rng.integers(-128, 128, size=(3, 2, 3, 3))
    w2 = rng.integers(-128, 128, size=(2, 3, 3, 3))
    b1 = rng.integers(-3000, 3000, size=3)
    b2 = rng.integers(-3000, 3000, size=2)
    target = rng.integers(-128, 128, size=(1, 2, 4, 4))
    rnd = dict(mode=mode, seed=99)
    want = _golden_step(x, w1, b1, w2, b2, target, rnd)
    got = _engine_step(level, x, w1, b1, w2, b2, target, rnd)
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    assert not np.array_equal(want["w1"], w1) and not np.array_equal(want["w2"], w2)  # it did learn
    assert (want["y1"] > 0).any() and (want["y1"] == 0).any()  # the ReLU masks something


@pytest.mark.verilator
def test_two_layer_training_step_verilator():
    rng = np.random.default_rng(12)
    x = rng.integers(-128, 128, size=(2, 3, 5, 5))
    w1 = rng.integers(-128, 128, size=(3, 3, 3, 3))
    w2 = rng.integers(-128, 128, size=(3, 3, 3, 3))
    b1, b2 = rng.integers(-3000, 3000, size=3), rng.integers(-3000, 3000, size=3)
    target = rng.integers(-128, 128, size=(2, 3, 5, 5))
    rnd = dict(mode="stochastic", seed=5)
    want = _golden_step(x, w1, b1, w2, b2, target, rnd)
    got = _engine_step("verilator", x, w1, b1, w2, b2, target, rnd)
    for key in want:
        assert np.array_equal(got[key], want[key]), key


@pytest.mark.verilator
def test_update_uses_gradients_held_on_chip(cmdline_opts):
    """One program: bwd_weight writes dw into buffer G, update reads it there (never leaving the
    chip) and rewrites the weights in W; only then are W and G stored."""
    from pymtl_fp.engine import msgs
    from pymtl_fp.engine.cases import validate_case
    from pymtl_fp.engine.program import Program, Store, build
    from pymtl_fp.tb.engine_harness import drive, get_model

    rng = np.random.default_rng(21)
    P = CFG.P
    x = rng.integers(-128, 128, size=(2, 3, 4, 4))
    dy = rng.integers(-128, 128, size=(2, 3, 4, 4))
    w = rng.integers(-128, 128, size=(3, 3, 3, 3))
    rnd = dict(mode="stochastic", seed=77)
    case = validate_case(CFG, "bwd_weight", dict(x=x, dy=dy, w_shape=np.array(w.shape), stride=1, pad=1, shift=7,
                                                 bias_shift=3, tensor_id=4, **rnd))
    bw = build(CFG, "bwd_weight", case)
    prog = Program("bwd_weight+update")
    prog.cmds = bw.cmds[:bw.compute_index + 1]  # load x, dy; bwd_weight
    prog.din = list(bw.din)
    ww = msgs.pack_weight(w, P)
    prog.cmds.append(msgs.make_cmd(op=msgs.OP_LOAD, target=msgs.BUF_W, addr=0, count=ww.size))
    prog.din += [int(v) for v in ww.reshape(-1)]
    kt, ct = msgs.tiles(3, P), msgs.tiles(3, P)
    prog.compute_index = len(prog.cmds)
    prog.cmds.append(msgs.make_cmd(op=msgs.OP_UPDATE, k=3, c=3, kt=kt, ct=ct, r=3, s=3, shift=2, stoch=1, seed=77,
                                   tid=9, a0=0, a1=0, d0=0))
    for name, buf in (("w", msgs.BUF_W), ("dw", msgs.BUF_G)):
        prog.cmds.append(msgs.make_cmd(op=msgs.OP_STORE, target=buf, addr=0, count=ww.size))
        prog.stores.append(Store(name, buf, 0, len(ww), P * P,
                                 lambda a: msgs.unpack_weight(a, w.shape, P)))
    out, _ = drive(get_model("verilator", CFG), CFG, prog, stall=(0.3, 0.3, 0.3), seed=3)
    got = prog.unpack(out)
    dw, _ = golden.conv_bwd_weight(x, dy, w.shape, stride=1, pad=1, shift=7, bias_shift=3, out_bits=8,
                                   tensor_id=4, **rnd)
    assert np.array_equal(got["dw"], dw)
    assert np.array_equal(got["w"], golden.sgd_update(w, dw, lr_shift=2, bits=8, tensor_id=9, **rnd))
