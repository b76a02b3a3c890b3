"""The buffer plan of one node: a bump allocator over the engine's six buffers.

Regions are named (``("X", "x3")``: layer 3's inputs, for every image of the batch) and allocated
once; :meth:`Alloc.overflow` lists the buffers a plan does not fit, which
:func:`~pymtl_fp.cluster.compiler.compile.compile_cluster` refuses before any simulation.
"""

from __future__ import annotations

from pymtl_fp.engine import msgs

BUFS = ("X", "D", "O", "W", "G", "B")
#: each depth of an engine config and the buffers it sizes (:func:`pymtl_fp.engine.msgs.buffer_depth`)
DEPTH_BUFFERS = {"act_depth": ("X", "D", "O"), "weight_depth": ("W", "G"), "bias_depth": ("B",)}
BUF_ID = msgs.BUF_IDS


def pow2_at_least(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``): a depth sized to what a program
    uses, rounded so that similar runs share one hardware build."""
    return 1 << max(0, int(n) - 1).bit_length()


class Alloc:
    """Bump allocator over the six buffers of one node; remembers every region."""

    def __init__(self, ecfg):
        self.ecfg = ecfg
        self.top = {b: 0 for b in BUFS}
        self.regions = {}

    def get(self, buf: str, name: str, words: int) -> int:
        key = (buf, name)
        if key not in self.regions:
            self.regions[key] = (self.top[buf], int(words))
            self.top[buf] += int(words)
        return self.regions[key][0]

    def depth(self, buf: str) -> int:
        return msgs.buffer_depth(BUF_ID[buf], self.ecfg)

    def usage(self) -> dict:
        return {b: {"used": self.top[b], "depth": self.depth(b)} for b in BUFS}

    def overflow(self) -> list:
        return [b for b in BUFS if self.top[b] > self.depth(b)]
