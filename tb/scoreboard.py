"""Generic scoreboard: compare an expected message sequence with a received one and say *how*
they differ.

:func:`compare` classifies every difference into four separate kinds, each reported as a count
plus the first few examples:

* **lost** -- an expected message that never arrived (and no unexpected message took its place);
* **duplicated** -- an extra copy of a message that was expected (fewer times);
* **reordered** -- a message that arrived, but out of order (the fewest messages whose removal
  leaves both sequences in the same order: length minus longest increasing subsequence);
* **corrupted** -- a message arrived that was never sent; it is paired, in order, with an expected
  message that is missing (``expected`` is ``None`` when there is none left to pair with).

Messages are compared through ``key`` (default: ``int()`` of PyMTL3 Bits and bitstructs, else the
value itself), so anything hashable works.  Works for any unit, not only links.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import Counter, defaultdict


def default_key(msg):
    """A hashable comparison key: the integer value of Bits/bitstructs, else the message."""
    to_bits = getattr(msg, "to_bits", None)
    if callable(to_bits):
        return int(to_bits())
    if hasattr(msg, "nbits") and hasattr(msg, "uint"):
        return int(msg)
    return msg


@dataclasses.dataclass(frozen=True)
class Example:
    """One difference: positions in the expected/received sequences (``None`` if absent)."""

    kind: str
    expected_index: int | None
    received_index: int | None
    expected: object = None
    received: object = None

    def __str__(self):
        if self.kind == "lost":
            return f"expected[{self.expected_index}]={self.expected!s} never arrived"
        if self.kind == "duplicated":
            return f"received[{self.received_index}]={self.received!s} is an extra copy"
        if self.kind == "reordered":
            return (f"received[{self.received_index}]={self.received!s} out of order "
                    f"(expected at {self.expected_index})")
        exp = ("nothing" if self.expected_index is None
               else f"expected[{self.expected_index}]={self.expected!s}")
        return f"received[{self.received_index}]={self.received!s} instead of {exp}"


@dataclasses.dataclass(frozen=True)
class ScoreboardReport:
    expected_count: int
    received_count: int
    matched_in_order: int  #: messages that arrived, once, in order
    lost: int
    duplicated: int
    reordered: int
    corrupted: int
    examples: dict  #: kind -> tuple of the first few :class:`Example`

    @property
    def ok(self) -> bool:
        return (self.lost == self.duplicated == self.reordered == self.corrupted == 0
                and self.expected_count == self.received_count)

    def counts(self) -> dict:
        return dict(lost=self.lost, duplicated=self.duplicated, reordered=self.reordered,
                    corrupted=self.corrupted)

    def summary(self) -> str:
        head = (f"scoreboard: {self.received_count} received / {self.expected_count} expected, "
                f"{self.matched_in_order} in order; lost {self.lost}, duplicated {self.duplicated}, "
                f"reordered {self.reordered}, corrupted {self.corrupted}")
        lines = [head + (" -- OK" if self.ok else "")]
        for kind in ("lost", "duplicated", "reordered", "corrupted"):
            for ex in self.examples.get(kind, ()):
                lines.append(f"  {kind}: {ex}")
        return "\n".join(lines)

    def assert_ok(self, what: str = "") -> None:
        if not self.ok:
            raise AssertionError((what + ": " if what else "") + self.summary())


def _lis_members(seq: list[int]) -> set[int]:
    """Indices (into ``seq``) of one longest strictly increasing subsequence."""
    tails, tails_idx, prev = [], [], [-1] * len(seq)
    for i, v in enumerate(seq):
        j = bisect.bisect_left(tails, v)
        if j == len(tails):
            tails.append(v)
            tails_idx.append(i)
        else:
            tails[j] = v
            tails_idx[j] = i
        prev[i] = tails_idx[j - 1] if j > 0 else -1
    out = set()
    i = tails_idx[-1] if tails_idx else -1
    while i >= 0:
        out.add(i)
        i = prev[i]
    return out


def compare(expected, received, *, key=default_key, max_examples: int = 5) -> ScoreboardReport:
    """Compare the ``expected`` and ``received`` sequences (see the module docstring)."""
    expected, received = list(expected), list(received)
    ek = [key(m) for m in expected]
    rk = [key(m) for m in received]
    e_count = Counter(ek)
    # The first n occurrences of a value in each sequence are paired with each other
    # (n = the smaller count); the others are missing (expected) or extra (received).
    e_pos = defaultdict(list)
    for i, k in enumerate(ek):
        e_pos[k].append(i)
    seen = Counter()
    paired = []  # (expected index, received index), in received order
    extra = []  # received indices
    for j, k in enumerate(rk):
        n = seen[k]
        seen[k] += 1
        if n < len(e_pos.get(k, ())):
            paired.append((e_pos[k][n], j))
        else:
            extra.append(j)
    paired_e = {i for i, _ in paired}
    missing = [i for i in range(len(ek)) if i not in paired_e]
    dup = [j for j in extra if e_count.get(rk[j], 0) > 0]
    unexpected = [j for j in extra if e_count.get(rk[j], 0) == 0]
    corrupt_pairs = list(zip(missing, unexpected, strict=False))
    lost = missing[len(corrupt_pairs):]
    corrupt_pairs += [(None, j) for j in unexpected[len(corrupt_pairs):]]
    order = [i for i, _ in paired]
    keep = _lis_members(order)
    reordered = [paired[t] for t in range(len(paired)) if t not in keep]

    def ex(kind, i, j):
        return Example(kind, i, j, expected[i] if i is not None else None,
                       received[j] if j is not None else None)

    examples = {
        "lost": tuple(ex("lost", i, None) for i in lost[:max_examples]),
        "duplicated": tuple(ex("duplicated", None, j) for j in dup[:max_examples]),
        "reordered": tuple(ex("reordered", i, j) for i, j in reordered[:max_examples]),
        "corrupted": tuple(ex("corrupted", i, j) for i, j in corrupt_pairs[:max_examples]),
    }
    return ScoreboardReport(len(expected), len(received), len(keep), len(lost), len(dup),
                            len(reordered), len(corrupt_pairs), examples)
