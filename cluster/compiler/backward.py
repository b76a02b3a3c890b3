"""A node's backward pass of one image, layer by layer (last first), as a code-generation pass
(:mod:`~pymtl_fp.cluster.compiler.codegen`): receive the output gradient, run each item's data
gradient, send the input gradient on.

A data gradient goes straight into the previous item's output gradient in D (``dsel``), or O for
the node's first item (sent to the previous node).  A split layer's second holder sends the first
holder's share of the output gradient on and keeps its own; the first holder passes the second
holder's data gradient through.  The weight gradients are not here: over the batch in the weight
phase (:mod:`~pymtl_fp.cluster.compiler.weight_phase`), per image behind the next forward pass
(:meth:`~pymtl_fp.cluster.compiler.collectives.Collectives.raw_gradients`).
"""

from __future__ import annotations

from pymtl_fp.cluster.compiler.dma import elems, slice_seed
from pymtl_fp.cluster.compiler.plan import Pass
from pymtl_fp.cluster.compiler.remote_weights import RemoteWeights
from pymtl_fp.cluster.compiler.residual import RES_KINDS, Residual
from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden.train import tensor_id


class Backward(Pass):
    """Image ``b``'s backward pass in whole layers."""

    def _pool_bwd(self, it, b, t0, t1, dsel, d0):
        """pool_bwd of image b over channel tiles ``[t0, t1)`` (channels are independent; a tile
        range is contiguous in every operand), the result to ``d0`` in O or D."""
        node, regions, em = self.node, self.regions, self.em
        f, P = node.info(it.layer), node.P
        em.layer = node.layer_name(it)  # (the trace names compute commands by it)
        c = min(f["c"], t1 * P) - t0 * P
        em.compute("pool_bwd", n=1, c=c, ct=t1 - t0, h=f["h"], w=f["w"], ho=f["ho"], wo=f["wo"], pk=f["pk"],
                   a0=regions.dy_in(it, b) + t0 * f["ho"] * f["wo"], a1=regions.am_addr(it, b) + t0 * f["ho"] * f["wo"],
                   d0=d0, dsel=dsel, amsel=int(regions.am_in_o(it)))

    def run(self, b, seed):
        """Image b's backward pass, layer by layer (last first)."""
        node, regions, em = self.node, self.regions, self.em
        items, P = node.items, node.P
        dy_ready = None  # a second piece whose output gradient is already in place
        skips = {}  # tensor -> the skip gradient shares waiting for its gradient (residual adds)
        for idx in reversed(range(len(items))):
            it = items[idx]
            li, f, kind = it.layer, node.info(it.layer), node.kind(it)
            em.layer = node.layer_name(it)  # (the trace names compute commands by it)
            prev = items[idx - 1] if idx > 0 else None
            if idx == len(items) - 1 and not self.flow.dy_loaded:
                kk = it.k1 - it.k0 if kind == "first" else f["k"]
                em.load_from("D", regions.dy_in(it, b), "bwd_in", (1, kk, f["ho"], f["wo"]))
                Residual(self.plan).receive_shares(b, skips)  # (the skips' gradient shares follow it)
            out = None
            if kind in RES_KINDS:
                out = Residual(self.plan).backward(it, b, seed, prev, skips)
            elif kind == "pool" and prev is not None and node.kind(prev) == "second":
                # the gradient of a second piece: pooled back in channel-tile ranges straight to
                # where each part goes (no D-to-D copy, no STORE from D while bwd_data reads it):
                # the first holder's tiles to O (sent on), the own tiles to the batch slot, and,
                # where bwd_data needs them together, all tiles to the one-image slot
                pf, kt0 = node.info(prev.layer), prev.k0 // P
                first_words = kt0 * pf["ho"] * pf["wo"]
                o_first = self.alloc.get("O", "dyfirst", 2 * first_words) + (b % 2) * first_words * self.opts.ovl
                self._pool_bwd(it, b, 0, kt0, msgs.DSEL_O, o_first)
                em.store("O", o_first, first_words * P, "bwd_out")
                self._pool_bwd(it, b, kt0, tiles(f["c"], P), msgs.DSEL_D, regions.dy_keep(prev, b))
                if pf["p"] > 0:
                    self._pool_bwd(it, b, 0, tiles(f["c"], P), msgs.DSEL_D, regions.dy_in(prev, b))
                dy_ready = prev
                continue
            elif kind == "pool":
                dsel, d0 = regions.dx_dest(prev, b)
                self._pool_bwd(it, b, 0, tiles(f["c"], P), dsel, d0)
                out = (msgs.BUF_NAMES[msgs.DSEL_BUF[dsel]], d0, node.in_words(li))
            else:
                p = f["p"]
                name = node.net.layers[li].name
                if kind == "second" and dy_ready is not it:
                    first_words = (it.k0 // P) * f["ho"] * f["wo"]
                    dyt = regions.dy_in(it, b)
                    em.store("D", dyt, first_words * P, "bwd_out")
                    em.copy("D", dyt + first_words, "D", regions.dy_keep(it, b),
                            node.out_words(li, it.k0, it.k1) * P)
                if kind == "first":
                    if p > 0:  # the second holder computed dx: it follows dy[k0:k1] on bwd_in
                        dx = (1, f["c"], f["h"], f["w"])
                        if prev is not None:
                            em.load_from("D", regions.dy_in(prev, b), "bwd_in", dx)
                        else:  # in the second holder's layout, re-laid out by node j-1 if needed
                            em.move("bwd_in", "bwd_out", elems("act", dx, node.src_P("bwd_in")))
                    continue
                if p > 0:
                    case = node.case(it, 1)
                    case["dy"] = None
                    prev_relu = node.net.rectified(li)  # (the ReLU behind the input, if any)
                    dsel, d0 = regions.dx_dest(prev, b)
                    common = dict(shift=node.shifts[name].bwd_data, relu=int(prev_relu), stoch=node.mode("grad_mode"),
                                  tid=tensor_id(p, "DX"))
                    off = (node.b0 + b) * f["c"] * f["h"] * f["w"]
                    if self.home.is_remote(it):  # an input-channel tile of the weights at a time
                        RemoteWeights(self.plan).remote_bwd_data(it, b, seed, off, regions.dy_in(it, b),
                                                                 regions.x_addr(it, b), d0, dsel, **common)
                    else:
                        em.compute("bwd_data", program.useful_macs("bwd_data", case), **node.conv_fields(it, 1),
                                   **common, seed=slice_seed(seed, off), a0=regions.dy_in(it, b),
                                   a1=regions.w_region(it)[0], a2=regions.x_addr(it, b), d0=d0, dsel=dsel)
                    out = (msgs.BUF_NAMES[msgs.DSEL_BUF[dsel]], d0, node.in_words(li))
            if out is None:
                continue
            if skips:
                Residual(self.plan).fork(li, out, skips)
            buf, addr, words = out
            if prev is not None:
                if not (buf == "D" and addr == regions.dy_in(prev, b)):
                    em.copy(buf, addr, "D", regions.dy_in(prev, b), words * P)
            else:
                em.store(buf, addr, words * P, "bwd_out")
        Residual(self.plan).send_shares(b, skips)  # (after the data gradient)
