"""Where a node keeps what: buffer regions and layer geometry of the code generator.

:class:`NodeRegions` is the part of the per-node code generator
(:class:`~pymtl_fp.cluster.compiler.codegen.NodeCodegen`) that answers "which words of which buffer hold
image ``b``'s input of item ``it``" and the like, from the partition and the buffer plan
(:class:`~pymtl_fp.cluster.compiler.buffers.Alloc`):

X holds the inputs of the node's conv/fc pieces and the pool argmaxes (or O, see
:meth:`NodeRegions.am_in_o`) of every image the node keeps (the whole batch ``B`` for a piece
whose ``bwd_weight`` runs over the batch at the step's end; for the pieces of ``per_image`` and
the argmaxes, once any is, ``slots``: the images in flight on the node,
:func:`~pymtl_fp.cluster.compiler.schedule.images_in_flight`, image ``b`` in slot ``b % slots``) and
one-image slots for pool inputs and split layers' outputs; D the output gradients of its pieces
(``B``, or ``dy_slots`` for ``per_image``: the image in its backward pass, two with overlap) plus
one-image slots;
O one image's result (two per direction with overlap); W its weight pieces (the second holder of a
split layer: the whole layer); G the weight gradients; B biases, bias gradients and (weight
gradients per image) the un-rounded sums of ``dw`` and ``db``.
"""

from __future__ import annotations

from pymtl_fp.cluster.compiler.partition import _Shape, layer_info
from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import tiles


class NodeRegions:
    """Geometry and buffer regions (mixed into the code generator, which sets ``net``, ``part``,
    ``j``, ``P``, ``Ps``, ``B``, ``slots``, ``dy_slots``, ``per_image``, ``items``, ``A`` (the
    allocator), ``ovl``, ``phase``, ``cfg``)."""

    def _passes_through(self, j) -> bool:
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
        return self.Ps[j + 2] if self._passes_through(j + 1) else self.Ps[j + 1]

    # ---- geometry and regions --------------------------------------------------------------
    def info(self, li):
        """Layer ``li``'s fields as the engine runs it (tap-packed: ``C*R*S`` channels, ``1 x 1``)."""
        return layer_info(self.net, li, li in self.part.packed)

    def dx_dest(self, prev, b):
        """``(dsel, d0)`` of a data gradient: straight into the previous item's output gradient
        in D, or O (to be sent to the previous node) for the node's first item."""
        if prev is not None:
            return msgs.DSEL_D, self.dy_in(prev, b)
        return msgs.DSEL_O, self.ob(b)

    def ob(self, b):
        """Where image b's results go in O: with overlap, slot ``b % 2`` of the current direction
        (forward results in two slots, backward ones in two more, as the 1F1B schedule
        interleaves them)."""
        if not self.ovl:
            return 0
        if self.phase == "bwd":
            return 2 * self.o_fwd + (b % 2) * self.o_bwd
        return (b % 2) * self.o_fwd

    def _o_results(self):
        """Words of the largest one-image result written to O (forward, backward): what a node
        sends on (a last item's output, a first piece's, the data gradient of its first item) and
        a pooled output the DMA copies (:meth:`am_in_o`)."""
        fwd, bwd = [0], [0]
        for i, it in enumerate(self.items):
            kind, last = self.kind(it), i == len(self.items) - 1
            if kind == "pool":
                if not self.am_in_o(it):
                    fwd.append(self.out_words(it.layer))
            elif kind == "first" or (kind == "whole" and last):
                fwd.append(self.out_words(it.layer, it.k0, it.k1))
            if i == 0 and it.layer not in self.part.packed:  # (a packed layer sends no dx)
                bwd.append(self.in_words(it.layer))
        return max(fwd), max(bwd)

    def kind(self, it):
        """'pool', 'whole', 'first' (k1 < K: sends to the next node) or 'second' (k0 > 0)."""
        if it.pool:
            return "pool"
        K = self.info(it.layer)["k"]
        if it.k0 > 0:
            return "second"
        return "whole" if it.k1 == K else "first"

    def in_words(self, li):
        f = self.info(li)
        return tiles(f["c"], self.P) * f["h"] * f["w"]

    def out_words(self, li, k0=0, k1=None):
        f = self.info(li)
        k1 = f["k"] if k1 is None else k1
        return tiles(k1 - k0, self.P) * f["ho"] * f["wo"]

    def x_addr(self, it, b):
        """Where image b's input of item ``it`` lives in X."""
        iw = self.in_words(it.layer)
        if it.pool:
            return self.A.get("X", f"xt{it.layer}", iw)
        return self._slot("X", f"x{it.layer}", iw, self.slots if it in self.per_image else self.B, b)

    def _slot(self, buf, name, words, slots, b):
        """Image ``b``'s ``words`` in region ``name`` of ``buf``: a ring of ``slots`` images (image
        ``b`` in slot ``b % slots``; the whole batch when ``slots = B``)."""
        return self.A.get(buf, name, slots * words) + (b % slots) * words

    def am_in_o(self, it) -> bool:
        """A pool followed on the node by a layer other than a first piece keeps its argmax in O
        (``amsel``), so that pool_fwd writes its result straight into that layer's input in X.
        Otherwise the result goes to O and the argmax to X: at the node's end; before a first
        piece (whose input is sent on in the copy's STORE); and after a second piece, whose
        output gradient the pool_bwd pieces send from O while the next pieces read the argmax."""
        i = self.items.index(it)
        return (i + 1 < len(self.items) and self.kind(self.items[i + 1]) != "first"
                and not (i > 0 and self.kind(self.items[i - 1]) == "second"))

    def am_addr(self, it, b):
        ow = self.out_words(it.layer)
        return self._slot("O" if self.am_in_o(it) else "X", f"am{it.layer}", ow, self.slots, b)

    def dy_keep(self, it, b):
        """Where image b's output gradient of item ``it`` stays until its weight gradient."""
        ow = self.out_words(it.layer, it.k0, it.k1)
        return self._slot("D", f"dy{it.layer}", ow, self.dy_slots if it in self.per_image else self.B, b)

    def dy_in(self, it, b):
        """Where the incoming output gradient of item ``it`` (image b) is written."""
        k = self.kind(it)
        if k in ("whole", "first"):
            return self.dy_keep(it, b)
        return self.A.get("D", f"dyt{it.layer}", self.out_words(it.layer))

    def w_region(self, it):
        if it.layer in getattr(self, "remote", {}):  # (a compiler bug: streamed, see weights_home)
            raise AssertionError(f"node {self.j}: layer {it.layer}'s weights are kept by a neighbour")
        f = self.info(it.layer)
        ct = tiles(f["c"], self.P)
        per_kt = ct * f["r"] * f["s"]
        if self.kind(it) == "second":  # the whole layer (the first holder's piece first)
            base = self.A.get("W", f"w{it.layer}", tiles(f["k"], self.P) * per_kt)
            return base, base + (it.k0 // self.P) * per_kt, tiles(it.k1 - it.k0, self.P) * per_kt
        base = self.A.get("W", f"w{it.layer}", tiles(it.k1 - it.k0, self.P) * per_kt)
        return base, base, tiles(it.k1 - it.k0, self.P) * per_kt

    # ---- code generation -------------------------------------------------------------------
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
        return int(getattr(self.cfg, which) == "stochastic")

    def stage(self, it, b):
        """Where a second piece's whole output is assembled in X (the next item's input)."""
        i = self.items.index(it)
        nxt = self.items[i + 1] if i + 1 < len(self.items) else None
        return self.x_addr(nxt, b) if nxt is not None else self.A.get("X", f"ys{it.layer}", self.out_words(it.layer))
