"""The backward passes in row bands on a node (``train --bands R --bands-backward``), at every
level: each layer's data gradient over bands of its ``dx`` rows as soon as the rows of its output
gradient that the band needs are there (``bwd_data``'s window,
:func:`pymtl_fp.golden.band.bwd_data_window`; a pool's over its pooled rows), the node's first
layer's bands sent back at once (from two alternating band buffers in O where they fit).  The
weight gradients stay whole-map commands.  :class:`BackwardBands` is a code-generation pass
(:mod:`~pymtl_fp.cluster.compiler.codegen`) on the scheduler and row pieces of
:class:`~pymtl_fp.cluster.compiler.bands.BandPass`; partitions with split layers are refused
(:func:`~pymtl_fp.cluster.compiler.bands.check_bands`).
"""

from __future__ import annotations

from pymtl_fp.cluster.compiler.bands import BandPass, _pieces
from pymtl_fp.cluster.compiler.dma import slice_seed
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden import band
from pymtl_fp.golden.train import tensor_id


class BackwardBands(BandPass):
    """Image ``b``'s backward pass in row bands (``opts.band_rows`` rows each; module docstring)."""

    def bwd_bands(self, it) -> list:
        """The data-gradient bands of item ``it``: ``(dy rows, dx rows)`` pairs, in order: a conv
        layer's over ``dx``'s rows (``band_rows`` each), a pool's over its pooled rows."""
        f = self.node.info(it.layer)
        if it.pool:
            pk = f["pk"]
            return [((y0, y1), (y0 * pk, min(f["h"], y1 * pk))) for y0, y1 in band.bands(f["ho"], self.opts.band_rows)]
        out = []
        for x0, x1 in band.bands(f["h"], self.opts.band_rows):
            win = band.bwd_data_window(f["h"], f["ho"], f["r"], f["stride"], f["pad"], x0, x1)
            out.append(((win.i0, win.i1), (x0, x1)))
        return out

    def bwd_in_plan(self) -> list:
        """The row ranges in which the output gradient of the node's last item arrives: the next
        node's data-gradient bands (its first item's ``dx`` rows), or whole (the host's loss gradient)."""
        node = self.node
        last = node.items[-1]
        if node.j == node.part.n - 1:
            return [("x", 0, node.info(last.layer)["ho"])]
        return [("x", *dx) for _, dx in self.bwd_bands(node.part.nodes[node.j + 1][0])]

    def receive_dy_band(self, b, piece):
        """LOAD rows ``bwd_in_plan()[piece]`` of image ``b``'s output gradient of the last item."""
        node = self.node
        it, f = node.items[-1], node.info(node.items[-1].layer)
        rows = self.bwd_in_plan()[piece][1:]
        self.load_rows(it, "D", self.regions.dy_in(it, b), "bwd_in", (f["k"], f["ho"], f["wo"]), rows)

    def run(self, b, seed):
        """Image ``b``'s backward pass in row bands: each item's data gradient band by band as soon
        as the rows of its output gradient that the band needs are there, the node's first item's
        bands first (they leave the node; the weight gradients stay whole-map commands:
        :class:`~pymtl_fp.cluster.compiler.weight_phase.WeightPhase` and the per-image sums)."""
        items = self.node.items
        todo = [[(dy[1], dx[1], (dy, dx)) for dy, dx in self.bwd_bands(it)] if self.sends_dx(idx) else []
                for idx, it in enumerate(items)]
        self.run_bands(b, "backward", todo, list(range(len(items))), len(items) - 1, lambda i: i + 1,
                       self.bwd_in_plan(), self.receive_dy_band,
                       lambda i, k, rows, then: self._bwd_band(i, b, seed, k, rows, then=then))

    def sends_dx(self, idx) -> bool:
        """Does item ``idx`` compute a data gradient (not the network's first layer)?"""
        node = self.node
        it = node.items[idx]
        return it.pool or node.info(it.layer)["p"] > 0

    def _bwd_band(self, i, b, seed, k, rows, then=None):
        """Data-gradient band ``k`` of item ``i``: ``rows = ((dy0, dy1), (x0, x1))``; ``then()`` right
        after the compute command; the rows into the previous item's output gradient in D, or on
        to the previous node (from a band buffer in O, two alternating, when the O slot holds two)."""
        node, regions, em = self.node, self.regions, self.em
        it, P = node.items[i], node.P
        prev = node.items[i - 1] if i > 0 else None
        f = node.info(it.layer)
        em.layer = node.layer_name(it)
        (dy0, dy1), (x0, x1) = rows
        H, W, Ho, Wo = f["h"], f["w"], f["ho"], f["wo"]
        ct, n_rows = tiles(f["c"], P), x1 - x0
        dsel, base = regions.dx_dest(prev, b)
        # the first item's band (bwd_data's ReLU mask shares dx's strides, in place: one tile only)
        if prev is None:
            band_words = ct * max(x - y for _, (y, x) in self.bwd_bands(it)) * W
            base, dense = self.band_buffer(base, k, band_words, self.keep.o_bwd, n_rows, H, it.pool or ct == 1)
        else:
            dense = False
        hp, row0 = (n_rows, 0) if dense else (H, x0)
        if it.pool:  # (dy and the argmax in place: hop = Ho)
            em.compute("pool_bwd", n=1, c=f["c"], ct=ct, h=n_rows, w=W, ho=dy1 - dy0, wo=Wo, pk=f["pk"],
                       a0=regions.dy_in(it, b) + dy0 * Wo, a1=regions.am_addr(it, b) + dy0 * Wo, d0=base + row0 * W,
                       dsel=dsel, amsel=int(regions.am_in_o(it)), hp=hp, hop=Ho)
        else:
            li, p = it.layer, f["p"]
            name = node.net.layers[li].name
            wfull, _, _ = regions.w_region(it)
            win = band.bwd_data_window(H, Ho, f["r"], f["stride"], f["pad"], x0, x1)
            fields = dict(node.conv_fields(it, 1), h=n_rows, ho=dy1 - dy0, pt=win.pt, hi=H, hp=hp, hop=Ho)
            prev_relu = node.net.param_layers()[p - 1].relu
            wseed = slice_seed(seed, (node.b0 + b) * f["c"] * H * W)
            em.compute("bwd_data", self.band_macs(it, x0, x1, op="bwd_data"), **fields,
                       shift=node.shifts[name].bwd_data, relu=int(prev_relu), stoch=node.mode("grad_mode"),
                       seed=slice_seed(wseed, x0 * W), tid=tensor_id(p, "DX"), a0=regions.dy_in(it, b) + dy0 * Wo,
                       a1=wfull, a2=regions.x_addr(it, b) + x0 * W, d0=base + row0 * W, dsel=dsel)
        if then is not None:
            then()
        if prev is not None:  # (straight into the previous item's output gradient in D)
            return
        for off, words in _pieces(ct, x0, x1, H, W, dense):
            em.store("O", base + off, words * P, "bwd_out")
