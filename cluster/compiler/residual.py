"""A node's residual layers as code generation: identity adds and global average pools run by the
router's residual unit (:mod:`~pymtl_fp.cluster.isa.residual`) over the scratch FIFO, bit for bit as
:func:`pymtl_fp.golden.train.forward` and :func:`~pymtl_fp.golden.train.backward` compute them.

Forward (:meth:`Residual.forward`), image ``b``:

* an add: STORE its main branch (the previous layer's output, in the add's input slot in X) and the
  skip (the input, in X, of the layer its source feeds: kept there for that layer's weight
  gradient) to the scratch FIFO, ``ADD`` (saturated to the activation width, then ReLU if the add
  has one), LOAD the sum where the next layer reads it (its input in X, or O to be sent on);
* a global average pool: STORE its input, ``GAP``, LOAD the ``(C, 1, 1)`` means likewise.

Backward (:meth:`Residual.backward`), image ``b``, the gradient ``g`` of the layer's output in D:

* a global average pool: STORE ``g`` (and, where its input comes out of a ReLU, the input kept in
  X), ``GAPB``, LOAD the input gradient where the previous layer reads it;
* an add: ``g`` goes to both branches.  The main branch's share (``MASK``\\ ed by the main input
  where that comes out of a ReLU) goes where the previous layer reads its output gradient; the
  skip's share (``MASK``\\ ed by the skip where its source comes out of a ReLU) waits in D until
  the gradient of the skip's source tensor is complete (the data gradient of the layer it feeds,
  :meth:`Residual.fork`), which ``ADD`` sums with it (saturated once to the gradient width:
  :func:`~pymtl_fp.golden.residual.fork_sum`).

Rounding seeds: ``GAP`` rounds mean ``(n, c)`` at index ``n*C + c`` and ``GAPB`` element
``(n, c, h, w)`` at its flat index, so image ``b``'s commands carry
:func:`~pymtl_fp.cluster.compiler.dma.slice_seed` of the image's offset; tensor ids
:func:`~pymtl_fp.golden.train.gap_tensor_id`.

Skips across a cut (the add on a later node than the layer its source feeds): the skip travels
with the activations.  The node holding the source's reader STOREs it to ``fwd_out`` right after
its own output; every node on the way LOADs it with its input (:meth:`Residual.receive_skips`,
inside the hoisted receive, so a skip never waits behind a backward pass) into a one-image slot of X
and STOREs it on after its output; the add's node keeps it in a slot per image (its ``MASK`` needs
it in the backward pass).  The skip's gradient share goes back the same way: the add's node STOREs
it to ``bwd_out`` after its data gradient, every node on the way LOADs it after its output gradient
(:meth:`Residual.receive_shares`) and sends it on after its own, and the source's node sums it at
the fork.  On every link the skips of one image follow its activations (or gradients) in the order
of their adds.  Their elements are the ports' link elements per step, like any LOAD and STORE.

:func:`check_residual` refuses, with one line naming the layer, what the compiler does not map: a
layer split over two nodes in a residual net, a skip crossing a cut between nodes of different
array sides, row bands, per-image schedules, replicas, two skips from one source, a skip from a
tap-packed layer's input or from a max pool's input.
"""

from __future__ import annotations

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler.dma import slice_seed
from pymtl_fp.cluster.compiler.plan import Pass
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden.train import gap_tensor_id, tensor_id

RES_KINDS = ("add", "gap", "proj")


def _holder(nodes, li):
    """``(node, item)`` holding layer ``li`` (its whole output channels), or ``(None, None)``."""
    for j, items in enumerate(nodes):
        for it in items:
            if it.layer == li:
                return j, it
    return None, None


def skips(net, nodes) -> list:
    """Every add's skip as ``(add layer, source tensor t, node of t's reader, node of the add)``, in
    layer order (tensor ``t`` is the input of layer ``t``, kept in X by its node)."""
    from pymtl_fp.net import Add

    out = []
    for li, layer in enumerate(net.layers):
        if isinstance(layer, Add):
            t = net.source_index(layer)
            out.append((li, t, _holder(nodes, t)[0], _holder(nodes, li)[0]))
    return out


def check_residual(net, part, schedule: str = "1f1b", bands: int = 0, mixed_p: bool = False) -> None:
    """Refuse (one line, naming the layer) a residual net's mapping the compiler does not build
    (replicas are refused by :func:`~pymtl_fp.cluster.run.train.compile_run`)."""
    from pymtl_fp.cluster.compiler.schedule import PER_IMAGE
    from pymtl_fp.net import Add

    if not net.residual:
        return
    if bands:
        raise ClusterError(f"{net.name} is a residual net: its adds and average pools run on whole layers "
                           "(--bands 0)")
    if schedule in PER_IMAGE:
        raise ClusterError(f"{net.name} is a residual net: the cluster trains it with a mini-batch schedule "
                           f"(1f1b or gpipe), not --schedule {schedule}")
    split = part.split_layers()
    if split:
        raise ClusterError(f"{net.name} is a residual net: {split[0]} is split over two nodes; its layers run whole "
                           "on one node each (--cuts at layer boundaries)")
    sources = {}
    for li, layer in enumerate(net.layers):
        if not isinstance(layer, Add):
            continue
        t = net.source_index(layer)
        if t in sources:
            raise ClusterError(f"{layer.name}: {layer.source!r} is also the skip of {sources[t]}; the cluster maps one "
                               "skip per source")
        sources[t] = layer.name
        j_add, _ = _holder(part.nodes, li)
        j_src, src = _holder(part.nodes, t)
        if j_src != j_add and mixed_p:
            raise ClusterError(f"{layer.name}: its skip from {layer.source!r} crosses from node {j_src} to node "
                               f"{j_add}, on nodes of different array sides; skips cross cuts between nodes of one "
                               "array side")
        if t in part.packed:
            raise ClusterError(f"{layer.name}: its skip is the input of the tap-packed {net.layers[t].name} "
                               "(--tap-pack off)")
        if src.pool and _layer_kind(net, t) == "pool":
            raise ClusterError(f"{layer.name}: its skip is the input of the max pool {net.layers[t].name}, which "
                               "the node does not keep for the backward pass; skip from the pool's output")


def _layer_kind(net, li) -> str:
    from pymtl_fp.net import Add, GlobalAvgPool, Pool

    layer = net.layers[li]
    if isinstance(layer, Pool):
        return "pool"
    if isinstance(layer, GlobalAvgPool):
        return "gap"
    return "add" if isinstance(layer, Add) and not layer.project else "weights"


class Residual(Pass):
    """The residual unit's part of image ``b``'s forward and backward passes on one node."""

    def _skip_at(self, layer, li, b):
        """Where image ``b``'s skip of add ``layer`` (layer ``li``) is in X on this node: the input of
        the layer its source feeds, or, where that is on an earlier node, the slot it arrived in."""
        src = next((it for it in self.node.items if it.layer == self.node.net.source_index(layer)), None)
        if src is not None:
            return self.regions.x_addr(src, b)
        return self._skip_slot(li, b, keep=True)

    def _skip_slot(self, li, b, keep):
        """The X slot of the skip of add ``li`` arriving on this node: one per image kept on its add's
        node (``keep``; its backward pass masks by it), one image on a node it passes through."""
        words = self.node.in_words(li)
        if keep and self.node.kind(self._item(li)) == "proj":  # (straight into the projection's input)
            return self.regions.x_addr(self._item(li), b)
        if keep:
            return self.regions._slot("X", f"skip{li}", words, self.keep.slots, b)
        return self.alloc.get("X", f"skipt{li}", words)

    def _item(self, li):
        return next(it for it in self.node.items if it.layer == li)

    def _crossing(self, lo, hi):
        """The skips whose source reader is on a node ``<= lo`` and whose add is on a node ``>= hi``
        (those on the link between nodes ``lo`` and ``hi = lo + 1``), in layer order."""
        if not self.node.net.residual:
            return []
        return [(li, t, js, ja) for li, t, js, ja in skips(self.node.net, self.node.part.nodes) if js <= lo and ja >= hi]

    def _skip_io(self, li, port, move, *args):
        """A LOAD or STORE (``move``) of add ``li``'s skip or its gradient share over ``port``: named
        in the trace (the program's notes), counted in the program's ``skip_elems``."""
        em, name = self.em, self.node.net.layers[li].name
        em.prog.notes[len(em.ops)] = f"skip of {name}"
        move(*args)
        if em.counting:
            n = args[2]
            em.prog.skip_elems[port] = em.prog.skip_elems.get(port, 0) + n

    def receive_skips(self, b):
        """LOAD image ``b``'s skips arriving on ``fwd_in`` (after its input)."""
        j, P = self.node.j, self.node.P
        for li, _, _, ja in self._crossing(j - 1, j):
            self._skip_io(li, "fwd_in", self.em.load, "X", self._skip_slot(li, b, keep=ja == j),
                          self.node.in_words(li) * P, "fwd_in")

    def send_skips(self, b):
        """STORE image ``b``'s skips leaving on ``fwd_out`` (after its output)."""
        j, P, net = self.node.j, self.node.P, self.node.net
        for li, _, js, _ in self._crossing(j, j + 1):
            addr = self._skip_at(net.layers[li], li, b) if js == j else self._skip_slot(li, b, keep=False)
            self._skip_io(li, "fwd_out", self.em.store, "X", addr, self.node.in_words(li) * P, "fwd_out")

    def receive_shares(self, b, pending: dict):
        """LOAD image ``b``'s skip gradient shares arriving on ``bwd_in`` (after its output gradient):
        a share whose source reader is on this node waits in ``pending`` for its fork, the others
        for :meth:`send_shares`."""
        j, P, net = self.node.j, self.node.P, self.node.net
        for li, t, js, _ in self._crossing(j, j + 1):
            if not net.needs_grad(t):
                continue
            region = self.alloc.get("D", f"share{li}", self.node.in_words(li))
            self._skip_io(li, "bwd_in", self.em.load, "D", region, self.node.in_words(li) * P, "bwd_in")
            pending.setdefault(t if js == j else ("send", li), []).append(("D", region))

    def send_shares(self, b, pending: dict):
        """STORE image ``b``'s skip gradient shares leaving on ``bwd_out`` (after its data gradient)."""
        j, P, net = self.node.j, self.node.P, self.node.net
        for li, t, _, _ in self._crossing(j - 1, j):
            if net.needs_grad(t):
                ((buf, addr),) = pending.pop(("send", li))
                self._skip_io(li, "bwd_out", self.em.store, buf, addr, self.node.in_words(li) * P, "bwd_out")

    def _dest(self, nxt, b):
        """Where a forward result goes: the next item's input in X, else O (sent on)."""
        if nxt is not None:
            return "X", self.regions.x_addr(nxt, b)
        return "O", self.regions.ob(b)

    def forward(self, it, b, seed, nxt) -> tuple:
        """Image ``b``'s add or average pool ``it``; returns ``(buf, addr, words)`` of its result."""
        node, em, regions, P = self.node, self.em, self.regions, self.node.P
        net, li = node.net, it.layer
        layer, f = net.layers[li], node.info(li)
        em.layer = layer.name
        if node.kind(it) == "proj":
            return self._forward_proj(it, b, seed, nxt)
        n_in = node.in_words(li) * P
        em.store("X", regions.x_addr(it, b), n_in, "scratch")
        if node.kind(it) == "add":
            em.store("X", self._skip_at(layer, li, b), n_in, "scratch")
            n = em.residual(isa.add(n_in, node.fmt.act.bits, layer.relu, name=layer.name))
        else:
            off = (node.b0 + b) * f["c"]  # (mean (n, c) rounds at index n*C + c)
            n = em.residual(isa.gap((1, f["c"], f["h"], f["w"]), P, node.fmt.act.bits, stoch=node.mode("fwd_mode"),
                                    seed=slice_seed(seed, off), tid=gap_tensor_id(net, layer, "FWD"), name=layer.name))
        buf, addr = self._dest(nxt, b)
        em.load(buf, addr, n, "scratch")
        return buf, addr, n // P

    def _forward_proj(self, it, b, seed, nxt) -> tuple:
        """An add with a projection: the skip into the projection's input (copied from the input of
        the layer its source feeds; or LOADed there on arrival), its 1x1 conv (the engine's ``fwd``,
        no ReLU) into a one-image region, then ``ADD`` with the main branch, as an identity add."""
        node, em, regions, P = self.node, self.em, self.regions, self.node.P
        net, li = node.net, it.layer
        layer, f = net.layers[li], node.info(li)
        if self.home.is_remote(it):
            raise ClusterError(f"{layer.name}: the weights of a projection stay on its node (--weight-home off, or "
                               "deeper W buffers)")
        x = regions.x_addr(it, b)
        if any(s.layer == net.source_index(layer) for s in node.items):
            em.copy("X", self._skip_at(layer, li, b), "X", x, node.in_words(li) * P)
        ow = node.out_words(li)
        tmp = self.alloc.get("X", f"pj{li}", ow)
        off = (node.b0 + b) * f["k"] * f["ho"] * f["wo"]
        em.compute("fwd", program.useful_macs("fwd", node.case(it, 1)), **node.conv_fields(it, 1),
                   shift=node.shifts[layer.name].fwd, relu=0, stoch=node.mode("fwd_mode"),
                   tid=tensor_id(f["p"], "FWD"), a0=x, seed=slice_seed(seed, off), a1=regions.w_region(it)[1],
                   a2=self.alloc.get("B", f"b{li}", tiles(f["k"], P)), d0=tmp, dsel=msgs.DSEL_X)
        n = ow * P
        em.store("X", regions.in_addr(it, b), n, "scratch")
        em.store("X", tmp, n, "scratch")
        em.residual(isa.add(n, node.fmt.act.bits, layer.relu, name=layer.name))
        buf, addr = self._dest(nxt, b)
        em.load(buf, addr, n, "scratch")
        return buf, addr, ow

    def _backward_proj(self, it, b, seed, prev, pending) -> tuple | None:
        """An add with a projection: the skip's share is the projection's data gradient (masked by
        the engine where the source comes out of a ReLU); the main branch's as an identity add's."""
        node, em, regions, P = self.node, self.em, self.regions, self.node.P
        net, li = node.net, it.layer
        layer, f = net.layers[li], node.info(li)
        dy = regions.dy_in(it, b)
        t = net.source_index(layer)
        if net.needs_grad(t):
            share = self.alloc.get("D", f"pjg{li}", node.in_words(li))
            case = node.case(it, 1)
            case["dy"] = None
            em.compute("bwd_data", program.useful_macs("bwd_data", case), **node.conv_fields(it, 1),
                       shift=node.shifts[layer.name].bwd_data, relu=int(net.rectified(t)),
                       stoch=node.mode("grad_mode"), tid=tensor_id(f["p"], "DX"),
                       seed=slice_seed(seed, (node.b0 + b) * f["c"] * f["h"] * f["w"]), a0=dy,
                       a1=regions.w_region(it)[0], a2=regions.x_addr(it, b), d0=share, dsel=msgs.DSEL_D)
            local = any(x.layer == t for x in node.items)
            pending.setdefault(t if local else ("send", li), []).append(("D", share))
        return self._main_share(it, b, prev, dy, node.out_words(li) * P)

    def _main_share(self, it, b, prev, dy, n) -> tuple | None:
        """The main branch's share of an add's gradient ``dy`` (``n`` elements): masked by the main
        branch's output where that comes out of a ReLU, else ``dy`` itself."""
        net, li, P = self.node.net, it.layer, self.node.P
        if not net.needs_grad(li):
            return None
        if net.rectified(li):
            buf, d0 = self._grad_dest(prev, b)
            self._mask(dy, self.regions.in_addr(it, b), n, self.node.fmt.grad.bits, net.layers[li].name)
            self.em.load(buf, d0, n, "scratch")
            return buf, d0, n // P
        return "D", dy, n // P

    def backward(self, it, b, seed, prev, pending: dict) -> tuple | None:
        """Image ``b``'s backward pass through add or average pool ``it`` (its output gradient in
        D); returns ``(buf, addr, words)`` of the gradient of its input.  An add's skip share goes
        to ``pending`` (``{tensor: [(buf, addr)]}``) until :meth:`fork`."""
        node, em, regions, P = self.node, self.em, self.regions, self.node.P
        net, li = node.net, it.layer
        layer, f = net.layers[li], node.info(li)
        em.layer = layer.name
        if node.kind(it) == "proj":
            return self._backward_proj(it, b, seed, prev, pending)
        dy = regions.dy_in(it, b)
        n = node.in_words(li) * P  # (the input's elements; an add's output has as many)
        gbits = node.fmt.grad.bits
        dsel_buf, d0 = self._grad_dest(prev, b)
        if node.kind(it) == "gap":
            if not net.needs_grad(li):
                return None
            em.store("D", dy, tiles(f["c"], P) * P, "scratch")
            relu = net.rectified(li)
            if relu:
                em.store("X", regions.x_addr(it, b), n, "scratch")
            off = (node.b0 + b) * f["c"] * f["h"] * f["w"]
            m = em.residual(isa.gapb((1, f["c"], f["h"], f["w"]), P, gbits, relu=relu, stoch=node.mode("grad_mode"),
                                     seed=slice_seed(seed, off), tid=gap_tensor_id(net, layer, "DX"), name=layer.name))
            em.load(dsel_buf, d0, m, "scratch")
            return dsel_buf, d0, m // P
        t = net.source_index(layer)
        if net.needs_grad(t):  # the skip's share, kept until the source tensor's gradient is complete
            local = any(x.layer == t for x in node.items)  # (else: sent towards it, send_shares)
            key = t if local else ("send", li)
            if net.rectified(t):
                keep = self.alloc.get("D", f"skip{li}", node.in_words(li))
                self._mask(dy, self._skip_at(layer, li, b), n, gbits, layer.name)
                em.load("D", keep, n, "scratch")
                pending.setdefault(key, []).append(("D", keep))
            else:
                pending.setdefault(key, []).append(("D", dy))
        return self._main_share(it, b, prev, dy, n)

    def _grad_dest(self, prev, b):
        if prev is not None:
            return "D", self.regions.dy_in(prev, b)
        return "O", self.regions.ob(b)

    def _mask(self, g, x, n, bits, name):
        self.em.store("D", g, n, "scratch")
        self.em.store("X", x, n, "scratch")
        self.em.residual(isa.mask(n, bits, name=name))

    def fork(self, t, out, pending: dict) -> None:
        """Add the skip shares waiting for tensor ``t``'s gradient (``pending``) to the one at
        ``out = (buf, addr, words)``, in place (``ADD``, saturated to the gradient width)."""
        shares = pending.pop(t, [])
        if not shares:
            return
        em, P = self.em, self.node.P
        buf, addr, words = out
        n = words * P
        # one share: check_residual refuses two adds from one source (the golden model saturates the
        # sum of every share once; chained saturating ADDs would not equal it)
        (sbuf, saddr), = shares
        em.store(buf, addr, n, "scratch")
        em.store(sbuf, saddr, n, "scratch")
        em.residual(isa.add(n, self.node.fmt.grad.bits, name=f"fork of tensor {t}"))
        em.load(buf, addr, n, "scratch")
