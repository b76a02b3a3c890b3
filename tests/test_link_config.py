"""LinkConfig: validation, derived figures, presets, the transceiver helper, and clear errors
before simulation for bad link inputs."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pymtl3 import Bits16, Bits32, bitstruct, mk_bits

from pymtl_fp.link import (
    PRESETS,
    LinkCL,
    LinkConfig,
    LinkConfigError,
    LinkFL,
    LinkRTL,
    phit_bits_from_transceivers,
    preset,
    transceiver_bits_per_cycle,
)
from pymtl_fp.tb.link_faults import Fault, FaultPlan, faulty_channel
from pymtl_fp.tb.link_harness import run_link


def test_transceiver_helper_fpdeep_example():
    # 6 transceivers x 10 Gb/s, 64b/66b, 200 MHz
    assert transceiver_bits_per_cycle(6, 10, 200) == pytest.approx(6 * 10e9 * 64 / 66 / 200e6)
    assert phit_bits_from_transceivers(6, 10, 200) == 290
    assert phit_bits_from_transceivers(1, 10, 200, encoding=(8, 10)) == 40
    with pytest.raises(LinkConfigError, match="lanes"):
        transceiver_bits_per_cycle(0, 10, 200)
    with pytest.raises(LinkConfigError, match="encoding"):
        transceiver_bits_per_cycle(1, 10, 200, encoding=(66, 64))


def test_derived_fields():
    cfg = LinkConfig(msg_bits=64, phit_bits=24, latency=10, credit_latency=6, credits=3)
    assert cfg.flits == 3
    assert cfg.round_trip == 3 + 10 + 6 + 1
    assert cfg.zero_load_latency == 1 + 3 + 10
    assert cfg.min_credits == math.ceil(20 / 3) == 7
    assert cfg.window == 8  # auto: next power of two >= min_credits
    assert cfg.throughput_msgs == pytest.approx(3 / 20)
    assert cfg.throughput_bits == pytest.approx(64 * 3 / 20)
    assert cfg.peak_bits == pytest.approx(64 / 3)
    assert cfg.timeout >= cfg.min_timeout
    assert cfg.seq_bits == 4 and cfg.idx_bits == 2
    assert cfg.flit_bits == 24 + 2 + 4 + 32
    f = cfg.flit_fields()
    assert f["data"] == (0, 24) and f["crc"][1] == cfg.flit_bits
    assert "crc" not in cfg.replace(crc=False).flit_fields()
    assert cfg.replace(credits=100).throughput_msgs == pytest.approx(1 / 3)


@given(st.integers(1, 200), st.integers(1, 64), st.integers(1, 50), st.integers(1, 50), st.integers(1, 64))
def test_derived_invariants(m, p, lat, clat, c):
    try:
        cfg = LinkConfig(msg_bits=m, phit_bits=p, latency=lat, credit_latency=clat, credits=c)
    except LinkConfigError:
        return
    assert cfg.flits * cfg.phit_bits >= m > (cfg.flits - 1) * cfg.phit_bits
    assert cfg.min_credits * cfg.flits >= cfg.round_trip
    assert (cfg.min_credits - 1) * cfg.flits < cfg.round_trip
    assert cfg.throughput_bits <= cfg.peak_bits <= p
    assert cfg.window & (cfg.window - 1) == 0 and cfg.window >= cfg.min_credits
    assert 2 ** cfg.seq_bits > cfg.window


def test_presets():
    assert set(PRESETS) >= {"tiny", "fpdeep_6x10g"}
    fp = preset("fpdeep_6x10g")
    assert fp.phit_bits == 290 and fp.name == "fpdeep_6x10g"
    assert fp.credits >= fp.min_credits  # presets run at full bandwidth
    for cfg in PRESETS.values():
        assert cfg.credits >= cfg.min_credits
    with pytest.raises(LinkConfigError, match="unknown link preset"):
        preset("nope")


@pytest.mark.parametrize("kw, match", [
    (dict(msg_bits=0), "msg_bits"),
    (dict(msg_bits=2000), "msg_bits"),
    (dict(phit_bits=0), "phit_bits"),
    (dict(latency=0), "latency"),
    (dict(credit_latency=0), "credit_latency"),
    (dict(credits=0), "credits"),
    (dict(credits=2.5), "int"),
    (dict(latency=True), "int"),
    (dict(window=3), "power of two"),
    (dict(window=1), "window"),
    (dict(crc="yes"), "crc"),
    (dict(timeout=3), "timeout"),
    (dict(msg_bits=1000, phit_bits=1000), "PyMTL3 supports at most"),
])
def test_bad_config_values(kw, match):
    with pytest.raises(LinkConfigError, match=match):
        LinkConfig(**kw)


@pytest.mark.parametrize("Link", [LinkFL, LinkCL, LinkRTL])
def test_message_type_wider_than_declared(Link):
    cfg = LinkConfig(msg_bits=16)
    with pytest.raises(ValueError, match="32 bits wide but the link is declared for msg_bits=16"):
        Link(Bits32, cfg).elaborate()
    with pytest.raises(TypeError, match="LinkConfig"):
        Link(Bits16, dict(msg_bits=16)).elaborate()
    with pytest.raises(TypeError, match="Bits type or bitstruct"):
        Link(int, cfg).elaborate()


def test_narrower_message_type_is_fine():
    @bitstruct
    class Small:
        a: mk_bits(5)
        b: mk_bits(6)

    cfg = LinkConfig(msg_bits=16, phit_bits=8, latency=1, credit_latency=1, credits=2)
    msgs = [Small(i % 32, (7 * i) % 64) for i in range(12)]
    for level in ("cl", "rtl"):
        run = run_link(level, cfg, msgs, MsgType=Small)
        run.scoreboard().assert_ok(level)


def test_harness_rejects_bad_requests():
    cfg = LinkConfig()
    with pytest.raises(ValueError, match="unknown link level"):
        run_link("gate", cfg, [1])
    with pytest.raises(ValueError, match="needs level 'rtl'"):
        run_link("cl", cfg, [1], faults=FaultPlan(bit_rate=0.1))
    with pytest.raises(TypeError, match="LinkConfig"):
        run_link("cl", {"msg_bits": 8}, [1])


def test_fault_plan_validation():
    with pytest.raises(ValueError, match="probability"):
        FaultPlan(bit_rate=1.5)
    with pytest.raises(ValueError, match="add up"):
        FaultPlan(bit_rate=0.6, drop_rate=0.6)
    with pytest.raises(ValueError, match="burst_len"):
        FaultPlan(burst_len=(3, 2))
    with pytest.raises(ValueError, match="Fault"):
        FaultPlan(events={0: "flip"})
    with pytest.raises(ValueError, match="kind"):
        Fault("zap")
    with pytest.raises(TypeError, match="FaultPlan"):
        faulty_channel({"bit_rate": 0.1})
    with pytest.raises(ValueError, match="flips bit 99"):
        FaultPlan(events={0: Fault("flip", (99,))}).fault_for(0, 20)
