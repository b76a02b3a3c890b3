"""Overlapped commands (``ovl = 1``): LOAD and STORE run concurrently with compute and with each
other; the address-range hazard check keeps in-order semantics.

* a two-image ``fwd`` program (LOAD x0, w, b; fwd; LOAD x1 during the fwd; STORE y0 after the
  fwd (RAW); fwd x1 during that STORE; STORE y1): results equal the golden model and FL at
  fl / cl / rtl / verilator; CL and RTL handshake in the same cycles under random stalls; the
  overlapped program takes fewer cycles than the same program with ``ovl = 0``;
* hazards: an ``ovl = 1`` command whose ranges conflict with a running unit's (RAW, WAR, WAW, or
  a port conflict such as a LOAD into X during ``pool_fwd``, which writes argmax into X) is
  accepted exactly when that unit is done, at CL and RTL; a disjoint one at once;
* Hypothesis: random short programs of LOADs, STOREs and small compute commands at random
  (often colliding) addresses with random ``ovl`` bits, result buffers (``dsel``) and argmax
  buffers (``amsel``): the output stream equals FL's (in-order
  execution); CL and Verilator handshake in the same cycles;
* :func:`msgs.access_ranges` agrees with what EngineFL reads and writes.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp import timing
from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.cases import golden_op, validate_case
from pymtl_fp.engine.config import NO_PIPELINES, preset
from pymtl_fp.engine.msgs import (
    BUF_B,
    BUF_D,
    BUF_G,
    BUF_O,
    BUF_W,
    BUF_X,
    OP_LOAD,
    OP_STORE,
    cmd_fields,
    make_cmd,
    pack_act,
    unpack_act,
)
from pymtl_fp.tb.engine_harness import assert_results, drive, get_model, random_case
from pymtl_fp.tb.hypothesis_profiles import examples

#: the engine without pipelines: the acceptance cycles below are derived by hand from its compute
#: cycles; ``HELD`` adds the command register alone, and the hazard programs also run on the
#: presets' pipelined engine against Verilator (``test_hazards_cl_equals_verilator``)
CFG = preset("tiny").replace(**NO_PIPELINES)
NO_STALL = (0.0, 0.0, 0.0)


def _with(cmd, **changes):
    return make_cmd(**dict(cmd_fields(cmd), **changes))


def _raw_store(prog, buf, addr, count):
    prog.cmds.append(make_cmd(op=OP_STORE, target=buf, addr=addr, count=count))
    prog.stores.append(program.Store(f"s{len(prog.stores)}", buf, addr, count, 1, lambda a: a.reshape(-1)))


def two_image_fwd(cfg, ovl, seed=3):
    """``(program, expected outputs)`` of the two-image forward program."""
    P = cfg.P
    rng = np.random.default_rng(seed)
    case = validate_case(cfg, "fwd", random_case(cfg, "fwd", rng, n=1, c=2, k=3, h=4, w=4, stride=1, pad=1))
    case1 = dict(case, x=rng.integers(-128, 128, size=case["x"].shape).astype(np.int64))
    base = program.build(cfg, "fwd", case)
    fwd = base.cmds[base.compute_index]
    xw = len(pack_act(case["x"], P))
    yshape = golden_op(cfg, "fwd", case)["y"].shape
    yw = len(pack_act(np.zeros(yshape, dtype=np.int64), P))
    prog = program.Program("fwd2")
    prog.cmds = [_with(c, ovl=ovl) for c in base.cmds[:base.compute_index + 1]]
    prog.din = list(base.din)
    prog.cmds.append(make_cmd(op=OP_LOAD, target=BUF_X, addr=xw, count=xw * P, ovl=ovl))
    prog.din += [int(v) for v in pack_act(case1["x"], P).reshape(-1)]
    for i, (a0, d0) in enumerate(((0, 0), (xw, yw))):
        if i:
            prog.cmds.append(_with(fwd, a0=a0, d0=d0, ovl=ovl))
        prog.cmds.append(make_cmd(op=OP_STORE, target=BUF_O, addr=d0, count=yw * P, ovl=ovl))
        prog.stores.append(program.Store(f"y{i}", BUF_O, d0, yw, P, lambda a: unpack_act(a, yshape, P)))
    prog.compute_index = -1
    want = {"y0": golden_op(cfg, "fwd", case)["y"], "y1": golden_op(cfg, "fwd", case1)["y"]}
    return prog, want


def _run(level, prog, stall=NO_STALL, seed=0, cfg=CFG, eager=False):
    trace, accepts = [], []
    out, t = drive(get_model(level, cfg), cfg, prog, stall=stall, seed=seed, trace=trace, accepts=accepts,
                   eager=eager)
    return out, t["total_cycles"], trace, accepts


@pytest.mark.fl
@pytest.mark.cl
def test_two_image_fwd_fl_and_cl_equal_golden_and_overlap_is_faster():
    prog1, want = two_image_fwd(CFG, 1)
    prog0, _ = two_image_fwd(CFG, 0)
    for level in ("fl", "cl"):
        assert_results(prog1, _run(level, prog1)[0], want)
    out0, cyc0, _, acc0 = _run("cl", prog0)
    out1, cyc1, _, acc1 = _run("cl", prog1)
    assert out0 == out1
    print(f"two-image fwd on {CFG.name}: serial {cyc0} cycles, overlapped {cyc1} cycles")
    assert cyc1 < cyc0
    # the LOAD of x1 starts right after the first fwd (cycle after), not after it
    assert acc1[4] == acc1[3] + 1 and acc0[4] > acc0[3] + 1
    # the STORE of y0 waits for the first fwd (RAW on O); the second fwd starts during that STORE
    occ = timing.compute_cycles(CFG.P, "fwd", cmd_fields(prog1.cmds[3]))
    assert acc1[5] == acc1[3] + occ and acc1[6] == acc1[5] + 1


def _compare_cl_rtl(level, prog, stall, seed, cfg=CFG, eager=False):
    out_cl, cyc_cl, tr_cl, acc_cl = _run("cl", prog, stall, seed, cfg, eager)
    out_rtl, cyc_rtl, tr_rtl, acc_rtl = _run(level, prog, stall, seed, cfg, eager)
    assert out_cl == out_rtl
    first = next((i for i, (a, b) in enumerate(zip(tr_cl, tr_rtl)) if a != b), None)
    assert first is None and len(tr_cl) == len(tr_rtl), (
        stall, first, tr_cl[first] if first is not None else len(tr_cl), tr_rtl[first] if first is not None else len(tr_rtl))
    assert acc_cl == acc_rtl and cyc_cl == cyc_rtl
    return out_cl, cyc_cl, acc_cl


@pytest.mark.cl
@pytest.mark.verilator
@pytest.mark.parametrize("stall,seed", [(NO_STALL, 0), ((0.3, 0.5, 0.5), 1), ((0.7, 0.3, 0.7), 2)])
def test_two_image_fwd_cl_equals_verilator(cmdline_opts, stall, seed):
    cycles = {}
    for ovl in (0, 1):
        prog, want = two_image_fwd(CFG, ovl)
        out, cycles[ovl], _ = _compare_cl_rtl("verilator", prog, stall, seed)
        assert_results(prog, out, want)
    assert cycles[1] < cycles[0], cycles


@pytest.mark.cl
@pytest.mark.verilator
def test_two_image_fwd_cl_equals_verilator_on_a_4x4_engine(cmdline_opts):
    cfg = preset("small")
    cycles = {}
    for ovl in (0, 1):
        prog, want = two_image_fwd(cfg, ovl)
        for stall, seed in ((NO_STALL, 0), ((0.5, 0.5, 0.5), 4)):
            out, cyc, _ = _compare_cl_rtl("verilator", prog, stall, seed, cfg)
            assert_results(prog, out, want)
            cycles[ovl, stall] = cyc
    assert cycles[1, NO_STALL] < cycles[0, NO_STALL], cycles


@pytest.mark.cl
@pytest.mark.rtl
def test_two_image_fwd_cl_equals_pymtl_rtl():
    prog, want = two_image_fwd(CFG, 1)
    out, _, _ = _compare_cl_rtl("rtl", prog, (0.3, 0.3, 0.3), 5)
    assert_results(prog, out, want)


# ---- hazards ---------------------------------------------------------------------------------

def _fwd_setup(cfg):
    """LOAD x, w, b and the fwd (``ovl = 0``) of a small case; returns (program, fwd fields, occupancy)."""
    case = validate_case(cfg, "fwd", random_case(cfg, "fwd", np.random.default_rng(1), n=1, c=2, k=2, h=3, w=3))
    base = program.build(cfg, "fwd", case)
    prog = program.Program("hazard", cmds=list(base.cmds[:base.compute_index + 1]), din=list(base.din))
    f = cmd_fields(base.cmds[base.compute_index])
    return prog, f, timing.compute_cycles(cfg.P, "fwd", f)


def _pool_setup(cfg):
    case = validate_case(cfg, "pool_fwd", random_case(cfg, "pool_fwd", np.random.default_rng(2), n=1, c=2, h=4, w=4))
    base = program.build(cfg, "pool_fwd", case)
    prog = program.Program("hazard", cmds=list(base.cmds[:base.compute_index + 1]), din=list(base.din))
    f = cmd_fields(base.cmds[base.compute_index])
    return prog, f, timing.compute_cycles(cfg.P, "pool_fwd", f)


def _hazard_cases():
    """(name, setup, follow-up command builder, held?)"""
    P = CFG.P

    def load(buf, addr, words):
        return make_cmd(op=OP_LOAD, target=buf, addr=addr, count=words * msgs.buffer_lanes(buf, P), ovl=1)

    def store(buf, addr, words):
        return make_cmd(op=OP_STORE, target=buf, addr=addr, count=words * msgs.buffer_lanes(buf, P), ovl=1)

    return [
        # fwd reads X [a0, a0+n*ct*h*w), writes O [d0, ...)
        ("RAW: STORE of the fwd result", _fwd_setup, lambda f: store(BUF_O, f["d0"] + 1, 1), True),
        ("WAR: LOAD over the fwd input", _fwd_setup, lambda f: load(BUF_X, f["a0"] + 2, 1), True),
        ("WAW: LOAD over the fwd result", _fwd_setup, lambda f: load(BUF_O, f["d0"], 1), True),
        ("port: STORE from X (fwd reads X)", _fwd_setup, lambda f: store(BUF_X, 100, 1), True),
        ("disjoint LOAD into X", _fwd_setup, lambda f: load(BUF_X, 100, 2), False),
        ("disjoint STORE from O", _fwd_setup, lambda f: store(BUF_O, 100, 2), False),
        ("LOAD into D (unused by fwd)", _fwd_setup, lambda f: load(BUF_D, 0, 3), False),
        ("LOAD into W just after the weights", _fwd_setup,
         lambda f: load(BUF_W, f["a1"] + f["kt"] * f["ct"] * f["r"] * f["s"], 1), False),
        ("ovl = 0 LOAD waits", _fwd_setup, lambda f: _with(load(BUF_D, 0, 3), ovl=0), True),
        ("port: LOAD into X during pool_fwd (argmax write)", _pool_setup, lambda f: load(BUF_X, 200, 1), True),
        ("STORE from X during pool_fwd (read port)", _pool_setup, lambda f: store(BUF_X, 200, 1), True),
        ("LOAD into D during pool_fwd", _pool_setup, lambda f: load(BUF_D, 0, 1), False),
    ]


HAZARDS = _hazard_cases()


def _hazard_program(setup, follow):
    prog, f, occ = setup(CFG)
    # define the words the STOREs below read (the models keep their buffers across runs)
    init = [(BUF_X, 100, 2), (BUF_O, 100, 2), (BUF_X, 200, 1)]
    prog.cmds[:0] = [make_cmd(op=OP_LOAD, target=b, addr=a, count=n * CFG.P) for b, a, n in init]
    prog.din[:0] = [7 + i for i in range(sum(n for _, _, n in init) * CFG.P)]
    cmd = follow(f)
    prog.cmds.append(cmd)
    g = cmd_fields(cmd)
    if g["op"] == OP_LOAD:
        prog.din += [3] * g["count"]
    else:
        prog.stores.append(program.Store("s", g["target"], g["addr"], g["count"], 1, lambda a: a.reshape(-1)))
    # read everything back afterwards, in order
    for buf, addr, words in ((BUF_O, 0, 4), (BUF_X, 0, 9)):
        _raw_store(prog, buf, addr, words * CFG.P)
    prog.compute_index = -1
    return prog, f, occ


@pytest.mark.cl
@pytest.mark.parametrize("name,setup,follow,held", HAZARDS, ids=[h[0] for h in HAZARDS])
def test_hazard_holds_the_command_at_cl(name, setup, follow, held):
    prog, _f, occ = _hazard_program(setup, follow)
    out_fl = _run("fl", prog)[0]
    out, _, _, acc = _run("cl", prog)
    assert out == out_fl
    t0 = acc[-4]  # the compute command (then: follow-up, two STOREs)
    assert acc[-3] == (t0 + occ if held else t0 + 1), (name, acc, occ)


@pytest.mark.cl
@pytest.mark.verilator
@pytest.mark.parametrize("cfg", [CFG, preset("tiny")], ids=["no-pipelines", "preset"])
def test_hazards_cl_equals_verilator(cmdline_opts, cfg):
    for name, setup, follow, _held in HAZARDS:
        prog, _f, _occ = _hazard_program(setup, follow)
        out_fl = _run("fl", prog, cfg=cfg)[0]
        for stall, seed in ((NO_STALL, 0), ((0.3, 0.3, 0.3), 7)):
            out, _, _acc = _compare_cl_rtl("verilator", prog, stall, seed, cfg)
            assert out == out_fl, name


# ---- the command register (EngineConfig.pipelined_cmd) ------------------------------------------

HELD = CFG.replace(pipelined_cmd=True)


@pytest.mark.cl
@pytest.mark.rtl
@pytest.mark.slow
def test_hazards_with_the_command_register_cl_equals_pymtl_rtl():
    """With the command register, a command held by a hazard waits in it (and the next one
    behind it): CL and the PyMTL3 RTL handshake in the same cycles, offered at once and once the
    engine is idle, with and without stalls; the output equals FL's."""
    for name, setup, follow, _held in HAZARDS:
        prog, _f, _occ = _hazard_program(setup, follow)
        out_fl = _run("fl", prog)[0]
        for stall, seed, eager in ((NO_STALL, 0, True), ((0.3, 0.3, 0.3), 7, True), ((0.3, 0.3, 0.3), 8, False)):
            out, _, _ = _compare_cl_rtl("rtl", prog, stall, seed, HELD, eager)
            assert out == out_fl, name


@pytest.mark.cl
def test_the_command_register_delays_every_start_by_its_latency():
    """Offered at once and without stalls, every command of a program starts ``cmd_latency``
    cycles later than on the engine without the register (the register takes the next command in
    the cycle the held one starts), so the two-image programs and every hazard program take
    exactly ``cmd_latency`` cycles more, with the same outputs."""
    progs = [two_image_fwd(CFG, ovl)[0] for ovl in (0, 1)] + [_hazard_program(s, f)[0] for _, s, f, _ in HAZARDS]
    for prog in progs:
        out0, cyc0, _, acc0 = _run("cl", prog, cfg=CFG)
        out1, cyc1, _, acc1 = _run("cl", prog, cfg=HELD, eager=True)
        assert out1 == out0 and cyc1 == cyc0 + HELD.cmd_latency, (prog.op, cyc0, cyc1)
        # the handshake of command k + 1 is the start of command k
        assert acc1[0] == acc0[0] and [a + HELD.cmd_latency for a in acc0[:-1]] == acc1[1:], prog.op


# ---- access ranges -----------------------------------------------------------------------------

@pytest.mark.fl
@pytest.mark.parametrize("op", list(msgs.OPS))
def test_access_ranges_cover_what_fl_touches(op):
    """Run each op's program at FL with buffers spied on: every word read or written is inside a
    range of the matching direction, and every range word is touched."""
    from pymtl_fp.engine.EngineFL import EngineFL
    case = validate_case(CFG, op, random_case(CFG, op, np.random.default_rng(4), n=1, c=3, k=3, h=4, w=4))
    prog = program.build(CFG, op, case)
    f = cmd_fields(prog.cmds[prog.compute_index])
    m = EngineFL(CFG)
    touched = []
    m._rd = lambda buf, addr, n, _m=m: touched.append((buf, addr, addr + n, False)) or _m.bufs[buf][addr:addr + n]
    m._wr = lambda buf, addr, words, _m=m: touched.append((buf, addr, addr + len(words), True))
    m.bufs = {b: np.zeros((CFG.act_depth if b in (BUF_X, BUF_D, BUF_O) else CFG.weight_depth
                           if b in (BUF_W, BUF_G) else CFG.bias_depth, msgs.buffer_lanes(b, CFG.P)), dtype=np.int64)
              for b in msgs.BUF_NAMES}
    m.cfg = CFG
    m._compute(f)
    assert sorted(touched) == sorted(msgs.access_ranges(f, CFG))


def test_ranges_conflict_rule():
    X, O = BUF_X, BUF_O
    assert msgs.ranges_conflict([(X, 0, 4, True)], [(X, 8, 9, True)])  # one write port
    assert msgs.ranges_conflict([(X, 0, 4, False)], [(X, 8, 9, False)])  # one read port
    assert msgs.ranges_conflict([(X, 0, 4, True)], [(X, 3, 9, False)])  # WAR / RAW
    assert not msgs.ranges_conflict([(X, 0, 4, True)], [(X, 4, 9, False)])
    assert not msgs.ranges_conflict([(X, 0, 0, True)], [(X, 0, 9, False)])  # empty
    assert not msgs.ranges_conflict([(X, 0, 4, True)], [(O, 0, 4, True)])
    # LOAD of 3 elements into a P*P = 4-lane buffer covers one word
    assert msgs.access_ranges(dict(op=OP_LOAD, target=BUF_W, addr=5, count=3), CFG) == [(BUF_W, 5, 6, True)]
    assert msgs.access_ranges(dict(op=OP_STORE, target=BUF_B, addr=5, count=5), CFG) == [(BUF_B, 5, 8, False)]


# ---- random programs -------------------------------------------------------------------------

_GEO = dict(n=1, c=2, k=2, ct=1, kt=1, h=2, w=2, ho=2, wo=2, r=1, s=1)


@st.composite
def random_programs(draw, max_len=7):
    """A program of LOADs, STOREs and small compute commands at addresses 0..5 (colliding often),
    random ``ovl``, after LOADs that define words 0..9 of every buffer; data are small values
    that fit every buffer."""
    P = CFG.P
    prog = program.Program("random")
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    addr = st.integers(0, 5)
    for buf in msgs.BUF_NAMES:  # defined contents (the models keep their buffers across runs)
        count = 10 * msgs.buffer_lanes(buf, P)
        prog.cmds.append(make_cmd(op=OP_LOAD, target=buf, addr=0, count=count))
        prog.din += [int(v) for v in rng.integers(-8, 8, size=count)]
    for _ in range(draw(st.integers(1, max_len))):
        kind = draw(st.sampled_from(["load", "load", "store", "store", "fwd", "bwd_data", "bwd_weight",
                                     "pool_fwd", "update"]))
        ovl = draw(st.integers(0, 1)) if draw(st.booleans()) else 1
        if kind in ("load", "store"):
            buf = draw(st.sampled_from([BUF_X, BUF_D, BUF_O, BUF_W, BUF_G, BUF_B]))
            count = draw(st.integers(1, 3 * msgs.buffer_lanes(buf, P)))
            a = draw(addr)
            if kind == "load":
                prog.cmds.append(make_cmd(op=OP_LOAD, target=buf, addr=a, count=count, ovl=ovl))
                prog.din += [int(v) for v in rng.integers(-8, 8, size=count)]
            else:
                prog.cmds.append(make_cmd(op=OP_STORE, target=buf, addr=a, count=count, ovl=ovl))
                prog.stores.append(program.Store("s", buf, a, count, 1, lambda x: x))
        else:
            f = dict(_GEO, op=msgs.OPS[kind], a0=draw(addr), a1=draw(addr), a2=draw(addr), d0=draw(addr),
                     d1=draw(addr), shift=draw(st.integers(0, 4)), ovl=ovl)
            if kind == "pool_fwd":
                f.update(ho=1, wo=1, pk=2)
            if kind in ("fwd", "bwd_data"):
                f["relu"] = draw(st.integers(0, 1))
            if kind == "bwd_weight":
                f.update(bshift=draw(st.integers(0, 3)), btid=1)
            if kind in ("fwd", "bwd_data", "pool_fwd"):  # result into O, X or D (where allowed)
                f["dsel"] = draw(st.sampled_from([0, 0, 1, 2]))
                if kind == "pool_fwd":  # the argmax in X or O
                    f["amsel"] = draw(st.integers(0, 1))
                try:
                    msgs.check_cmd(dict(cmd_fields(make_cmd(**f))), CFG)
                except ValueError:
                    f["dsel"] = f["amsel"] = 0
            prog.cmds.append(make_cmd(**f))
    prog.compute_index = -1
    stall = draw(st.sampled_from([NO_STALL, (0.3, 0.3, 0.3), (0.0, 0.7, 0.5)]))
    return prog, stall, draw(st.integers(0, 1000))


@pytest.mark.fl
@pytest.mark.cl
@settings(max_examples=examples(25), deadline=None)
@given(data=random_programs())
def test_random_programs_cl_equals_in_order_fl(data):
    prog, stall, seed = data
    out_fl = _run("fl", prog)[0]
    out_cl = _run("cl", prog, stall, seed)[0]
    assert out_cl == out_fl


@pytest.mark.cl
@pytest.mark.verilator
@settings(max_examples=examples(10), deadline=None)
@given(data=random_programs())
def test_random_programs_cl_equals_verilator(cmdline_opts, data):
    prog, stall, seed = data
    out_fl = _run("fl", prog)[0]
    out, _, _ = _compare_cl_rtl("verilator", prog, stall, seed)
    assert out == out_fl
