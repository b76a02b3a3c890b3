"""The units of :class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`, each driven alone at ``rtl``
(PyMTL3 simulation), against the loop nests and tap ranges of the operations:

* :class:`AddrLimitsRTL`: the last value of every loop counter per operation;
* :class:`AddrCounterNestRTL`: an odometer over the limits (level 0 outermost), its first / last /
  db flags, and levels 5 and 6 ended by a tap unit instead of their limits;
* :class:`AddrFwdTapsRTL`, :class:`AddrBwdDataTapsRTL`, :class:`AddrBwdWeightTapsRTL`: walked as
  the nest walks levels 5 and 6, they visit exactly the taps (outputs) that touch the input, each
  once, and take a single step where there is none;
* :class:`AddrPoolOffsetsRTL` (under the counter nest): every step's input ``(oh*k + di, ow*k +
  dj)`` and tap ``di*k + dj``;
* :class:`AddrRoutesRTL`: each read and write of an operation takes the address field
  :data:`msgs.OP_BUFFERS` names plus the sum of the address unit of that tensor's kind;
* :class:`AddrGenRegRTL` (the tap bounds in registers, :class:`AddrTapRegsRTL`): in every cycle of
  random commands with random stalls, every output equals :class:`AddrGenRTL`'s.
"""

import functools
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymtl3 import Bits32, Component, InPort, OutPort, Wire, connect, update, update_ff, zext

from pymtl_fp.engine import msgs
from pymtl_fp.engine.addr_layout import AU_IDX, AU_MAP, AU_OUT, AU_WGT, NL
from pymtl_fp.engine.AddrBwdDataTapsRTL import AddrBwdDataTapsRTL
from pymtl_fp.engine.AddrBwdWeightTapsRTL import AddrBwdWeightTapsRTL
from pymtl_fp.engine.AddrCounterNestRTL import PLUS_ONE, AddrCounterNestPlusOneRTL, AddrCounterNestRTL
from pymtl_fp.engine.AddrFwdTapsRTL import AddrFwdTapsRTL
from pymtl_fp.engine.AddrLimitsRTL import AddrLimitsRTL
from pymtl_fp.engine.AddrPoolOffsetsRTL import AddrPoolOffsetsRTL
from pymtl_fp.engine.AddrRoutesRTL import NO_UNIT, READ_BUFS, AddrRoutesRTL
from pymtl_fp.engine.EngineStridesRTL import STRIDES
from pymtl_fp.engine.msgs import make_cmd
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


def _drive(sig, value):
    sig @= value


# ---- limits --------------------------------------------------------------------------------

GEO = dict(n=3, ct=2, kt=4, h=5, w=6, ho=7, wo=8, r=3, s=2, pk=2, nt=2, c=5)


@pytest.mark.parametrize("op,bp,want", [
    (msgs.OP_FWD, 0, ("n", "kt", "ho", "wo", "ct", "r", "s")),
    (msgs.OP_FWD, 1, ("nt", "kt", "ho", "wo", "c", "r", "s")),
    (msgs.OP_BWD_DATA, 0, ("n", "ct", "h", "w", "kt", 1, 1)),
    (msgs.OP_BWD_WEIGHT, 0, ("kt", "ct", "r", "s", "n", "ho", "wo")),
    (msgs.OP_POOL_FWD, 0, ("n", "ct", "ho", "wo", "pk", "pk", 1)),
    (msgs.OP_POOL_BWD, 0, ("n", "ct", "ho", "wo", "pk", "pk", 1)),
    (msgs.OP_UPDATE, 0, ("kt", "ct", "r", "s", "P", 1, 1)),
])
def test_limits_are_the_loop_counts_minus_one(op, bp, want):
    P = 3
    m = fresh(AddrLimitsRTL, P)
    m.cmd @= make_cmd(op=op, bp=bp, **GEO)
    m.sim_eval_combinational()
    counts = [GEO.get(k, P) if isinstance(k, str) else k for k in want]
    assert [int(v) for v in m.lim] == [c - 1 for c in counts]


# ---- counter nest --------------------------------------------------------------------------

@settings(max_examples=examples(25))
@given(lims=st.lists(st.integers(0, 2), min_size=NL, max_size=NL), stalls=st.lists(st.booleans(), max_size=40))
def test_counter_nest_is_an_odometer_over_the_limits(lims, stalls):
    """The seven counters in order, stalls or not; AddrCounterNestPlusOneRTL's (the registered tap
    bounds') registers ``cnt1`` equal levels 2 and 3 plus one in every cycle, the cycles between commands too."""
    m = fresh(AddrCounterNestPlusOneRTL)
    for lv in range(NL):
        m.lim[lv] @= lims[lv]
    m.tap_at @= 0
    m.start @= 1
    m.sim_tick()
    m.start @= 0
    want = list(itertools.product(*(range(v + 1) for v in lims)))
    got, stalls = [], list(stalls)
    for _ in range(3 * len(want) + 50):
        m.advance @= int(not (stalls.pop() if stalls else False))
        m.sim_eval_combinational()
        assert [int(v) for v in m.cnt1] == [int(m.cnt[lv]) + 1 for lv in PLUS_ONE]
        if not m.running:
            break
        if m.advance:
            c = tuple(int(v) for v in m.cnt)
            got.append(c)
            assert bool(m.first) == (c[4:] == (0, 0, 0))
            assert bool(m.last) == (c[4:] == tuple(lims[4:]))
            assert bool(m.db_first) == (c[1:4] == (0, 0, 0))
            assert bool(m.db_end) == (c[1] == 0 and c[2:4] == tuple(lims[2:4]))
            assert bool(m.all_at) == (c == tuple(lims))
        m.sim_tick()
    assert got == want


def test_counter_nest_ends_levels_5_and_6_where_the_taps_say():
    m = fresh(AddrCounterNestRTL)
    for lv in range(NL):
        m.lim[lv] @= 0
    m.lim[5] @= 7  # ignored: the tap unit ends level 5 at 2 and level 6 at 1
    m.lim[6] @= 7
    m.tap_at @= 1
    m.start @= 1
    m.sim_tick()
    m.start @= 0
    m.advance @= 1
    got = []
    while True:
        m.at5 @= int(m.cnt[5]) == 2
        m.at6 @= int(m.cnt[6]) == 1
        m.sim_eval_combinational()
        if not m.running:
            break
        got.append((int(m.cnt[5]), int(m.cnt[6])))
        m.sim_tick()
    assert got == [(r, c) for r in range(3) for c in range(2)]


# ---- tap units -----------------------------------------------------------------------------

def _walk(m, **fixed):
    """Levels 5 (outer) and 6 (inner) walked as the counter nest does, ended by the unit's at5 / at6;
    ``fixed`` sets the other counters.  Returns the unit at every step (a list of dicts of reads)."""
    for name, v in fixed.items():
        _drive(getattr(m, name), v)
    steps = []
    for u5 in range(40):
        m.u5 @= u5
        for u6 in range(40):
            m.u6 @= u6
            m.sim_eval_combinational()
            steps.append({name: int(getattr(m, name)) for name in m.names})
            if m.at6:
                break
        else:
            raise AssertionError("level 6 never ends")
        if m.at5:
            return steps
    raise AssertionError("level 5 never ends")


def _tap_unit(cls):
    m = fresh(cls)
    m.names = {AddrFwdTapsRTL: ("r_f", "s_f", "hh", "ww"), AddrBwdDataTapsRTL: ("r_d", "s_d", "oh_d", "ow_d", "tap_ok"),
               AddrBwdWeightTapsRTL: ("ohs", "ows", "hh", "ww", "out_inside", "first_tap")}[cls]
    return m


@st.composite
def geometry(draw):
    """A layer: rows (H, R, top padding pt, Ho) and columns (W, S, pad, Wo), stride 1 or 2, pad < kernel."""
    lg = draw(st.integers(0, 1))
    st_ = 1 << lg
    g = dict(lgst=lg)
    for size, k, p, o in (("h", "r", "pt", "ho"), ("w", "s", "pad", "wo")):
        g[k] = draw(st.integers(1, 3))
        g[size] = draw(st.integers(1, 6))
        g[p] = draw(st.integers(0, g[k] - 1))
        g[o] = max(1, (g[size] + 2 * g[p] - g[k]) // st_ + 1)
    return g


def _taps(size, k, pad, out, st_, pos):
    """(tap, output) pairs of input position ``pos``: out*st + tap - pad == pos."""
    return [(t, o) for o in range(out) for t in range(k) if o * st_ + t - pad == pos]


@settings(max_examples=examples(40))
@given(g=geometry(), data=st.data())
def test_fwd_taps_walk_the_taps_inside_the_input(g, data):
    st_ = 1 << g["lgst"]
    oh, ow = data.draw(st.integers(0, g["ho"] - 1)), data.draw(st.integers(0, g["wo"] - 1))
    m = _tap_unit(AddrFwdTapsRTL)
    m.cmd @= make_cmd(op=msgs.OP_FWD, **g)
    steps = _walk(m, u2=oh, u3=ow)
    rows = [r for r in range(g["r"]) if 0 <= oh * st_ + r - g["pt"] < g["h"]]
    cols = [c for c in range(g["s"]) if 0 <= ow * st_ + c - g["pad"] < g["w"]]
    for t in steps:  # every step reads the input its tap names
        assert (t["hh"], t["ww"]) == (oh * st_ + t["r_f"] - g["pt"], ow * st_ + t["s_f"] - g["pad"])
    if rows and cols:
        assert [(t["r_f"], t["s_f"]) for t in steps] == [(r, c) for r in rows for c in cols]
    else:  # one step, outside the input (its products are forced to 0)
        assert len(steps) == 1 and not (steps[0]["hh"] < g["h"] and steps[0]["ww"] < g["w"])


@settings(max_examples=examples(40))
@given(g=geometry(), data=st.data())
def test_bwd_data_taps_walk_the_taps_that_hit_an_output(g, data):
    st_ = 1 << g["lgst"]
    h, w = data.draw(st.integers(0, g["h"] - 1)), data.draw(st.integers(0, g["w"] - 1))
    m = _tap_unit(AddrBwdDataTapsRTL)
    m.cmd @= make_cmd(op=msgs.OP_BWD_DATA, **g)
    steps = _walk(m, u2=h, u3=w)
    rows = _taps(g["h"], g["r"], g["pt"], g["ho"], st_, h)
    cols = _taps(g["w"], g["s"], g["pad"], g["wo"], st_, w)
    got = [(t["r_d"], t["oh_d"], t["s_d"], t["ow_d"]) for t in steps if t["tap_ok"]]
    assert sorted(got) == sorted((r, o, c, p) for r, o in rows for c, p in cols)
    assert len(steps) == max(1, len(rows)) * max(1, len(cols))  # no idle step, one where none hits


@settings(max_examples=examples(40))
@given(g=geometry(), data=st.data())
def test_bwd_weight_taps_walk_the_outputs_whose_input_is_inside(g, data):
    st_ = 1 << g["lgst"]
    r, c = data.draw(st.integers(0, g["r"] - 1)), data.draw(st.integers(0, g["s"] - 1))
    m = _tap_unit(AddrBwdWeightTapsRTL)
    m.cmd @= make_cmd(op=msgs.OP_BWD_WEIGHT, **g)
    steps = _walk(m, u2=r, u3=c)
    rows = [o for o in range(g["ho"]) if 0 <= o * st_ + r - g["pt"] < g["h"]]
    cols = [o for o in range(g["wo"]) if 0 <= o * st_ + c - g["pad"] < g["w"]]
    valid = [t for t in steps if t["out_inside"] and t["hh"] < g["h"] and t["ww"] < g["w"]]
    assert [(t["ohs"], t["ows"]) for t in valid] == [(o, p) for o in rows for p in cols]
    for t in valid:
        assert (t["hh"], t["ww"]) == (t["ohs"] * st_ + r - g["pt"], t["ows"] * st_ + c - g["pad"])
        first = r == max(0, g["pt"] - t["ohs"] * st_) and c == max(0, g["pad"] - t["ows"] * st_)
        assert bool(t["first_tap"]) == first
    assert len(steps) == max(1, len(rows)) * max(1, len(cols))


# ---- pooling offsets, under the counter nest ---------------------------------------------

class NestAndPool(Component):
    """AddrLimitsRTL, AddrCounterNestRTL and AddrPoolOffsetsRTL as AddrGenRTL wires them."""

    def construct(s):
        s.cmd = InPort(msgs.cmd_type())
        s.start, s.advance = InPort(), InPort()
        s.running = OutPort()
        s.limits, s.nest, s.pool = AddrLimitsRTL(2), AddrCounterNestRTL(), AddrPoolOffsetsRTL()
        s.limits.cmd //= s.cmd
        s.pool.cmd //= s.cmd
        for lv in range(NL):
            s.nest.lim[lv] //= s.limits.lim[lv]
        s.nest.tap_at //= 0
        s.nest.at5 //= 0
        s.nest.at6 //= 0
        for name in ("start", "advance"):
            connect(getattr(s.nest, name), getattr(s, name))
            connect(getattr(s.pool, name), getattr(s, name))
        s.running //= s.nest.running
        s.pool.running //= s.nest.running
        s.pool.all_at //= s.nest.all_at
        for lv in (2, 3):
            connect(getattr(s.pool, f"carry{lv}"), s.nest.carry[lv])
            connect(getattr(s.pool, f"at{lv}"), s.nest.at[lv])
        s.u4, s.u5 = Wire(32), Wire(32)
        s.pool.u4 //= s.u4
        s.pool.u5 //= s.u5

        @update
        def up_views():
            s.u4 @= zext(s.nest.cnt[4], Bits32)
            s.u5 @= zext(s.nest.cnt[5], Bits32)


def test_pool_offsets_give_every_window_position_and_tap():
    m = fresh(NestAndPool)
    for n, ct, ho, wo, k in ((1, 1, 2, 3, 2), (2, 1, 3, 2, 3)):
        m.cmd @= make_cmd(op=msgs.OP_POOL_FWD, n=n, ct=ct, ho=ho, wo=wo, pk=k)
        m.start @= 1
        m.sim_tick()
        m.start @= 0
        m.advance @= 1
        got = []
        while True:
            m.sim_eval_combinational()
            if not m.running:
                break
            c = [int(v) for v in m.nest.cnt]
            got.append((int(m.pool.hh), int(m.pool.ww), int(m.pool.tap)))
            assert got[-1] == (c[2] * k + c[4], c[3] * k + c[5], c[4] * k + c[5])
            m.sim_tick()
        assert len(got) == n * ct * ho * wo * k * k


# ---- routes --------------------------------------------------------------------------------

#: the address unit of each tensor kind OP_BUFFERS names: an input-side map, an output-side map
#: (pooled maps and the argmax beside them included), a weight word; bias / db words: None (kt)
KIND_UNIT = {"x": AU_MAP, "x (ReLU mask)": AU_MAP, "dx": AU_MAP, "y": AU_OUT, "dy": AU_OUT, "argmax": AU_OUT,
             "w": AU_WGT, "dw": AU_WGT, "w (new)": AU_WGT, "b": None, "db": None}


@pytest.mark.parametrize("name", list(msgs.OP_BUFFERS))
def test_routes_give_each_field_the_unit_of_its_tensor(name):
    op = msgs.OPS[name]
    m = fresh(AddrRoutesRTL, 2)
    fields = dict(a0=1, a1=2, a2=3, d0=4, d1=5)
    m.cmd @= make_cmd(op=op, h=50, w=50, **fields)
    ksum = {AU_MAP: 1000, AU_OUT: 2000, AU_WGT: 3000, AU_IDX: 4000}
    for au, v in ksum.items():
        m.ksum[au] @= v
    m.u0 @= 70  # kt of bwd_weight (its db word)
    m.u1 @= 80  # kt of fwd (its bias word)
    m.hh @= 1
    m.ww @= 1
    for sig in (m.bd_tap_ok, m.bw_out_inside, m.bw_first_tap):
        sig @= 1
    m.sim_eval_combinational()
    want_rd = {b: (0, NO_UNIT) for b in range(len(READ_BUFS))}
    want_wr = {0: (0, NO_UNIT), 1: (0, NO_UNIT)}
    for field, (buf, kind) in msgs.OP_BUFFERS[name].items():
        au = KIND_UNIT[kind]
        kt = 80 if field.startswith("a") else 70
        entry = (fields[field] + (kt if au is None else ksum[au]), NO_UNIT if au is None else au)
        if field.startswith("a"):
            want_rd[READ_BUFS.index(buf.lower())] = entry
        else:
            want_wr[int(field[1])] = entry
    assert {b: (int(m.rd_base[b]), int(m.rd_unit[b])) for b in want_rd} == want_rd
    assert {j: (int(m.wr_base[j]), int(m.wr_unit[j])) for j in want_wr} == want_wr
    assert int(m.idx) == ksum[AU_IDX]
    assert not m.zero  # (1, 1) inside the 50 x 50 map, the taps valid


# ---- registered tap bounds: the address generator with and without them -------------------

class TwoAddrGens(Component):
    """AddrGenRegRTL (its tap bounds in registers) beside the combinational AddrGenRTL, on the
    same command register (loaded at ``start`` from ``cmd_in``, as EX's ``cmd_r``), strides and
    steps."""

    def construct(s, P=2):
        from pymtl_fp.engine.AddrGenRTL import AddrGenRegRTL, AddrGenRTL
        from pymtl_fp.engine.EngineStridesRTL import EngineStridesRTL

        s.cmd_in = InPort(msgs.cmd_type())
        s.start, s.advance = InPort(), InPort()
        s.cmd_r = Wire(msgs.cmd_type())
        s.comb, s.reg = AddrGenRTL(P), AddrGenRegRTL(P)
        s.strides = EngineStridesRTL(P)
        s.strides.cmd //= s.cmd_r
        s.reg.cmd_in //= s.cmd_in
        for ag in (s.comb, s.reg):
            ag.cmd //= s.cmd_r
            ag.start //= s.start
            ag.advance //= s.advance
            for name in STRIDES:
                connect(getattr(ag, name), getattr(s.strides, name))

        @update_ff
        def up_cmd_r():
            if s.start:
                s.cmd_r <<= s.cmd_in


#: every output of the address generator
AG_OUTPUTS = ("active", "first", "last", "zero", "db_acc", "db_first", "db_end", "rd_base", "rd_unit", "wr_base",
              "wr_unit", "prod", "idx", "idx2", "tap", "row", "col", "nlanes", "nrows")


def _ag_outputs(ag):
    out = {}
    for name in AG_OUTPUTS:
        v = getattr(ag, name)
        out[name] = [int(x) for x in v] if isinstance(v, list) else int(v)
    return out


@st.composite
def ag_commands(draw, P):
    """A compute command of a random small layer (every operation, fwd also batch-parallel)."""
    g = draw(geometry())
    op = draw(st.sampled_from([msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT, msgs.OP_POOL_FWD,
                               msgs.OP_POOL_BWD, msgs.OP_UPDATE]))
    n, c, k = draw(st.integers(1, 3)), draw(st.integers(1, 2 * P)), draw(st.integers(1, 2 * P))
    f = dict(g, op=op, n=n, c=c, k=k, ct=-(-c // P), kt=-(-k // P), pk=2)
    if op == msgs.OP_FWD and draw(st.booleans()):
        f.update(bp=1, nt=-(-n // P))
    if op in (msgs.OP_POOL_FWD, msgs.OP_POOL_BWD):
        f.update(h=2 * g["ho"], w=2 * g["wo"], r=0, s=0, pt=0, pad=0, lgst=0)
    return f


@settings(max_examples=examples(40))
@given(data=st.data())
def test_registered_tap_bounds_give_the_combinational_address_generators_steps(data):
    """Two commands in a row, random stalls: in every cycle a step is available, the address
    generator with its tap bounds in registers gives every output (flags, addresses, products,
    indices) the combinational one gives, and both walk the same number of steps."""
    P = data.draw(st.sampled_from([2, 3]))
    m = fresh(TwoAddrGens, P)
    for _ in range(2):
        m.cmd_in @= make_cmd(**data.draw(ag_commands(P)))
        m.start @= 1
        m.advance @= 0
        m.sim_tick()
        m.start @= 0
        m.cmd_in @= make_cmd(**data.draw(ag_commands(P)))  # a different command offered meanwhile
        stalls = data.draw(st.lists(st.booleans(), max_size=30))
        steps = 0
        for _ in range(5000):
            m.advance @= int(not (stalls.pop() if stalls else False))
            m.sim_eval_combinational()
            want, got = _ag_outputs(m.comb), _ag_outputs(m.reg)
            if not want["active"]:
                assert not got["active"]
                break
            assert got == want, {k: (got[k], want[k]) for k in want if got[k] != want[k]}
            steps += int(m.advance)
            m.sim_tick()
        else:
            raise AssertionError("the address generator never finished")
        assert steps > 0
