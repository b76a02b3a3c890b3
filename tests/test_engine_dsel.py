"""Result destination ``dsel``: fwd, bwd_data, pool_fwd and pool_bwd write their ``d0`` result into
O (0), X (1) or D (2), so a layer's output lands where the next layer reads it; ``amsel``: a
pool's argmax in X (0) or O (1), so that pool_fwd can write its result into X.

* every (op, dsel) the datapath supports gives the golden model's result in the chosen buffer at
  fl and cl, and at Verilator with CL's handshakes cycle for cycle (under random stalls);
* the written words are exactly :func:`msgs.access_ranges`' d0 range in the chosen buffer (FL spy)
  and nothing lands in O;
* :func:`msgs.check_cmd` refuses what the datapath cannot do (pool_fwd into X, a result over the
  command's own operands, dsel on an operation without an activation result, dsel = 3).
"""

import numpy as np
import pytest

from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.cases import golden_op, validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.engine.msgs import (
    BUF_D,
    BUF_O,
    BUF_X,
    DSEL_D,
    DSEL_O,
    DSEL_X,
    cmd_fields,
    make_cmd,
)
from pymtl_fp.tb.engine_harness import assert_results, drive, get_model, random_case

CFG = preset("tiny")
OPS = ("fwd", "bwd_data", "pool_fwd", "pool_bwd")
#: every (op, dsel, amsel) the datapath supports besides the defaults (result in O, argmax in X)
CASES = [(op, d, 0) for op in OPS for d in (DSEL_X, DSEL_D) if not (op == "pool_fwd" and d == DSEL_X)] + \
    [("pool_fwd", DSEL_X, 1), ("pool_fwd", DSEL_D, 1)] + [("pool_bwd", d, 1) for d in (DSEL_O, DSEL_X, DSEL_D)]
IDS = [f"{o}-{'OXD'[d]}{'-amO' if a else ''}" for o, d, a in CASES]
RESULT = {"fwd": "y", "bwd_data": "dx", "pool_fwd": "y", "pool_bwd": "dx"}


def _case(cfg, op, seed):
    rng = np.random.default_rng(seed)
    return validate_case(cfg, op, random_case(cfg, op, rng, n=1, c=3, k=3, h=4, w=4))


def dsel_program(cfg, op, dsel, seed=0, amsel=0):
    """The op's program with its result written to buffer ``dsel`` at the top of that buffer
    (above every operand) and STOREd from there, and a pool's argmax in buffer ``amsel`` (O: at
    word 64); ``(program, expected results)``."""
    case = _case(cfg, op, seed)
    prog = program.build(cfg, op, case)
    ci = prog.compute_index
    res = prog.stores[0]
    assert res.buf == BUF_O and res.name == RESULT[op]
    d0 = cfg.act_depth - res.words
    buf = msgs.DSEL_BUF[dsel]
    f = dict(cmd_fields(prog.cmds[ci]), dsel=dsel, d0=d0, amsel=amsel)
    if amsel and op == "pool_fwd":  # the argmax to O word 64 and STOREd from there
        am = prog.stores[1]
        f["d1"] = 64
        prog.cmds[ci + 2] = make_cmd(op=msgs.OP_STORE, target=BUF_O, addr=64, count=am.words * am.lanes)
        prog.stores[1] = program.Store(am.name, BUF_O, 64, am.words, am.lanes, am.unpack)
    if amsel and op == "pool_bwd":  # the argmax LOADed into O word 64
        i = next(i for i, c in enumerate(prog.cmds) if int(c.op) == msgs.OP_LOAD and int(c.target) == BUF_X)
        prog.cmds[i] = make_cmd(**dict(cmd_fields(prog.cmds[i]), target=BUF_O, addr=64))
        f["a1"] = 64
    prog.cmds[ci] = make_cmd(**f)
    msgs.check_cmd(cmd_fields(prog.cmds[ci]), cfg)
    prog.cmds[ci + 1] = make_cmd(op=msgs.OP_STORE, target=buf, addr=d0, count=res.words * res.lanes)
    prog.stores[0] = program.Store(res.name, buf, d0, res.words, res.lanes, res.unpack)
    return prog, golden_op(cfg, op, case)


@pytest.mark.fl
@pytest.mark.cl
@pytest.mark.parametrize("op,dsel,amsel", CASES, ids=IDS)
def test_dsel_result_equals_golden_fl_cl(op, dsel, amsel):
    for seed in range(3):
        prog, want = dsel_program(CFG, op, dsel, seed, amsel)
        for level in ("fl", "cl"):
            out, _ = drive(get_model(level, CFG), CFG, prog)
            assert_results(prog, out, want)


@pytest.mark.cl
@pytest.mark.verilator
def test_dsel_cl_equals_verilator(cmdline_opts):
    """Every supported (op, dsel), under stalls: Verilator gives the golden values and exactly
    CL's handshakes; the result buffer changes no cycle count (dsel = O takes the same cycles)."""
    for i, (op, dsel, amsel) in enumerate(CASES):
        for stall in ((0.0, 0.0, 0.0), (0.4, 0.4, 0.4)):
            prog, want = dsel_program(CFG, op, dsel, seed=i, amsel=amsel)
            runs = {}
            for level in ("cl", "verilator"):
                trace = []
                out, t = drive(get_model(level, CFG), CFG, prog, stall=stall, seed=i, trace=trace)
                assert_results(prog, out, want)
                runs[level] = (trace, t["total_cycles"])
            assert runs["cl"] == runs["verilator"], (op, dsel, amsel, stall)
            base = program.build(CFG, op, _case(CFG, op, i))
            _, t0 = drive(get_model("cl", CFG), CFG, base, stall=stall, seed=i)
            assert t0["total_cycles"] == runs["cl"][1], (op, dsel)


@pytest.mark.fl
@pytest.mark.parametrize("op,dsel,amsel", CASES, ids=IDS)
def test_dsel_writes_exactly_its_range(op, dsel, amsel):
    from pymtl_fp.engine.EngineFL import EngineFL
    prog, _ = dsel_program(CFG, op, dsel, amsel=amsel)
    f = cmd_fields(prog.cmds[prog.compute_index])
    m = EngineFL(CFG)
    writes = []
    m.bufs = {b: np.zeros((CFG.act_depth if b in (BUF_X, BUF_D, BUF_O) else CFG.weight_depth
                           if b in (msgs.BUF_W, msgs.BUF_G) else CFG.bias_depth, msgs.buffer_lanes(b, CFG.P)),
                          dtype=np.int64) for b in msgs.BUF_NAMES}
    m._rd = lambda buf, addr, n, _m=m: _m.bufs[buf][addr:addr + n]
    reads = []
    m._rd = lambda buf, addr, n, _m=m: reads.append((buf, addr, addr + n, False)) or _m.bufs[buf][addr:addr + n]
    m._wr = lambda buf, addr, words: writes.append((buf, addr, addr + len(words), True))
    m.cfg = CFG
    m._compute(f)
    assert sorted(writes + reads) == sorted(msgs.access_ranges(f, CFG))
    assert any(b == msgs.DSEL_BUF[dsel] and lo == f["d0"] for b, lo, _, _ in writes)
    if amsel:  # the argmax in O
        assert (BUF_O, f["d1" if op == "pool_fwd" else "a1"]) in {(b, lo) for b, lo, _, _ in writes + reads}
    else:
        assert not any(b == BUF_O for b, *_ in writes)


def _fields(op, **kw):
    case = _case(CFG, op, 0)
    prog = program.build(CFG, op, case)
    return dict(cmd_fields(prog.cmds[prog.compute_index]), **kw)


def test_check_cmd_refuses_what_the_datapath_cannot_do():
    with pytest.raises(ValueError, match="argmax"):
        msgs.check_cmd(_fields("pool_fwd", dsel=DSEL_X, d0=200), CFG)
    with pytest.raises(ValueError, match="argmax"):  # result and argmax both in O
        msgs.check_cmd(_fields("pool_fwd", amsel=1, d1=100), CFG)
    with pytest.raises(ValueError, match="amsel=1 is only for"):
        msgs.check_cmd(_fields("fwd", amsel=1), CFG)
    with pytest.raises(ValueError, match="overlaps"):  # pool_bwd: dx over the argmax it reads, in O
        msgs.check_cmd(_fields("pool_bwd", amsel=1, a1=0, d0=0), CFG)
    msgs.check_cmd(_fields("pool_fwd", dsel=DSEL_X, amsel=1, d0=200, d1=100), CFG)
    with pytest.raises(ValueError, match="only for"):
        msgs.check_cmd(_fields("update", dsel=DSEL_D), CFG)
    with pytest.raises(ValueError, match="dsel=3"):
        msgs.check_cmd(_fields("fwd", dsel=3), CFG)
    # fwd reads x from X words [0, x_end): a result at X word x_end - 1 overlaps it, at x_end not
    f = _fields("fwd", dsel=DSEL_X)
    x_end = next(hi for b, lo, hi, wr in msgs.access_ranges(f, CFG) if b == BUF_X and not wr)
    with pytest.raises(ValueError, match="overlaps"):
        msgs.check_cmd(dict(f, d0=x_end - 1), CFG)
    msgs.check_cmd(dict(f, d0=x_end), CFG)
    # bwd_data reads dy from D: its dx may not land on it, but may go right behind it
    f = _fields("bwd_data", dsel=DSEL_D, d0=0)
    with pytest.raises(ValueError, match="overlaps"):
        msgs.check_cmd(f, CFG)
    dy_end = next(hi for b, lo, hi, wr in msgs.access_ranges(f, CFG) if b == BUF_D and not wr)
    msgs.check_cmd(dict(f, d0=dy_end), CFG)
    msgs.check_cmd(_fields("pool_fwd", dsel=DSEL_O), CFG)
    assert msgs.DSEL_BUF == {DSEL_O: BUF_O, DSEL_X: BUF_X, DSEL_D: BUF_D}
