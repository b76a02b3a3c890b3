"""Test-bench stream endpoints with random stalls (val/rdy), usable with a DUT at any level.

* :class:`StallSource` sends a list of messages; each cycle it independently stalls (holds
  ``val`` low) with probability ``stall_prob``.
* :class:`StallSink` accepts messages; each cycle it independently stalls (holds ``rdy`` low)
  with probability ``stall_prob``; it records every message with the cycle it arrived.

The stall decision of cycle ``t`` is a pure function of ``(seed, t)`` — one random draw per cycle
whatever happened before — so two DUTs (say CL and RTL) driven by endpoints with the same seeds
see exactly the same stall pattern.  Comparison is left to the test or a scoreboard
(:mod:`pymtl_fp.tb.scoreboard`), which can then say *how* sequences differ.
"""

from __future__ import annotations

import copy

from pymtl3 import Component, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.sim import stall_pattern


def _snapshot(msg):
    """A copy of a message that later writes to the port cannot change."""
    return copy.deepcopy(msg)


class StallSource(Component):
    """Sends ``msgs`` in order on ``send``, stalling randomly."""

    def construct(s, Type, msgs, stall_prob=0.0, seed=0, initial_delay=0):
        s.send = SendIfcRTL(Type)
        s.msgs = list(msgs)
        s.stall_prob = stall_prob
        s.seed = seed
        s.idx = 0
        s.cycle = 0
        s.send_cycles = []  #: cycle of each handshake
        s._pattern = stall_pattern(seed, stall_prob)
        s._initial_delay = initial_delay

        @update_ff
        def up_source():
            if s.reset:
                s.idx = 0
                s.cycle = 0
                s.send_cycles = []
                s._pattern = stall_pattern(s.seed, s.stall_prob)
                s.send.val <<= 0
                return
            if s.send.val & s.send.rdy:
                s.send_cycles.append(s.cycle)
                s.idx += 1
            s.cycle += 1
            stall = next(s._pattern) or s.cycle <= s._initial_delay
            if s.idx < len(s.msgs) and not stall:
                s.send.val <<= 1
                s.send.msg <<= s.msgs[s.idx]
            else:
                s.send.val <<= 0

    def done(s):
        return s.idx >= len(s.msgs)

    def line_trace(s):
        return f"{s.send}"


class StallSink(Component):
    """Receives on ``recv``, stalling randomly; keeps ``received`` and ``arrival_cycles``.

    With ``expected_count`` set, ``rdy`` stays low once that many messages arrived (so a DUT
    that sends too many is seen as blocked, and a scoreboard reports the count mismatch)."""

    def construct(s, Type, expected_count=None, stall_prob=0.0, seed=0):
        s.recv = RecvIfcRTL(Type)
        s.expected_count = expected_count
        s.stall_prob = stall_prob
        s.seed = seed
        s.received = []
        s.arrival_cycles = []
        s.cycle = 0
        s._pattern = stall_pattern(seed, stall_prob)

        @update_ff
        def up_sink():
            if s.reset:
                s.received = []
                s.arrival_cycles = []
                s.cycle = 0
                s._pattern = stall_pattern(s.seed, s.stall_prob)
                s.recv.rdy <<= 0
                return
            if s.recv.val & s.recv.rdy:
                s.received.append(_snapshot(s.recv.msg))
                s.arrival_cycles.append(s.cycle)
            s.cycle += 1
            stall = next(s._pattern)
            room = s.expected_count is None or len(s.received) < s.expected_count
            s.recv.rdy <<= 1 if (room and not stall) else 0

    def done(s):
        return s.expected_count is not None and len(s.received) >= s.expected_count

    def line_trace(s):
        return f"{s.recv}"
