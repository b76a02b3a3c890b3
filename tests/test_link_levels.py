"""One test class for every link level (PyMTL3-examples style): ``BaseLinkTests`` is run for
FL, CL and RTL by subclasses that only set ``level``.  Properties over random inputs are in
test_link_props.py, faults in test_link_faults.py, Verilator in test_link_verilog.py."""

import random

import pytest
from pymtl3 import Bits8, Bits16, bitstruct

from pymtl_fp.link import LinkConfig, preset
from pymtl_fp.tb.link_harness import run_link

TINY = preset("tiny")


def _msgs(n, bits, seed=0):
    rng = random.Random(seed)
    return [rng.getrandbits(bits) for _ in range(n)]


class BaseLinkTests:
    level = None

    def min_latency(self, cfg):
        """The zero-load latency this level promises (FL: the channel latency only)."""
        return cfg.latency if self.level == "fl" else cfg.zero_load_latency

    def run(self, cfg, msgs, **kw):
        return run_link(self.level, cfg, msgs, **kw)

    def test_one_message_zero_load_latency(self):
        for cfg in (TINY, LinkConfig(msg_bits=8, phit_bits=8, latency=1, credit_latency=1, credits=1)):
            r = self.run(cfg, [0x5A])
            r.scoreboard().assert_ok()
            assert r.latencies == [self.min_latency(cfg)]

    def test_in_order_full_rate(self):
        msgs = _msgs(40, TINY.msg_bits)
        r = self.run(TINY, msgs)
        r.scoreboard().assert_ok()
        assert min(r.latencies) == self.min_latency(TINY)

    def test_back_pressure_and_stalls(self):
        cfg = LinkConfig(msg_bits=20, phit_bits=6, latency=3, credit_latency=2, credits=2)
        msgs = _msgs(30, 20, seed=1)
        for src, sink in ((0.0, 0.8), (0.6, 0.0), (0.5, 0.5)):
            r = self.run(cfg, msgs, src_stall=src, sink_stall=sink, seed=7)
            r.scoreboard().assert_ok(f"stalls {src}/{sink}")
            assert all(lat >= self.min_latency(cfg) for lat in r.latencies)

    def test_throughput(self):
        # credit-limited (1 credit) and bandwidth-limited (plenty of credits)
        for credits in (1, 16):
            cfg = LinkConfig(msg_bits=24, phit_bits=8, latency=3, credit_latency=2, credits=credits)
            r = self.run(cfg, _msgs(48, 24, seed=2))
            r.scoreboard().assert_ok()
            measured = r.throughput_msgs()
            if self.level == "fl":
                assert measured == pytest.approx(1.0)  # no bandwidth limit
            else:
                assert measured == pytest.approx(cfg.throughput_msgs, rel=0.01)

    def test_bitstruct_messages(self):
        @bitstruct
        class Flit3:
            tag: Bits8
            val: Bits16

        cfg = LinkConfig(msg_bits=24, phit_bits=10, latency=2, credit_latency=1, credits=3)
        msgs = [Flit3(i, (i * 2654435761) % 2**16) for i in range(20)]
        r = self.run(cfg, msgs, MsgType=Flit3, sink_stall=0.3, seed=3)
        r.scoreboard().assert_ok()
        assert all(isinstance(m, Flit3) for m in r.received)

    def test_status_is_zero_without_faults(self):
        r = self.run(TINY, _msgs(10, TINY.msg_bits))
        assert set(r.stats.values()) == {0}

    def test_line_trace(self):
        r = run_link(self.level, TINY, [1, 2], trace=False)
        assert r.cycles > 0
        from pymtl3 import DefaultPassGroup, mk_bits

        from pymtl_fp.tb.link_harness import LinkTestTop
        T = mk_bits(TINY.msg_bits)
        top = LinkTestTop(self.level, T, TINY, [T(1), T(2)], 0.0, 0.0, 0, None)
        top.elaborate()
        top.apply(DefaultPassGroup())
        top.sim_reset()
        traces = set()
        for _ in range(12):
            top.sim_tick()
            line = top.dut.line_trace()
            assert isinstance(line, str)
            traces.add(line)
        assert len(traces) > 1  # the trace shows activity


class TestLinkFL(BaseLinkTests):
    level = "fl"


class TestLinkCL(BaseLinkTests):
    level = "cl"


class TestLinkRTL(BaseLinkTests):
    level = "rtl"


def test_every_link_module_has_a_docstring_and_every_component_a_line_trace():
    import importlib
    import pkgutil

    from pymtl3 import Component, DefaultPassGroup, mk_bits

    import pymtl_fp.link as pkg
    from pymtl_fp.link import LinkRTL
    from pymtl_fp.tb.link_faults import FaultPlan, faulty_channel

    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"pymtl_fp.link.{info.name}")
        assert mod.__doc__ and len(mod.__doc__) > 80, info.name
    cfg = LinkConfig(msg_bits=20, phit_bits=8, latency=2, credit_latency=2, credits=2)
    dut = LinkRTL(mk_bits(20), cfg, channel=faulty_channel(FaultPlan(bit_rate=0.1)))
    dut.elaborate()
    dut.apply(DefaultPassGroup())
    dut.sim_reset()
    comps = dut.get_all_object_filter(lambda x: isinstance(x, Component)) | {dut}
    assert len(comps) >= 10
    for c in comps:
        assert "line_trace" in type(c).__dict__, type(c).__name__
        assert isinstance(c.line_trace(), str)


def test_harness_rejects_messages_that_do_not_fit():
    with pytest.raises(ValueError, match=r"message 1 \(256\) is not a Bits8"):
        run_link("cl", LinkConfig(msg_bits=8), [1, 256])


def test_rtl_waveform(tmp_path):
    stem = str(tmp_path / "link")
    run_link("rtl", TINY, [1, 2, 3], vcd=stem)
    text = (tmp_path / "link.vcd").read_text()
    assert "$enddefinitions" in text and "recv" in text
