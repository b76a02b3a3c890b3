"""The residual layers of a chain (:class:`~pymtl_fp.explore.chain.Chain`) costed as the simulated cluster
runs them: the terms of :mod:`.residual_terms` (the node and storage models' checked against the cluster),
called on a shape-level :class:`~pymtl_fp.explore.layers.Network` instead of a :class:`pymtl_fp.net.Net`.

**Which layers.**  An ``add`` (its skip is its second input); an add whose skip is a 1x1 conv read by
nothing else is the cluster's add with a projection (``proj``: the conv's cycles and words stay the
chain's, a MAC unit of their own); an ``avg`` pool to a 1x1 map is the cluster's global average pool
(``gap``).  The skip's *reader* (tensor ``t`` of :mod:`.residual_terms`) is the first layer reading the
skip (the projection's input for ``proj``); a tensor needs a gradient where a MAC layer comes before it,
and comes out of a ReLU where its producer has one (through max pools).

**Cycles** per image (:func:`cycles`), on an accumulator of :mod:`.node_model` (LOAD/STORE closed forms,
the unit's ``count + 2``, one issue cycle a command; the projection's conv commands counted by the chain's
``layer_cycles`` instead): on the add's unit its forward and backward terms and the copy of a main-branch
gradient the backward leaves unplaced; on the reader's unit the fork's sum of the skip's gradient share.
The skip counts as read on the add's FPGA (a projection copies it into its input): at a cut the cluster
instead STOREs it on one node and LOADs it on the next, which the chain, like every tensor crossing a
cut, charges to the link, not the stage; likewise a backward pass's first data gradient is sent, not
copied.  A unit share computes its share of the elements (channels or rows, the projection's input whole
for a channel share), dealt to the FPGA's ``E`` engines as the convs' channels are, each engine with the
router of a cluster node.

**Words** (:func:`skip_words`): :func:`.residual_terms.words` on each FPGA of a cut vector, with the
skips placed by the cuts (the reader on the FPGA of its unit's first piece, the add on that of its
unit's last piece: a residual unit split between FPGAs counts whole on one of them).
"""

from __future__ import annotations

from types import SimpleNamespace

from pymtl_fp.cost.layer import engine_share
from pymtl_fp.explore import residual_terms
from pymtl_fp.explore.node_model import Acc


class Residuals:
    """A :class:`~pymtl_fp.explore.layers.Network`'s residual layers and the facts
    :mod:`.residual_terms` asks of a net (layer indices: tensor ``i`` is layer ``i``'s first input)."""

    def __init__(self, network):
        self.network = network
        layers = self.layers = network.layers
        self.index = {ly.name: i for i, ly in enumerate(layers)}
        macs = [i for i, ly in enumerate(layers) if ly.has_macs]
        self.first_mac = macs[0] if macs else len(layers)
        self.kind, self.reader, self.proj = {}, {}, {}
        for i, ly in enumerate(layers):
            if ly.kind == "pool" and ly.pool_op == "avg" and ly.Ho == ly.Wo == 1:
                self.kind[i] = "gap"
            if ly.kind != "add":
                continue
            skip, src = ly.inputs[1], self._producer(ly.inputs[1])
            if src is not None and src.kind == "conv" and src.R == src.S == 1 and not src.relu \
                    and network.consumers(src.name) == [ly.name]:
                self.proj[i], skip = self.index[src.name], src.inputs[0]
            self.kind[i] = "proj" if i in self.proj else "add"
            self.reader[i] = min(self.index[c] for c in network.consumers(skip)
                                 if self.index[c] not in self.proj.values())

    def skip_reads(self) -> set:
        """``(layer, tensor)``: each add's read of its skip, or its projection's."""
        out = set()
        for li in self.reader:
            ly = self.layers[self.proj.get(li, li)]
            out.add((ly.name, ly.inputs[0] if li in self.proj else ly.inputs[1]))
        return out

    def _producer(self, tensor):
        return None if tensor == "input" else self.layers[self.index[tensor]]

    # -- the net facts of residual_terms (``sk.net``) and the skips' (``sk``) ----------------------
    def needs_grad(self, i: int) -> bool:
        src = self._producer(self.layers[i].inputs[0])
        return src is not None and self.index[src.name] >= self.first_mac

    def rectified(self, i: int) -> bool:
        src = self._producer(self.layers[i].inputs[0])
        while src is not None and src.kind == "pool" and src.pool_op == "max":
            src = self._producer(src.inputs[0])
        return src is not None and bool(src.relu)

    def source(self, li: int) -> int:
        return self.reader[li]

    def local(self, li: int) -> bool:
        return True

    @property
    def net(self):
        return self

    def fields(self, i: int, share=None) -> dict:
        """Layer ``i``'s ``c, h, w`` (its skip's, for an add) and ``k, ho, wo``, of ``share``:
        ``(axis, fraction, E)``."""
        ly = self.layers[i]
        skip = self.layers[self.proj[i]].in_shape if i in self.proj else ly.in_shape
        c, h, w = skip
        k, ho, wo = ly.out_shape
        if share is not None:
            axis, frac, E = share
            if axis == "rows":
                h, ho = max(1, round(h * frac)), max(1, round(ho * frac))
            else:
                k = max(1, round(k * frac))
                c = c if i in self.proj else max(1, round(c * frac))
            k = engine_share(k, E)
            c = c if i in self.proj else engine_share(c, E)
        return {"res": self.kind.get(i), "c": c, "h": h, "w": w, "k": k, "ho": ho, "wo": wo}


class _Busy(Acc):
    """The node model's accumulator; a compute command (a projection's conv) costs nothing here."""

    def __init__(self, P: int):
        super().__init__(0, P)
        self.begin("fwd")

    def compute(self, cycles):
        self.fresh, self.last = False, 0


def cycles(res: Residuals, members: list, P: int, share) -> int:
    """Busy cycles per image of the residual work of a unit's ``members`` (layer indices) on one of its
    engines, ``share`` as :meth:`Residuals.fields`'s (the module docstring's **Cycles**)."""
    a = _Busy(P)
    for i in members:
        kd = res.kind.get(i)
        if kd is not None:
            f = res.fields(i, share)
            residual_terms.forward(a, res, f, kd, i, 0)
            dx, placed = residual_terms.backward(a, res, f, kd, i, 0, {})
            residual_terms.place(a, dx, placed, first=False)
        for li, t in res.reader.items():  # the forks of the skips this layer reads
            if t == i and res.needs_grad(t):
                f = res.fields(li)
                c, h = (f["c"], f["h"]) if share is None else _share_of(f["c"], f["h"], share)
                residual_terms.fork(a, t, {t: [a.act(c, h, f["w"])]})
    return a.c.per_step()


def _share_of(c: int, h: int, share) -> tuple:
    """``(channels, rows)`` of a projection's skip within ``share``."""
    axis, frac, E = share
    if axis == "rows":
        return engine_share(c, E), max(1, round(h * frac))
    return engine_share(max(1, round(c * frac)), E), h


def skip_words(res: Residuals, chain, cuts, P: int, slots) -> list:
    """:class:`~pymtl_fp.explore.node_storage.NodeWords` of the residual regions of each FPGA of the cut
    vector ``cuts`` (``slots[i]``: the images FPGA ``i`` keeps; the module docstring's **Words**)."""
    import numpy as np

    from pymtl_fp.explore.node_storage import NodeWords

    cuts = np.asarray(cuts, dtype=np.int64)
    n = len(cuts) - 1
    unit_of = chain.unit_of

    def fpga(m):
        return int(np.searchsorted(cuts, m, side="right")) - 1

    def first(i):
        return min(fpga(int(chain.offset[unit_of[res.layers[i].name]])), n - 1)

    def last(i):
        return min(fpga(int(chain.offset[unit_of[res.layers[i].name] + 1]) - 1), n - 1)

    readers = set(res.reader.values())
    nodes = [[] for _ in range(n)]
    for i in range(len(res.layers)):
        j = first(i) if i in readers else last(i)
        nodes[j].append(SimpleNamespace(layer=i, k0=0, k1=res.layers[i].K))
    layers = [res.fields(i) for i in range(len(res.layers))]
    sk = SimpleNamespace(net=res, source=res.source,
                         all=[(li, t, first(t), last(li)) for li, t in sorted(res.reader.items())])
    out = []
    for j, items in enumerate(nodes):
        nw = NodeWords(j)
        residual_terms.words(nw, sk, j, items, layers, P, int(slots[j]))
        out.append(nw)
    return out

