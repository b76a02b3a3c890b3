"""Where a node keeps what: the buffer regions of its code-generation plan.

:class:`Regions` answers, for the passes over a node's plan
(:class:`~pymtl_fp.cluster.compiler.plan.NodePlan`), "which words of which buffer hold image ``b``'s
input of item ``it``" and the like, from the partition and the buffer plan
(:class:`~pymtl_fp.cluster.compiler.buffers.Alloc`); :func:`keep_in_flight` decides which images' tensors
the node keeps:

X holds the inputs of the node's conv/fc pieces and the pool argmaxes (or O, see
:meth:`Regions.am_in_o`) of every image the node keeps (the whole batch ``B`` for a piece
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

from pymtl_fp.cluster.compiler.partition import op_cycles
from pymtl_fp.cluster.compiler.schedule import AUTO_SLACK, PER_IMAGE, images_in_flight
from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import tiles


def keep_in_flight(plan, schedule):
    """Keep only the images in flight where the weight gradients are per image (a per-image
    schedule, ``wgrad = "image"``, or ``"auto"``'s choice: :func:`wgrad_per_image`): those
    layers' inputs and the pools' argmaxes in :func:`~pymtl_fp.cluster.compiler.schedule.images_in_flight`
    slots, their output gradients for the image in its backward pass (two with overlap: the
    next one's arrive while the last one's weight gradients run)."""
    node, keep, wgrad = plan.node, plan.keep, plan.opts.wgrad
    per_schedule = schedule in PER_IMAGE
    keep.per_image = frozenset(it for it in node.items  # (a remote layer's: over the batch)
                               if not it.pool and not plan.home.is_remote(it)
                               and (per_schedule or wgrad_per_image(plan, it)))
    keep.slots = images_in_flight(schedule, node.j, node.part.n, node.B,
                                  late_wgrad=not per_schedule and wgrad != "batch")
    keep.dy_slots = min(node.B, 1 + plan.opts.ovl)


def wgrad_per_image(plan, it) -> bool:
    """Does item ``it`` compute its weight gradient per image?  ``image``: yes; ``auto``: where
    one image's ``bwd_weight`` (timing model) costs at most ``AUTO_SLACK`` times its share of
    the batch's; ``batch``: no."""
    node, wgrad = plan.node, plan.opts.wgrad
    if wgrad != "auto":
        return wgrad == "image"
    packed = it.layer in node.part.packed
    one = op_cycles(node.ecfg, node.net, it.layer, "bwd_weight", 1, it.k0, it.k1, packed)
    whole = op_cycles(node.ecfg, node.net, it.layer, "bwd_weight", node.B, it.k0, it.k1, packed)
    return one <= AUTO_SLACK * whole / node.B


class Regions:
    """Buffer regions of one node's plan: ``node`` (:class:`~pymtl_fp.cluster.compiler.geometry.NodeSpec`),
    ``keep`` (the images kept, :class:`~pymtl_fp.cluster.compiler.plan.Keep`), ``alloc`` (the buffer
    plan), ``home`` (layers whose weights a neighbour keeps) and ``emit`` (whose ``phase`` picks a
    direction's O slots)."""

    def __init__(self, node, keep, alloc, home, emit):
        self.node, self.keep, self.alloc, self.home, self.emit = node, keep, alloc, home, emit

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
        if not self.emit.ovl:
            return 0
        if self.emit.phase == "bwd":
            return 2 * self.keep.o_fwd + (b % 2) * self.keep.o_bwd
        return (b % 2) * self.keep.o_fwd

    def o_results(self):
        """Words of the largest one-image result written to O (forward, backward): what a node
        sends on (a last item's output, a first piece's, the data gradient of its first item) and
        a pooled output the DMA copies (:meth:`am_in_o`)."""
        node, items = self.node, self.node.items
        fwd, bwd = [0], [0]
        for i, it in enumerate(items):
            kind, last = node.kind(it), i == len(items) - 1
            if kind == "pool":
                if not self.am_in_o(it):
                    fwd.append(node.out_words(it.layer))
            elif kind in ("add", "gap"):  # (LOADed from the residual unit's result)
                if last:
                    fwd.append(node.out_words(it.layer))
            elif kind == "first" or (kind in ("whole", "proj") and last):
                fwd.append(node.out_words(it.layer, it.k0, it.k1))
            if i == 0 and it.layer not in node.part.packed:  # (a packed layer sends no dx)
                bwd.append(node.out_words(it.layer) if kind == "proj" else node.in_words(it.layer))
        return max(fwd), max(bwd)

    def x_addr(self, it, b):
        """Where image b's input of item ``it`` lives in X."""
        iw = self.node.in_words(it.layer)
        if it.pool and self.node.kind(it) == "pool":
            return self.alloc.get("X", f"xt{it.layer}", iw)
        if it.pool:  # an add's main branch, an average pool's input: their backward masks by it
            return self._slot("X", f"x{it.layer}", iw, self.keep.slots, b)
        return self._slot("X", f"x{it.layer}", iw, self.keep.slots if it in self.keep.per_image else self.node.B, b)

    def in_addr(self, it, b):
        """Where the previous item writes image b's input of item ``it``: its input in X, or for an
        add with a projection (whose conv reads the skip, :meth:`x_addr`) its main branch, kept per
        image (its backward pass masks by it)."""
        if self.node.kind(it) == "proj":
            return self._slot("X", f"m{it.layer}", self.node.out_words(it.layer), self.keep.slots, b)
        return self.x_addr(it, b)

    def _slot(self, buf, name, words, slots, b):
        """Image ``b``'s ``words`` in region ``name`` of ``buf``: a ring of ``slots`` images (image
        ``b`` in slot ``b % slots``; the whole batch when ``slots = B``)."""
        return self.alloc.get(buf, name, slots * words) + (b % slots) * words

    def am_in_o(self, it) -> bool:
        """A pool followed on the node by a layer other than a first piece keeps its argmax in O
        (``amsel``), so that pool_fwd writes its result straight into that layer's input in X.
        Otherwise the result goes to O and the argmax to X: at the node's end; before a first
        piece (whose input is sent on in the copy's STORE); and after a second piece, whose
        output gradient the pool_bwd pieces send from O while the next pieces read the argmax."""
        node, items = self.node, self.node.items
        i = items.index(it)
        return (i + 1 < len(items) and node.kind(items[i + 1]) != "first"
                and not (i > 0 and node.kind(items[i - 1]) == "second"))

    def am_addr(self, it, b):
        ow = self.node.out_words(it.layer)
        return self._slot("O" if self.am_in_o(it) else "X", f"am{it.layer}", ow, self.keep.slots, b)

    def dy_keep(self, it, b):
        """Where image b's output gradient of item ``it`` stays until its weight gradient."""
        ow = self.node.out_words(it.layer, it.k0, it.k1)
        return self._slot("D", f"dy{it.layer}", ow, self.keep.dy_slots if it in self.keep.per_image else self.node.B, b)

    def dy_in(self, it, b):
        """Where the incoming output gradient of item ``it`` (image b) is written."""
        k = self.node.kind(it)
        if k in ("whole", "first", "proj"):
            return self.dy_keep(it, b)
        return self.alloc.get("D", f"dyt{it.layer}", self.node.out_words(it.layer))

    def w_region(self, it):
        """Item ``it``'s weights in W: ``(the layer's base, the piece's own, the piece's words)``."""
        node, P = self.node, self.node.P
        if it.layer in self.home.remote:  # (a compiler bug: streamed, see weights_home)
            raise AssertionError(f"node {node.j}: layer {it.layer}'s weights are kept by a neighbour")
        f = node.info(it.layer)
        per_kt = tiles(f["c"], P) * f["r"] * f["s"]
        if node.kind(it) == "second":  # the whole layer (the first holder's piece first)
            base = self.alloc.get("W", f"w{it.layer}", tiles(f["k"], P) * per_kt)
            return base, base + (it.k0 // P) * per_kt, tiles(it.k1 - it.k0, P) * per_kt
        base = self.alloc.get("W", f"w{it.layer}", tiles(it.k1 - it.k0, P) * per_kt)
        return base, base, tiles(it.k1 - it.k0, P) * per_kt

    def stage(self, it, b):
        """Where a second piece's whole output is assembled in X (the next item's input)."""
        items = self.node.items
        i = items.index(it)
        if i + 1 < len(items):
            return self.in_addr(items[i + 1], b)
        return self.alloc.get("X", f"ys{it.layer}", self.node.out_words(it.layer))
