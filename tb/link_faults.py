"""Fault injection on a link's forward channel (test-bench side, never translated).

:class:`FaultPlan` says which flits to hurt: explicit events by flit number and/or random faults
with per-flit rates (single-bit flips, bursts of adjacent flipped bits, lost flits), all a pure
function of ``(seed, flit number)`` (flits are numbered in the order they enter the channel,
retransmissions included).  :class:`FaultInjector` applies a plan combinationally (no added
latency) to a valid/data stream; :class:`FaultyChannel` is an injector in front of the
fault-free :class:`~pymtl_fp.link.ChannelRTL.ChannelRTL`, with the same ports.  Build a link
with faults as ``LinkRTL(MsgType, cfg, channel=faulty_channel(plan, cfg))``.
"""

from __future__ import annotations

import dataclasses
import random

from pymtl3 import Bits, Component, InPort, OutPort, Wire, update, update_ff

from pymtl_fp.link.ChannelRTL import ChannelRTL


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault on one flit: ``"flip"`` the listed bit positions, or ``"drop"`` the flit."""

    kind: str
    bits: tuple[int, ...] = ()

    def __post_init__(self):
        if self.kind not in ("flip", "drop"):
            raise ValueError(f"Fault.kind must be 'flip' or 'drop', got {self.kind!r}")
        if self.kind == "flip" and not self.bits:
            raise ValueError("a 'flip' fault needs at least one bit position")
        if any(not isinstance(b, int) or b < 0 for b in self.bits):
            raise ValueError(f"bit positions must be non-negative ints, got {self.bits!r}")


def flip(*bits: int) -> Fault:
    return Fault("flip", tuple(bits))


def burst(start: int, length: int) -> Fault:
    """``length`` adjacent bits from ``start`` flipped."""
    return Fault("flip", tuple(range(start, start + length)))


DROP = Fault("drop")


@dataclasses.dataclass(frozen=True)
class FaultPlan:
    """Which flits get which faults.

    Random faults: each flit independently gets a single-bit flip with probability ``bit_rate``,
    a burst of ``burst_len[0] .. burst_len[1]`` adjacent flipped bits with ``burst_rate``, or is
    lost with ``drop_rate`` (at most one fault per flit; drop wins).  Bits are drawn uniformly
    from ``bit_range`` (``None``: the whole flit, sideband included).  ``events`` maps flit
    numbers to explicit :class:`Fault` s (taking precedence)."""

    seed: int = 0
    bit_rate: float = 0.0
    burst_rate: float = 0.0
    burst_len: tuple[int, int] = (2, 8)
    drop_rate: float = 0.0
    events: dict = dataclasses.field(default_factory=dict)  #: stored as sorted (n, Fault) pairs
    bit_range: tuple[int, int] | None = None

    def __post_init__(self):
        for name in ("bit_rate", "burst_rate", "drop_rate"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise ValueError(f"FaultPlan.{name} must be a probability in [0, 1], got {v!r}")
        if self.bit_rate + self.burst_rate + self.drop_rate > 1.0:
            raise ValueError("FaultPlan rates must add up to at most 1")
        lo, hi = self.burst_len
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise ValueError(f"FaultPlan.burst_len must be (min, max) with 1 <= min <= max, "
                             f"got {self.burst_len!r}")
        items = self.events.items() if isinstance(self.events, dict) else self.events
        try:
            items = [(n, f) for n, f in items]
        except (TypeError, ValueError):
            raise ValueError(f"FaultPlan.events must map flit numbers to Fault, "
                             f"got {self.events!r}") from None
        for n, f in items:
            if not (isinstance(n, int) and n >= 0 and isinstance(f, Fault)):
                raise ValueError(f"FaultPlan.events maps flit numbers >= 0 to Fault, got {n!r}: {f!r}")
        object.__setattr__(self, "events", tuple(sorted(items, key=lambda nf: nf[0])))
        object.__setattr__(self, "_by_flit", dict(items))

    @property
    def active(self) -> bool:
        return bool(self.events) or self.bit_rate + self.burst_rate + self.drop_rate > 0

    def fault_for(self, n: int, nbits: int) -> Fault | None:
        """The fault of flit number ``n`` on an ``nbits``-wide channel (``None``: intact)."""
        f = self._by_flit.get(n)
        if f is not None:
            if f.kind == "flip" and max(f.bits) >= nbits:
                raise ValueError(f"fault on flit {n} flips bit {max(f.bits)} of a {nbits}-bit flit")
            return f
        if self.bit_rate + self.burst_rate + self.drop_rate == 0:
            return None
        rng = random.Random((self.seed << 40) ^ n)
        u = rng.random()
        lo, hi = self.bit_range or (0, nbits)
        hi = min(hi, nbits)
        if u < self.drop_rate:
            return DROP
        u -= self.drop_rate
        if u < self.bit_rate:
            return flip(rng.randrange(lo, hi))
        u -= self.bit_rate
        if u < self.burst_rate:
            length = min(rng.randint(*self.burst_len), hi - lo)
            start = rng.randrange(lo, hi - length + 1)
            return burst(start, length)
        return None


def data_bits(cfg) -> tuple[int, int]:
    """The payload bit range of a link's flits (for faults the CRC-less link cannot notice)."""
    return cfg.flit_fields()["data"]


class FaultInjector(Component):
    """Applies a :class:`FaultPlan` to a valid/data stream, combinationally (test bench only).

    Keeps a log of the faults applied: ``log`` = list of ``(flit number, cycle, Fault)``, and
    counts ``flits``, ``flipped``, ``dropped``."""

    def construct(s, nbits, plan):
        s.in_val = InPort()
        s.in_msg = InPort(nbits)
        s.out_val = OutPort()
        s.out_msg = OutPort(nbits)
        s.mask = Wire(nbits)
        s.drop = Wire()
        s.plan = plan
        s.nbits = nbits
        s._reset_counts()

        @update
        def up_apply():
            s.out_val @= s.in_val & ~s.drop
            s.out_msg @= s.in_msg ^ s.mask

        @update_ff
        def up_plan():
            if s.reset:
                s._reset_counts()
            else:
                if s.in_val:
                    if s.pending is not None:
                        s.log.append((s.flits, s.cycle, s.pending))
                        if s.pending.kind == "drop":
                            s.dropped += 1
                        else:
                            s.flipped += 1
                    s.flits += 1
                s.cycle += 1
            s.pending = s.plan.fault_for(s.flits, s.nbits)
            mask, drop = 0, 0
            if s.pending is not None:
                if s.pending.kind == "drop":
                    drop = 1
                else:
                    for b in s.pending.bits:
                        mask |= 1 << b
            s.mask <<= Bits(s.nbits, mask)
            s.drop <<= drop

    def _reset_counts(s):
        s.flits = 0
        s.cycle = 0
        s.flipped = 0
        s.dropped = 0
        s.log = []
        s.pending = None

    def counts(s) -> dict:
        return dict(flits=s.flits, flipped=s.flipped, dropped=s.dropped)

    def line_trace(s):
        if not s.in_val:
            return " "
        return "D" if s.drop else ("X" if int(s.mask) else " ")


class FaultyChannel(Component):
    """A :class:`FaultInjector` then a fault-free :class:`ChannelRTL`: same ports as ChannelRTL."""

    def construct(s, nbits, latency, plan):
        s.in_val = InPort()
        s.in_msg = InPort(nbits)
        s.out_val = OutPort()
        s.out_msg = OutPort(nbits)
        s.inj = FaultInjector(nbits, plan)
        s.pipe = ChannelRTL(nbits, latency)
        s.inj.in_val //= s.in_val
        s.inj.in_msg //= s.in_msg
        s.pipe.in_val //= s.inj.out_val
        s.pipe.in_msg //= s.inj.out_msg
        s.out_val //= s.pipe.out_val
        s.out_msg //= s.pipe.out_msg

    def line_trace(s):
        return f"{s.inj.line_trace()}{s.pipe.line_trace()}"


def faulty_channel(plan: FaultPlan):
    """A channel factory for ``LinkRTL(..., channel=faulty_channel(plan))``."""
    if not isinstance(plan, FaultPlan):
        raise TypeError(f"faulty_channel needs a FaultPlan, got {type(plan).__name__}")

    def make(nbits, latency):
        return FaultyChannel(nbits, latency, plan)

    return make
