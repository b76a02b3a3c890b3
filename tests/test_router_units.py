"""The router's units and the ring primitive, each driven alone at ``rtl`` (PyMTL3 simulation)
against a small Python model of its documented behaviour:

* :class:`RingPtrRTL` / :class:`FifoRTL`: head, count, peak and the overflow flag of random pushes
  and pops (a push into a full FIFO is taken when a pop makes the room);
* :class:`RouterScratchRTL`: up to ``lanes`` elements in and out an edge, drops, random reads
  relative to the head (1, 2, 4 lanes);
* :class:`RouterPendRTL`: done marks complete in order once the moves issued before them finished;
* :class:`RouterProgMemRTL`: what the program bus writes the sequencer and the gather unit read;
* :class:`RouterDeliverRTL`: the drainer's and a MOVE's beats reach the buffers of their masks,
  in order, and the scratch FIFO's inputs;
* :class:`RouterMoveRTL`: a MOVE's beats, a REDUCE's sums with the scratch head;
* :class:`RouterUnitWalkRTL` and :class:`RouterUnitWalkSumRTL` (running sums): the flat index of every
  element REQUANT rounds (:func:`isa.requant_indices`); :class:`RouterUnitSatRTL`: the saturated BIAS step;
* :class:`RouterStatusRTL`: the state priority of the status outputs.

(The residual unit, :class:`RouterUnitResRTL` with :class:`RouterUnitResWalkRTL`, is checked against the
golden model through the router in ``tests/test_router_residual.py``; here it is linted.)

The unit class is a parameter of each test where two units share a behaviour.  ``test_*_lints_clean``
translates every unit to Verilog and lints it with Verilator.
"""

import collections
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymtl3 import mk_bits

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.RouterDeliverRTL import RouterDeliverRTL, RouterDeliverWregRTL
from pymtl_fp.cluster.hw.RouterMoveRTL import RouterMoveRTL
from pymtl_fp.cluster.hw.RouterPendRTL import RouterPendRTL
from pymtl_fp.cluster.hw.RouterProgMemRTL import RouterProgMemRTL
from pymtl_fp.cluster.hw.RouterScratchRTL import RouterScratchRTL
from pymtl_fp.cluster.hw.RouterStatusRTL import RouterStatusRTL
from pymtl_fp.cluster.hw.RouterUnitPipeRTL import RouterUnitPipeRTL
from pymtl_fp.cluster.hw.RouterUnitResRTL import RouterUnitResRTL
from pymtl_fp.cluster.hw.RouterUnitResWalkRTL import RouterUnitResWalkRTL
from pymtl_fp.cluster.hw.RouterUnitRTL import RouterUnitRTL
from pymtl_fp.cluster.hw.RouterUnitSatRTL import RouterUnitSatRTL
from pymtl_fp.cluster.hw.RouterUnitWalkRTL import RouterUnitWalkRTL
from pymtl_fp.cluster.hw.RouterUnitWalkSumRTL import RouterUnitWalkSumRTL
from pymtl_fp.primitives.FifoRTL import FifoRTL, FifoWregRTL
from pymtl_fp.primitives.RingPtrRTL import RingPtrRTL
from pymtl_fp.sim import build_sim
from pymtl_fp.tb.hypothesis_profiles import examples

pytestmark = pytest.mark.rtl

_SIMS = {}


def fresh(cls, *args):
    """One elaborated simulator per (component, parameters), reset by each test."""
    key = (cls, args)
    if key not in _SIMS:
        _SIMS[key] = build_sim(cls(*args), "rtl")
    m = _SIMS[key]
    m.sim_reset()
    return m


def _set(m, name, value):
    sig = getattr(m, name)
    sig @= value


# ---- the ring and the FIFO ------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [FifoRTL, FifoWregRTL, RingPtrRTL])
@given(seed=st.integers(0, 2**20), depth=st.sampled_from([2, 4, 8]))
@settings(max_examples=examples(20), deadline=None)
def test_ring_and_fifo_count_like_a_queue(cls, seed, depth):
    """Also the FIFO with its write registered (``FifoWregRTL``, the output buffers of a pipelined
    router): the head, count, peak and flag of a queue every edge."""
    rng = random.Random(seed)
    m = fresh(cls, depth, 1, 1) if cls is RingPtrRTL else fresh(cls, 16, depth)
    q, peak, error = collections.deque(), 0, 0
    for _ in range(60):
        push, pop, data = rng.random() < 0.55, rng.random() < 0.45, rng.getrandbits(16)
        if cls is not RingPtrRTL:
            m.push @= push
            m.pop @= pop
            m.push_data @= data
        else:
            m.push_n @= push
            m.pop_n @= pop
        m.sim_eval_combinational()
        ok_pop = pop <= len(q)
        ok_push = len(q) - pop + push <= depth
        if ok_pop:
            assert int(m.ok_push if cls is RingPtrRTL else m.ring.ok_push) == ok_push
        m.sim_tick()
        if ok_pop and pop:
            q.popleft()
        if ok_push and push:
            q.append(data)
        error |= not (ok_pop and ok_push) if ok_pop else 1
        peak = max(peak, len(q))
        assert (int(m.count), int(m.peak), int(m.error)) == (len(q), peak, error)
        if cls is not RingPtrRTL and q:
            assert int(m.head) == q[0]


@given(seed=st.integers(0, 2**20), depth=st.sampled_from([4, 8, 16]), push_bits=st.sampled_from([1, 2, 3]))
@settings(max_examples=examples(20), deadline=None)
def test_fast_ring_gives_the_same_values_every_edge(seed, depth, push_bits):
    """``RingPtrRTL(fast=True)`` (the scratch FIFO's, with a pipelined sequencer) beside the plain ring on
    the same random pushes and (wide) pops: every output, every edge, up to the first overflow or
    underflow (a caller bug: both then flag ``error``; their counts are meaningless from there on)."""
    rng = random.Random(seed)
    C = depth.bit_length()
    a, b = fresh(RingPtrRTL, depth, push_bits, C), fresh(RingPtrRTL, depth, push_bits, C, True, True)
    for _ in range(80):
        count = int(a.count)
        push = rng.randrange(1 << push_bits)
        pop = rng.randint(0, count + 1) if rng.random() < 0.01 else rng.randint(0, min(count, 3))
        # (an overflow the ring can see: count - pop + push < 2 * depth)
        push = min(push, 2 * depth - 1 - count + pop) if rng.random() < 0.01 else min(push, depth - count + pop)
        for m in (a, b):
            m.push_n @= push
            m.pop_n @= pop
            m.sim_eval_combinational()
        assert int(b.ok_push) == int(a.ok_push)
        for m in (a, b):
            m.sim_tick()
        assert int(b.error) == int(a.error)
        if a.error:
            break
        assert [int(getattr(b, n)) for n in ("count", "peak", "hd", "tl")] == \
            [int(getattr(a, n)) for n in ("count", "peak", "hd", "tl")]


@pytest.mark.parametrize("fast,wreg", [(False, False), (True, False), (True, True)],
                         ids=["plain", "fast", "fast-wreg"])
@pytest.mark.parametrize("lanes", [1, 2, 4])
def test_scratch_moves_beats_drops_and_reads_relative_to_the_head(lanes, fast, wreg):
    """Also with the banks' writes registered (``wreg``, a pipelined router's): the same values at
    every port in every cycle, the element pushed at the last edge read back at once."""
    rng = random.Random(lanes)
    depth = 16
    m = fresh(RouterScratchRTL, 8, depth, lanes, fast, wreg)
    q, peak = collections.deque(), 0
    for _ in range(120):
        room = depth - len(q)
        drop = rng.random() < 0.1 and len(q) > 0
        pop = 0 if drop else rng.randint(0, min(lanes, len(q)))
        push = rng.randint(0, min(lanes, room + pop if not drop else room))
        drop_n = rng.randint(1, len(q)) if drop else 0
        data = [rng.getrandbits(8) for _ in range(lanes)]
        m.push_n @= push
        m.pop_n @= pop
        m.drop @= drop
        m.drop_n @= drop_n
        for j in range(lanes):
            m.push_data[j] @= data[j]
        r0, r1 = rng.randrange(max(1, len(q))), rng.randrange(max(1, len(q)))
        m.raddr0 @= r0
        m.raddr1 @= r1
        m.sim_eval_combinational()
        for j in range(min(lanes, len(q))):
            assert int(m.head[j]) == q[j]
        if q:
            assert (int(m.rdata0), int(m.rdata1)) == (q[r0], q[r1])
        m.sim_tick()
        for _ in range(drop_n or pop):
            q.popleft()
        q.extend(data[:push])
        peak = max(peak, len(q))
        assert (int(m.count), int(m.peak), int(m.error)) == (len(q), peak, 0)


# ---- done marks, program memory --------------------------------------------------------------------

def test_done_marks_complete_in_order_after_their_moves():
    m = fresh(RouterPendRTL, 4)

    def edge(**sig):
        for name in ("push", "push_id", "feed_push", "drain_push", "feed_done", "drain_done"):
            _set(m, name, sig.get(name, 0))
        m.sim_eval_combinational()
        out = (int(m.done_val), int(m.done_id) if m.done_val else None)
        m.sim_tick()
        return out

    edge(feed_push=1)                      # a LOAD issued
    edge(push=1, push_id=7)                # mark 7 waits for it
    edge(drain_push=1)                     # a STORE issued
    edge(push=1, push_id=9)                # mark 9 waits for both
    assert edge() == (0, None)
    assert edge(feed_done=1) == (0, None)  # (the counts are registers: seen at the next edge)
    assert edge() == (1, 7)
    assert edge() == (0, None)
    assert edge(drain_done=1) == (0, None)
    assert edge() == (1, 9)
    edge(feed_push=1)
    for i in range(4):                     # four marks wait for that LOAD, a fifth overflows
        edge(push=1, push_id=i + 1)
        assert int(m.error) == 0
    edge(push=1, push_id=5)
    assert int(m.error) == 1


def test_program_memory_reads_what_the_bus_wrote():
    m = fresh(RouterProgMemRTL, 8, 4)
    T = isa.instr_type()
    words = [isa.encode(isa.move(isa.SRC_FWD_IN, isa.DST_BWD_OUT, i + 1)) for i in range(8)]
    m.prog_we @= 1
    for sel, n in ((0, 8), (1, 4)):
        for a in range(n + 1):  # (one beyond the memory: ignored)
            m.prog_sel @= sel
            m.prog_addr @= a
            m.prog_data @= T.from_bits(mk_bits(isa.INSTR_BITS)(words[a % 8]))
            m.tab_data @= 100 + a
            m.sim_tick()
    m.prog_we @= 0
    for a in range(8):
        m.pc @= a
        m.t_addr @= a % 4
        m.sim_eval_combinational()
        assert int(m.ins.to_bits()) == words[a] and int(m.t_data) == 100 + a % 4


def test_program_memory_fetch_port_reads_at_an_edge_and_holds():
    """``fetch`` (a pipelined sequencer's): ``rdata`` takes the word at ``raddr`` at an edge with ``ren``
    and holds it through edges without."""
    m = fresh(RouterProgMemRTL, 8, 4, True)
    T = isa.instr_type()
    words = [isa.encode(isa.move(isa.SRC_FWD_IN, isa.DST_BWD_OUT, i + 1)) for i in range(8)]
    m.prog_we @= 1
    m.prog_sel @= 0
    m.ren @= 0
    for a in range(8):
        m.prog_addr @= a
        m.prog_data @= T.from_bits(mk_bits(isa.INSTR_BITS)(words[a]))
        m.sim_tick()
    m.prog_we @= 0
    for a in (3, 0, 7, 7, 5):
        m.raddr @= a
        m.ren @= 1
        m.sim_tick()
        assert int(m.rdata.to_bits()) == words[a]
        m.raddr @= (a + 1) % 8
        m.ren @= 0
        m.sim_tick()
        assert int(m.rdata.to_bits()) == words[a]


def test_program_memory_takes_the_largest_table():
    """``table_depth = 2**16`` (what RouterConfig allows): elaborates, and its last entry is written and read."""
    m = build_sim(RouterProgMemRTL(2, 1 << 16), "rtl")
    m.sim_reset()
    m.prog_we @= 1
    m.prog_sel @= 1
    for a, w in ((0xFFFF, 0xC0FFEE), (7, 11)):
        m.prog_addr @= a
        m.tab_data @= w
        m.sim_tick()
    m.prog_we @= 0
    for a, w in ((0xFFFF, 0xC0FFEE), (7, 11), (8, 0)):
        m.t_addr @= a
        m.sim_eval_combinational()
        assert int(m.t_data) == w


# ---- deliveries and moves --------------------------------------------------------------------------

def _idle_inputs(m, ports):
    for name in ports:
        p = getattr(m, name)
        if isinstance(p, list):
            for x in p:
                x @= 0
        else:
            p @= 0


DLV_IN = ("deliver", "mask", "data", "n", "mv_fire", "dmask", "red", "mv_val", "mv_n", "rl_red", "rl_red_val",
          "rl_bc", "rl_n2", "bwd_msg", "unit_push", "unit_data", "feed_pop_n")


@pytest.mark.parametrize("cls", [RouterDeliverRTL, RouterDeliverWregRTL])
@pytest.mark.parametrize("lanes", [1, 2])
def test_deliveries_reach_the_buffers_of_their_masks_in_order(lanes, cls):
    m = fresh(cls, 8, lanes, 4)
    _idle_inputs(m, DLV_IN)
    for i in range(3):
        m.out[i].rdy @= 0
    want = [[], [], []]
    rng = random.Random(lanes)
    for step in range(4):  # (at most the buffers' 4 beats)
        beat = rng.getrandbits(8 * lanes)
        dm = rng.choice([isa.DST_FWD_OUT, isa.DST_BWD_OUT | isa.DST_HOST, isa.DST_FWD_OUT | isa.DST_SCRATCH])
        from_drain = step % 2 == 0
        m.deliver @= from_drain
        m.mask @= dm
        m.data @= beat
        m.n @= lanes
        m.mv_fire @= not from_drain
        m.dmask @= dm
        m.mv_val @= beat
        m.mv_n @= lanes
        m.sim_eval_combinational()
        sc = lanes if dm & isa.DST_SCRATCH else 0
        assert int(m.sc_push_n) == sc
        if sc:
            assert [int(m.sc_push_data[j]) for j in range(lanes)] == [(beat >> 8 * j) & 0xFF for j in range(lanes)]
        for i, d in enumerate((isa.DST_FWD_OUT, isa.DST_BWD_OUT, isa.DST_HOST)):
            if dm & d:
                want[i].append(beat)
        m.sim_tick()
    _idle_inputs(m, DLV_IN)
    for i in range(3):
        m.out[i].rdy @= 1
        got = []
        for _ in range(6):
            m.sim_eval_combinational()
            if m.out[i].val:
                got.append(int(m.out[i].msg))
            m.sim_tick()
        assert got == want[i]
    m.sim_eval_combinational()
    assert int(m.out_empty) == 1 and int(m.out_error) == 0


MOVE_IN = ("stream", "red", "relay", "quiet", "count", "src", "dmask", "out_full", "s_count", "s_head", "in_val",
           "in_msg", "feed_rdy")


@pytest.mark.parametrize("lanes", [1, 2, 4])
@pytest.mark.parametrize("red", [0, 1])
def test_a_move_or_reduce_passes_its_beats_and_retires_on_the_last(lanes, red):
    m = fresh(RouterMoveRTL, 8, 6, lanes)
    _idle_inputs(m, MOVE_IN)
    n = 2 * lanes + 1  # two full beats and a partial one
    m.stream @= 1
    m.red @= red
    m.quiet @= 1
    m.count @= n
    m.src @= isa.SRC_BWD_IN
    m.dmask @= isa.DST_FWD_OUT
    m.s_count @= 31
    for j in range(lanes):
        m.s_head[j] @= 10 * (j + 1)
    rng = random.Random(lanes + 7 * red)
    moved = 0
    for _ in range(20):
        beat = [rng.getrandbits(8) for _ in range(lanes)]
        val = rng.random() < 0.7
        m.in_val[1] @= val
        m.in_msg[1] @= sum(v << 8 * j for j, v in enumerate(beat))
        m.sim_eval_combinational()
        assert int(m.in_rdy[1]) == 1 and int(m.in_rdy[0]) == 0 and int(m.in_rdy[2]) == 0
        ln = min(lanes, n - moved)
        assert int(m.mv_fire) == val and int(m.mv_n) == ln
        if val:
            lanes_out = [((beat[j] + 10 * (j + 1)) & 0xFF if red else beat[j]) if j < ln or not red else 0
                         for j in range(lanes)]
            assert [(int(m.mv_val) >> 8 * j) & 0xFF for j in range(lanes)] == lanes_out
            assert int(m.mv_last) == (moved + ln == n)
            moved = 0 if moved + ln == n else moved + ln
        m.sim_tick()


# ---- the scalar units' parts -----------------------------------------------------------------------

@pytest.mark.parametrize("cls", [RouterUnitWalkRTL, RouterUnitWalkSumRTL])
@given(layout=st.sampled_from("GB"), P=st.sampled_from([1, 2, 3]), k=st.integers(1, 5), c=st.integers(1, 4),
       r=st.integers(1, 2), s=st.integers(1, 3))
@settings(max_examples=examples(25), deadline=None)
def test_the_walk_gives_the_flat_index_of_every_element(cls, layout, P, k, c, r, s):
    """Either walk (products of registered strides, or running sums: the pipelined units') gives every
    element's flat index; the running sums' strides come with the instruction and take an edge more."""
    shape = (k, 1, 1, 1) if layout == "B" else (k, c, r, s)
    kt, ct = -(-shape[0] // P), -(-shape[1] // P)
    n = kt * ct * shape[2] * shape[3] * P * P if layout == "G" else kt * P
    ins = isa.requant(n, layout, shape, P, 0, 0, 0, 0, 8)
    want = [int(i) for i in isa.requant_indices(ins)]
    m = fresh(cls)
    m.lanes @= P
    m.glayout @= layout == "G"
    m.ct @= ct
    m.c @= shape[1]
    m.r @= shape[2]
    m.sw @= shape[3]
    m.k @= shape[0]
    if cls is RouterUnitWalkSumRTL:
        m.rs @= ins.field("rs")
        m.crs @= ins.field("crs")
    m.start @= 1
    m.step @= 0
    m.sim_tick()
    m.start @= 0
    if cls is RouterUnitWalkSumRTL:
        m.sim_tick()  # (its strides P*rs, P*crs)
    got = []
    for _ in range(n):
        m.step @= 1
        m.sim_eval_combinational()
        got.append(int(m.flat) if m.in_tensor else -1)
        m.sim_tick()
    assert got == want


@given(b=st.integers(-2**15, 2**15 - 1), db=st.integers(-2**15, 2**15 - 1), lshift=st.integers(1, 20),
       bits=st.integers(2, 16), in_k=st.booleans())
@settings(max_examples=examples(60), deadline=None)
def test_the_bias_step_saturates_to_its_runtime_width(b, db, lshift, bits, in_k):
    m = fresh(RouterUnitSatRTL, 16)
    m.rdata0 @= b & 0xFFFF
    m.rdata1 @= db & 0xFFFF
    m.rq_out @= 0
    m.lshift @= lshift
    m.sat_bits @= bits
    m.req @= 0
    m.in_tensor @= 0
    m.in_k @= in_k
    m.sim_eval_combinational()
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    want = min(hi, max(lo, b - (db << lshift))) if in_k else 0
    assert int(m.val) == want & 0xFFFF


# ---- statistics ------------------------------------------------------------------------------------

STATUS_IN = ("unit_busy", "unit_start", "link_wait", "mv_room", "cmd_fire", "eng_cmd", "busy", "io", "wait_in",
             "blocked", "active", "halted", "out_fire", "in_fire")


@pytest.mark.parametrize("inputs,state", [
    (dict(unit_busy=1, link_wait=1), "io"),
    (dict(link_wait=1, mv_room=1, wait_in=1), "stall_in"),
    (dict(link_wait=1, wait_in=1), "stall_out"),
    (dict(wait_in=1, blocked=1), "stall_in"),
    (dict(blocked=1, active=1), "stall_out"),
    (dict(active=1, halted=1), "engine"),
    (dict(halted=1), "done"),
    ({}, "stall_out"),
])
def test_status_state_priority(inputs, state):
    from pymtl_fp.cluster.hw.router_config import STATES

    m = fresh(RouterStatusRTL)
    _idle_inputs(m, STATUS_IN)
    for name, v in inputs.items():
        _set(m, name, v)
    m.sim_eval_combinational()
    assert STATES[int(m.state)] == state
    m.sim_tick()
    assert int(m.cycle) == 1 and int(m.cnt[STATES.index(state)]) == 1


def test_status_counts_a_compute_cycle_after_an_engine_command():
    m = fresh(RouterStatusRTL)
    _idle_inputs(m, STATUS_IN)
    m.cmd_fire @= 1
    m.eng_cmd @= 1
    m.active @= 1
    m.sim_tick()
    m.cmd_fire @= 0
    m.sim_eval_combinational()
    assert int(m.state) == 0  # compute


# ---- Verilog -----------------------------------------------------------------------------------------

LINT_UNITS = [
    (RingPtrRTL, (16, 3, 5)), (RingPtrRTL, (4, 1, 1, False)), (RingPtrRTL, (16, 3, 5, True, True)),
    (FifoRTL, (8, 2, False)), (FifoWregRTL, (8, 4)), (RouterDeliverRTL, (32, 2, 8)),
    (RouterDeliverWregRTL, (32, 2, 8)), (RouterMoveRTL, (32, 12, 4)),
    (RouterMoveRTL, (32, 12, 4, True)), (RouterPendRTL, (4,)), (RouterProgMemRTL, (64, 16)),
    (RouterProgMemRTL, (64, 16, True)), (RouterStatusRTL, ()), (RouterUnitWalkRTL, ()), (RouterUnitSatRTL, (32,)),
    (RouterUnitWalkSumRTL, ()), (RouterUnitPipeRTL, (32,)), (RouterUnitRTL, (32, 12, 8, True)),
    (RouterUnitRTL, (32, 12, 8, True, True)),
    (RouterUnitResWalkRTL, ()), (RouterUnitResRTL, (32, 12, False)), (RouterUnitResRTL, (32, 12, True)),
]


@pytest.mark.verilator
@pytest.mark.parametrize("cls,args", LINT_UNITS, ids=[f"{c.__name__}{'_'.join(map(str, a))}" for c, a in LINT_UNITS])
def test_router_units_translate_and_lint_clean(cls, args, tmp_path):
    from pymtl_fp.cluster.hw.lint import CLUSTER_WAIVERS
    from pymtl_fp.lint import lint_component

    name = f"Lint{cls.__name__}_" + "_".join(str(int(a)) for a in args)
    result = lint_component(cls(*args), name, tmp_path, CLUSTER_WAIVERS)
    assert result.clean, result.report() + "\n" + result.output
