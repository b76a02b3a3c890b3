"""A node's forward pass of one image, layer by layer, as a code-generation pass
(:mod:`~pymtl_fp.cluster.compiler.codegen`): receive the input, run the node's items, send the output on.

A layer writes its result where the next layer on the node reads it (command field ``dsel``): the
next item's input in X (for a second piece: behind the first piece's output), else O, to be sent
on.  Only a pooled output still goes through the DMA (STORE to its scratch FIFO and LOAD back) where
pool_fwd's argmax takes X's write port.  A split layer's first piece sends its output, and its
input, to the second holder on the next node, which assembles the whole output beside its own.
"""

from __future__ import annotations

from pymtl_fp.cluster.compiler.bands import ForwardBands
from pymtl_fp.cluster.compiler.dma import slice_seed
from pymtl_fp.cluster.compiler.partition import _Shape
from pymtl_fp.cluster.compiler.plan import Pass
from pymtl_fp.cluster.compiler.remote_weights import RemoteWeights
from pymtl_fp.cluster.compiler.residual import RES_KINDS, Residual
from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden.train import tensor_id


class Forward(Pass):
    """Image ``b``'s forward pass in whole layers, and the LOADs of a forward pass's input."""

    def receive(self, b):
        """LOAD image b's forward input(s) from ``fwd_in``: the first item's input and, for a
        second piece, the first holder's output (next to which the fwd writes its own); in row bands,
        the input's first piece."""
        node, regions, em = self.node, self.regions, self.em
        j = node.j
        if self.opts.banded(j, b):
            ForwardBands(self.plan).receive_band(b, 0)
            self.flow.received[b] = 1
            return
        if j > 0 and self.opts.banded(j - 1, b):  # whole, from the upstream node's bands
            bands = ForwardBands(self.plan)
            for piece in range(len(bands.in_plan(b))):
                bands.receive_band(b, piece)
            return
        it = node.items[0]
        f, kind = node.info(it.layer), node.kind(it)
        em.layer = node.layer_name(it)  # (the trace names compute commands by it)
        if kind == "proj":  # (its main branch; the skip follows, Residual.receive_skips)
            em.load_from("X", regions.in_addr(it, b), "fwd_in", (1, f["k"], f["ho"], f["wo"]))
        else:
            em.load_from("X", regions.x_addr(it, b), "fwd_in", (1, f["c"], f["h"], f["w"]))
        if kind == "second":
            em.load_from("X", regions.stage(it, b), "fwd_in", (1, it.k0, f["ho"], f["wo"]))
        Residual(self.plan).receive_skips(b)  # (the skips crossing the cut follow the input)

    def run(self, b, seed, received=False):
        """Image b's forward pass, layer by layer (``received``: its input is already LOADed,
        :meth:`receive`)."""
        node, regions, em = self.node, self.regions, self.em
        items, P = node.items, node.P
        input_sent = None  # a first piece whose input went out with the copy that made it
        for idx, it in enumerate(items):
            li, f, kind = it.layer, node.info(it.layer), node.kind(it)
            em.layer = node.layer_name(it)  # (the trace names compute commands by it)
            if idx == 0 and not received:
                self.receive(b)
            nxt = items[idx + 1] if idx + 1 < len(items) else None
            if kind in RES_KINDS:
                out = Residual(self.plan).forward(it, b, seed, nxt)
            elif kind == "pool":
                ow = node.out_words(li)
                case = dict(x=_Shape(1, f["c"], f["h"], f["w"]), k=f["pk"])
                amsel = int(regions.am_in_o(it))
                dsel, d0 = (msgs.DSEL_X, regions.in_addr(nxt, b)) if amsel else (msgs.DSEL_O, regions.ob(b))
                em.compute("pool_fwd", n=1, c=f["c"], ct=tiles(f["c"], P), h=f["h"], w=f["w"], ho=f["ho"], wo=f["wo"],
                           pk=f["pk"], a0=regions.x_addr(it, b), d0=d0, d1=regions.am_addr(it, b), dsel=dsel,
                           amsel=amsel)
                out = (msgs.BUF_NAMES[msgs.DSEL_BUF[dsel]], d0, ow)
            else:
                p = f["p"]
                name = node.net.layers[li].name
                wpiece = None if self.home.is_remote(it) else regions.w_region(it)[1]
                bpiece = self.alloc.get("B", f"b{li}", tiles(it.k1 - it.k0, P))
                off = (node.b0 + b) * f["k"] * f["ho"] * f["wo"] + it.k0 * f["ho"] * f["wo"]
                case = node.case(it, 1, it.k0, it.k1)
                pw = node.out_words(li, it.k0, it.k1)
                if kind == "second":
                    stage = regions.stage(it, b)
                    first_words = (it.k0 // P) * f["ho"] * f["wo"]
                    if idx > 0:
                        em.load_from("X", stage, "fwd_in", (1, it.k0, f["ho"], f["wo"]))
                # the result goes where it is read next (dsel): the next item's input in X (for a
                # second piece: behind the first piece's output), else O, to be sent on
                if kind == "second":
                    dsel, d0 = msgs.DSEL_X, stage + first_words
                elif kind == "whole" and nxt is not None:
                    dsel, d0 = msgs.DSEL_X, regions.in_addr(nxt, b)
                else:
                    dsel, d0 = msgs.DSEL_O, regions.ob(b)
                common = dict(shift=node.shifts[name].fwd, relu=int(node.net.layers[li].relu),
                              stoch=node.mode("fwd_mode"), tid=tensor_id(p, "FWD"), a0=regions.x_addr(it, b))
                if self.home.is_remote(it):  # a chunk of the weights at a time, from the neighbour keeping them
                    RemoteWeights(self.plan).remote_fwd(it, b, seed, off, bpiece, d0, dsel, **common)
                else:
                    em.compute("fwd", program.useful_macs("fwd", case), li in node.part.packed,
                               **node.conv_fields(it, 1, it.k0, it.k1), **common, seed=slice_seed(seed, off),
                               a1=wpiece, a2=bpiece, d0=d0, dsel=dsel)
                if kind == "second":
                    out = ("X", stage, node.out_words(li))
                elif kind == "first":
                    if input_sent is not it:  # the second holder computes from it too
                        em.store("X", regions.x_addr(it, b), node.in_words(li) * P, "fwd_out")
                    em.store("O", regions.ob(b), pw * P, "fwd_out")
                    continue
                else:
                    out = ("X" if dsel == msgs.DSEL_X else "O", d0, pw)
            buf, addr, words = out
            if nxt is not None:
                dst = regions.in_addr(nxt, b)
                if not (buf == "X" and addr == dst):
                    # a first piece next sends its input on too: in the same STORE
                    sent = node.kind(nxt) == "first"
                    em.copy(buf, addr, "X", dst, words * P, also="fwd_out" if sent else None)
                    input_sent = nxt if sent else None
            else:
                em.store(buf, addr, words * P, "fwd_out")
        Residual(self.plan).send_skips(b)  # (after the output)

