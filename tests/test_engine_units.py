"""The components of :class:`EngineRTL`, each driven alone at ``rtl`` (PyMTL3 simulation).

* :class:`EngineCmdRangesRTL`: every command's ranges are :func:`msgs.access_ranges` in elements;
* :class:`EngineAcceptRTL`: with any set of busy units it accepts an offered command exactly when
  all units are idle, or ``ovl = 1``, its unit is idle and :func:`msgs.ranges_conflict` finds no
  conflict with a busy unit (plus directed RAW / WAR / port-conflict cases);
* :class:`EngineLoaderRTL` / :class:`EngineStorerRTL`: a LOAD writes element ``e`` to word
  ``addr + e // L``, lane ``e % L`` of its target, ``E`` elements per beat (1 or 2); a STORE
  streams the target's words (registered reads modelled by the test), ``E`` elements per beat,
  each sign-extended to the stream width, surplus lanes of the last beat zero, under random
  handshakes;
* :class:`EngineReadPortRTL` / :class:`EngineWritePortRTL`: who owns a buffer port; LD's beat
  lanes go to the word's lanes ``ld_lane + j`` that ``ld_lmask`` allows;
* :class:`EngineComputeCtrlRTL` against a scripted address generator: one step per cycle,
  stage B one cycle later, the ``bwd_weight`` cool-down (a tile's last step waits ``P/DR - 1``,
  ``P/DR`` with a db row, ``DR`` = drain rows per cycle), done only when the drain is idle, the
  MAC operand select;
* :class:`EnginePoolRTL`: max and first argmax of each window; :class:`EngineDrainRTL`: the tile
  and the db sums it drains and for how many cycles (``DR`` rows a cycle);
  :class:`EngineWritebackRTL`: saturated results to the buffer ``dsel`` / ``amsel`` name, ReLU
  mask, pool_bwd routing, update rows, drain rows (one or ``DR`` a cycle), requantizer operands;
  :class:`SignExtendRTL`.
"""

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymtl3 import Component, InPort, connect

from pymtl_fp.engine import msgs
from pymtl_fp.engine.EngineAcceptRTL import EngineAcceptRTL
from pymtl_fp.engine.EngineCmdRangesRTL import NSLOT, EngineCmdRangesRTL
from pymtl_fp.engine.EngineComputeCtrlRTL import EngineComputeCtrlRTL
from pymtl_fp.engine.EngineDrainRTL import EngineDrainRTL
from pymtl_fp.engine.EngineLoaderRTL import EngineLoaderRTL
from pymtl_fp.engine.EnginePoolRTL import EnginePoolRTL
from pymtl_fp.engine.EngineReadPortRTL import EngineReadPortRTL
from pymtl_fp.engine.EngineRequantSelectRTL import EngineRequantSelectRTL
from pymtl_fp.engine.EngineStorerRTL import EngineStorerRTL
from pymtl_fp.engine.EngineUpdateRowsRTL import EngineUpdateRowsRTL
from pymtl_fp.engine.EngineWritebackRTL import EngineWritebackRTL
from pymtl_fp.engine.EngineWritePortRTL import EngineWritePortRTL
from pymtl_fp.engine.MacArrayDspRTL import LATENCY as DSP_MAC_LATENCY
from pymtl_fp.engine.MacArrayDspRTL import MacArrayDspRTL
from pymtl_fp.engine.MacArrayPipeRTL import LATENCY as PIPE_MAC_LATENCY
from pymtl_fp.engine.MacArrayPipeRTL import MacArrayPipeRTL
from pymtl_fp.engine.MacArrayRTL import MacArrayRTL
from pymtl_fp.engine.msgs import (
    BUF_B,
    BUF_D,
    BUF_G,
    BUF_O,
    BUF_W,
    BUF_X,
    OP_BWD_DATA,
    OP_BWD_WEIGHT,
    OP_FWD,
    OP_LOAD,
    OP_POOL_BWD,
    OP_POOL_FWD,
    OP_STORE,
    OP_UPDATE,
    access_ranges,
    buffer_lanes,
    cmd_fields,
    cmd_type,
    from_word,
    make_cmd,
    ranges_conflict,
    to_word,
    unit_of,
)
from pymtl_fp.engine.SignExtendRTL import SignExtendRTL
from pymtl_fp.primitives.DelayLineRTL import DelayLineRTL
from pymtl_fp.sim import build_sim
from pymtl_fp.tb.hypothesis_profiles import examples

pytestmark = pytest.mark.rtl


@functools.cache
def unit(cls, *args):
    """One elaborated simulator per (component, parameters), reset by each test."""
    return build_sim(cls(*args), "rtl")


def fresh(cls, *args):
    m = unit(cls, *args)
    m.sim_reset()
    return m


def _set(m, name, value):
    sig = getattr(m, name)
    sig @= value


def clamp(v, bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return min(max(v, lo), hi)


# ---- commands ------------------------------------------------------------------------------

GEO = ("n", "ct", "kt", "h", "w", "ho", "wo", "r", "s")
ADDR = ("a0", "a1", "a2", "d0", "d1")


@st.composite
def commands(draw, ops=tuple(range(10)), max_addr=5, min_count=0):
    """Commands of every op code (8, 9: none), small geometry and colliding addresses."""
    op = draw(st.sampled_from(ops))
    f = dict(op=op, ovl=draw(st.integers(0, 1)))
    if op in (OP_LOAD, OP_STORE):
        f.update(target=draw(st.integers(0, 5)), addr=draw(st.integers(0, max_addr)),
                 count=draw(st.integers(min_count, 30)))
    else:
        f.update({k: draw(st.integers(0 if k == "n" else 1, 3)) for k in GEO})
        f.update({k: draw(st.integers(0, max_addr)) for k in ADDR})
        f.update(dsel=draw(st.integers(0, 3)), amsel=draw(st.integers(0, 1)))
    return cmd_fields(make_cmd(**f))


def element_ranges(f, P):
    """:func:`access_ranges` in elements (LOAD/STORE: exactly ``count`` elements)."""
    out = []
    for b, lo, hi, wr in access_ranges(f, P):
        L = buffer_lanes(b, P)
        end = lo * L + f["count"] if f["op"] in (OP_LOAD, OP_STORE) else hi * L
        out.append((b, lo * L, end, wr))
    return out


@pytest.mark.parametrize("P", [2, 3])
@settings(max_examples=examples(60))
@given(data=st.data())
def test_cmd_ranges_are_access_ranges_in_elements(P, data):
    m = fresh(EngineCmdRangesRTL, P)
    for _ in range(5):
        f = data.draw(commands(max_addr=300))
        m.cmd @= make_cmd(**f)
        m.sim_eval_combinational()
        got = [(int(m.buf_id[i]), int(m.lo[i]), int(m.hi[i]), bool(m.wr[i])) for i in range(NSLOT) if m.v[i]]
        assert got == element_ranges(f, P), f


def _offer(m, f, val=1):
    m.cmd.msg @= make_cmd(**f)
    m.cmd.val @= val
    m.sim_eval_combinational()


def _set_busy(m, running):
    by_unit = {unit_of(f["op"]): f for f in running}
    m.ld_busy @= msgs.UNIT_LD in by_unit
    m.st_busy @= msgs.UNIT_ST in by_unit
    m.ex_busy @= msgs.UNIT_EX in by_unit
    m.ld_tgt @= by_unit.get(msgs.UNIT_LD, {}).get("target", 0)
    m.st_tgt @= by_unit.get(msgs.UNIT_ST, {}).get("target", 0)


def _start(m, running):
    """Accept ``running`` one per cycle (units idle meanwhile), then mark their units busy."""
    _set_busy(m, [])
    for f in running:
        _offer(m, f)
        assert m.cmd.rdy and [int(m.go_ld), int(m.go_st), int(m.go_ex)] == [
            int(unit_of(f["op"]) == u) for u in (msgs.UNIT_LD, msgs.UNIT_ST, msgs.UNIT_EX)]
        m.sim_tick()
    _set_busy(m, running)


def accept_model(f, running, P):
    if not running:
        return True
    if not f["ovl"] or any(unit_of(r["op"]) == unit_of(f["op"]) for r in running):
        return False
    mine = access_ranges(f, P)
    return not any(ranges_conflict(mine, access_ranges(r, P)) for r in running)


@settings(max_examples=examples(150))
@given(running=st.lists(commands(max_addr=12, min_count=1), max_size=3, unique_by=lambda f: unit_of(f["op"])),
       offered=st.lists(commands(max_addr=12), min_size=1, max_size=4), val=st.booleans())
def test_accept_unit_refuses_exactly_the_conflicting_commands(running, offered, val):
    P = 2
    m = fresh(EngineAcceptRTL, P)
    _start(m, running)
    for f in offered:  # several offers against the same busy units (nothing is accepted twice)
        _offer(m, f, val)
        want = accept_model(f, running, P)
        assert bool(m.cmd.rdy) == want, (f, running)
        go = [int(m.go_ld), int(m.go_st), int(m.go_ex)]
        assert go == [int(val and want and unit_of(f["op"]) == u)
                      for u in (msgs.UNIT_LD, msgs.UNIT_ST, msgs.UNIT_EX)]
        assert bool(m.busy) == bool(running)
        m.cmd.val @= 0
        m.sim_eval_combinational()


def _fwd(**kw):
    f = dict(op=OP_FWD, n=1, ct=1, kt=1, h=2, w=2, ho=2, wo=2, r=1, s=1, a0=0, a1=0, a2=0, d0=0, ovl=1)
    return cmd_fields(make_cmd(**dict(f, **kw)))


def _ld(op, target, addr, count, ovl=1):
    return cmd_fields(make_cmd(op=op, target=target, addr=addr, count=count, ovl=ovl))


@pytest.mark.parametrize("offered,accepted", [
    (_ld(OP_LOAD, BUF_X, 2, 1), False),   # WAR: fwd reads X words 0..3
    (_ld(OP_LOAD, BUF_X, 4, 8), True),    # X words 4..7: disjoint
    (_ld(OP_STORE, BUF_X, 9, 1), False),  # X's read port is EX's
    (_ld(OP_LOAD, BUF_O, 9, 2), False),   # O's write port is EX's (fwd writes O)
    (_ld(OP_STORE, BUF_O, 4, 2), True),   # O words 4.. : fwd writes only 0..3
    (_ld(OP_STORE, BUF_O, 3, 2), False),  # RAW on O word 3
    (_ld(OP_LOAD, BUF_X, 4, 8, ovl=0), False),  # ovl = 0 waits for an idle engine
    (_ld(OP_LOAD, BUF_D, 0, 0), True),    # an empty LOAD of an unused buffer
], ids=["war", "disjoint", "read-port", "write-port", "after-result", "raw", "ovl0", "empty"])
def test_accept_unit_directed_hazards(offered, accepted):
    m = fresh(EngineAcceptRTL, 2)
    _start(m, [_fwd()])
    _offer(m, offered)
    assert bool(m.cmd.rdy) == accepted


@pytest.mark.parametrize("running,offered,accepted", [
    (_ld(OP_STORE, BUF_X, 10, 4), _fwd(), False),        # ST streams X: X's read port is taken
    (_ld(OP_LOAD, BUF_O, 10, 4), _fwd(), False),         # LD fills O: O's write port is taken
    (_ld(OP_LOAD, BUF_D, 10, 4), _fwd(), True),          # fwd does not touch D
    (_fwd(n=0, a0=2), _ld(OP_LOAD, BUF_X, 1, 6), True),  # an empty range conflicts with nothing
    (_fwd(n=0, a0=2), _ld(OP_STORE, BUF_X, 9, 1), False),  # ... but still holds its port
    (_ld(OP_LOAD, BUF_X, 0, 4), _ld(OP_STORE, BUF_X, 2, 1), True),  # LD writes X words 0, 1 only
    (_ld(OP_LOAD, BUF_X, 0, 3), _ld(OP_STORE, BUF_X, 1, 1), False),  # ... and word 1 (lane 0)
    (_ld(OP_STORE, BUF_W, 3, 4), _ld(OP_LOAD, BUF_W, 4, 1), True),   # ST reads W word 3 only
    (_ld(OP_STORE, BUF_W, 3, 5), _ld(OP_LOAD, BUF_W, 4, 1), False),  # ... and word 4
    (_fwd(a0=4), _ld(OP_LOAD, BUF_X, 0, 8), True),       # fwd reads X words 4..7, LOAD writes 0..3
    (_fwd(a0=4), _ld(OP_LOAD, BUF_X, 0, 9), False),      # ... and word 4
    (_ld(OP_LOAD, BUF_X, 2, 2), _ld(OP_STORE, BUF_X, 0, 4), True),   # LD writes X word 2, ST reads 0, 1
    (_ld(OP_STORE, BUF_W, 3, 4), _ld(OP_LOAD, BUF_W, 2, 4), True),   # ST reads W word 3, LD writes 2
    (_ld(OP_STORE, BUF_W, 3, 4), _ld(OP_LOAD, BUF_W, 2, 5), False),  # ... and lane 0 of word 3
], ids=["st-read-port", "ld-write-port", "ld-other-buffer", "empty-range", "empty-range-port", "ld-end",
        "ld-end-overlap", "st-end", "st-end-overlap", "ex-start", "ex-start-overlap", "ld-start", "st-start",
        "st-start-overlap"])
def test_accept_unit_directed_unit_conflicts(running, offered, accepted):
    m = fresh(EngineAcceptRTL, 2)
    _start(m, [running])
    _offer(m, offered)
    assert bool(m.cmd.rdy) == accepted == accept_model(offered, [running], 2)


# ---- load / store units --------------------------------------------------------------------

@settings(max_examples=examples(30))
@given(target=st.integers(0, 5), addr=st.integers(0, 300), count=st.integers(0, 20),
       valid=st.lists(st.booleans(), min_size=1, max_size=8).filter(any), E=st.sampled_from([1, 2]))
def test_loader_writes_each_element_to_its_word_and_lane(target, addr, count, valid, E):
    P = 2
    L = buffer_lanes(target, P)
    m = fresh(EngineLoaderRTL, P, 9, E)
    m.cmd @= make_cmd(op=OP_LOAD, target=target, addr=addr, count=count)
    m.go @= 1
    m.din_val @= 0
    m.sim_eval_combinational()
    assert not m.busy and not m.we
    m.sim_tick()
    m.go @= 0
    got = []
    for t in range(len(valid) * (count + 1) + 4):
        m.din_val @= valid[t % len(valid)]
        m.sim_eval_combinational()
        assert m.din_rdy == m.busy
        if m.we:
            got.append((int(m.tgt), int(m.waddr), int(m.lane), [int(m.lmask[j]) for j in range(E)]))
        m.sim_tick()
    assert not m.busy
    assert got == [(target, (addr + e // L) % 512, e % L, [int(e + j < count) for j in range(E)])
                   for e in range(0, count, E)]


@settings(max_examples=examples(30))
@given(seed=st.integers(0, 2**32 - 1), target=st.integers(0, 5), addr=st.integers(0, 3), count=st.integers(1, 12),
       ready=st.lists(st.booleans(), min_size=1, max_size=8).filter(any), E=st.sampled_from([1, 2]))
def test_storer_streams_the_target_words_sign_extended(seed, target, addr, count, ready, E):
    P, D, AB, SB = 2, 8, 32, 40
    m = fresh(EngineStorerRTL, P, D, AB, SB, 6, E)
    names = {BUF_X: "rd_x", BUF_D: "rd_d", BUF_O: "rd_o", BUF_W: "rd_w", BUF_G: "rd_g", BUF_B: "rd_b"}
    width = {b: AB if b == BUF_B else D for b in names}
    rng = np.random.default_rng(seed)
    mem = {b: rng.integers(-(1 << (width[b] - 1)), 1 << (width[b] - 1), size=(10, buffer_lanes(b, P))).tolist()
           for b in names}
    m.cmd @= make_cmd(op=OP_STORE, target=target, addr=addr, count=count)
    m.go @= 1
    m.dout.rdy @= 0
    m.sim_tick()
    m.go @= 0
    out, rdata = [], None
    for t in range(len(ready) * (count + 1) + 3 * count + 6):
        if rdata is not None:  # the registered read of the last cycle's rd
            for i, v in enumerate(rdata):
                getattr(m, names[target])[i] @= to_word(v, width[target])
        m.dout.rdy @= ready[t % len(ready)]
        m.sim_eval_combinational()
        if m.rd:
            rdata = mem[target][int(m.raddr)]
        if m.dout.val and m.dout.rdy:
            out += [from_word(int(m.dout.msg) >> (j * SB), SB) for j in range(E)]
        m.sim_tick()
    L = buffer_lanes(target, P)
    assert not m.busy
    want = [mem[target][addr + e // L][e % L] for e in range(count)]
    assert out == want + [0] * (-count % E)  # the surplus lanes of the last beat are zero


@settings(max_examples=examples(30))
@given(st.data())
def test_buffer_ports_belong_to_the_right_unit(data):
    buf = data.draw(st.integers(0, 5))
    lanes = data.draw(st.sampled_from([2, 4]))
    E = data.draw(st.sampled_from([e for e in (1, 2, 4) if lanes % e == 0]))
    rp, wp = fresh(EngineReadPortRTL, buf, 6), fresh(EngineWritePortRTL, buf, lanes, 8, 6, E)
    for _ in range(8):
        st_busy, st_tgt, st_rd, ex_ren = (data.draw(st.integers(0, 1)), data.draw(st.integers(0, 7)),
                                          data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1)))
        st_addr, ex_addr = data.draw(st.integers(0, 63)), data.draw(st.integers(0, 63))
        rp.st_busy @= st_busy
        rp.st_tgt @= st_tgt
        rp.st_rd @= st_rd
        rp.st_addr @= st_addr
        rp.ex_ren @= ex_ren
        rp.ex_addr @= ex_addr
        rp.sim_eval_combinational()
        st_owns = st_busy and st_tgt == buf
        assert (int(rp.raddr), int(rp.ren)) == ((st_addr, st_rd) if st_owns else (ex_addr, ex_ren))
        ld_we, ld_tgt, ld_lane, ex_we = (data.draw(st.integers(0, 1)), data.draw(st.integers(0, 7)),
                                         data.draw(st.integers(0, lanes + 1)), data.draw(st.integers(0, 1)))
        ex_wen = [data.draw(st.integers(0, 1)) for _ in range(lanes)]
        lmask = [data.draw(st.integers(0, 1)) for _ in range(E)]
        wp.ld_we @= ld_we
        wp.ld_tgt @= ld_tgt
        wp.ld_lane @= ld_lane
        wp.ld_addr @= st_addr
        wp.ld_lmask @= sum(v << j for j, v in enumerate(lmask))
        for j in range(E):
            wp.ld_data[j] @= 0x50 + j
        wp.ex_we @= ex_we
        wp.ex_addr @= ex_addr
        for i in range(lanes):
            wp.ex_wen[i] @= ex_wen[i]
            wp.ex_wdata[i] @= i + 1
        wp.sim_eval_combinational()
        if ex_we:
            want = (ex_addr, ex_wen, list(range(1, lanes + 1)))
        else:
            # beat lane j goes to lane ld_lane + j (ld_lane a multiple of E), where lmask allows it
            want = (st_addr, [int(ld_we and ld_tgt == buf and ld_lane == i - i % E and lmask[i % E] == 1)
                              for i in range(lanes)], [0x50 + i % E for i in range(lanes)])
        assert (int(wp.waddr), [int(w) for w in wp.wen], [int(d) for d in wp.wdata]) == want


# ---- compute controller --------------------------------------------------------------------

def _run_ex(m, op, steps, dr_busy_cycles=0, max_cycles=60):
    """Run one command on a scripted address generator (``steps``: dicts of its outputs); return
    the cycles in which each step advanced and the cycle ``busy`` fell."""
    m.cmd @= make_cmd(op=op)
    m.go @= 1
    m.ag_active @= 0
    m.dr_busy @= 0
    m.sim_eval_combinational()
    assert m.ag_start and not m.busy
    m.sim_tick()
    m.go @= 0
    k, adv, done, prev_adv = 0, [], None, None
    for t in range(max_cycles):
        s = steps[k] if k < len(steps) else {}
        m.ag_active @= k < len(steps)
        for name in ("first", "last", "zero", "db_end"):
            _set(m, f"ag_{name}", s.get(name, 0))
        m.ag_tap @= k % 256
        m.wr_addr @= 100 + k  # the step's write address (no address stage: the same cycle)
        m.dr_busy @= int(t < dr_busy_cycles)
        m.sim_eval_combinational()
        assert bool(m.vB) == (prev_adv is not None and prev_adv[0])  # stage B: one cycle later
        if prev_adv is not None and prev_adv[0]:
            assert int(m.tapB) == prev_adv[1] and int(m.wr_addrB) == 100 + prev_adv[1]
        if not m.busy:
            done = t
            break
        prev_adv = (bool(m.ag_advance), k)
        assert m.ren == m.ag_advance
        if m.ag_advance:
            adv.append(t)
            k += 1
        m.sim_tick()
    return adv, done


@pytest.mark.parametrize("P, dr", [(2, 1), (3, 1), (4, 2), (4, 4)])
def test_compute_ctrl_holds_bwd_weight_tiles_for_the_drain(P, dr):
    m = fresh(EngineComputeCtrlRTL, P, 8, dr)
    # three one-step tiles (last = 1), the second ending a db sum: the drain takes P/DR cycles,
    # then P/DR + 1 (the db row), and each next tile's last step waits for it
    adv, done = _run_ex(m, OP_BWD_WEIGHT, [dict(first=1, last=1), dict(first=1, last=1, db_end=1),
                                           dict(first=1, last=1)])
    assert [b - a for a, b in itertools.pairwise(adv)] == [P // dr, P // dr + 1]
    assert done == adv[-1] + 3  # last step, its stage B, done: busy falls the cycle after
    m = fresh(EngineComputeCtrlRTL, P, 8, dr)
    adv, _ = _run_ex(m, OP_FWD, [dict(first=1, last=1)] * 3)
    assert [b - a for a, b in itertools.pairwise(adv)] == [1, 1]  # no cool-down outside bwd_weight


def test_compute_ctrl_waits_for_the_drain_and_selects_the_mac_operand():
    m = fresh(EngineComputeCtrlRTL, 2, 8)
    adv, done = _run_ex(m, OP_BWD_WEIGHT, [dict(first=1, last=1)], dr_busy_cycles=12)
    assert adv == [0] and done == 13  # the drain's last busy cycle is 11
    for op, zero, want in ((OP_FWD, 0, "x"), (OP_BWD_DATA, 0, "d"), (OP_BWD_WEIGHT, 0, "x"), (OP_FWD, 1, "0")):
        m = fresh(EngineComputeCtrlRTL, 2, 8)
        _run_ex(m, op, [dict(first=1, last=1, zero=zero)], max_cycles=1)  # stops with the step in stage B
        for j in range(2):
            m.x_rd[j] @= 10 + j
            m.d_rd[j] @= 20 + j
        m.sim_eval_combinational()
        assert m.vB and m.mac_en == (op != OP_POOL_FWD)
        assert [int(v) for v in m.mac_v] == {"x": [10, 11], "d": [20, 21], "0": [0, 0]}[want]
        assert (int(m.mac_outer), int(m.mac_transpose), int(m.mac_use_bias)) == (
            op == OP_BWD_WEIGHT, op == OP_BWD_DATA, op == OP_FWD)


# ---- pooling, drain ------------------------------------------------------------------------

@settings(max_examples=examples(30))
@given(windows=st.lists(st.lists(st.lists(st.integers(-128, 127), min_size=2, max_size=2), min_size=1, max_size=6),
                        min_size=1, max_size=4))
def test_pool_lanes_keep_max_and_first_argmax(windows):
    m = fresh(EnginePoolRTL, 2, 8)
    m.vB @= 1
    for win in windows:
        for tap, vals in enumerate(win):
            m.first @= tap == 0
            m.tap @= tap
            for i in range(2):
                m.x_rd[i] @= to_word(vals[i], 8)
            m.sim_eval_combinational()
            if tap < len(win) - 1:
                m.sim_tick()
        for i in range(2):
            lane = [v[i] for v in win]
            assert from_word(int(m.pm_n[i]), 8) == max(lane)
            assert int(m.pi_n[i]) == lane.index(max(lane))
        m.sim_tick()


@pytest.mark.parametrize("op, dr", [(OP_BWD_WEIGHT, 1), (OP_BWD_WEIGHT, 2), (OP_FWD, 1)])
@settings(max_examples=examples(15))
@given(steps=st.lists(st.tuples(st.booleans(), st.integers(-128, 127), st.integers(-128, 127)), min_size=1,
                      max_size=6), db_end=st.booleans(), res=st.lists(st.integers(0, 2**32 - 1), min_size=4,
                                                                       max_size=4))
def test_drain_holds_the_tile_and_the_db_sums(op, dr, steps, db_end, res):
    P = 2
    m = fresh(EngineDrainRTL, P, 8, 32, dr)
    m.cmd @= make_cmd(op=op)
    m.CRS @= 15  # c*r*s: the drained rows' indices are one output channel (15 elements) apart
    for k, (acc, d0, d1) in enumerate(steps):  # stage-B cycles of one tile; db sums of dy lanes
        last = k == len(steps) - 1
        m.vB @= 1
        m.firstB @= k == 0
        m.dbfirstB @= 1
        m.dbaccB @= acc
        m.lastB @= last
        m.dbendB @= db_end and last
        m.wr_addrB @= 7
        m.idxB @= 70
        m.wr_addr2B @= 3
        m.idx2B @= 30
        m.d_rd[0] @= to_word(d0, 8)
        m.d_rd[1] @= to_word(d1, 8)
        for lv in range(P * P):
            m.mac_res[lv] @= res[lv]
        m.sim_eval_combinational()
        assert not m.busy
        m.sim_tick()
    m.vB @= 0
    rows, idx = [], []
    for _ in range(P + 3):
        m.sim_eval_combinational()
        if m.busy:
            rows.append(int(m.row))
            idx.append(int(m.idx))
        m.sim_tick()
    if op != OP_BWD_WEIGHT:
        assert rows == []
        return
    assert rows == list(range(0, P, dr)) + ([P] if db_end else [])  # DR rows a cycle, then db
    assert idx[:P // dr] == [70 + row * 15 for row in range(0, P, dr)]  # each drained row's index
    assert [int(v) for v in m.dr] == res and int(m.addr) == 7
    if db_end:
        sums = [sum(s[1 + i] for s in steps if s[0]) for i in range(P)]
        assert [from_word(int(v), 32) for v in m.dbdr] == sums
        assert (int(m.db_addr), int(m.db_idx)) == (3, 30)


# ---- write-back ----------------------------------------------------------------------------

WB = dict(P=2, act_bits=6, weight_bits=8, grad_bits=7, acc_bits=24, XA=6, WA=5, BA=3)
WB_NAMES = ("x", "d", "o", "w", "g", "b")


class SelectAndWriteback(Component):
    """EngineRequantSelectRTL, EngineWritebackRTL and stage B's update rows as EngineRTL
    wires them without pipelines: stage-B inputs and the requantized values ``q`` in; the
    requantizer's operands (``sel.rq_*``) and the write requests (``wb.<buffer>_*``) out."""

    def construct(s, P, act_bits, weight_bits, grad_bits, acc_bits, XA, WA, BA, stochastic, dr=1):
        D = max(act_bits, weight_bits, grad_bits)
        s.sel = EngineRequantSelectRTL(P, D, acc_bits, stochastic, dr)
        s.wb = EngineWritebackRTL(P, act_bits, weight_bits, grad_bits, acc_bits, XA, WA, BA, dr)
        s.rows = EngineUpdateRowsRTL(P, D)
        s.cmd = InPort(cmd_type())
        s.ex_busy, s.vB, s.lastB, s.dr_busy = InPort(), InPort(), InPort(), InPort()
        s.rowB, s.dr_row = InPort(16), InPort(16)
        s.dr_nlanes, s.dr_nrows, s.dr_roff = InPort(16), InPort(16), InPort(16)  # a batch-parallel tile
        s.tapB = InPort(8)
        s.q = [InPort(acc_bits) for _ in range(dr * P)]
        for name in ("wr_addrB", "wr_addr2B", "idxB", "dr_addr", "dr_idx", "db_addr", "db_idx", "IHOWO", "IHW", "RS"):
            setattr(s, name, InPort(32))
        for name, n, w in (("acc", P, acc_bits), ("dbdr", P, acc_bits), ("dr", P * P, acc_bits), ("pm_n", P, D),
                           ("pi_n", P, 8), ("x_rd", P, D), ("o_rd", P, D), ("d_rd", P, D), ("w_rd", P * P, D),
                           ("g_rd", P * P, D)):
            setattr(s, name, [InPort(w) for _ in range(n)])
        for unit, names in ((s.sel, ("cmd", "rowB", "idxB", "dr_busy", "dr_row", "dr_idx", "db_idx", "IHOWO", "IHW",
                                     "RS", "acc", "dbdr", "dr")),
                            (s.wb, ("cmd", "ex_busy", "vB", "lastB", "rowB", "tapB", "wr_addrB", "wr_addr2B",
                                    "dr_busy", "dr_row", "dr_addr", "db_addr", "dr_nlanes", "dr_nrows", "dr_roff", "pm_n",
                                    "pi_n", "x_rd", "o_rd", "d_rd", "q")),
                            (s.rows, ("rowB", "w_rd", "g_rd"))):
            for name in names:
                mine, theirs = getattr(s, name), getattr(unit, name)
                for a, b in zip(theirs, mine) if isinstance(mine, list) else ((theirs, mine),):
                    connect(a, b)
        for i in range(P):
            s.wb.raw[i] //= s.sel.raw[i]
            s.wb.w_row[i] //= s.rows.w_row[i]
            s.sel.g_row[i] //= s.rows.g_row[i]
        if dr > 1:
            s.CRS = InPort(32)
            s.sel.CRS //= s.CRS


def _set_cmd(m, **fields):
    """The command register and the strides EngineStridesRTL gives for it (its product fields)."""
    m.cmd @= make_cmd(**fields)
    f = lambda name: fields.get(name, 0)
    m.IHOWO @= f("hi") * f("wo")  # a channel of the whole result map's flat index
    m.IHW @= f("hi") * f("w")
    m.RS @= f("r") * f("s")
    if hasattr(m, "CRS"):  # drain_rows > 1: the drain's row stride
        m.CRS @= f("c") * f("r") * f("s")


def _wb(op, **fields):
    m = fresh(SelectAndWriteback, *WB.values(), True)
    _set_cmd(m, op=op, **fields)
    m.ex_busy @= 1
    for name in ("vB", "lastB", "rowB", "tapB", "dr_busy", "dr_row"):
        _set(m, name, 0)
    return m


def _drain_inputs(m, row, P):
    """A bwd_weight drain presenting row ``row`` of a P x P tile (dw rows 1000.., db 2000..)."""
    m.dr_busy @= 1
    m.dr_row @= row
    m.dr_addr @= 32 + 6
    m.dr_idx @= 100 + row * 15  # the drain gives row's index: the tile's + row * c*r*s
    m.db_addr @= 8 + 2
    m.db_idx @= 50
    for lv in range(P * P):
        m.dr[lv] @= 1000 + lv
    for i in range(P):
        m.dbdr[i] @= 2000 + i
        m.acc[i] @= 3000 + i


def _requests(m):
    m.sim_eval_combinational()
    return {n: (int(getattr(m.wb, f"{n}_addr")), [int(w) for w in getattr(m.wb, f"{n}_wen")],
                [int(d) for d in getattr(m.wb, f"{n}_wdata")]) for n in WB_NAMES if getattr(m.wb, f"{n}_we")}


@settings(max_examples=examples(30))
@given(op=st.sampled_from([OP_FWD, OP_BWD_DATA, OP_POOL_FWD, OP_POOL_BWD]), dsel=st.integers(0, 2),
       amsel=st.integers(0, 1), relu=st.integers(0, 1), q=st.lists(st.integers(-300, 300), min_size=2, max_size=2),
       x=st.lists(st.integers(-3, 3), min_size=2, max_size=2), tap=st.integers(0, 3),
       am=st.lists(st.integers(0, 3), min_size=2, max_size=2))
def test_writeback_routes_results_to_dsel_and_argmax_to_amsel(op, dsel, amsel, relu, q, x, tap, am):
    if op == OP_POOL_FWD and msgs.DSEL_BUF[dsel] == msgs.AMSEL_BUF[amsel]:
        dsel = msgs.DSEL_D  # refused by check_cmd
    m = _wb(op, dsel=dsel, amsel=amsel, relu=relu, h=3, w=5, ho=2, wo=7, hi=3 if op == OP_BWD_DATA else 2,
            shift=5)
    D = 8
    m.vB @= 1
    m.idxB @= 77
    m.lastB @= 1
    m.wr_addrB @= 64 + 9  # truncated to the 6-bit act address: 9
    m.wr_addr2B @= 5
    m.tapB @= tap
    for i in range(2):
        m.q[i] @= to_word(q[i], 24)
        m.o_rd[i] @= am[i] if amsel else 0  # pool_bwd reads the argmax from O or X
        m.x_rd[i] @= am[i] if (op == OP_POOL_BWD and not amsel) else to_word(x[i], D)
        m.d_rd[i] @= to_word(40 + i, D)
        m.pm_n[i] @= to_word(-5 - i, D)
        m.pi_n[i] @= 2 + i
        m.acc[i] @= 500 + i
    req = _requests(m)
    # the requantizer rounds the MAC array's outputs, lane stride = the result's whole plane (hi*W for dx)
    assert [int(v) for v in m.sel.rq_acc] == [500, 501]
    assert (int(m.sel.rq_idx_base), int(m.sel.rq_idx_stride)) == (77, 15 if op == OP_BWD_DATA else 14)
    assert (int(m.sel.rq_shift), int(m.sel.rq_relu)) == (5, int(op == OP_FWD and relu))
    res_buf = "oxd"[dsel]
    if op == OP_FWD:
        vals = [clamp(v, 6) for v in q]
    elif op == OP_BWD_DATA:
        vals = [0 if relu and v <= 0 else clamp(qq, 7) for v, qq in zip(x, q)]
    elif op == OP_POOL_FWD:
        vals = [-5, -6]
    else:
        vals = [40 + i if am[i] == tap else 0 for i in range(2)]
    want = {res_buf: (9, [1, 1], [to_word(v, D) for v in vals])}
    if op == OP_POOL_FWD:  # the argmax taps, to X or O
        want["o" if amsel else "x"] = (5, [1, 1], [2, 3])
    assert req == want


@settings(max_examples=examples(20))
@given(row=st.integers(0, 1), q=st.lists(st.integers(-300, 300), min_size=2, max_size=2),
       w=st.lists(st.integers(-128, 127), min_size=4, max_size=4),
       g=st.lists(st.integers(-128, 127), min_size=4, max_size=4))
def test_writeback_update_writes_one_weight_row(row, q, w, g):
    m = _wb(OP_UPDATE, r=1, s=3)
    m.vB @= 1
    m.rowB @= row
    m.wr_addrB @= 32 + 4  # 5-bit weight address: 4
    m.idxB @= 11
    for lv in range(4):
        m.w_rd[lv] @= to_word(w[lv], 8)
        m.g_rd[lv] @= to_word(g[lv], 8)
    for i in range(2):
        m.q[i] @= to_word(q[i], 24)
    req = _requests(m)
    new = [to_word(clamp(w[row * 2 + j] - q[j], 8), 8) for j in range(2)]
    assert req == {"w": (4, [int(lv // 2 == row) for lv in range(4)], new * 2)}
    assert [from_word(int(v), 24) for v in m.sel.rq_acc] == g[row * 2:row * 2 + 2]  # the gradient row
    assert (int(m.sel.rq_idx_base), int(m.sel.rq_idx_stride)) == (11, 3)  # stride R*S


@pytest.mark.parametrize("row", [0, 1, 2])
def test_writeback_drain_rows_go_to_g_and_db_to_b(row):
    m = _wb(OP_BWD_WEIGHT, c=5, r=1, s=3, shift=4, bshift=9, tid=1, btid=2)
    _drain_inputs(m, row, 2)
    for i in range(2):
        m.q[i] @= to_word((-90, 17)[i], 24)
    req = _requests(m)
    if row < 2:
        assert req == {"g": (6, [int(lv // 2 == row) for lv in range(4)], [to_word(v, 8) for v in (-64, 17)] * 2)}
        assert [int(v) for v in m.sel.rq_acc] == [1000 + 2 * row, 1001 + 2 * row]
        assert (int(m.sel.rq_idx_base), int(m.sel.rq_idx_stride), int(m.sel.rq_shift)) == (100 + row * 15, 3, 4)
    else:
        assert req == {"b": (2, [1, 1], [to_word(v, 24) for v in (-64, 17)])}
        assert [int(v) for v in m.sel.rq_acc] == [2000, 2001]
        rq = m.sel
        assert (int(rq.rq_idx_base), int(rq.rq_idx_stride), int(rq.rq_shift), int(rq.rq_tensor_id)) == (50, 1, 9, 2)
    m.ex_busy @= 0
    assert _requests(m) == {}


@pytest.mark.parametrize("row", [0, 2, 4])
def test_writeback_drains_dr_rows_a_cycle(row):
    """drain_rows = 2 on a 4 x 4 tile: dw rows row, row+1 go through the bank's two requantizer
    rows (indices one output channel, C*R*S, apart) into G in one cycle; row P is db."""
    P, dr = 4, 2
    m = fresh(SelectAndWriteback, P, 6, 8, 7, 24, 6, 5, 3, True, dr)
    _set_cmd(m, op=OP_BWD_WEIGHT, c=5, r=1, s=3, shift=4, bshift=9, tid=1, btid=2)
    m.ex_busy @= 1
    for name in ("vB", "lastB", "rowB", "tapB"):
        _set(m, name, 0)
    _drain_inputs(m, row, P)
    q = [(-90, 17, 3, -1)[i % P] + 10 * (i // P) for i in range(dr * P)]
    for i in range(dr * P):
        m.q[i] @= to_word(q[i], 24)
    req = _requests(m)
    if row < P:
        want = [to_word(clamp(v, 7), 8) for v in q]
        assert req == {"g": (6, [int(row <= lv // P < row + dr) for lv in range(P * P)], want * (P // dr))}
        assert [int(v) for v in m.sel.rq_acc] == [1000 + row * P + i for i in range(dr * P)]
        assert (int(m.sel.rq_idx_base), int(m.sel.rq_idx_stride), int(m.sel.rq_row_stride)) == (100 + row * 15, 3, 15)
    else:
        assert req == {"b": (2, [1] * P, [to_word(clamp(v, 7), 24) for v in q[:P]])}
        assert [int(v) for v in m.sel.rq_acc] == [2000 + i for i in range(P)] + [0] * P
        assert (int(m.sel.rq_idx_base), int(m.sel.rq_idx_stride), int(m.sel.rq_shift)) == (50, 1, 9)


@settings(max_examples=examples(20))
@given(bits=st.tuples(st.integers(2, 16), st.integers(0, 24)), vals=st.lists(st.integers(0, 2**16 - 1), min_size=3,
                                                                              max_size=3))
def test_sign_extend(bits, vals):
    n_in, extra = bits
    m = unit(SignExtendRTL, n_in, n_in + extra, 3)
    for i, v in enumerate(vals):
        m.in_[i] @= v % (1 << n_in)
    m.sim_eval_combinational()
    assert [from_word(int(o), n_in + extra) for o in m.out] == [from_word(v, n_in) for v in vals]


# ---- pipelined MAC array and delay lines -----------------------------------------------------

def _drive_mac(cls, P, db, acc, lat, steps, modes: dict, read) -> list:
    """Drive a MAC array of ``cls`` with ``steps`` (en, first, wt, u, v, bias, and col if given) in
    ``modes`` (port values held throughout); ``read(m, step)`` of every step, ``lat`` cycles after it."""
    m = fresh(cls, P, db, acc)
    for name, value in modes.items():
        port = getattr(m, name)
        port @= value
    out = []
    for t in range(len(steps) + lat):
        x = steps[min(t, len(steps) - 1)]
        m.en @= int(x["en"]) if t < len(steps) else 0
        m.first @= int(x["first"])
        if "col" in x:
            m.col @= x["col"]
        for k in range(P * P):
            m.wt[k] @= int(x["wt"][k])
        for i in range(P):
            m.u[i] @= int(x["u"][i])
            m.v[i] @= int(x["v"][i])
            m.bias[i] @= int(x["bias"][i])
        m.sim_eval_combinational()
        if t >= lat:
            out.append(read(m, steps[t - lat]))
        m.sim_tick()
    return out


@pytest.mark.parametrize("P,db,acc", [(2, 8, 32), (3, 6, 14)])  # 3x3 at 14 bits: row sums wrap
def test_pipelined_mac_array_equals_the_plain_one_latency_cycles_later(P, db, acc):
    """MacArrayPipeRTL against MacArrayRTL on random operands, en and first, in every mode (reduce,
    transposed, outer; with and without bias): every result, LATENCY cycles later, is the same."""
    rng = np.random.default_rng(P)
    for outer, transpose, use_bias in itertools.product((0, 1), (0, 1), (0, 1)):
        steps = [dict(en=rng.random() < 0.8, first=rng.random() < 0.2, wt=rng.integers(0, 2**db, P * P),
                      u=rng.integers(0, 2**db, P), v=rng.integers(0, 2**db, P), bias=rng.integers(0, 2**acc, P))
                 for _ in range(40)]
        modes = dict(outer=outer, transpose=transpose, use_bias=use_bias)
        results = [_drive_mac(cls, P, db, acc, lat, steps, modes, lambda m, x: [int(r) for r in m.res])
                   for cls, lat in ((MacArrayRTL, 0), (MacArrayPipeRTL, PIPE_MAC_LATENCY))]
        assert results[0] == results[1], (outer, transpose, use_bias)


@pytest.mark.parametrize("P,db,acc", [(2, 8, 32), (3, 6, 14), (4, 8, 32)])  # 3x3 at 14 bits: sums wrap
def test_dsp_mac_array_equals_the_plain_one_latency_cycles_later(P, db, acc):
    """MacArrayDspRTL against MacArrayRTL on random operands, en, first and weight column, in every mode
    (reduce, transposed, outer, batch-parallel; with and without bias): LATENCY cycles after every
    step with ``en``, the results the engine reads (``res[i*P]`` in reduce mode, every lane in outer
    mode) are the same.  The latency is the pipelined array's, so the engine's cycles do not change."""
    assert DSP_MAC_LATENCY == PIPE_MAC_LATENCY
    rng = np.random.default_rng(P + 10)
    modes = [(o, t, b, bp) for o, t, b, bp in itertools.product((0, 1), (0, 1), (0, 1), (0, 1)) if o or not bp]
    for outer, transpose, use_bias, bp in modes:
        steps = [dict(en=rng.random() < 0.8, first=rng.random() < 0.2, wt=rng.integers(0, 2**db, P * P),
                      u=rng.integers(0, 2**db, P), v=rng.integers(0, 2**db, P), bias=rng.integers(0, 2**acc, P),
                      col=int(rng.integers(0, P)))
                 for _ in range(40)]
        read = range(P * P) if outer else range(0, P * P, P)
        results = [_drive_mac(cls, P, db, acc, lat, steps, dict(outer=outer, transpose=transpose, use_bias=use_bias,
                                                                  bp=bp),
                              lambda m, x, read=read: [int(m.res[k]) for k in read] if x["en"] else None)
                   for cls, lat in ((MacArrayRTL, 0), (MacArrayDspRTL, DSP_MAC_LATENCY))]
        assert sum(r is not None for r in results[0]) > 20
        assert results[0] == results[1], (outer, transpose, use_bias, bp)


@pytest.mark.parametrize("reset", [False, True])
def test_delay_line_delays_every_lane_and_clears_on_reset(reset):
    m = fresh(DelayLineRTL, 5, 3, 2, reset)
    seen = []
    for t in range(8):
        m.in_[0] @= t + 1
        m.in_[1] @= 31 - t
        m.sim_eval_combinational()
        seen.append((int(m.out[0]), int(m.out[1])))
        m.sim_tick()
    assert seen[3:] == [(t + 1, 31 - t) for t in range(5)]  # three cycles late
    assert seen[:3] == [(0, 0)] * 3  # after reset (PyMTL3 starts registers at 0 either way)


def test_delay_line_without_reset_clears_its_last_register_on_reset():
    """The line without ``reset``: its last register clears on reset (a flip-flop an FPGA flow does
    not absorb into a shift-register LUT); the registers before it keep what they hold."""
    m = fresh(DelayLineRTL, 8, 4, 1, False)
    for t in range(6):
        m.in_[0] @= 10 + t
        m.sim_tick()
    m.sim_eval_combinational()
    assert int(m.out[0]) == 12  # in_ of four edges ago
    m.reset @= 1
    m.in_[0] @= 99
    m.sim_tick()
    m.reset @= 0
    m.sim_eval_combinational()
    assert int(m.out[0]) == 0
    seen = []
    for _ in range(3):
        m.sim_tick()
        m.sim_eval_combinational()
        seen.append(int(m.out[0]))
    assert seen == [14, 15, 99]  # the held values move on; 99 entered at the reset edge
