"""Weight gradients summed in the engine (command field ``acc``): a raw ``bwd_weight`` adds its
un-rounded ``dw`` and ``db`` sums to those already in B, so a weight gradient can be summed over
row bands (FPDeep's fine-grained pipeline, :mod:`pymtl_fp.golden.band`) or over images as they
pass, and rounded once.

* one command at every level: random shapes with ``acc`` are drawn by the engine strategies
  (``tests/test_engine_ops.py``, ``tests/test_engine_cl.py``); here the closed form (one cycle more
  than without ``acc``) and the refusals;
* a whole map's ``dw`` summed band by band in B, the commands overlapped (``ovl = 1``, X and D
  double-buffered): equal to the whole map's exact sums at FL, and CL == Verilator cycle for cycle
  (handshakes, acceptance cycles), with random stalls; a STORE from B offered during the sums waits.
"""

import numpy as np
import pytest

from pymtl_fp import golden
from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.cases import CaseError, validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.engine.msgs import BUF_B, BUF_D, BUF_X, OP_LOAD, OP_STORE, make_cmd, pack_act, tiles, unpack_bias
from pymtl_fp.golden import band
from pymtl_fp.numerics import wrap
from pymtl_fp.tb.engine_harness import drive, get_model, run_op

CFG = preset("tiny")


def _case(rng, acc):
    x, dy = rng.integers(-99, 99, (2, 2, 5, 5)), rng.integers(-99, 99, (2, 2, 5, 3))
    case = dict(x=x, dy=dy, w_shape=np.array([2, 2, 1, 3]), stride=1, pad=0, shift=3, bias_shift=2, raw=1)
    if acc:
        lim = 1 << (CFG.acc_bits - 1)
        case.update(acc=1, acc_dw=rng.integers(-lim, lim, (2, 2, 1, 3)), acc_db=rng.integers(-lim, lim, 2))
    return case


@pytest.mark.cl
def test_acc_adds_to_b_wraps_and_takes_one_cycle_more():
    rng = np.random.default_rng(4)
    raw, acc = _case(rng, False), _case(np.random.default_rng(4), True)
    got_raw, got_acc = run_op("cl", CFG, "bwd_weight", **raw), run_op("cl", CFG, "bwd_weight", **acc)
    for key, extra in (("dw", acc["acc_dw"]), ("db", acc["acc_db"])):
        assert np.array_equal(got_acc[key], wrap(got_raw[key] + extra, CFG.acc_bits))
    assert got_acc["compute_cycles"] == got_raw["compute_cycles"] + 1
    assert got_acc["compute_cycles"] == program.op_timing(CFG, "bwd_weight", validate_case(CFG, "bwd_weight", acc))[
        "compute_cycles"]


def test_acc_is_refused_where_it_cannot_add():
    rng = np.random.default_rng(5)
    with pytest.raises(CaseError, match="needs raw=1"):
        validate_case(CFG, "bwd_weight", dict(_case(rng, True), raw=0))
    with pytest.raises(CaseError, match="goes with acc_dw and acc_db"):
        validate_case(CFG, "bwd_weight", {k: v for k, v in _case(rng, True).items() if k != "acc_db"})
    f = msgs.cmd_fields(make_cmd(op=msgs.OP_BWD_WEIGHT, n=1, c=1, k=1, ct=1, kt=1, h=1, w=1, ho=1, wo=1, r=1, s=1,
                                 raw=1, acc=1, d0=0, d1=5))
    with pytest.raises(ValueError, match="must follow dw"):
        msgs.check_cmd(f, CFG)
    with pytest.raises(ValueError, match="only for bwd_weight with raw=1"):
        msgs.check_cmd(dict(f, op=msgs.OP_FWD, raw=0), CFG)


def banded_dw_program(rng, rows=2):
    """A whole map's raw ``dw`` / ``db`` summed over bands of ``rows`` dy rows in B (the first band
    writes, the others add), every command ``ovl = 1``, X and D in two slots each; then a STORE of
    the sums.  Returns ``(program, wanted results)``."""
    P = CFG.P
    n, c, k, H, W, R, S, st, pad = 1, 2, 2, 7, 4, 3, 2, 1, 1  # 13 of tiny's 16 B words
    x, dy = rng.integers(-128, 128, (n, c, H, W)), rng.integers(-128, 128, (n, k, H, W + 2 * pad - S + 1))
    dw, db = golden.conv_bwd_weight_acc(x, dy, (k, c, R, S), stride=st, pad=pad)
    nw = tiles(k, P) * tiles(c, P) * R * S  # G-layout words: P raw B words each
    prog = program.Program("banded dw")
    xslot, dslot = CFG.act_depth // 2, CFG.act_depth // 4
    for i, (y0, y1) in enumerate(band.bands(H, rows)):
        win = band.fwd_window(H, R, st, pad, y0, y1)
        xb, db_ = pack_act(x[:, :, win.i0:win.i1], P), pack_act(dy[:, :, y0:y1], P)
        for buf, addr, words in ((BUF_X, (i % 2) * xslot, xb), (BUF_D, (i % 2) * dslot, db_)):
            prog.cmds.append(make_cmd(op=OP_LOAD, target=buf, addr=addr, count=words.size, ovl=1))
            prog.din.extend(int(v) for v in words.reshape(-1))
        prog.cmds.append(make_cmd(op=msgs.OP_BWD_WEIGHT, n=n, c=c, k=k, ct=tiles(c, P), kt=tiles(k, P),
                                  h=win.i1 - win.i0, w=W, ho=y1 - y0, wo=W + 2 * pad - S + 1, r=R, s=S, pad=pad, pt=win.pt,
                                  raw=1, acc=int(i > 0), a0=(i % 2) * xslot, a1=(i % 2) * dslot, d0=0,
                                  d1=nw * P, ovl=1))
    prog.cmds.append(make_cmd(op=OP_STORE, target=BUF_B, addr=0, count=(nw * P + tiles(k, P)) * P, ovl=1))
    prog.stores.append(program.Store("sums", BUF_B, 0, nw * P + tiles(k, P), P, lambda a: np.asarray(a).reshape(-1)))
    want = np.concatenate([wrap(msgs.pack_weight(dw, P), CFG.acc_bits).reshape(-1),
                           wrap(msgs.pack_bias(db, P), CFG.acc_bits).reshape(-1)])
    return prog, want, (dw, db)


def test_banded_dw_program_at_fl_equals_the_whole_maps_sums():
    prog, want, (dw, db) = banded_dw_program(np.random.default_rng(8))
    out, _ = drive(get_model("fl", CFG), CFG, prog)
    got = prog.unpack(out)["sums"]
    assert np.array_equal(got, want)
    nw = len(msgs.pack_weight(dw, CFG.P))
    assert np.array_equal(unpack_bias(got[nw * CFG.P * CFG.P:].reshape(-1, CFG.P), 2, CFG.P), db)


@pytest.mark.verilator
@pytest.mark.parametrize("stall", [(0.0, 0.0, 0.0), (0.3, 0.3, 0.3)])
def test_banded_dw_cl_equals_verilator_cycle_for_cycle(stall):
    prog, want, _ = banded_dw_program(np.random.default_rng(9))
    runs = {}
    for level in ("cl", "verilator"):
        trace, accepts = [], []
        out, t = drive(get_model(level, CFG), CFG, prog, stall=stall, seed=4, trace=trace, accepts=accepts)
        assert np.array_equal(prog.unpack(out)["sums"], want), level
        runs[level] = (trace, accepts, t["total_cycles"])
    assert runs["cl"] == runs["verilator"]
    # the STORE of the sums waited for the last band's adds (it reads B, which EX reads and writes)
    accepts = runs["cl"][1]
    assert accepts[-1] > accepts[-2] + 1
