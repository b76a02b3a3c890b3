"""Passes in row bands on a node (FPDeep's fine-grained pipeline, ``train --bands R``), at every level:
the node programs only change which engine commands run, and in which order.

:class:`ForwardBands` is the code-generation pass (:mod:`~pymtl_fp.cluster.compiler.codegen`) that runs an
image's forward pass band by band:
each conv layer and each pool computes its output ``R`` rows at a time (:func:`pymtl_fp.golden.band.bands`)
as soon as the rows of its input that the band needs are there, and the node's last layer sends
each band on at once, so the next node starts its first band while this one still computes.

* **In place.**  Every band reads its window, and writes its rows, inside the whole maps the layer
  pipeline keeps (the same regions, the same layout): the commands address them in planes
  (:data:`pymtl_fp.engine.encoding.PLANES`, ``hp`` / ``hop`` = the whole maps' rows).  So the
  backward pass and the weight gradients are unchanged, and the bits are the whole map's: a band
  pads only at the map's true edges (``pt``) and rounds its elements as rows of the whole map
  (``hi`` and the seed's row offset, :mod:`pymtl_fp.golden.band`).
* **On the links** a band of the node's last layer goes from one of two alternating band buffers
  in O, dense, in one STORE, where two fit in the O slot (so the next band's compute need not wait
  for the STORE); else in place, one STORE per channel tile.  The receiver LOADs the band's rows of
  each channel tile's plane in the same order (:meth:`ForwardBands.in_plan`: the sender's bands); the
  host sends node 0's input in rows when it has one channel tile (then the whole map's order is
  the rows' order), else whole.
* **The order** of a node's commands (:meth:`BandPass.run_bands`): the deepest layer whose next
  band has its input rows runs first (the output leaves as early as it can), else the next input
  piece is LOADed; after each band of the first layer the next input piece is LOADed at once.
* An fc layer has one output row: its one band reads the whole input map, once all of it is there.
* **Split layers** (a layer's output channels over two neighbouring nodes): the first holder, the
  node's last item, sends the rows of the layer's input as they arrive or are computed, and each
  band of its own channels; the second holder, the next node's first item, computes its channels'
  band from the input rows and assembles the whole rows beside the first holder's in its stage
  (where the next item reads them).  The pieces a banded pass sends are recorded as the node is
  compiled, and the next node LOADs them in that order (:meth:`ForwardBands.in_plan`).
* **Which passes.**  By default only the forward passes of the pipeline's fill run in bands (each
  node's passes before its first backward pass of a step,
  :func:`~pymtl_fp.cluster.compiler.schedule.fill_passes`;
  :attr:`~pymtl_fp.cluster.compiler.plan.Options.band_images`): there the next node starts as the rows
  come and nothing else waits.  With the pipeline full a node alternates a
  forward and a backward pass; a pass in bands would start early and wait mid-pass for its
  upstream node's rows instead of running the backward pass (measured: up to 14 % more cycles per
  step), so those passes run as whole layers, LOADing their input in the upstream node's pieces
  (:meth:`ForwardBands.in_plan`).  ``bands_all`` bands every forward pass.

With ``bands_backward`` the backward pass runs in bands the same way
(:class:`~pymtl_fp.cluster.compiler.bands_backward.BackwardBands`, with this module's scheduler):
each layer's data gradient over bands of its ``dx`` rows as soon as the output-gradient rows the
band needs are there (``bwd_data``'s window, :func:`pymtl_fp.golden.band.bwd_data_window`; a pool's
over its pooled rows), the node's first layer's bands sent back at once (measured slower than
whole-layer backward passes on the digits nets: docs/cluster-fine-grained.md).  The weight gradients stay whole-map
commands (over the batch, or per image behind the next forward pass): they need the whole maps
anyway.  Backward bands with split layers, mixed array sides and replicas are refused
(:func:`check_bands`, :func:`pymtl_fp.cluster.run.train.train_on_cluster`).
"""

from __future__ import annotations

from pymtl_fp import timing
from pymtl_fp.cluster.compiler.dma import slice_seed
from pymtl_fp.cluster.compiler.partition import layer_info
from pymtl_fp.cluster.compiler.plan import Pass
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden import band
from pymtl_fp.golden.train import tensor_id


def check_bands(bands, net, part, Ps, backward=False) -> None:
    """Refuse a ``--bands`` the compiler cannot run: not a count (``auto`` is resolved before
    compiling: :func:`choose_bands`), negative, backward passes in bands with a split layer, or
    nodes of different array sides (one line each, before any simulation)."""
    if isinstance(bands, bool) or not isinstance(bands, int):
        raise ClusterError(f"--bands {bands!r}: rows per band (an integer; 0: whole layers)")
    if bands < 0:
        raise ClusterError(f"--bands {bands}: rows per band must be >= 1 (0: whole layers)")
    if not bands:
        return
    if len(set(Ps)) > 1:
        raise ClusterError(f"--bands needs one array side on every node, got {sorted(set(Ps))} (leave --bands out)")
    split = [it for items in part.nodes for it in items
             if not it.pool and (it.k0, it.k1) != (0, layer_info(net, it.layer)["k"])]
    if backward and split:
        raise ClusterError("--bands-backward runs whole layers' backward passes in row bands: the partition "
                           "splits a layer (give --cuts at layer boundaries, or --no-split)")


#: the band heights ``bands="auto"`` tries, finest first
AUTO_CANDIDATES = (1, 2, 4)
#: how much more busiest-node compute per step (timing model) ``auto`` accepts for finer bands
AUTO_SLACK = 1.02


def choose_bands(compile_for) -> int:
    """``bands="auto"``: the finest band height (:data:`AUTO_CANDIDATES`) whose busiest node's
    compute per step, by the timing model (each band command pays the engine's fill and drain
    again), is within :data:`AUTO_SLACK` of whole layers'; 0 (whole layers) if none is.  Finer
    bands start the next node sooner (a shorter fill); the slack bounds what they cost the steady
    state.  ``compile_for(bands)``: the cluster program with that height."""
    def busiest(bands):
        return max(p.compute_cycles for p in compile_for(bands).nodes)

    whole = busiest(0)
    return next((r for r in AUTO_CANDIDATES if busiest(r) <= AUTO_SLACK * whole), 0)


class BandPass(Pass):
    """What the row-band passes share: the scheduler that emits each band once its input rows are
    there, LOADs of rows, the band buffers in O, a band's useful MACs."""

    def run_bands(self, b, what, todo, order, feed, upstream, arrivals, receive, emit, got=0, second=None,
                  second_sends=False):
        """Emit every band of ``todo[i]`` (item ``i``'s ``(input rows it needs, result rows done after
        it, rows)``, in order) as soon as its input rows are there: trying the items in ``order``;
        item ``feed`` reads the node's input, which arrives in the pieces of ``arrivals`` (``(tensor, r0,
        r1)``: the input's rows ``"x"``; ``got`` already LOADed; ``receive(b, piece)`` LOADs one),
        every other item ``i`` the results of item ``upstream(i)``.  Item ``second`` (a second
        piece) has whole result rows only where the first holder's rows (``"y"``) are in too; with
        ``second_sends`` its bands leave the node at once, so each waits for them.
        After each band of ``feed`` the next input piece is LOADed at once, beside the band's
        compute and before its results leave (``emit(i, k, rows, then)``: the LOAD waits for the
        link, not the STOREs).  Pieces no band needed are LOADed at the end (still sent)."""
        got, nxt, done = [got], [0] * len(todo), [0] * len(todo)

        def have(tensor):  # (each tensor's pieces arrive in row order)
            return max((r1 for t, _, r1 in arrivals[: got[0]] if t == tensor), default=0)

        def ready(i, need, produced):
            if i == feed:
                ok = need <= have("x")
            else:
                u = upstream(i)
                ok = need <= (min(done[u], have("y")) if u == second else done[u])
            return ok and not (i == second and second_sends and have("y") < produced)

        def prefetch():
            if got[0] < len(arrivals):
                receive(b, got[0])
                got[0] += 1

        while any(nxt[i] < len(todo[i]) for i in order):
            for i in order:
                if nxt[i] == len(todo[i]):
                    continue
                need, produced, rows = todo[i][nxt[i]]
                if ready(i, need, produced):
                    emit(i, nxt[i], rows, prefetch if i == feed else None)
                    done[i], nxt[i] = produced, nxt[i] + 1
                    break
            else:
                if got[0] == len(arrivals):
                    raise ClusterError(f"node {self.node.j}: the {what} bands of image {b} wait for rows that never come")
                prefetch()
        while got[0] < len(arrivals):
            prefetch()

    def load_rows(self, it, buf, addr, src, shape, rows):
        """LOAD rows ``[r0, r1)`` of a ``(C, H, W)`` map kept at ``addr`` of ``buf`` from link ``src``:
        one LOAD per channel tile (its rows of the tile's plane), or the whole map in one."""
        node, em = self.node, self.em
        em.layer = node.layer_name(it)
        (c, h, w), (r0, r1) = shape, rows
        if (r0, r1) == (0, h):
            em.load_from(buf, addr, src, (1, c, h, w))
            return
        for off, words in _pieces(tiles(c, node.P), r0, r1, h, w, dense=False):
            em.load(buf, addr + off, words * node.P, src)

    def band_buffer(self, base, k, words, slot_words, rows, total, dense_ok):
        """Where band ``k`` (``rows`` of a map of ``total``) that leaves the node is written, from
        ``base`` of its O slot (``slot_words``): ``(address, dense)``.  Dense in band buffer ``k % 2``
        (``words`` each), so the next band's compute never waits for this one's STORE, where two fit,
        the band is not the whole map and ``dense_ok`` (no operand shares the result's strides in
        place); else ``base``, in place in the whole map."""
        dense = dense_ok and 2 * words <= slot_words and rows < total
        return (base + (k % 2) * words if dense else base), dense

    def band_macs(self, it, r0, r1, op="fwd") -> int:
        """Useful MACs of conv item ``it``'s band of result rows ``[r0, r1)`` (fwd: ``y``'s, bwd_data:
        ``dx``'s), counted on the layer's own shapes (a tap-packed layer's too, as the energy model
        takes them)."""
        f = layer_info(self.node.net, it.layer)
        geo = dict(n=1, c=f["c"], k=f["k"], ct=f["c"], kt=f["k"], w=f["w"], wo=f["wo"], r=f["r"], s=f["s"],
                   lgst=f["stride"].bit_length() - 1, pad=f["pad"])
        if op == "fwd":
            win = band.fwd_window(f["h"], f["r"], f["stride"], f["pad"], r0, r1)
            geo.update(h=win.i1 - win.i0, ho=r1 - r0, pt=win.pt)
        else:
            win = band.bwd_data_window(f["h"], f["ho"], f["r"], f["stride"], f["pad"], r0, r1)
            geo.update(h=r1 - r0, ho=win.i1 - win.i0, pt=win.pt)
        return timing.useful_macs(op, geo)


class ForwardBands(BandPass):
    """Image ``b``'s forward pass in row bands (``opts.band_rows`` rows each; module docstring)."""

    def out_bands(self, it) -> list:
        """The output rows of item ``it``'s commands, in order: bands of ``band_rows`` (an fc layer's
        one output row: one band, over its whole input)."""
        return band.bands(self.node.info(it.layer)["ho"], self.opts.band_rows)

    def need_rows(self, it, y1) -> int:
        """The input rows item ``it`` needs before it computes its output rows up to ``y1``."""
        f = self.node.info(it.layer)
        if it.pool:
            return min(f["h"], y1 * f["pk"])
        return band.fwd_window(f["h"], f["r"], f["stride"], f["pad"], 0, y1).i1

    def in_plan(self, b) -> list:
        """The pieces in which image ``b``'s forward input arrives, in order: ``(tensor, r0, r1)``,
        rows ``[r0, r1)`` of the first item's input (``"x"``) or, for a second piece, of the first
        holder's output (``"y"``, assembled beside its own in ``regions.stage``).  From a banded upstream
        node, the pieces it sent (``upstream_sent``, recorded as it was compiled); from node 0's
        host, the image in rows of ``band_rows`` when it has one channel tile; else whole."""
        node = self.node
        it = node.items[0]
        f = node.info(it.layer)
        if node.j > 0 and self.opts.banded(node.j - 1, b):
            return self.flow.upstream_sent[b]
        if node.j == 0 and self.opts.banded(node.j, b) and tiles(f["c"], node.P) == 1:
            return [("x", r0, r1) for r0, r1 in band.bands(f["h"], self.opts.band_rows)]
        return [("x", 0, f["h"])] + ([("y", 0, f["ho"])] if node.kind(it) == "second" else [])

    def receive_band(self, b, piece):
        """LOAD piece ``in_plan(b)[piece]`` of image ``b``'s input: rows of the first item's input,
        or of the first holder's output (a second piece's, into its ``regions.stage``); a first piece
        that is also the node's first item sends its input rows on at once (its second holder
        computes from them too)."""
        node, regions = self.node, self.regions
        it, f = node.items[0], node.info(node.items[0].layer)
        tensor, r0, r1 = self.in_plan(b)[piece]
        if tensor == "y":
            self.load_rows(it, "X", regions.stage(it, b), "fwd_in", (it.k0, f["ho"], f["wo"]), (r0, r1))
            return
        self.load_rows(it, "X", regions.x_addr(it, b), "fwd_in", (f["c"], f["h"], f["w"]), (r0, r1))
        if node.kind(it) == "first" and self.opts.banded(node.j, b):
            self._send_rows(b, "x", "X", regions.x_addr(it, b), (f["c"], f["h"], f["w"]), (r0, r1), dense=False)

    def _send_rows(self, b, tensor, buf, addr, shape, rows, dense):
        """STORE rows ``[r0, r1)`` of a ``(C, H, W)`` map at ``addr`` of ``buf`` to ``fwd_out`` (one
        STORE per channel tile's plane, or one for a ``dense`` band), recorded as the next node's
        piece ``tensor`` (:meth:`in_plan`)."""
        node = self.node
        (c, h, w), (r0, r1) = shape, rows
        for off, words in _pieces(tiles(c, node.P), r0, r1, h, w, dense):
            self.em.store(buf, addr + off, words * node.P, "fwd_out")
        self.flow.sent.setdefault(b, []).append((tensor, r0, r1))

    def run(self, b, seed, received=False):
        """Image ``b``'s forward pass in row bands; ``received``: its first input pieces are already
        LOADed (:meth:`receive_band` beside the previous backward pass, counted in ``flow.received``).
        The deepest item whose next band has its input rows goes first (its rows leave the node
        soonest)."""
        node = self.node
        received = self.flow.received.pop(b, 0) if received else 0
        items = node.items
        todo = [[(self.need_rows(it, y1), y1, (y0, y1)) for y0, y1 in self.out_bands(it)] for it in items]
        second = 0 if node.kind(items[0]) == "second" else None  # (its whole output needs the first holder's)
        sends = second is not None and (len(items) == 1 or node.kind(items[1]) == "first")
        self.run_bands(b, "forward", todo, list(reversed(range(len(items)))), 0, lambda i: i - 1, self.in_plan(b),
                       self.receive_band, lambda i, k, rows, then: self._band(i, b, seed, k, *rows, then=then),
                       received, second, sends)

    def _band(self, i, b, seed, k, y0, y1, then=None):
        """Band ``k``, output rows ``[y0, y1)``, of item ``i`` (image ``b``); ``then()`` right after
        its compute command; then where its rows go: on to the next node (from a band buffer in O,
        two alternating, when the O slot holds two; else in place, one STORE per channel tile), into
        the next item's input, or there by the DMA.  A split layer's first piece (the node's last
        item) sends its own channels' rows, and the rows of its input go on before them (its second
        holder computes from them too); a second piece writes its channels' rows beside the first
        holder's in ``regions.stage``, and, as the node's last item, sends the whole rows."""
        node, regions, em = self.node, self.regions, self.em
        it, items, P = node.items[i], node.items, node.P
        nxt = items[i + 1] if i + 1 < len(items) else None
        f = node.info(it.layer)
        em.layer = node.layer_name(it)
        H, W, Ho, Wo = f["h"], f["w"], f["ho"], f["wo"]
        kind = node.kind(it)
        kt = tiles(f["c"] if it.pool else it.k1 - it.k0, P)
        rows = y1 - y0
        if it.pool:
            amsel = int(regions.am_in_o(it))
            dsel, base = (msgs.DSEL_X, regions.x_addr(nxt, b)) if amsel else (msgs.DSEL_O, regions.ob(b))
        elif kind == "second":  # (its channels after the first holder's, in the whole output map)
            dsel, base = msgs.DSEL_X, regions.stage(it, b) + (it.k0 // P) * Ho * Wo
        else:
            dsel, base = (msgs.DSEL_X, regions.x_addr(nxt, b)) if nxt is not None else (msgs.DSEL_O, regions.ob(b))
        # the last item's band (a pool's argmax shares the result's strides, in place: one tile only)
        if nxt is None and kind != "second":
            base, dense = self.band_buffer(base, k, kt * self.opts.band_rows * Wo, self.keep.o_fwd, rows, Ho,
                                           not (it.pool and kt > 1))
        else:
            dense = False
        hop, row0 = (rows, 0) if dense else (Ho, y0)
        if it.pool:
            pk = f["pk"]
            # (the argmax's rows in place: the pooled map's planes; hop covers both maps)
            em.compute("pool_fwd", n=1, c=f["c"], ct=kt, h=rows * pk, w=W, ho=rows, wo=Wo,
                       pk=pk, a0=regions.x_addr(it, b) + y0 * pk * W, d0=base + row0 * Wo,
                       d1=regions.am_addr(it, b) + y0 * Wo, dsel=dsel, amsel=amsel, hp=H, hop=Ho)
        else:
            li, p = it.layer, f["p"]
            name = node.net.layers[li].name
            _, wpiece, _ = regions.w_region(it)
            bpiece = self.alloc.get("B", f"b{li}", tiles(it.k1 - it.k0, P))
            wseed = slice_seed(seed, ((node.b0 + b) * f["k"] + it.k0) * Ho * Wo)
            win = band.fwd_window(H, f["r"], f["stride"], f["pad"], y0, y1)
            fields = dict(node.conv_fields(it, 1, it.k0, it.k1), h=win.i1 - win.i0, ho=rows, pt=win.pt, hi=Ho, hp=H,
                          hop=hop)
            em.compute("fwd", self.band_macs(it, y0, y1), it.layer in node.part.packed, **fields,
                       shift=node.shifts[name].fwd, relu=int(node.net.layers[li].relu),
                       stoch=node.mode("fwd_mode"), seed=slice_seed(wseed, y0 * Wo), tid=tensor_id(p, "FWD"),
                       a0=regions.x_addr(it, b) + win.i0 * W, a1=wpiece, a2=bpiece, d0=base + row0 * Wo, dsel=dsel)
        if then is not None:
            then()
        buf = msgs.BUF_NAMES[msgs.DSEL_BUF[dsel]]
        to_first = nxt is not None and node.kind(nxt) == "first"  # (its rows go on to the second holder too)
        if nxt is None:  # on to the next node: a first piece's rows are its "y", the rest its input
            if kind == "second":
                self._send_rows(b, "x", "X", regions.stage(it, b), (f["k"], Ho, Wo), (y0, y1), dense=False)
            else:
                self._send_rows(b, "y" if kind == "first" else "x", buf, base, (kt * P, Ho, Wo), (y0, y1), dense)
        elif buf == "X":
            if to_first:  # (a second piece's whole rows: the first holder's channels too)
                c = f["k"] if kind == "second" else kt * P
                self._send_rows(b, "x", "X", regions.x_addr(nxt, b), (c, Ho, Wo), (y0, y1), dense=False)
        else:
            for off, words in _pieces(kt, y0, y1, Ho, Wo, dense):
                em.copy(buf, base + off, "X", regions.x_addr(nxt, b) + off, words * P, also="fwd_out" if to_first else None)
            if to_first:
                self.flow.sent.setdefault(b, []).append(("x", y0, y1))


def _pieces(t, r0, r1, total, width, dense) -> list:
    """``[(word offset, words)]`` of rows ``[r0, r1)`` of a map of ``t`` channel tiles, ``total``
    rows, ``width`` wide: one piece for a dense band or the whole map (its tiles are contiguous),
    else one per channel tile's plane (in place)."""
    if dense or (r0, r1) == (0, total):
        return [(0, t * (r1 - r0) * width)]
    return [(u * total * width + r0 * width, (r1 - r0) * width) for u in range(t)]
