"""Collectives over the chain's links, as node-program code: the weight-gradient all-reduce of
data-parallel and hybrid training (:mod:`pymtl_fp.cluster.compiler.replicas`), and the pass-through of
traffic between replicas that are not neighbours.

What travels is **un-rounded**: each replica's engine runs ``bwd_weight`` with ``raw = 1`` over its
share of the batch (accumulator-wide ``dw`` and ``db`` partial sums in B), the routers add the
partial sums (``REDUCE``, modulo ``2**stream_bits``: exact whenever the whole batch's sum fits the
accumulator, as it must on one node) and each replica rounds the total once (``REQUANT``: the
engine's rounding of each element at its flat index, the step's seed), so the gradient every
replica applies is, bit for bit, the one-node gradient of the whole batch.

The all-reduce on ``G`` members at chain positions ``q_0 < q_1 < ... < q_{G-1}`` (one per
replica; nodes between them pass the stream on) is the ring's open form on a chain, pipelined
element by element:

* **reduce** towards the last member over the ``fwd`` links: ``q_0`` sends its partial sums,
  each ``q_g`` adds its own to what arrives (``REDUCE fwd_in + scratch -> fwd_out``);
* **broadcast** back over the ``bwd`` links: the last member's ``REDUCE`` sends each sum on at
  once (``-> scratch + bwd_out``) and every earlier member keeps a copy as it passes it on
  (``MOVE bwd_in -> scratch`` at the first; a middle member's ``RELAY`` runs its reduce and its
  part of the broadcast at once, ``bwd_in -> bwd_out + scratch``, so the broadcast never waits
  for a member's reduce to end).

**Chunks.**  A router runs a ``MOVE`` only once its STOREs have drained, and a node between
two members passes the reduce on (``MOVE fwd_in -> fwd_out``) before the broadcast
(``MOVE bwd_in -> bwd_out``).  So the first member and every pass-through node split an all-reduce
of ``M`` elements into chunks of at most ``C`` (:func:`collective_chunk`: the routers' ``out_depth``,
in whole words of B and whole beats): ``STORE c; MOVE bwd_in -> scratch c`` at the first member, ``MOVE c;
MOVE c`` at a pass-through node, chunk after chunk.  Each chunk fits the output buffer it leaves
through, so no instruction waits for the ring to take what the broadcast coming back blocks (a
ring's buffers hold far fewer than a layer's gradients).  The other members' ``RELAY`` and
``REDUCE`` stream both directions at once and stay whole (their scratch FIFO pops their own partial
sums at its head while the sums gather at its tail, chunk after chunk in the same order); every
member's scratch FIFO receives the same ``M`` sums in the same order, so the rounding after it is
that of one chunk.  An all-reduce of ``M <= C`` elements is one chunk.

Each link carries the ``M`` elements once per direction, so one chunk of ``M`` takes about
``M + 2 (q_{G-1} - q_0) L`` cycles for link latency ``L`` (the reduce and the broadcast overlap):
the bandwidth term of a ring's reduce-scatter + all-gather (``2 (G-1)/G * M`` per link, one
direction) without its ``2 (G-1)`` steps; ``k`` chunks pay the round trip ``2 (q_{G-1} - q_0) L``
(and each node's turn-around) ``k`` times.  A ring topology runs the same code (its closing link
is not used).  Reduce-scatter and all-gather as separate collectives (a ring's chunked form) are
not built: nothing in training needs them here.
"""

from __future__ import annotations

import math

from pymtl_fp.cluster.compiler.dma import slice_seed
from pymtl_fp.cluster.compiler.plan import Pass
from pymtl_fp.cluster.compiler.updates import Updates
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.engine import program
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden.train import tensor_id


def collective_sizes(f: dict, it, P: int) -> tuple:
    """Elements of item ``it``'s ``db`` and ``dw`` all-reduces on ``P x P`` engines (``f``: its
    layer's :func:`~pymtl_fp.cluster.compiler.partition.layer_info`)."""
    kt = tiles(it.k1 - it.k0, P)
    return kt * P, kt * tiles(f["c"], P) * f["r"] * f["s"] * P * P


def collective_chunk(out_depth: int, P: int, lanes: int) -> int:
    """Elements of an all-reduce chunk (module docstring) for routers of output buffers of
    ``out_depth`` elements, ``P x P`` engines and beats of ``lanes``: the most an output buffer holds
    in whole words of B (``P`` elements) and whole beats; a :class:`ClusterError` if not one word."""
    unit = math.lcm(P, lanes)
    if out_depth < unit:
        raise ClusterError(f"the routers' output buffers (out_depth={out_depth}) hold less than one {unit}-element "
                           f"word of an all-reduce: give them out_depth >= {unit}")
    return out_depth - out_depth % unit


def chunks(n: int, chunk: int | None):
    """The sizes of the chunks of an all-reduce of ``n`` elements (``chunk`` None: one)."""
    step = n if chunk is None else chunk
    return [min(step, n - i) for i in range(0, n, step)]


class Collectives(Pass):
    """Collective code of one node (``pos``: its chain position), and the rounding and update of
    un-rounded weight-gradient sums; ``chunk``: the elements of an all-reduce chunk (None: one chunk
    whatever the size)."""

    def __init__(self, plan, chunk: int | None = None):
        super().__init__(plan)
        self.chunk = chunk

    def _words(self, buf, elems):
        """Words of ``buf`` that hold ``elems`` elements (a whole number: chunks are whole words)."""
        return elems // (self.node.P * self.node.P if buf in ("W", "G") else self.node.P)

    def _chunks(self, n):
        parts = chunks(n, self.chunk)
        self.prog.collective_chunk = max(self.prog.collective_chunk, parts[0])
        return parts

    def reduce_then_broadcast(self, buf, addr, n, pos, members):
        """This node's part in the all-reduce of ``n`` elements at ``buf@addr`` among the chain
        positions ``members`` (ascending, ``pos`` among them): afterwards its scratch FIFO holds
        the ``n`` sums."""
        em = self.em
        g, last = members.index(pos), len(members) - 1
        if last:  # the link ports this member's part uses
            ends = {0: ("fwd_out", "bwd_in"), last: ("fwd_in", "bwd_out")}
            self._count_collective(ends.get(g, ("fwd_in", "fwd_out", "bwd_in", "bwd_out")), n)
        if last == 0:
            em.store(buf, addr, n, "scratch")
        elif g == 0:  # chunk by chunk (module docstring)
            for i, c in zip(range(0, n, self.chunk or n), self._chunks(n)):
                em.store(buf, addr + self._words(buf, i), c, "fwd_out")
                em.move("bwd_in", "scratch", c)
        elif g < last:  # the reduce forward and the broadcast back at once
            em.store(buf, addr, n, "scratch")
            em.relay(n)
        else:
            em.store(buf, addr, n, "scratch")
            em.reduce("fwd_in", ("scratch", "bwd_out"), n)

    def _count_collective(self, ports, n):
        if self.em.counting:
            for port in ports:
                self.prog.collective_elems[port] = self.prog.collective_elems.get(port, 0) + n

    def pass_collective(self, n):
        """Forward an all-reduce of ``n`` elements between two members on either side."""
        em = self.em
        self._count_collective(("fwd_in", "fwd_out", "bwd_in", "bwd_out"), n)
        for c in self._chunks(n):
            em.move("fwd_in", "fwd_out", c)
            em.move("bwd_in", "bwd_out", c)

    # ---- the weight gradients of a replica ----------------------------------------------------
    def raw_regions(self, it):
        """B regions of item ``it``'s un-rounded ``dw`` (the G layout, a row per word) and ``db``."""
        node = self.node
        _, _, wwords = self.regions.w_region(it)
        return (self.alloc.get("B", f"rawdw{it.layer}", wwords * node.P),
                self.alloc.get("B", f"rawdb{it.layer}", tiles(it.k1 - it.k0, node.P)))

    def raw_gradients(self, b=0, n=None, items=None, first_first=False):
        """``bwd_weight`` with ``raw = 1`` over images ``b .. b + n - 1`` (default: the node's whole
        share of the batch) for each of its conv/fc items (or those of ``items``; last first: the
        order their backward passes finish; ``first_first``: the node's first item first, whose
        input slot the next image's input reuses); from the second image of a step on (``b > 0``)
        each adds its sums to those already in B (``acc = 1``)."""
        node, regions, em = self.node, self.regions, self.em
        n = node.B if n is None else n
        for it in (node.items if first_first else reversed(node.items)):
            if it.pool or (items is not None and it not in items):
                continue
            em.layer = node.layer_name(it)  # (the trace names compute commands by it)
            raw_w, raw_b = self.raw_regions(it)
            case = node.case(it, n, it.k0, it.k1)
            em.compute("bwd_weight", program.useful_macs("bwd_weight", case), it.layer in node.part.packed,
                       **node.conv_fields(it, n, it.k0, it.k1), raw=1, acc=int(b > 0), a0=regions.x_addr(it, b),
                       a1=regions.dy_keep(it, b), d0=raw_w, d1=raw_b)

    def reduce_and_update(self, it, seed, pos, members):
        """All-reduce item ``it``'s partial sums with the other replicas' (``db``, then ``dw``),
        round them once into the db region of B and into G, and update the weights and biases."""
        node = self.node
        f, kk = node.info(it.layer), it.k1 - it.k0
        raw_w, raw_b = self.raw_regions(it)
        nb, nw = collective_sizes(f, it, node.P)
        self.reduce_then_broadcast("B", raw_b, nb, pos, members)
        self._round_db(it, seed, nb)
        self.reduce_then_broadcast("B", raw_w, nw, pos, members)
        self._round_dw(it, seed, 0, kk, nw)
        Updates(self.plan).apply_update(it, seed)

    def round_and_update(self, it, seed):
        """Round one node's un-rounded sums of item ``it`` (its per-image weight gradients, summed in
        B) through the router's ``REQUANT`` into the db region of B and into G, one output-channel
        tile of ``dw`` at a time (each with its slice seed, as a piece of a split layer rounds), so
        the scratch FIFO holds two tiles' elements at most; then update the weights and biases."""
        node, em = self.node, self.em
        P, f, kk = node.P, node.info(it.layer), it.k1 - it.k0
        raw_w, raw_b = self.raw_regions(it)
        nb, _ = collective_sizes(f, it, P)
        em.store("B", raw_b, nb, "scratch")
        self._round_db(it, seed, nb)
        per_kt = tiles(f["c"], P) * f["r"] * f["s"]  # G words of one output-channel tile
        for t in range(tiles(kk, P)):
            em.store("B", raw_w + t * per_kt * P, per_kt * P * P, "scratch")
            self._round_dw(it, seed, t * P, min(P, kk - t * P), per_kt * P * P)
        Updates(self.plan).apply_update(it, seed)

    def _round_db(self, it, seed, n):
        """REQUANT the scratch FIFO's ``n`` summed ``db`` elements of item ``it`` (its slice seed)
        into its db region of B."""
        li, kk = it.layer, it.k1 - it.k0
        self._requant_sums(it, n, "B", (kk, 1, 1, 1), "DB", seed, it.k0)
        self.em.load("B", self.alloc.get("B", f"db{li}", tiles(kk, self.node.P)), n, "scratch")

    def _round_dw(self, it, seed, k0, kk, n):
        """REQUANT the scratch FIFO's ``n`` summed ``dw`` elements of item ``it``'s output channels
        ``k0 .. k0 + kk - 1`` (whole tiles from ``k0``, a multiple of ``P``; their slice seed) into G."""
        node = self.node
        f, P = node.info(it.layer), node.P
        self._requant_sums(it, n, "G", (kk, f["c"], f["r"], f["s"]), "DW", seed, (it.k0 + k0) * f["c"] * f["r"] * f["s"])
        _, _, wwords = self.regions.w_region(it)
        per_kt = tiles(f["c"], P) * f["r"] * f["s"]
        self.em.load("G", self.alloc.get("G", f"g{it.layer}", wwords) + (k0 // P) * per_kt, n, "scratch")

    def _requant_sums(self, it, n, layout, shape, what, seed, offset):
        """The router's REQUANT of ``n`` sums of item ``it``'s gradient ``what`` (``DW`` / ``DB``)."""
        node, em = self.node, self.em
        f = node.info(it.layer)
        sh = node.shifts[node.net.layers[it.layer].name]
        em.layer = node.layer_name(it)
        em.requant(n, layout, shape, sh.wgrad if what == "DW" else sh.bgrad, node.mode("grad_mode"),
                   slice_seed(seed, offset), tensor_id(f["p"], what), node.fmt.wgrad.bits)
