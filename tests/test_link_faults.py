"""The RTL link under channel faults: single-bit flips, bursts, lost flits -- chosen or random,
up to 1e-3 per flit (and far more in the stress property).  It must still deliver exactly the
sent sequence and report its retransmissions; with the CRC off, the scoreboard must see the
corruption (the check can fail)."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.link import LinkConfig
from pymtl_fp.tb.hypothesis_profiles import examples
from pymtl_fp.tb.link_faults import DROP, FaultPlan, burst, data_bits, flip
from pymtl_fp.tb.link_harness import run_link

pytestmark = pytest.mark.rtl

CFG = LinkConfig(msg_bits=40, phit_bits=16, latency=3, credit_latency=2, credits=4)  # 3 flits


def _msgs(n, bits, seed=0):
    rng = random.Random(seed)
    return [rng.getrandbits(bits) for _ in range(n)]


def _run(cfg, msgs, plan, **kw):
    run = run_link("rtl", cfg, msgs, faults=plan, **kw)
    run.scoreboard().assert_ok(f"{cfg.describe()} with {plan}")
    assert run.stats["overflow"] == 0
    return run


@pytest.mark.parametrize("cfg, seed", [
    (LinkConfig(msg_bits=64, phit_bits=16, latency=4, credit_latency=4, credits=8), 2),
    (LinkConfig(msg_bits=32, phit_bits=32, latency=2, credit_latency=2, credits=4), 8),
])
def test_random_faults_at_1e3_per_flit(cfg, seed):
    rate = 1e-3
    plan = FaultPlan(seed=seed, bit_rate=rate / 2, burst_rate=rate / 4, drop_rate=rate / 4)
    run = _run(cfg, _msgs(500, cfg.msg_bits, seed), plan)
    assert run.faults["flits"] >= 500 * cfg.flits
    hurt = run.faults["flipped"] + run.faults["dropped"]
    assert hurt >= 1, "choose a seed that injects faults"
    assert run.stats["retransmissions"] >= 1


@pytest.mark.parametrize("what, bit", [("data", 5), ("idx", None), ("seq", None), ("crc", 7)])
def test_single_bit_errors_in_every_field(what, bit):
    f = CFG.flit_fields()
    lo = f[what][0]
    pos = lo + (bit if bit is not None else 0)
    # flit 4 = message 1 flit 1; flit 8 = message 2, last flit (carries the CRC)
    target = 8 if what == "crc" else 4
    run = _run(CFG, _msgs(12, 40), FaultPlan(events={target: flip(pos)}))
    assert run.fault_log and run.fault_log[0][0] == target
    assert run.stats["retransmissions"] >= 1 and run.stats["naks"] >= 1
    if what in ("data", "crc"):
        assert run.stats["crc_errors"] == 1
    else:
        assert run.stats["frame_errors"] >= 1


@pytest.mark.parametrize("length", [2, 5, 16, 31, 32])
def test_burst_errors(length):
    cfg = LinkConfig(msg_bits=64, phit_bits=64, latency=2, credit_latency=2, credits=4)
    run = _run(cfg, _msgs(10, 64), FaultPlan(events={3: burst(64 - length, length)}))
    assert run.stats["crc_errors"] == 1 and run.stats["retransmissions"] >= 1


def test_bursts_across_consecutive_flits():
    run = _run(CFG, _msgs(12, 40), FaultPlan(events={n: burst(0, 12) for n in range(6, 11)}))
    assert run.stats["retransmissions"] >= 1


@pytest.mark.parametrize("lost", [
    [0],  # the first flit of the first frame
    [4],  # a middle flit
    [5],  # a last flit
    [6, 7, 8],  # a whole frame
    [35],  # the last flit of the last message: only the timeout can notice
])
def test_lost_flits(lost):
    msgs = _msgs(12, 40, seed=4)
    run = _run(CFG, msgs, FaultPlan(events={n: DROP for n in lost}))
    assert run.faults["dropped"] == len(lost)
    assert run.stats["retransmissions"] >= 1
    if lost == [35]:
        assert run.stats["timeouts"] == 1 and run.stats["naks"] == 0


def test_lost_retransmission_times_out_again():
    # message 11's last flit (35) is lost, and so is the last flit of its retransmission (38)
    run = _run(CFG, _msgs(12, 40, seed=5), FaultPlan(events={35: DROP, 38: DROP}))
    assert run.stats["timeouts"] == 2 and run.stats["retransmissions"] == 2


def test_crc_off_lets_corruption_through_and_the_scoreboard_sees_it():
    cfg = CFG.replace(crc=False)
    msgs = _msgs(12, 40, seed=6)
    plan = FaultPlan(events={4: flip(3)})  # a payload bit of message 1
    run = run_link("rtl", cfg, msgs, faults=plan)
    rep = run.scoreboard()
    assert not rep.ok
    assert rep.counts() == dict(lost=0, duplicated=0, reordered=0, corrupted=1)
    ex = rep.examples["corrupted"][0]
    assert ex.expected_index == ex.received_index == 1
    assert int(ex.received) == msgs[1] ^ (1 << (16 + 3))
    # the same fault with the CRC on is caught and repaired
    _run(CFG, msgs, plan)


def test_crc_off_still_recovers_lost_flits():
    run = _run(CFG.replace(crc=False), _msgs(12, 40), FaultPlan(events={4: DROP, 20: DROP}))
    assert run.stats["retransmissions"] >= 1


def test_fault_plans_are_deterministic():
    plan = FaultPlan(seed=9, bit_rate=0.02, burst_rate=0.01, drop_rate=0.01)
    a = _run(CFG, _msgs(40, 40), plan)
    b = _run(CFG, _msgs(40, 40), plan)
    assert a.fault_log == b.fault_log and a.arrival_cycles == b.arrival_cycles
    assert [plan.fault_for(n, 60) for n in range(50)] == [plan.fault_for(n, 60) for n in range(50)]


def test_data_only_faults_stay_in_the_payload():
    plan = FaultPlan(seed=1, bit_rate=0.5, burst_rate=0.5, bit_range=data_bits(CFG))
    lo, hi = data_bits(CFG)
    for n in range(200):
        f = plan.fault_for(n, CFG.flit_bits)
        assert f is not None and all(lo <= b < hi for b in f.bits)


@st.composite
def faulty_scenarios(draw):
    msg_bits = draw(st.integers(1, 40))
    phit = draw(st.integers(max(1, -(-msg_bits // 6)), 20))
    cfg = LinkConfig(msg_bits=msg_bits, phit_bits=phit, latency=draw(st.integers(1, 6)),
                     credit_latency=draw(st.integers(1, 6)), credits=draw(st.integers(1, 8)),
                     window=draw(st.sampled_from([None, 2, 4, 8])))
    scale = min(1.0, 0.3 / cfg.flits)  # keep a frame's chance of getting through reasonable
    plan = FaultPlan(seed=draw(st.integers(0, 2**20)),
                     bit_rate=scale * draw(st.sampled_from([0.0, 0.01, 0.1, 0.3])),
                     burst_rate=scale * draw(st.sampled_from([0.0, 0.05, 0.2])),
                     drop_rate=scale * draw(st.sampled_from([0.0, 0.01, 0.1, 0.3])))
    msgs = draw(st.lists(st.integers(0, 2**msg_bits - 1), min_size=1, max_size=30))
    stalls = st.sampled_from([0.0, 0.3, 0.6])
    return cfg, plan, msgs, draw(stalls), draw(stalls), draw(st.integers(0, 999))


@settings(max_examples=examples(30))
@given(faulty_scenarios())
def test_stress_heavy_random_faults_and_stalls(sc):
    cfg, plan, msgs, src, sink, seed = sc
    run = _run(cfg, msgs, plan, src_stall=src, sink_stall=sink, seed=seed)
    if run.faults["dropped"] + run.faults["flipped"] == 0:
        assert run.stats["retransmissions"] == 0
