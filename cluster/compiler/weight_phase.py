"""The code generator's weight phase and weight I/O: each item's weight gradient (over the batch,
or one image's under a per-image schedule), the engine's ``update`` and the scalar unit's bias
update, a split layer's new piece sent to its second holder; and the initial weights from the
host's side channel and the final ones back to it.  Mixed into
:class:`~pymtl_fp.cluster.compiler.codegen.NodeCodegen` (bit-exactness of the seeds: its docstring)."""

from __future__ import annotations

import numpy as np

from pymtl_fp.cluster.compiler.dma import slice_seed
from pymtl_fp.engine import packing, program
from pymtl_fp.engine.msgs import pack_bias, pack_weight, tiles
from pymtl_fp.golden.per_image import image_seed
from pymtl_fp.golden.train import tensor_id


class NodeWeightPhase:
    """Weight gradients, updates and the weights' way in and out (mixed into the code generator)."""

    def weight_phase(self, seed, image=None):
        """The weight gradients and updates of the node's layers: over the whole batch (command
        field ``n = B``, once per step; the items of :attr:`per_image`: their per-image sums
        already in B, rounded by the router), or for one ``image`` (a per-image schedule, after its backward
        pass; seeds of :func:`~pymtl_fp.golden.per_image.image_seed`)."""
        for it in self.items:
            if it.pool or self.is_remote(it):
                continue
            if image is None and it in self.per_image:  # the sums of every image, rounded once
                self.round_and_update(it, seed)
            else:
                self.weight_gradient(it, seed, image)
        # the remote layers' gradients go to their homes last (after a first piece's weights, which
        # its second holder LOADs first), and a home takes them after updating its own layers
        for it in self.items:
            if self.is_remote(it):
                self.remote_gradient(it, seed)
                self.update_bias(it, seed)
        if image is None:
            self.hosted_updates(seed)

    def weight_gradient(self, it, seed, image=None):
        """Item ``it``'s weight gradient over the whole batch, or of one ``image`` (a per-image
        schedule), rounded by the engine; then its update."""
        P = self.P
        B, b0 = (self.B, 0) if image is None else (1, image)
        li, f = it.layer, self.info(it.layer)
        self.layer = self.net.layers[it.layer].name  # (the trace names compute commands by it)
        p, sh = f["p"], self.shifts[self.net.layers[li].name]
        kk = it.k1 - it.k0
        CRS = f["c"] * f["r"] * f["s"]
        wseed = seed if image is None else image_seed(seed, image, f["k"] * CRS)
        _, _, wwords = self.w_region(it)
        g = self.A.get("G", f"g{li}", wwords)
        db = self.A.get("B", f"db{li}", tiles(kk, P))
        case = self.case(it, B, it.k0, it.k1)
        d1 = db if it.k0 == 0 else self.A.get("B", f"dbs{li}", tiles(kk, P))
        self.compute("bwd_weight", program.useful_macs("bwd_weight", case), li in self.part.packed,
                     **self.conv_fields(it, B, it.k0, it.k1),
                     shift=sh.wgrad, bshift=sh.bgrad, stoch=self.mode("grad_mode"),
                     seed=slice_seed(wseed, it.k0 * CRS), tid=tensor_id(p, "DW"),
                     btid=tensor_id(p, "DB"), a0=self.x_addr(it, b0), a1=self.dy_keep(it, b0), d0=g, d1=d1)
        if it.k0 > 0:
            self.db_own_seed(it, B, b0, it.k0, kk, self.dy_keep(it, b0), db, wseed)
        self.apply_update(it, wseed)

    def db_own_seed(self, it, n, b0, k0, kk, dy, db, wseed, **planes):
        """``db`` of item ``it``'s output channels ``[k0, k0 + kk)`` (a split piece's, or one tile
        of a layer whose weights a neighbour keeps) with its own slice seed: ``bwd_weight`` has one
        seed for ``dw`` and ``db``, so a 1x1, one-channel ``bwd_weight`` over the same ``dy`` (at
        ``dy``, ``n`` images from image ``b0``; ``planes``: its plane rows) writes ``db`` and a
        ``dw`` word nobody reads."""
        f, P, li = self.info(it.layer), self.P, it.layer
        ho, wo = f["ho"], f["wo"]
        xa = self.x_addr(it, b0) if ho * wo <= self.in_words(li) else self.A.get("X", f"dbx{li}", n * ho * wo)
        self.compute("bwd_weight", 0, n=n, c=1, k=kk, ct=1, kt=tiles(kk, P), h=ho, w=wo, ho=ho, wo=wo, r=1, s=1,
                     lgst=0, pad=0, shift=0, bshift=self.shifts[self.net.layers[li].name].bgrad,
                     stoch=self.mode("grad_mode"), seed=slice_seed(wseed, k0), tid=0, btid=tensor_id(f["p"], "DB"),
                     a0=xa, a1=dy, d0=self.A.get("G", f"gs{li}", tiles(kk, P)), d1=db, **planes)

    def apply_update(self, it, wseed):
        """The SGD update of item ``it``'s weights (the engine's ``update`` from G) and biases (the
        scalar unit, from the db region of B), rounding with ``wseed``; a split layer's first
        holder then sends its new piece to the second holder."""
        P, li, f, kind = self.P, it.layer, self.info(it.layer), self.kind(it)
        p, sh = f["p"], self.shifts[self.net.layers[li].name]
        kk, CRS = it.k1 - it.k0, f["c"] * f["r"] * f["s"]
        _, wpiece, wwords = self.w_region(it)
        g = self.A.get("G", f"g{li}", wwords)
        self.compute("update", 0,
                     k=kk, c=f["c"], kt=tiles(kk, P), ct=tiles(f["c"], P), r=f["r"], s=f["s"],
                     shift=sh.update_w, stoch=self.mode("update_mode"),
                     seed=slice_seed(wseed, it.k0 * CRS), tid=tensor_id(p, "UPDATE_W"),
                     a0=wpiece, a1=g, d0=wpiece)
        self.update_bias(it, wseed)
        if kind == "first":
            self.store("W", wpiece, wwords * P * P, "fwd_out")
        elif kind == "second":
            wfull, _, _ = self.w_region(it)
            self.load_from("W", wfull, "fwd_in", (it.k0, f["c"], f["r"], f["s"]), "weight")

    def update_bias(self, it, wseed):
        """Item ``it``'s bias SGD in the DMA's scalar unit (``b`` and ``db`` from B through the
        scratch FIFO), rounding with ``wseed``."""
        P, li, f = self.P, it.layer, self.info(it.layer)
        p, sh = f["p"], self.shifts[self.net.layers[li].name]
        kk = it.k1 - it.k0
        bb = self.A.get("B", f"b{li}", tiles(kk, P))
        db = self.A.get("B", f"db{li}", tiles(kk, P))
        nb = tiles(kk, P) * P
        self.store("B", bb, nb, "scratch")
        self.store("B", db, nb, "scratch")
        self.bias_update(nb, kk, sh.update_b, self.mode("update_mode"), slice_seed(wseed, it.k0),
                         tensor_id(p, "UPDATE_B"), self.fmt.bias_bits)
        self.load("B", bb, nb, "scratch")

    def initial(self, params):
        P = self.P
        for it in self.items:
            if it.pool:
                continue
            li = it.layer
            self.layer = self.net.layers[it.layer].name  # (the trace names compute commands by it)
            name = self.net.layers[li].name
            w, b = np.asarray(params[name]["w"]), np.asarray(params[name]["b"])
            if li in self.part.packed:  # kept in the packed layout (K, C*R*S, 1, 1) on the node
                w = packing.pack_weight(w)
            if self.kind(it) == "second":
                self.host_load("W", self.w_region(it)[0], pack_weight(w[: it.k1], P).reshape(-1))
            elif not self.is_remote(it):  # (a remote layer's: the neighbour keeping them loads them)
                self.host_load("W", self.w_region(it)[1], pack_weight(w[it.k0: it.k1], P).reshape(-1))
            self.host_load("B", self.A.get("B", f"b{li}", tiles(it.k1 - it.k0, P)),
                           pack_bias(b[it.k0: it.k1], P).reshape(-1))
        self.hosted_initial(params)

    def final(self):
        P = self.P
        for it in self.items:
            if it.pool:
                continue
            li = it.layer
            self.layer = self.net.layers[it.layer].name  # (the trace names compute commands by it)
            if not self.is_remote(it):  # (the neighbour keeping them sends them)
                _, wpiece, wwords = self.w_region(it)
                self.store("W", wpiece, wwords * P * P, ("host", ("w", li, it.k0, it.k1)))
            self.store("B", self.A.get("B", f"b{li}", tiles(it.k1 - it.k0, P)),
                       tiles(it.k1 - it.k0, P) * P, ("host", ("b", li, it.k0, it.k1)))
        self.hosted_final()
