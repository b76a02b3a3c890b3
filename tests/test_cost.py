"""The cost package (:mod:`pymtl_fp.cost`) is the one definition of its numbers: the engine's
configuration and RTL units read their latencies from it, the link models their line code and
transfer time, and :mod:`pymtl_fp.timing` is its engine module."""

import math

import numpy as np
import pytest

from pymtl_fp import timing
from pymtl_fp.cost import engine, latency, link
from pymtl_fp.engine.config import PIPELINES, EngineConfig


def test_timing_is_the_cost_models_engine_module():
    for name in ("compute_cycles", "load_cycles", "store_cycles", "ConvShape", "PIPE", "COMPUTE_OPS"):
        assert getattr(timing, name) is getattr(engine, name)


def test_engine_config_latencies_are_the_cost_models():
    assert PIPELINES == tuple(latency.PIPELINE_LATENCY)
    cfg = EngineConfig(**{f"pipelined_{p}": True for p in PIPELINES})
    lat = latency.PIPELINE_LATENCY
    assert (cfg.rq_latency, cfg.mac_latency, cfg.addr_latency, cfg.cmd_latency) == \
        (lat["requant"], lat["mac"], lat["addr"], lat["cmd"])
    assert cfg.wb_latency == lat["requant"] + lat["mac"] + lat["addr"]


def test_rtl_units_latencies_are_the_cost_models():
    from pymtl_fp.engine.MacArrayPipeRTL import LATENCY as MAC
    from pymtl_fp.primitives.RequantPipeRTL import LATENCY as RQ

    assert (MAC, RQ) == (latency.PIPELINE_LATENCY["mac"], latency.PIPELINE_LATENCY["requant"])


def test_compute_cycles_adds_the_pipelines_once():
    f = dict(n=2, c=5, k=3, ct=2, kt=1, h=6, w=6, ho=4, wo=4, r=3, s=3, pad=0)
    base = engine.compute_cycles(4, "fwd", f)
    assert engine.compute_cycles(4, "fwd", f, wb_latency=17, cmd_latency=1) == base + 18
    cfg = EngineConfig(rows=4, cols=4, pipelined_mac=True)
    assert engine.engine_compute_cycles(cfg, "fwd", f) == base + cfg.wb_latency


def test_stream_beats_and_stream_commands():
    assert [engine.stream_beats(n, 4) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
    assert engine.load_cycles(5, 4) == 3 and engine.load_cycles(0) == 1
    assert engine.store_cycles(8, 4, 2) == 1 + 4 + 2


def test_transfer_seconds_and_cycles():
    assert link.transfer_seconds(1e9, 2e9) == 0.5
    assert link.transfer_seconds(1e9, math.inf) == 0.0
    bits = np.array([1.0, 2.0, 4.0])
    assert np.array_equal(link.transfer_seconds(bits, math.inf), np.zeros(3))
    assert np.array_equal(link.transfer_seconds(bits, 4.0), bits / 4.0)
    assert link.transfer_cycles(12, 2, 0.5) == pytest.approx(12.0)
    assert link.payload_fraction() == 64 / 66


def test_explore_link_uses_the_cost_models_transfer_time():
    from pymtl_fp.explore.links import parse_link

    lk = parse_link("6x10G")
    assert lk.gbps == 3 * 10 * link.payload_fraction(link.LINE_64B66B)
    assert lk.seconds(1e9) == 1e9 / lk.bits_per_s
    assert parse_link("inf").seconds(1e12) == 0.0
