"""The SGD updates of a node's layers, as code for the passes that compute weight gradients
(:mod:`~pymtl_fp.cluster.compiler.weight_phase`, :mod:`~pymtl_fp.cluster.compiler.collectives`,
:mod:`~pymtl_fp.cluster.compiler.remote_weights`): the engine's ``update`` of a piece's weights from G, the
scalar unit's bias update, a split layer's new piece sent to its second holder, and ``db`` with a
slice's own seed (``bwd_weight`` has one seed for ``dw`` and ``db``)."""

from __future__ import annotations

from pymtl_fp.cluster.compiler.dma import slice_seed
from pymtl_fp.cluster.compiler.plan import Pass
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden.train import tensor_id


class Updates(Pass):
    """Weight and bias updates of one node's items."""

    def db_own_seed(self, it, n, b0, k0, kk, dy, db, wseed, **planes):
        """``db`` of item ``it``'s output channels ``[k0, k0 + kk)`` (a split piece's, or one tile
        of a layer whose weights a neighbour keeps) with its own slice seed: ``bwd_weight`` has one
        seed for ``dw`` and ``db``, so a 1x1, one-channel ``bwd_weight`` over the same ``dy`` (at
        ``dy``, ``n`` images from image ``b0``; ``planes``: its plane rows) writes ``db`` and a
        ``dw`` word nobody reads."""
        node = self.node
        f, P, li = node.info(it.layer), node.P, it.layer
        ho, wo = f["ho"], f["wo"]
        xa = self.regions.x_addr(it, b0) if ho * wo <= node.in_words(li) else self.alloc.get("X", f"dbx{li}", n * ho * wo)
        self.em.compute("bwd_weight", 0, n=n, c=1, k=kk, ct=1, kt=tiles(kk, P), h=ho, w=wo, ho=ho, wo=wo, r=1, s=1,
                        lgst=0, pad=0, shift=0, bshift=node.shifts[node.net.layers[li].name].bgrad,
                        stoch=node.mode("grad_mode"), seed=slice_seed(wseed, k0), tid=0, btid=tensor_id(f["p"], "DB"),
                        a0=xa, a1=dy, d0=self.alloc.get("G", f"gs{li}", tiles(kk, P)), d1=db, **planes)

    def apply_update(self, it, wseed):
        """The SGD update of item ``it``'s weights (the engine's ``update`` from G) and biases (the
        scalar unit, from the db region of B), rounding with ``wseed``; a split layer's first
        holder then sends its new piece to the second holder."""
        node, regions, em = self.node, self.regions, self.em
        P, li, f, kind = node.P, it.layer, node.info(it.layer), node.kind(it)
        p, sh = f["p"], node.shifts[node.net.layers[li].name]
        kk, CRS = it.k1 - it.k0, f["c"] * f["r"] * f["s"]
        _, wpiece, wwords = regions.w_region(it)
        g = self.alloc.get("G", f"g{li}", wwords)
        em.compute("update", 0,
                   k=kk, c=f["c"], kt=tiles(kk, P), ct=tiles(f["c"], P), r=f["r"], s=f["s"],
                   shift=sh.update_w, stoch=node.mode("update_mode"),
                   seed=slice_seed(wseed, it.k0 * CRS), tid=tensor_id(p, "UPDATE_W"),
                   a0=wpiece, a1=g, d0=wpiece)
        self.update_bias(it, wseed)
        if kind == "first":
            em.store("W", wpiece, wwords * P * P, "fwd_out")
        elif kind == "second":
            wfull, _, _ = regions.w_region(it)
            em.load_from("W", wfull, "fwd_in", (it.k0, f["c"], f["r"], f["s"]), "weight")

    def update_bias(self, it, wseed):
        """Item ``it``'s bias SGD in the DMA's scalar unit (``b`` and ``db`` from B through the
        scratch FIFO), rounding with ``wseed``."""
        node, em = self.node, self.em
        P, li, f = node.P, it.layer, node.info(it.layer)
        p, sh = f["p"], node.shifts[node.net.layers[li].name]
        kk = it.k1 - it.k0
        bb = self.alloc.get("B", f"b{li}", tiles(kk, P))
        db = self.alloc.get("B", f"db{li}", tiles(kk, P))
        nb = tiles(kk, P) * P
        em.store("B", bb, nb, "scratch")
        em.store("B", db, nb, "scratch")
        em.bias_update(nb, kk, sh.update_b, node.mode("update_mode"), slice_seed(wseed, it.k0),
                       tensor_id(p, "UPDATE_B"), node.fmt.bias_bits)
        em.load("B", bb, nb, "scratch")

