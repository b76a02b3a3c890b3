"""What one node computes, and the layer geometry as its engine runs it.

:class:`NodeSpec` is the fixed part of a node's code-generation plan
(:class:`~pymtl_fp.cluster.compiler.plan.NodePlan`): its chain position, engine, the network, the
partition (its items: layers or pieces of a layer split over two nodes), the training
configuration and every node's array side.  Its methods answer geometry questions that depend on
nothing else: a layer's fields as the engine runs it (tap-packed: ``C*R*S`` channels), the kind of
an item, the words of a layer's input or output map, the layout a tensor arrives in, the command
fields of a conv/fc piece.
"""

from __future__ import annotations

from dataclasses import dataclass

from pymtl_fp.cluster.compiler.partition import _Shape, layer_info
from pymtl_fp.engine.msgs import tiles


@dataclass(frozen=True, eq=False)
class NodeSpec:
    """Node ``j`` of partition ``part`` on engine ``ecfg``; ``Ps``: every node's array side;
    ``b0``: the first image of the node's share of the batch (a data-parallel replica's: seeds
    round image ``b`` as image ``b0 + b`` of the whole batch)."""

    j: int
    ecfg: object
    net: object
    part: object
    cfg: object
    shifts: dict
    fmt: object
    Ps: tuple
    b0: int = 0

    @property
    def P(self) -> int:
        return self.ecfg.P

    @property
    def items(self) -> list:
        return self.part.nodes[self.j]

    @property
    def B(self) -> int:
        return self.part.batch

    def passes_through(self, j) -> bool:
        """Node ``j`` only forwards the data gradient of its one item (a split layer's first piece)
        from the second holder to node ``j-1`` (a link-to-link move, no relayout)."""
        items = self.part.nodes[j]
        if len(items) != 1 or items[0].pool:
            return False
        f = self.info(items[0].layer)
        return items[0].k0 == 0 and items[0].k1 < f["k"] and f["p"] > 0

    def src_P(self, port) -> int:
        """The array side of the layout a tensor arriving on ``port`` is in (the producer's)."""
        j, n = self.j, self.part.n
        if port == "fwd_in":
            return self.Ps[max(j - 1, 0)]  # the host sends images in node 0's layout
        if j == n - 1:
            return self.Ps[j]              # the host sends loss gradients in node N-1's layout
        return self.Ps[j + 2] if self.passes_through(j + 1) else self.Ps[j + 1]

    def info(self, li):
        """Layer ``li``'s fields as the engine runs it (tap-packed: ``C*R*S`` channels, ``1 x 1``)."""
        return layer_info(self.net, li, li in self.part.packed)

    def kind(self, it):
        """'pool', 'add' (an identity skip's add), 'gap' (a global average pool), 'proj' (an add with
        a projection: a conv/fc-like item whose input is the skip), 'whole', 'first' (k1 < K: sends
        to the next node) or 'second' (k0 > 0)."""
        if it.pool:
            return self.info(it.layer).get("res", "pool")
        f = self.info(it.layer)
        if it.k0 > 0:
            return "second"
        if it.k1 < f["k"]:
            return "first"
        return f.get("res", "whole")  # ('proj': an add whose skip goes through a 1x1 conv)

    def in_words(self, li):
        f = self.info(li)
        return tiles(f["c"], self.P) * f["h"] * f["w"]

    def out_words(self, li, k0=0, k1=None):
        f = self.info(li)
        k1 = f["k"] if k1 is None else k1
        return tiles(k1 - k0, self.P) * f["ho"] * f["wo"]

    def conv_fields(self, it, n, k0=0, k1=None):
        f = self.info(it.layer)
        k1 = f["k"] if k1 is None else k1
        kk = k1 - k0
        return dict(n=n, c=f["c"], k=kk, ct=tiles(f["c"], self.P), kt=tiles(kk, self.P), h=f["h"], w=f["w"],
                    ho=f["ho"], wo=f["wo"], r=f["r"], s=f["s"], lgst=f["stride"].bit_length() - 1, pad=f["pad"])

    def case(self, it, n, k0=0, k1=None):
        """The layer's own shapes (not packed): its useful MACs."""
        f = layer_info(self.net, it.layer)
        k1 = f["k"] if k1 is None else k1
        return dict(x=_Shape(n, f["c"], f["h"], f["w"]), w=_Shape(k1 - k0, f["c"], f["r"], f["s"]),
                    w_shape=(k1 - k0, f["c"], f["r"], f["s"]), stride=f["stride"], pad=f["pad"])

    def mode(self, which):
        """1 where the training configuration rounds ``which`` (``fwd_mode``, ...) stochastically."""
        return int(getattr(self.cfg, which) == "stochastic")

    def layer_name(self, it) -> str:
        """The name of item ``it``'s layer (the trace names compute commands by it)."""
        return self.net.layers[it.layer].name
