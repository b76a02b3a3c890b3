"""The residual layers' terms of the analytical node models: what the compiler's residual code
(:mod:`pymtl_fp.cluster.compiler.residual`) adds to a node's busy cycles (:mod:`.node_model`) and buffer
words (:mod:`.node_storage`), derived from the layer shapes and the partition only.

Busy cycles (serial engines): an ``ADD``, ``MASK``, ``GAP`` or ``GAPB`` of the router's residual unit
over ``n`` elements takes ``n + 2`` cycles (``+ 17`` with pipelined units:
:func:`~pymtl_fp.cost.latency.router_unit_latency`) after the STOREs of its operands to the scratch FIFO,
and its result is LOADed back.  Per image:

* forward: an identity add STOREs its two operands, adds, LOADs the sum; a global average pool STOREs
  its input, averages, LOADs the means; an add with a projection copies the skip into its input
  (where the skip's reader is on the node), runs its 1x1 conv, then adds like an identity add; a
  skip crossing a cut is LOADed after the node's input and STOREd after its output by every node
  between its reader's and its add's;
* backward: a global average pool STOREs the gradient (and its input, where that comes out of a
  ReLU), runs ``GAPB`` and LOADs the input gradient; an add masks (STORE, STORE, ``MASK``, LOAD)
  each share whose tensor comes out of a ReLU, else copies the main branch's share into the
  previous layer's output gradient (:func:`place`); a projection's skip share is its ``bwd_data``; each share
  reaching its source's node is summed at the fork (STORE, STORE, ``ADD``, LOAD); shares crossing
  cuts travel as the skips do, behind the data gradient.

Buffer words: an identity add's and a pool's input kept per image in X (their backward masks by
it), a projection's main branch per image and its conv's result (one image) in X; a crossing
skip's slot per image on the add's node (one image on a node it passes through); in D, the
layer's incoming gradient (one image), a masked skip share (one image), a projection's data
gradient (one image) and a share arriving from a later node (one image).
"""

from __future__ import annotations

from pymtl_fp.cost.latency import UNIT_OVERHEAD


def _cdiv(a, b):
    return -(-int(a) // b)


#: the item kinds of the residual layers
KINDS = ("add", "gap", "proj")


class Skips:
    """A residual net's skips over a partition's ``nodes`` (``(add, t, reader node, add node)``,
    :func:`~pymtl_fp.cluster.compiler.residual.skips`) and the net's ReLU and gradient facts."""

    def __init__(self, net, nodes):
        from pymtl_fp.cluster.compiler.residual import skips

        self.net = net
        self.all = skips(net, nodes) if net is not None and net.residual else []
        self.holder = {it.layer: j for j, items in enumerate(nodes) for it in items}

    def crossing(self, lo, hi):
        return [s for s in self.all if s[2] <= lo and s[3] >= hi]

    def local(self, li) -> bool:
        """Is the skip of add ``li`` read on the add's node?"""
        return any(s[0] == li and s[2] == s[3] for s in self.all)

    def source(self, li) -> int:
        return next(s[1] for s in self.all if s[0] == li)


def unit(a, n: int) -> None:
    """A residual-unit instruction over ``n`` elements on the node model's accumulator ``a`` (whose
    ``unit_latency`` the routers' pipelined units add)."""
    cycles = n + UNIT_OVERHEAD + a.unit_latency
    a.c.io += cycles
    a.c.commands += 1
    a.fresh, a.last = False, cycles


def forward(a, sk: Skips, f: dict, kd: str, li: int, conv_fwd) -> int:
    """An add, pool or projection's forward pass on ``a``; returns its output's elements."""
    n_in = a.act(f["c"], f["h"], f["w"])
    n_out = a.act(f["k"], f["ho"], f["wo"])
    if kd == "gap":
        a.store(n_in, local=True)
        unit(a, n_in)
        a.load(n_out)
        return n_out
    if kd == "proj":
        if sk.local(li):
            a.copy(n_in)
        a.compute(conv_fwd)
    _mask(a, n_out)  # (the add's STORE, STORE, unit, LOAD: the same terms as a MASK's)
    return n_out


def _mask(a, n):
    a.store(n, local=True)
    a.store(n, local=True)
    unit(a, n)
    a.load(n)


def backward(a, sk: Skips, f: dict, kd: str, li: int, conv_bwd, pending: dict) -> tuple:
    """An add, pool or projection's backward pass on ``a``: ``(elements of its input gradient, whether
    it is already where the previous layer reads it)``, or ``(None, True)``; skip shares for their
    forks go to ``pending`` (``{tensor: [elements]}``, ``("send", add)`` for one crossing a cut)."""
    net = sk.net
    n_in = a.act(f["c"], f["h"], f["w"])
    n_out = a.act(f["k"], f["ho"], f["wo"])
    if kd == "gap":
        if not net.needs_grad(li):
            return None, True
        a.store(_cdiv(f["c"], a.P) * a.P, local=True)
        if net.rectified(li):
            a.store(n_in, local=True)
        unit(a, n_in)
        a.load(n_in)
        return n_in, True
    t = sk.source(li)
    if net.needs_grad(t):
        if kd == "proj":
            a.compute(conv_bwd)
        elif net.rectified(t):
            _mask(a, n_in)
        pending.setdefault(t if sk.local(li) else ("send", li), []).append(n_in)
    if not net.needs_grad(li):
        return None, True
    if net.rectified(li):
        _mask(a, n_out)
        return n_out, True
    return n_out, False


def place(a, dx, placed: bool, first: bool) -> None:
    """Where an add or pool's input gradient (``dx`` elements, :func:`backward`'s) goes: sent back
    (STOREd) from the node's ``first`` item, else copied into the previous layer's output gradient
    unless already ``placed`` there."""
    if dx is None:
        return
    if first:
        a.store(dx)
    elif not placed:
        a.copy(dx)


def fork(a, t: int, pending: dict) -> None:
    """The skip shares waiting for tensor ``t``'s gradient, summed into it."""
    for n in pending.pop(t, []):
        _mask(a, n)  # (the same STORE, STORE, unit, LOAD as a MASK: here an ADD)


def words(nw, sk: Skips, j: int, items: list, layers: list, P: int, slots: int) -> None:
    """The residual layers' regions of node ``j`` on :class:`~pymtl_fp.explore.node_storage.NodeWords`
    ``nw`` (``slots``: the images whose inputs the node keeps)."""
    def act(c, h, w):
        return _cdiv(c, P) * h * w

    net = sk.net
    on_node = {it.layer for it in items}
    for it in items:
        f = layers[it.layer]
        kd = f.get("res")
        if kd is None or (kd == "proj" and it.k1 - it.k0 != f["k"]):
            continue
        name = f"layer {it.layer}"
        main = act(f["k"], f["ho"], f["wo"])
        if kd in ("add", "gap"):
            nw.add("X", f"{name} input ({slots} images)", slots * act(f["c"], f["h"], f["w"]))
            nw.add("D", f"{name} output gradient (one image)", main)
        else:
            nw.add("X", f"{name} main branch ({slots} images)", slots * main)
            nw.add("X", f"{name} projected skip (one image)", main)
        if kd == "gap":
            continue
        t = sk.source(it.layer)
        skip = act(f["c"], f["h"], f["w"])
        if kd == "add" and t not in on_node:
            nw.add("X", f"{name} skip ({slots} images)", slots * skip)
        if net.needs_grad(t):
            if kd == "proj":
                nw.add("D", f"{name} skip's gradient share (one image)", skip)
            elif net.rectified(t):
                nw.add("D", f"{name} masked skip share (one image)", skip)
    for li, t, js, ja in sk.all:  # skips passing through, and shares arriving from a later node
        f = layers[li]
        skip = act(f["c"], f["h"], f["w"])
        if js < j < ja:
            nw.add("X", f"layer {li} skip passing through (one image)", skip)
        if js <= j < ja and net.needs_grad(t):
            nw.add("D", f"layer {li} skip share arriving (one image)", skip)
