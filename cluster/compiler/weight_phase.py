"""The weight phase and the weights' way in and out, as a code-generation pass
(:mod:`~pymtl_fp.cluster.compiler.codegen`): each item's weight gradient (over the batch, or one image's
under a per-image schedule) and its update (:mod:`~pymtl_fp.cluster.compiler.updates`), the per-image
sums rounded once (:mod:`~pymtl_fp.cluster.compiler.collectives`), the gradients of layers a neighbour
keeps; and the initial weights from the host's side channel and the final ones back to it
(bit-exactness of the seeds: :mod:`~pymtl_fp.cluster.compiler.codegen`)."""

from __future__ import annotations

import numpy as np

from pymtl_fp.cluster.compiler.collectives import Collectives
from pymtl_fp.cluster.compiler.dma import slice_seed
from pymtl_fp.cluster.compiler.plan import Pass
from pymtl_fp.cluster.compiler.remote_weights import RemoteWeights
from pymtl_fp.cluster.compiler.updates import Updates
from pymtl_fp.engine import packing, program
from pymtl_fp.engine.msgs import pack_bias, pack_weight, tiles
from pymtl_fp.golden.per_image import image_seed
from pymtl_fp.golden.train import tensor_id


class WeightPhase(Pass):
    """Weight gradients, updates and the weights' way in and out of one node."""

    def __init__(self, plan):
        super().__init__(plan)
        self.updates, self.remote_weights = Updates(plan), RemoteWeights(plan)

    def run(self, seed, image=None):
        """The weight gradients and updates of the node's layers: over the whole batch (command
        field ``n = B``, once per step; the items of ``keep.per_image``: their per-image sums
        already in B, rounded by the router), or for one ``image`` (a per-image schedule, after its backward
        pass; seeds of :func:`~pymtl_fp.golden.per_image.image_seed`)."""
        node = self.node
        for it in node.items:
            if it.pool or self.home.is_remote(it):
                continue
            if image is None and it in self.keep.per_image:  # the sums of every image, rounded once
                Collectives(self.plan).round_and_update(it, seed)
            else:
                self.weight_gradient(it, seed, image)
        # the remote layers' gradients go to their homes last (after a first piece's weights, which
        # its second holder LOADs first), and a home takes them after updating its own layers
        for it in node.items:
            if self.home.is_remote(it):
                self.remote_weights.remote_gradient(it, seed)
                self.updates.update_bias(it, seed)
        if image is None:
            self.remote_weights.hosted_updates(seed)

    def weight_gradient(self, it, seed, image=None):
        """Item ``it``'s weight gradient over the whole batch, or of one ``image`` (a per-image
        schedule), rounded by the engine; then its update."""
        node, regions, em = self.node, self.regions, self.em
        P = node.P
        B, b0 = (node.B, 0) if image is None else (1, image)
        li, f = it.layer, node.info(it.layer)
        em.layer = node.layer_name(it)  # (the trace names compute commands by it)
        p, sh = f["p"], node.shifts[node.net.layers[li].name]
        kk = it.k1 - it.k0
        CRS = f["c"] * f["r"] * f["s"]
        wseed = seed if image is None else image_seed(seed, image, f["k"] * CRS)
        _, _, wwords = regions.w_region(it)
        g = self.alloc.get("G", f"g{li}", wwords)
        db = self.alloc.get("B", f"db{li}", tiles(kk, P))
        case = node.case(it, B, it.k0, it.k1)
        d1 = db if it.k0 == 0 else self.alloc.get("B", f"dbs{li}", tiles(kk, P))
        em.compute("bwd_weight", program.useful_macs("bwd_weight", case), li in node.part.packed,
                   **node.conv_fields(it, B, it.k0, it.k1),
                   shift=sh.wgrad, bshift=sh.bgrad, stoch=node.mode("grad_mode"),
                   seed=slice_seed(wseed, it.k0 * CRS), tid=tensor_id(p, "DW"),
                   btid=tensor_id(p, "DB"), a0=regions.x_addr(it, b0), a1=regions.dy_keep(it, b0), d0=g, d1=d1)
        if it.k0 > 0:
            self.updates.db_own_seed(it, B, b0, it.k0, kk, regions.dy_keep(it, b0), db, wseed)
        self.updates.apply_update(it, wseed)

    def initial(self, params):
        node, regions, em = self.node, self.regions, self.em
        P = node.P
        for it in node.items:
            if it.pool:
                continue
            li = it.layer
            em.layer = node.layer_name(it)  # (the trace names compute commands by it)
            name = node.net.layers[li].name
            w, b = np.asarray(params[name]["w"]), np.asarray(params[name]["b"])
            if li in node.part.packed:  # kept in the packed layout (K, C*R*S, 1, 1) on the node
                w = packing.pack_weight(w)
            if node.kind(it) == "second":
                em.host_load("W", regions.w_region(it)[0], pack_weight(w[: it.k1], P).reshape(-1))
            elif not self.home.is_remote(it):  # (a remote layer's: the neighbour keeping them loads them)
                em.host_load("W", regions.w_region(it)[1], pack_weight(w[it.k0: it.k1], P).reshape(-1))
            em.host_load("B", self.alloc.get("B", f"b{li}", tiles(it.k1 - it.k0, P)),
                         pack_bias(b[it.k0: it.k1], P).reshape(-1))
        self.remote_weights.hosted_initial(params)

    def final(self):
        node, em = self.node, self.em
        P = node.P
        for it in node.items:
            if it.pool:
                continue
            li = it.layer
            em.layer = node.layer_name(it)  # (the trace names compute commands by it)
            if not self.home.is_remote(it):  # (the neighbour keeping them sends them)
                _, wpiece, wwords = self.regions.w_region(it)
                em.store("W", wpiece, wwords * P * P, ("host", ("w", li, it.k0, it.k1)))
            em.store("B", self.alloc.get("B", f"b{li}", tiles(it.k1 - it.k0, P)),
                     tiles(it.k1 - it.k0, P) * P, ("host", ("b", li, it.k0, it.k1)))
        self.remote_weights.hosted_final()
