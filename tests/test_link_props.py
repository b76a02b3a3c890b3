"""Hypothesis properties of the link models over random configurations, message sequences and
stall patterns:

* every level delivers exactly the sent sequence (scoreboard), never earlier than it promises;
* CL and RTL agree on the cycle of every handshake, at both ends (the cycle behaviour specified
  in pymtl_fp.link);
* steady-state throughput equals the analytical bound min(1/flits, min(credits, window) /
  round_trip) within 1% (CL on many configurations, RTL on a few).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.link import LinkConfig
from pymtl_fp.tb.hypothesis_profiles import examples
from pymtl_fp.tb.link_harness import run_link

STALLS = st.sampled_from([0.0, 0.0, 0.2, 0.5, 0.8])


@st.composite
def link_configs(draw, max_flits=8):
    msg_bits = draw(st.integers(1, 48))
    phit_bits = draw(st.integers(max(1, -(-msg_bits // max_flits)), 24))
    return LinkConfig(
        msg_bits=msg_bits, phit_bits=phit_bits,
        latency=draw(st.integers(1, 8)), credit_latency=draw(st.integers(1, 8)),
        credits=draw(st.integers(1, 10)),
        window=draw(st.sampled_from([None, 2, 4, 8, 16])),
        crc=draw(st.booleans()),
    )


@st.composite
def scenarios(draw, max_msgs=25):
    cfg = draw(link_configs())
    msgs = draw(st.lists(st.integers(0, 2**cfg.msg_bits - 1), min_size=1, max_size=max_msgs))
    return cfg, msgs, draw(STALLS), draw(STALLS), draw(st.integers(0, 2**16))


@settings(max_examples=examples(40))
@given(scenarios())
def test_every_level_delivers_exactly_and_cl_matches_rtl_cycle_by_cycle(sc):
    cfg, msgs, src, sink, seed = sc
    runs = {lvl: run_link(lvl, cfg, msgs, src_stall=src, sink_stall=sink, seed=seed)
            for lvl in ("fl", "cl", "rtl")}
    for lvl, run in runs.items():
        run.scoreboard().assert_ok(f"{lvl} {cfg.describe()}")
    assert min(runs["fl"].latencies) >= cfg.latency
    assert min(runs["cl"].latencies) >= cfg.zero_load_latency
    cl, rtl = runs["cl"], runs["rtl"]
    assert cl.send_cycles == rtl.send_cycles, "recv handshakes differ"
    assert cl.arrival_cycles == rtl.arrival_cycles, "send handshakes differ"
    assert rtl.stats["retransmissions"] == rtl.stats["timeouts"] == rtl.stats["naks"] == 0
    assert rtl.stats["overflow"] == 0


@settings(max_examples=examples(60))
@given(scenarios(max_msgs=60))
def test_fl_and_cl_deliver_exactly(sc):
    cfg, msgs, src, sink, seed = sc
    for lvl in ("fl", "cl"):
        run_link(lvl, cfg, msgs, src_stall=src, sink_stall=sink, seed=seed).scoreboard().assert_ok(lvl)


def steady_throughput(cfg, run):
    """Messages/cycle at the sink over a whole number of credit/window periods after warm-up."""
    k = min(cfg.credits, cfg.window)
    arr = run.arrival_cycles
    skip = len(arr) // 3
    span = ((len(arr) - 1 - skip) // k) * k
    return span / (arr[skip + span] - arr[skip])


def _check_throughput(level, cfg):
    k = min(cfg.credits, cfg.window)
    n = 12 * k + 24
    run = run_link(level, cfg, [i % 2**cfg.msg_bits for i in range(n)])
    run.scoreboard().assert_ok()
    measured = steady_throughput(cfg, run)
    assert measured == pytest.approx(cfg.throughput_msgs, rel=0.01), cfg.describe()
    assert measured * cfg.msg_bits == pytest.approx(cfg.throughput_bits, rel=0.01)


@settings(max_examples=examples(80))
@given(link_configs())
def test_cl_steady_state_throughput_is_the_analytical_bound(cfg):
    _check_throughput("cl", cfg)


@pytest.mark.rtl
@settings(max_examples=examples(10))
@given(link_configs(max_flits=4))
def test_rtl_steady_state_throughput_is_the_analytical_bound(cfg):
    _check_throughput("rtl", cfg)


@pytest.mark.parametrize("flits", [1, 3])
def test_credit_knee_matches_round_trip_times_rate(flits):
    """Below ceil(round_trip/flits) credits bandwidth drops; at it, it is full."""
    base = LinkConfig(msg_bits=12 * flits, phit_bits=12, latency=5, credit_latency=3, credits=1)
    knee = base.min_credits
    assert knee == -(-base.round_trip // flits)
    for c, full in ((knee - 1, False), (knee, True)):
        cfg = base.replace(credits=c, window=16)
        run = run_link("cl", cfg, list(range(12 * c + 24)))
        bw = steady_throughput(cfg, run)
        assert (bw >= 0.999 / flits) == full, (c, bw)
