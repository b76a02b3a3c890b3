"""The shared test-bench endpoints: random-stall source/sink around a DUT at any level.

A pymtl3 stdlib queue stands in for a DUT.  The delivered sequence must equal the sent one, and
with the same seeds the stall pattern — and so every arrival cycle — must be identical whether
the DUT runs in Python or is imported through Verilator (the ``dut=`` import path)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pymtl3 import Bits16, Component
from pymtl3.stdlib.stream.queues import NormalQueueRTL

from pymtl_fp.sim import SimulationHang, build_sim, run_until, stall_pattern
from pymtl_fp.tb.stream import StallSink, StallSource
from pymtl_fp.verilate import module_name


class QueueBench(Component):
    def construct(s, msgs, src_stall, sink_stall, seed, count=None):
        s.src = StallSource(Bits16, msgs, src_stall, seed)
        s.dut = NormalQueueRTL(Bits16, 2)
        s.sink = StallSink(Bits16, len(msgs) if count is None else count, sink_stall, seed + 1)
        s.src.send //= s.dut.recv
        s.dut.send //= s.sink.recv

    def line_trace(s):
        return f"{s.src.line_trace()} > {s.dut.line_trace()} > {s.sink.line_trace()}"


def run(level, msgs, src_stall, sink_stall, seed):
    bench = QueueBench([Bits16(m) for m in msgs], src_stall, sink_stall, seed)
    sim = build_sim(bench, level, dut="dut", name=module_name("TbQueue", dict(w=16, n=2)))
    run_until(sim, sim.sink.done, max_cycles=20 * len(msgs) + 100)
    return [int(m) for m in sim.sink.received], list(sim.sink.arrival_cycles)


traffic = st.tuples(st.lists(st.integers(0, 2**16 - 1), min_size=1, max_size=40),
                    st.sampled_from([0.0, 0.3, 0.7]), st.sampled_from([0.0, 0.3, 0.7]),
                    st.integers(0, 2**16))


@pytest.mark.rtl
@given(traffic)
def test_delivers_the_sent_sequence(case):
    msgs, src_stall, sink_stall, seed = case
    received, _ = run("rtl", msgs, src_stall, sink_stall, seed)
    assert received == msgs


@pytest.mark.verilator
def test_same_seeds_same_cycles_in_python_and_verilator(cmdline_opts):
    for seed in range(3):
        msgs = [(seed * 977 + i * 31) % 65536 for i in range(30)]
        assert run("rtl", msgs, 0.4, 0.4, seed) == run("verilator", msgs, 0.4, 0.4, seed)


def test_stall_pattern_is_a_function_of_seed_and_cycle():
    a, b = stall_pattern(7, 0.5), stall_pattern(7, 0.5)
    assert [next(a) for _ in range(100)] == [next(b) for _ in range(100)]
    with pytest.raises(ValueError):
        next(stall_pattern(0, 1.0))


def test_watchdog_turns_a_hang_into_a_clear_error():
    # The sink waits for one message more than is ever sent: a hang the watchdog must name.
    bench = QueueBench([Bits16(1), Bits16(2)], 0.0, 0.0, 0, count=3)
    sim = build_sim(bench, "rtl")
    with pytest.raises(SimulationHang, match=r"no progress for 50 cycles.*stuck: sink has 2 of 3"):
        run_until(sim, sim.sink.done, max_cycles=10_000, progress=lambda: len(sim.sink.received),
                  idle_limit=50, describe_stuck=lambda: f"sink has {len(sim.sink.received)} of 3")
