"""Read a VCD file back (with pyvcd's tokenizer) to check what a traced simulation recorded.

:func:`read_vcd` returns every variable's value changes, keyed by its hierarchical name
(``TOP.Mac.acc``) and by its short name where that is unambiguous; :func:`values_at_edges`
samples a signal just before each rising edge of a clock, i.e. the value a flip-flop sees.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from vcd.reader import TokenKind, tokenize


@dataclass
class VcdTrace:
    timescale: str = ""
    changes: dict = field(default_factory=dict)  #: full name -> [(time, int | None)]
    widths: dict = field(default_factory=dict)  #: full name -> bits

    def signal(self, name: str) -> list:
        """Changes of the signal ``name``: a full dotted name, or a suffix naming one net."""
        if name in self.changes:
            return self.changes[name]
        hits = [full for full in self.changes if full.endswith("." + name)]
        if hits and all(self.changes[h] == self.changes[hits[0]] for h in hits):
            return self.changes[hits[0]]  # one net seen at several levels of hierarchy
        if len(hits) != 1:
            raise KeyError(f"signal {name!r} {'not found' if not hits else 'is ambiguous'} in VCD "
                           f"({len(self.changes)} signals; e.g. {sorted(self.changes)[:5]})")
        return self.changes[hits[0]]


def read_vcd(path) -> VcdTrace:
    trace = VcdTrace()
    scope: list[str] = []
    by_id = defaultdict(list)
    now = 0
    with open(path, "rb") as fh:
        for tok in tokenize(fh):
            kind = tok.kind
            if kind is TokenKind.TIMESCALE:
                ts = tok.timescale
                magnitude = getattr(ts.magnitude, "value", ts.magnitude)
                trace.timescale = f"{magnitude}{getattr(ts.unit, 'value', ts.unit)}"
            elif kind is TokenKind.SCOPE:
                scope.append(tok.scope.ident)
            elif kind is TokenKind.UPSCOPE:
                scope.pop()
            elif kind is TokenKind.VAR:
                full = ".".join(scope + [tok.var.reference])
                by_id[tok.var.id_code].append(full)
                trace.changes.setdefault(full, [])
                trace.widths[full] = tok.var.size
            elif kind is TokenKind.CHANGE_TIME:
                now = tok.time_change
            elif kind in (TokenKind.CHANGE_SCALAR, TokenKind.CHANGE_VECTOR):
                data = tok.data
                change = data.value
                if kind is TokenKind.CHANGE_SCALAR:
                    value = {"0": 0, "1": 1}.get(change)
                else:
                    value = change if isinstance(change, int) else None
                for full in by_id[data.id_code]:
                    trace.changes[full].append((now, value))
    return trace


def value_at(changes: list, time: int):
    """The value of a signal at ``time`` (the last change at or before it)."""
    value = None
    for t, v in changes:
        if t > time:
            break
        value = v
    return value


def values_at_edges(trace: VcdTrace, signal: str, clock: str = "clk") -> list:
    """The value of ``signal`` just before every rising edge of ``clock``."""
    clk = trace.signal(clock)
    sig = trace.signal(signal)
    edges = [t for (t, v), (_, prev) in zip(clk[1:], clk[:-1]) if v == 1 and prev == 0]
    return [value_at(sig, t - 1) for t in edges]
