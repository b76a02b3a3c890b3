"""Run one link at any level between a stalling source and a stalling sink, and measure it.

:func:`run_link` builds ``StallSource -> Link<level> -> StallSink`` (from :mod:`pymtl_fp.tb.stream`),
runs it to completion under the :func:`pymtl_fp.sim.run_until` watchdog and returns a
:class:`LinkRun`: what was sent and received with the cycle of every handshake, the link's
counters (retransmissions, NAKs, CRC errors...) and the fault injector's log.

Levels: ``fl``, ``cl``, ``rtl`` (PyMTL3 simulation) and ``verilator`` (the same test bench with
only ``LinkRTL`` translated, built and imported by :func:`pymtl_fp.verilate.translate_import`;
source and sink stay in Python).  Faults (:mod:`pymtl_fp.tb.link_faults`) need level ``rtl``: the fault
injector sits inside the link, between the serializer and the channel, and is not translatable.
"""

from __future__ import annotations

import dataclasses
import statistics

from pymtl3 import Component, mk_bits

from pymtl_fp.levels import LEVELS
from pymtl_fp.link import LINK_LEVELS, LinkConfig, LinkRTL
from pymtl_fp.link.LinkRTL import link_module_name
from pymtl_fp.link.status import status_dict
from pymtl_fp.sim import run_until
from pymtl_fp.sim_passes import default_passes
from pymtl_fp.tb.link_faults import FaultPlan, faulty_channel
from pymtl_fp.tb.scoreboard import compare
from pymtl_fp.tb.stream import StallSink, StallSource


@dataclasses.dataclass
class LinkRun:
    """The outcome of one run (cycle numbers count ticks after reset)."""

    level: str
    cfg: LinkConfig
    sent: list
    received: list
    send_cycles: list  #: cycle of each handshake on the link's recv port
    arrival_cycles: list  #: cycle of each handshake on the link's send port
    cycles: int
    stats: dict  #: link counters (retransmissions, timeouts, naks, crc_errors, ...)
    faults: dict  #: injector counts (flits, flipped, dropped); empty without faults
    fault_log: list = dataclasses.field(default_factory=list)

    def scoreboard(self):
        return compare(self.sent, self.received)

    @property
    def latencies(self) -> list[int]:
        """Per-message latency (recv handshake -> send handshake); needs an exact delivery."""
        if len(self.received) != len(self.sent):
            raise ValueError("latencies need every message delivered")
        return [a - s for s, a in zip(self.send_cycles, self.arrival_cycles, strict=True)]

    def latency_summary(self) -> tuple[float, int]:
        lat = self.latencies
        return (statistics.fmean(lat), max(lat)) if lat else (0.0, 0)

    def throughput_msgs(self, skip: int | None = None) -> float:
        """Messages per cycle at the sink between message ``skip`` (default: a quarter in)
        and the last one."""
        arr = self.arrival_cycles
        if len(arr) < 3:
            return 0.0
        skip = len(arr) // 4 if skip is None else skip
        span = arr[-1] - arr[skip]
        return (len(arr) - 1 - skip) / span if span > 0 else float("inf")

    def throughput_bits(self, skip: int | None = None) -> float:
        return self.throughput_msgs(skip) * self.cfg.msg_bits


class LinkTestTop(Component):
    """StallSource -> link -> StallSink."""

    def construct(s, level, MsgType, cfg, msgs, src_stall, sink_stall, seed, plan):
        s.src = StallSource(MsgType, msgs, src_stall, seed * 2 + 1)
        if level == "rtl":
            channel = faulty_channel(plan) if plan is not None else None
            s.dut = LinkRTL(MsgType, cfg, channel=channel) if channel else LinkRTL(MsgType, cfg)
        else:
            s.dut = LINK_LEVELS[level](MsgType, cfg)
        s.sink = StallSink(MsgType, len(msgs), sink_stall, seed * 2 + 2)
        s.src.send //= s.dut.recv
        s.dut.send //= s.sink.recv

    def done(s):
        return s.sink.done() and s.src.done()

    def line_trace(s):
        return s.dut.line_trace()


def default_max_cycles(cfg: LinkConfig, n: int, src_stall: float, sink_stall: float,
                       faulty: bool = False) -> int:
    per_msg = max(cfg.flits, cfg.round_trip / min(cfg.credits, cfg.window), 1)
    est = (n * per_msg + cfg.round_trip + 16) / ((1 - src_stall) * (1 - sink_stall))
    if faulty:
        est *= 4
        est += 40 * (cfg.timeout + cfg.round_trip)
    return int(est * 3) + 2000


def _msg_type(cfg, MsgType):
    return MsgType if MsgType is not None else mk_bits(cfg.msg_bits)


def _as_msgs(MsgType, msgs):
    out = []
    for i, m in enumerate(msgs):
        if isinstance(m, MsgType):
            out.append(m)
        elif isinstance(m, int) and not isinstance(m, bool) and 0 <= m < (1 << MsgType.nbits):
            out.append(MsgType(m))
        else:
            raise ValueError(f"message {i} ({m!r}) is not a {getattr(MsgType, '__name__', MsgType)} "
                             f"or an int in [0, 2**{MsgType.nbits})")
    return out


def run_link(level: str, cfg: LinkConfig, msgs, *, MsgType=None, src_stall: float = 0.0,
             sink_stall: float = 0.0, seed: int = 0, faults: FaultPlan | None = None,
             max_cycles: int | None = None, trace: bool = False, idle_limit: int | None = None,
             vcd: str | None = None) -> LinkRun:
    """Send ``msgs`` (ints or ``MsgType`` values) through a link at ``level``.

    ``vcd``: a file stem; the waveform goes to ``<vcd>.vcd`` (Python levels, PyMTL3's VCD pass)
    or ``<vcd>.verilator1.vcd`` (``verilator``)."""
    if level not in LEVELS:
        raise ValueError(f"unknown link level {level!r}; one of {', '.join(LEVELS)}")
    if faults is not None and level != "rtl":
        raise ValueError(f"fault injection needs level 'rtl', not {level!r}")
    if not isinstance(cfg, LinkConfig):
        raise TypeError(f"cfg must be a LinkConfig, got {type(cfg).__name__}")
    MsgType = _msg_type(cfg, MsgType)
    msgs = _as_msgs(MsgType, msgs)
    faulty = faults is not None and faults.active
    if max_cycles is None:
        max_cycles = default_max_cycles(cfg, len(msgs), src_stall, sink_stall, faulty)
    if idle_limit is None:
        idle_limit = 20 * (cfg.timeout + cfg.round_trip) + 500
    top = LinkTestTop("rtl" if level == "verilator" else level, MsgType, cfg, msgs, src_stall,
                      sink_stall, seed, faults)
    if level == "verilator":
        from pymtl_fp.verilate import translate_import

        name, params = verilator_name(cfg, MsgType)
        top = translate_import(top, name, dut="dut", params=params, vcd=bool(vcd),
                               vcd_file=vcd and vcd + ".vcd", linetrace=trace)
    else:
        top.elaborate()
        top.apply(default_passes(linetrace=trace, vcdwave=vcd))
    top.sim_reset()
    cycles = run_until(
        top, top.done, max_cycles=max_cycles, trace=trace, idle_limit=idle_limit,
        progress=lambda: (top.src.idx, len(top.sink.received)),
        describe_stuck=lambda: (f"{len(top.sink.received)}/{len(msgs)} delivered, "
                                f"{top.src.idx} accepted; {status_dict(top.dut.status)}"),
    )
    fault_counts, log = {}, []
    if level == "rtl" and faults is not None:
        fault_counts = top.dut.chan.inj.counts()
        log = list(top.dut.chan.inj.log)
    return LinkRun(level, cfg, msgs, list(top.sink.received), list(top.src.send_cycles),
                   list(top.sink.arrival_cycles), cycles, status_dict(top.dut.status), fault_counts,
                   log)


def verilator_name(cfg: LinkConfig, MsgType) -> tuple[str, dict]:
    """The Verilog module name (every elaboration parameter encoded) and its parameters."""
    return link_module_name(cfg, MsgType)
