"""Per-node code generation: one node program (:mod:`pymtl_fp.cluster.isa`) from a partition.

Pipelining (layer level, per image within a mini-batch): each node runs, per step, the forward
pass of each image (receive the input, run its layers, send the output on) and its backward pass
(receive the output gradient, run its layers backwards, send the input gradient on), in the order
of the ``schedule`` (:func:`~pymtl_fp.cluster.compiler.schedule.step_order`), then the weight gradients over
the whole batch and the updates.  Node ``i`` works on image ``b`` while node ``i+1`` works on
image ``b-1``.

A layer writes its result where the next layer on the node reads it (command field ``dsel``): a
forward result into the next item's input in X, a data gradient into the previous item's output
gradient in D.  Only a pooled output still goes through the DMA (STORE to its scratch FIFO and
LOAD back) where pool_fwd's argmax takes X's write port.

Bit-exactness with :func:`pymtl_fp.golden.train.train_step`:

* weight gradients (``wgrad``, :data:`~pymtl_fp.cluster.compiler.schedule.WGRAD`): ``batch``: every node
  keeps each conv/fc layer input ``x`` and output gradient ``dy`` of every image of the batch on
  chip (X and D) and runs ``bwd_weight`` once over the batch (command field ``n = B``), so the sum
  over the batch is requantized once, as in the golden model; ``image``: after each image's
  backward pass (behind the next forward pass, which the next node waits for) a raw ``bwd_weight``
  (``n = 1``, ``acc`` from the second image on) adds the image's exact sums to B, and at the
  step's end the router's ``REQUANT`` rounds them once with the batch command's seeds (as a
  replica's all-reduce does, with one member), so a node keeps only the images in flight
  (:func:`~pymtl_fp.cluster.compiler.schedule.images_in_flight`) and one image's ``dy`` (two with overlap);
  ``auto``: per image for the layers where the timing model finds it no dearer (within
  :data:`~pymtl_fp.cluster.compiler.schedule.AUTO_SLACK`), over the batch for the rest (:attr:`per_image`);
* stochastic rounding of slices: :func:`~pymtl_fp.cluster.compiler.dma.slice_seed`; ``bwd_weight`` has one
  seed for ``dw`` and ``db``, so a piece at ``k0 > 0`` runs a second, small ``bwd_weight`` (``1x1``
  kernel, one input channel) for ``db`` with its own seed;
* the loss gradient is the host's (golden ``softmax_xent_grad`` per image, :mod:`pymtl_fp.cluster.hw.host`);
* biases: the router's scalar unit (``BIAS``) applies the golden ``sgd_update`` to ``b`` and
  ``db`` STOREd to its scratch FIFO, and ``b`` is LOADed back.

Nodes with different array sides: a tensor is re-laid out on the receiving side
(:meth:`~pymtl_fp.cluster.compiler.emit.NodeEmitter.load_from`); a split layer's cut ``k0`` is a multiple
of both holders' ``P`` (:func:`pymtl_fp.cluster.compiler.partition.grid_unit`), so both pieces are whole
tiles in both layouts.
"""

from __future__ import annotations

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler import hoist
from pymtl_fp.cluster.compiler.bands import NodeBands
from pymtl_fp.cluster.compiler.bands_backward import NodeBackwardBands
from pymtl_fp.cluster.compiler.buffers import Alloc
from pymtl_fp.cluster.compiler.collectives import NodeCollectives
from pymtl_fp.cluster.compiler.dma import elems, slice_seed
from pymtl_fp.cluster.compiler.emit import NodeEmitter
from pymtl_fp.cluster.compiler.partition import _Shape, op_cycles
from pymtl_fp.cluster.compiler.program import NodeProgram
from pymtl_fp.cluster.compiler.regions import NodeRegions
from pymtl_fp.cluster.compiler.remote_weights import NodeRemoteWeights
from pymtl_fp.cluster.compiler.schedule import AUTO_SLACK, PER_IMAGE, images_in_flight
from pymtl_fp.cluster.compiler.weight_phase import NodeWeightPhase
from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.golden.train import tensor_id

#: the share of this node's forward pass and weight gradients the upstream node's estimated
#: time to the next input may take for its LOADs to move in front of the backward pass
#: (:meth:`NodeCodegen.backward`; LeNet-digits on 4 nodes with per-image weight gradients and 4
#: elements a beat: node 3's estimate is 89 %, and its input came 25 cycles an image late)
READY_SHARE = 0.85


class NodeCodegen(NodeRemoteWeights, NodeEmitter, NodeRegions, NodeCollectives, NodeBands, NodeBackwardBands,
                  NodeWeightPhase):
    """Code generation context of one node."""

    def __init__(self, j, ecfg, net, part, cfg, shifts, fmt, Ps=None, overlap=False, wgrad="batch", bands=0,
                 bands_backward=False, placement=None, home_plan=None):
        self.j, self.ecfg, self.net, self.part, self.cfg = j, ecfg, net, part, cfg
        #: layers whose weights a neighbour keeps ({layer: home}), the layers this node keeps for
        #: a neighbour ([(user, layer)]) and the order it sends them in (:mod:`~pymtl_fp.cluster.compiler.weights_home`)
        self.remote = placement.remote(j) if placement else {}
        self.hosted = placement.hosted(j) if placement else []
        self.home_plan = home_plan
        self.stage_slots = placement.slots.get(j, 2) if placement else 2
        self.P = ecfg.P
        self.Ps = list(Ps) if Ps is not None else [self.P] * part.n  # every node's P
        self.shifts, self.fmt = shifts, fmt
        self.items = part.nodes[j]
        self.B = part.batch
        self.ovl = int(bool(overlap))
        self.wgrad = wgrad
        #: rows per band of the forward pass (:mod:`pymtl_fp.cluster.compiler.bands`; 0: whole layers)
        self.band_rows = bands
        self.bands_backward = bool(bands and bands_backward)  # the backward passes in bands too
        self.received = {}  # image -> input pieces already LOADed (row bands)
        #: image -> the pieces its banded forward pass sent to the next node, in order (``in_plan``)
        self.sent = {}
        self.upstream_sent = {}  # the previous node's ``sent``
        #: the previous node's modelled forward and backward compute per image (0: the host sends
        #: the input)
        self.upstream_passes = 0
        #: the items whose weight gradients are computed per image and summed in B
        #: (:meth:`keep_in_flight`; the rest: over the batch at the step's end)
        self.per_image = frozenset()
        #: images whose layer inputs (and pool argmaxes) the node keeps, and whose output gradients
        #: (image b in slot b % slots): the whole batch unless the schedule frees an image's
        #: tensors with its backward pass (:meth:`keep_in_flight`)
        self.slots = self.dy_slots = self.B
        #: words of the largest one-image result in O; with overlap, image b's results go to
        #: O slot b % 2, so image b+1's compute never waits for image b's results to be read out
        self.A = Alloc(ecfg)
        # O's result slots first (ob), so regions allocated in O later never share their words:
        # the largest one-image result each direction writes to O
        self.o_fwd, self.o_bwd = self._o_results()
        if self.ovl:  # two slots per direction
            self.A.get("O", "slots", 2 * (self.o_fwd + self.o_bwd))
        else:
            self.A.get("O", "slots", max(self.o_fwd, self.o_bwd))
        self.prog = NodeProgram(j, alloc=self.A)
        self.in_loop = False
        #: the first image of this node's share of the batch (a data-parallel replica's): seeds
        #: round image ``b`` as image ``b0 + b`` of the whole batch
        self.b0 = 0
        #: the output gradients of the last item are already LOADed (a replica's last stage takes
        #: all of its share's loss gradients before passing the others' on)
        self.dy_loaded = False
        self._init_emitter()


    def keep_in_flight(self, schedule):
        """Keep only the images in flight where the weight gradients are per image (a per-image
        schedule, ``wgrad = "image"``, or ``"auto"``'s choice: :meth:`wgrad_per_image`): those
        layers' inputs and the pools' argmaxes in :func:`~pymtl_fp.cluster.compiler.schedule.images_in_flight`
        slots, their output gradients for the image in its backward pass (two with overlap: the
        next one's arrive while the last one's weight gradients run)."""
        per_schedule = schedule in PER_IMAGE
        self.per_image = frozenset(it for it in self.items  # (a remote layer's: over the batch)
                                   if not it.pool and not self.is_remote(it)
                                   and (per_schedule or self.wgrad_per_image(it)))
        self.slots = images_in_flight(schedule, self.j, self.part.n, self.B,
                                      late_wgrad=not per_schedule and self.wgrad != "batch")
        self.dy_slots = min(self.B, 1 + self.ovl)

    def wgrad_per_image(self, it) -> bool:
        """Does item ``it`` compute its weight gradient per image?  ``image``: yes; ``auto``: where
        one image's ``bwd_weight`` (timing model) costs at most ``AUTO_SLACK`` times its share of
        the batch's; ``batch``: no."""
        if self.wgrad != "auto":
            return self.wgrad == "image"
        packed = it.layer in self.part.packed
        one = op_cycles(self.ecfg, self.net, it.layer, "bwd_weight", 1, it.k0, it.k1, packed)
        whole = op_cycles(self.ecfg, self.net, it.layer, "bwd_weight", self.B, it.k0, it.k1, packed)
        return one <= AUTO_SLACK * whole / self.B

    def receive(self, b):
        """LOAD image b's forward input(s) from ``fwd_in``: the first item's input and, for a
        second piece, the first holder's output (next to which the fwd writes its own); in row bands,
        the input's first piece."""
        if self.banded(b):
            self.receive_band(b, 0)
            self.received[b] = 1
            return
        if self.j > 0 and self.banded(b, self.j - 1):  # whole, from the upstream node's bands
            for piece in range(len(self.in_plan(b))):
                self.receive_band(b, piece)
            return
        it = self.items[0]
        f, kind = self.info(it.layer), self.kind(it)
        self.layer = self.net.layers[it.layer].name  # (the trace names compute commands by it)
        self.load_from("X", self.x_addr(it, b), "fwd_in", (1, f["c"], f["h"], f["w"]))
        if kind == "second":
            self.load_from("X", self.stage(it, b), "fwd_in", (1, it.k0, f["ho"], f["wo"]))

    def forward(self, b, seed, received=False):
        if self.banded(b):
            return self.forward_bands(b, seed, self.received.pop(b, 0) if received else 0)
        items, P = self.items, self.P
        self.input_sent = None  # a first piece whose input went out with the copy that made it
        for idx, it in enumerate(items):
            li, f, kind = it.layer, self.info(it.layer), self.kind(it)
            self.layer = self.net.layers[it.layer].name  # (the trace names compute commands by it)
            if idx == 0 and not received:
                self.receive(b)
            nxt = items[idx + 1] if idx + 1 < len(items) else None
            if kind == "pool":
                ow = self.out_words(li)
                case = dict(x=_Shape(1, f["c"], f["h"], f["w"]), k=f["pk"])
                amsel = int(self.am_in_o(it))
                dsel, d0 = (msgs.DSEL_X, self.x_addr(nxt, b)) if amsel else (msgs.DSEL_O, self.ob(b))
                self.compute("pool_fwd", n=1, c=f["c"], ct=tiles(f["c"], P), h=f["h"], w=f["w"], ho=f["ho"], wo=f["wo"],
                             pk=f["pk"], a0=self.x_addr(it, b), d0=d0, d1=self.am_addr(it, b), dsel=dsel,
                             amsel=amsel)
                out = (msgs.BUF_NAMES[msgs.DSEL_BUF[dsel]], d0, ow)
            else:
                p = f["p"]
                name = self.net.layers[li].name
                wpiece = None if self.is_remote(it) else self.w_region(it)[1]
                bpiece = self.A.get("B", f"b{li}", tiles(it.k1 - it.k0, P))
                off = (self.b0 + b) * f["k"] * f["ho"] * f["wo"] + it.k0 * f["ho"] * f["wo"]
                case = self.case(it, 1, it.k0, it.k1)
                pw = self.out_words(li, it.k0, it.k1)
                if kind == "second":
                    stage = self.stage(it, b)
                    first_words = (it.k0 // P) * f["ho"] * f["wo"]
                    if idx > 0:
                        self.load_from("X", stage, "fwd_in", (1, it.k0, f["ho"], f["wo"]))
                # the result goes where it is read next (dsel): the next item's input in X (for a
                # second piece: behind the first piece's output), else O, to be sent on
                if kind == "second":
                    dsel, d0 = msgs.DSEL_X, stage + first_words
                elif kind == "whole" and nxt is not None:
                    dsel, d0 = msgs.DSEL_X, self.x_addr(nxt, b)
                else:
                    dsel, d0 = msgs.DSEL_O, self.ob(b)
                common = dict(shift=self.shifts[name].fwd, relu=int(self.net.layers[li].relu),
                              stoch=self.mode("fwd_mode"), tid=tensor_id(p, "FWD"), a0=self.x_addr(it, b))
                if self.is_remote(it):  # a chunk of the weights at a time, from the neighbour keeping them
                    self.remote_fwd(it, b, seed, off, bpiece, d0, dsel, **common)
                else:
                    self.compute("fwd", program.useful_macs("fwd", case), li in self.part.packed,
                                 **self.conv_fields(it, 1, it.k0, it.k1), **common, seed=slice_seed(seed, off),
                                 a1=wpiece, a2=bpiece, d0=d0, dsel=dsel)
                if kind == "second":
                    out = ("X", stage, self.out_words(li))
                elif kind == "first":
                    if self.input_sent is not it:  # the second holder computes from it too
                        self.store("X", self.x_addr(it, b), self.in_words(li) * P, "fwd_out")
                    self.store("O", self.ob(b), pw * P, "fwd_out")
                    continue
                else:
                    out = ("X" if dsel == msgs.DSEL_X else "O", d0, pw)
            buf, addr, words = out
            if nxt is not None:
                dst = self.x_addr(nxt, b)
                if not (buf == "X" and addr == dst):
                    # a first piece next sends its input on too: in the same STORE
                    sent = self.kind(nxt) == "first"
                    self.copy(buf, addr, "X", dst, words * P, also="fwd_out" if sent else None)
                    self.input_sent = nxt if sent else None
            else:
                self.store(buf, addr, words * P, "fwd_out")

    def backward(self, b, seed, then=None, early=None):
        """Image b's backward pass; ``then(b)`` (e.g. the next forward pass's :meth:`receive`)
        is emitted right after its last compute command, so its LOADs run beside that command
        (or at the end, if the pass computes nothing).

        ``early = (f, g)`` (1F1B, per-image weight gradients): the indices where the forward pass
        before this one and the weight gradients that follow it begin.  Where
        :func:`~pymtl_fp.cluster.compiler.hoist.may_cross` allows, the pass's leading LOADs (its output
        gradient) move behind the first of those weight-gradient commands, so they run beside
        them.  (If their data came late, the later weight-gradient commands would wait behind
        them; one LOAD behind each command instead measured worse: LeNet-digits on 3 nodes at
        batch 32, one element a beat, 88.4 % of the bound against 92.6 %.)  ``then``'s LOADs
        move in front of the pass's first compute command, so they run beside the weight
        gradients too, if their data will be there: the upstream node runs
        the next image's forward pass after a backward pass that needs this node's last output
        gradient (sent before its last forward pass), so its backward and forward compute
        (:attr:`upstream_passes`) and the stream of the last piece it sends (the earlier ones
        arrive while it computes) must take no longer than :data:`READY_SHARE` of this node's
        forward pass and weight gradients (else this pass would wait for them; the estimate
        leaves out the links' latency and the upstream node's own LOADs).  The weight
        gradients read the slot the next input reuses first (:meth:`raw_gradients` in
        ``first_first`` order), so the input's LOADs wait for that one only."""
        start = len(self.ops)
        self._backward(b, seed)
        if then is None:
            return
        last = max((i + 1 for i in range(start, len(self.ops)) if self.ops[i].kind == isa.ENG),
                   default=len(self.ops))
        tail = self.ops[last:]
        del self.ops[last:]
        mid = len(self.ops)
        then()
        recv = len(self.ops) - mid
        self.ops.extend(tail)
        if early is None or not recv:
            return
        f0, g0 = early
        first = hoist.first_compute(self.ops, g0, start)
        lead = hoist.first_compute(self.ops, start, mid)
        if first is None or lead is None:
            return
        if lead > start and hoist.hoist(self, start, lead, first + 1):
            self._count_hoist("dy")
        ready = self.upstream_passes + hoist.stream_cycles(self, mid + recv - 1, mid + recv)  # (its last piece)
        # (the pass's first compute is still at lead)
        if ready <= READY_SHARE * hoist.compute_cycles(self, f0, lead) and hoist.hoist(self, mid, mid + recv, lead):
            self._count_hoist("input")

    def _count_hoist(self, what):
        if self.counting:
            self.prog.hoisted[what] = self.prog.hoisted.get(what, 0) + 1

    def _pool_bwd(self, it, b, t0, t1, dsel, d0):
        """pool_bwd of image b over channel tiles ``[t0, t1)`` (channels are independent; a tile
        range is contiguous in every operand), the result to ``d0`` in O or D."""
        f, P = self.info(it.layer), self.P
        self.layer = self.net.layers[it.layer].name  # (the trace names compute commands by it)
        c = min(f["c"], t1 * P) - t0 * P
        self.compute("pool_bwd", n=1, c=c, ct=t1 - t0, h=f["h"], w=f["w"], ho=f["ho"], wo=f["wo"], pk=f["pk"],
                     a0=self.dy_in(it, b) + t0 * f["ho"] * f["wo"], a1=self.am_addr(it, b) + t0 * f["ho"] * f["wo"],
                     d0=d0, dsel=dsel, amsel=int(self.am_in_o(it)))

    def _backward(self, b, seed):
        if self.bands_backward:
            return self.backward_bands(b, seed)
        items, P = self.items, self.P
        self.dy_ready = None  # a second piece whose output gradient is already in place
        for idx in reversed(range(len(items))):
            it = items[idx]
            li, f, kind = it.layer, self.info(it.layer), self.kind(it)
            self.layer = self.net.layers[it.layer].name  # (the trace names compute commands by it)
            prev = items[idx - 1] if idx > 0 else None
            if idx == len(items) - 1 and not self.dy_loaded:
                kk = it.k1 - it.k0 if kind == "first" else f["k"]
                self.load_from("D", self.dy_in(it, b), "bwd_in", (1, kk, f["ho"], f["wo"]))
            out = None
            if kind == "pool" and prev is not None and self.kind(prev) == "second":
                # the gradient of a second piece: pooled back in channel-tile ranges straight to
                # where each part goes (no D-to-D copy, no STORE from D while bwd_data reads it):
                # the first holder's tiles to O (sent on), the own tiles to the batch slot, and,
                # where bwd_data needs them together, all tiles to the one-image slot
                pf, kt0 = self.info(prev.layer), prev.k0 // P
                first_words = kt0 * pf["ho"] * pf["wo"]
                o_first = self.A.get("O", "dyfirst", 2 * first_words) + (b % 2) * first_words * self.ovl
                self._pool_bwd(it, b, 0, kt0, msgs.DSEL_O, o_first)
                self.store("O", o_first, first_words * P, "bwd_out")
                self._pool_bwd(it, b, kt0, tiles(f["c"], P), msgs.DSEL_D, self.dy_keep(prev, b))
                if pf["p"] > 0:
                    self._pool_bwd(it, b, 0, tiles(f["c"], P), msgs.DSEL_D, self.dy_in(prev, b))
                self.dy_ready = prev
                continue
            if kind == "pool":
                dsel, d0 = self.dx_dest(prev, b)
                self._pool_bwd(it, b, 0, tiles(f["c"], P), dsel, d0)
                out = (msgs.BUF_NAMES[msgs.DSEL_BUF[dsel]], d0, self.in_words(li))
            else:
                p = f["p"]
                name = self.net.layers[li].name
                if kind == "second" and self.dy_ready is not it:
                    first_words = (it.k0 // P) * f["ho"] * f["wo"]
                    dyt = self.dy_in(it, b)
                    self.store("D", dyt, first_words * P, "bwd_out")
                    self.copy("D", dyt + first_words, "D", self.dy_keep(it, b),
                              self.out_words(li, it.k0, it.k1) * P)
                if kind == "first":
                    if p > 0:  # the second holder computed dx: it follows dy[k0:k1] on bwd_in
                        dx = (1, f["c"], f["h"], f["w"])
                        if prev is not None:
                            self.load_from("D", self.dy_in(prev, b), "bwd_in", dx)
                        else:  # in the second holder's layout, re-laid out by node j-1 if needed
                            self.move("bwd_in", "bwd_out", elems("act", dx, self.src_P("bwd_in")))
                    continue
                if p > 0:
                    case = self.case(it, 1)
                    case["dy"] = None
                    prev_relu = self.net.param_layers()[p - 1].relu
                    dsel, d0 = self.dx_dest(prev, b)
                    common = dict(shift=self.shifts[name].bwd_data, relu=int(prev_relu), stoch=self.mode("grad_mode"),
                                  tid=tensor_id(p, "DX"))
                    off = (self.b0 + b) * f["c"] * f["h"] * f["w"]
                    if self.is_remote(it):  # an input-channel tile of the weights at a time
                        self.remote_bwd_data(it, b, seed, off, self.dy_in(it, b), self.x_addr(it, b), d0, dsel,
                                             **common)
                    else:
                        self.compute("bwd_data", program.useful_macs("bwd_data", case), **self.conv_fields(it, 1),
                                     **common, seed=slice_seed(seed, off), a0=self.dy_in(it, b),
                                     a1=self.w_region(it)[0], a2=self.x_addr(it, b), d0=d0, dsel=dsel)
                    out = (msgs.BUF_NAMES[msgs.DSEL_BUF[dsel]], d0, self.in_words(li))
            if out is None:
                continue
            buf, addr, words = out
            if prev is not None:
                if not (buf == "D" and addr == self.dy_in(prev, b)):
                    self.copy(buf, addr, "D", self.dy_in(prev, b), words * P)
            else:
                self.store(buf, addr, words * P, "bwd_out")
