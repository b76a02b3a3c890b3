"""Compile a :class:`~pymtl_fp.cluster.partition.Partition` into one program per node.

A node program is a list of micro-operations its router/DMA (:class:`pymtl_fp.cluster.router.RouterCL`)
executes in order; nodes synchronize only through the val/rdy flow control of their links
(dataflow: no global controller).  Micro-operations::

    ("cmd", msg, info)          push one engine command (info: op, model cycles, useful MACs)
    ("move", src, dst, n)       move n elements; src in {dout, fwd_in, bwd_in, scratch},
                                dst in {din, fwd_out, bwd_out, scratch, ("host", key)}
    ("host_data", values)       append values from the host side channel to the scratch FIFO
    ("call", fn)                scratch <- fn(scratch) (the DMA's scalar unit: bias SGD)
    ("mark", label)             record the cycle (step and phase boundaries)
    ("done_mark", label)        record the cycle when every earlier LOAD/STORE has completed
                                (("fwd", s, b) / ("bwd", s, b): image b done by this node)

Pipelining (layer level, per image within a mini-batch): each node runs, per step, the forward
pass of each image (receive the input, run its layers, send the output on) and its backward pass
(receive the output gradient, run its layers backwards, send the input gradient on), in the order
of the ``schedule`` (:func:`step_order`: ``1f1b``, the default, interleaves the forward pass of
one image with the backward pass of an earlier one once the pipeline is full; ``gpipe`` runs all
forward passes, then all backward passes), then the weight gradients over the whole batch and
the updates.  Node ``i`` works on image ``b`` while node ``i+1`` works on image ``b-1``.

A layer writes its result where the next layer on the node reads it (command field ``dsel``): a
forward result into the next item's input in X, a data gradient into the previous item's output
gradient in D.  Only a pooled output still goes through the DMA (STORE to its scratch FIFO and
LOAD back), as pool_fwd's argmax takes X's write port.

Bit-exactness with :func:`pymtl_fp.golden.train.train_step`:

* Weight gradients: every node keeps each conv/fc layer input ``x`` and output gradient ``dy`` of
  **every image of the batch** on chip (X and D buffers) and runs ``bwd_weight`` once over the
  batch (command field ``n = B``), so the sum over the batch is requantized once, as in the golden
  model.
* Stochastic rounding indices: the golden model indexes elements within the *whole* tensor
  (all images, all channels); a per-image or per-channel-piece command rounds a contiguous slice
  at offset ``off``.  Since ``h = seed*M1 + tensor_id*M2 + index (mod 2**32)`` with ``M1`` odd,
  the slice is rounded exactly like the golden model by the seed ``seed + off * M1^-1 (mod
  2**32)`` (:func:`slice_seed`).  ``bwd_weight`` has one seed for ``dw`` and ``db``; a piece at
  ``k0 > 0`` therefore runs a second, small ``bwd_weight`` (``1x1`` kernel, one input channel)
  for ``db`` with its own seed.
* The loss gradient is computed by the host with the golden ``softmax_xent_grad`` per image
  (see :mod:`pymtl_fp.cluster.host`).
* Biases: the engine has no bias update; the router/DMA reads ``b`` and ``db`` (STORE), applies
  the golden ``sgd_update`` (its scalar unit) and writes ``b`` back (LOAD).

Nodes with different array sides (``P_a`` sender, ``P_b`` receiver): every tensor travels in its
producer's buffer layout (channels padded to a multiple of ``P_a``, ``P_a`` lanes per activation
word, ``P_a*P_a`` per weight word) and the **receiving** DMA re-lays it out, always on the receiving
side: it LOADs the ``P_a``-layout elements as they arrive into O (raw, into a staging region of
their own), STOREs them back into its scratch FIFO, ``call`` s :class:`_Relayout`
(unpack in ``P_a``'s layout, pack in ``P_b``'s: :func:`~pymtl_fp.engine.msgs.unpack_act` /
``pack_act``, ``unpack_weight`` / ``pack_weight``) and LOADs the result where the tensor belongs.
So the DMA buffers one whole tensor for it (scratch, and O words), and it costs a STORE and a
LOAD of the tensor more than a same-``P`` transfer (the per-node ``io`` cycles and
``router_scratch_max`` of the report show it).  It applies to forward activations, backward
gradients (also those a lone first holder of a split layer passes through from the second holder:
they stay in the second holder's layout until the node that loads them), the split layers'
weight exchange, images (the host packs them in node 0's layout) and logits / loss gradients (in
node ``N-1``'s layout).  A split layer's cut ``k0`` is a multiple of both holders' ``P``
(:func:`pymtl_fp.cluster.partition.grid_unit`), so both pieces are whole tiles in both layouts.

Buffer plan per node (words; checked against each node's :class:`EngineConfig` before any
simulation by :func:`compile_cluster`, which raises :class:`~pymtl_fp.cluster.config.ClusterError`):
X holds the inputs of its conv/fc pieces for all ``B`` images, the pool argmaxes for all ``B``
images and one-image slots for pool inputs and split-layer outputs; D the output gradients of its
pieces for all ``B`` images plus one-image slots; O one image's result; W its weight pieces (the
second holder of a split layer: the whole layer); G the weight gradients; B biases and bias
gradients.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.cluster.partition import _Shape, layer_info
from pymtl_fp import golden, timing
from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.msgs import (
    make_cmd,
    pack_act,
    pack_bias,
    pack_weight,
    tiles,
    unpack_act,
    unpack_bias,
    unpack_weight,
)
from pymtl_fp.golden.train import step_seed, tensor_id

_M1 = 0x9E3779B1
_M1_INV = pow(_M1, -1, 2**32)


def slice_seed(seed: int, offset: int) -> int:
    """The seed that makes a command rounding elements ``0..`` of a slice round them like elements
    ``offset..`` of the whole tensor under ``seed`` (see the module docstring)."""
    return (int(seed) + int(offset) * _M1_INV) % 2**32


BUFS = ("X", "D", "O", "W", "G", "B")
BUF_ID = {"X": msgs.BUF_X, "D": msgs.BUF_D, "O": msgs.BUF_O, "W": msgs.BUF_W, "G": msgs.BUF_G, "B": msgs.BUF_B}


class Alloc:
    """Bump allocator over the six buffers of one node; remembers every region."""

    def __init__(self, ecfg):
        self.ecfg = ecfg
        self.top = {b: 0 for b in BUFS}
        self.regions = {}

    def get(self, buf: str, name: str, words: int) -> int:
        key = (buf, name)
        if key not in self.regions:
            self.regions[key] = (self.top[buf], int(words))
            self.top[buf] += int(words)
        return self.regions[key][0]

    def depth(self, buf: str) -> int:
        e = self.ecfg
        return {"X": e.act_depth, "D": e.act_depth, "O": e.act_depth, "W": e.weight_depth,
                "G": e.weight_depth, "B": e.bias_depth}[buf]

    def usage(self) -> dict:
        return {b: {"used": self.top[b], "depth": self.depth(b)} for b in BUFS}

    def overflow(self) -> list:
        return [b for b in BUFS if self.top[b] > self.depth(b)]


@dataclass
class NodeProgram:
    node: int
    ops: list = field(default_factory=list)
    alloc: Alloc | None = None
    #: modelled serial cycles per step: compute and LOAD/STORE occupancy (the engine's timing model)
    compute_cycles: int = 0
    io_cycles: int = 0
    macs: int = 0
    link_elems: dict = field(default_factory=dict)  # per step: port -> elements
    #: modelled compute cycles per step in each phase: fwd (B images), bwd (B images), wg
    phase_compute: dict = field(default_factory=dict)


@dataclass
class ClusterProgram:
    nodes: list
    host_in_elems: int       #: elements of one image as node 0 receives it
    logit_elems: int         #: elements of one image's logits / dlogits
    out_shape: tuple         #: (K, Ho, Wo) of the network output
    steps: int
    batch: int
    overlap: bool = False    #: engine commands carry ovl = 1
    schedule: str = "1f1b"   #: order of the image passes in a step (:func:`step_order`)


class _Node:
    """Code generation context of one node."""

    def __init__(self, j, ecfg, net, part, cfg, shifts, fmt, Ps=None, overlap=False):
        self.j, self.ecfg, self.net, self.part, self.cfg = j, ecfg, net, part, cfg
        self.P = ecfg.P
        self.Ps = list(Ps) if Ps is not None else [self.P] * part.n  # every node's P
        self.shifts, self.fmt = shifts, fmt
        self.items = part.nodes[j]
        self.B = part.batch
        self.ovl = int(bool(overlap))
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
        self.ops = self.prog.ops
        self.counting = True
        self.phase = "init"
        self.link = {}

    # ---- primitive sequences ---------------------------------------------------------------
    def _io(self, n):
        if self.counting:
            self.prog.io_cycles += n

    def load(self, buf, addr, n, src):
        self.ops.append(("cmd", make_cmd(op=msgs.OP_LOAD, target=BUF_ID[buf], addr=addr, count=n, ovl=self.ovl),
                         {"op": "load"}))
        self.ops.append(("move", src, "din", n))
        self._io(timing.load_cycles(n))
        if src in ("fwd_in", "bwd_in") and self.counting:
            self.link[src] = self.link.get(src, 0) + n

    def store(self, buf, addr, n, dst):
        """STORE ``n`` elements to ``dst`` (a link, ``scratch``, ``("host", key)`` or
        ``("multi", (dst, ...))``: each of them)."""
        if buf == "O":  # O holds one result (two with overlap) at a time: its size is what is read back
            self.A.top["O"] = max(self.A.top["O"], addr + -(-n // self.P))
        self.ops.append(("cmd", make_cmd(op=msgs.OP_STORE, target=BUF_ID[buf], addr=addr, count=n, ovl=self.ovl),
                         {"op": "store"}))
        self.ops.append(("move", "dout", dst, n))
        self._io(timing.store_cycles(n, self.P * self.P if buf in ("W", "G") else self.P))
        for d in (dst[1] if dst[0] == "multi" else (dst,)):
            if d in ("fwd_out", "bwd_out") and self.counting:
                self.link[d] = self.link.get(d, 0) + n

    def copy(self, sbuf, saddr, dbuf, daddr, n, also=None):
        """Copy through the DMA's scratch FIFO; ``also``: a link the elements are sent on too."""
        self.store(sbuf, saddr, n, ("multi", ("scratch", also)) if also else "scratch")
        self.load(dbuf, daddr, n, "scratch")

    # ---- tensors from other nodes (layouts of other array sides) ----------------------------
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

    def load_from(self, buf, addr, src, shape, kind="act"):
        """LOAD a tensor of ``shape`` (activations ``(1, C, H, W)``, weights ``(K, C, R, S)``)
        arriving on link ``src`` into ``buf`` at ``addr`` in this node's layout; re-laid out by the
        DMA when the producer's ``P`` differs (see the module docstring)."""
        pa, pb = self.src_P(src), self.P
        n_b = _elems(kind, shape, pb)
        if pa == pb:
            self.load(buf, addr, n_b, src)
            return
        n_a = _elems(kind, shape, pa)
        # staged raw in O, in a region of its own (O also keeps pool argmaxes: amsel)
        stage = self.A.get("O", f"stage:{kind}{tuple(shape)}", tiles(n_a, pb))
        self.load("O", stage, n_a, src)
        self.store("O", stage, n_a, "scratch")
        self.ops.append(("call", _Relayout(kind, shape, pa, pb)))
        self.load(buf, addr, n_b, "scratch")

    def compute(self, op, cycles, macs=0, **fields):
        msg = make_cmd(op=msgs.OPS[op], ovl=self.ovl, **fields)
        try:
            msgs.check_cmd(msgs.cmd_fields(msg), self.ecfg)
        except ValueError as e:  # a compiler bug, not the user's: say where
            raise ClusterError(f"node {self.j}: compiled an invalid {op} command: {e}") from e
        cycles = program.command_cycles(self.P, msgs.cmd_fields(msg))
        self.ops.append(("cmd", msg, {"op": op, "cycles": cycles, "macs": macs}))
        if self.counting:
            self.prog.compute_cycles += cycles
            self.prog.phase_compute[self.phase] = self.prog.phase_compute.get(self.phase, 0) + cycles
            self.prog.macs += macs

    # ---- geometry and regions --------------------------------------------------------------
    def info(self, li):
        return layer_info(self.net, li)

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
            if i == 0:
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
        return self.A.get("X", f"x{it.layer}", self.B * iw) + b * iw

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
        return self.A.get("O" if self.am_in_o(it) else "X", f"am{it.layer}", self.B * ow) + b * ow

    def dy_keep(self, it, b):
        ow = self.out_words(it.layer, it.k0, it.k1)
        return self.A.get("D", f"dy{it.layer}", self.B * ow) + b * ow

    def dy_in(self, it, b):
        """Where the incoming output gradient of item ``it`` (image b) is written."""
        k = self.kind(it)
        if k in ("whole", "first"):
            return self.dy_keep(it, b)
        return self.A.get("D", f"dyt{it.layer}", self.out_words(it.layer))

    def w_region(self, it):
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
        f = self.info(it.layer)
        k1 = f["k"] if k1 is None else k1
        return dict(x=_Shape(n, f["c"], f["h"], f["w"]), w=_Shape(k1 - k0, f["c"], f["r"], f["s"]),
                    w_shape=(k1 - k0, f["c"], f["r"], f["s"]), stride=f["stride"], pad=f["pad"])

    def mode(self, which):
        return int(getattr(self.cfg, which) == "stochastic")

    def receive(self, b):
        """LOAD image b's forward input(s) from ``fwd_in``: the first item's input and, for a
        second piece, the first holder's output (next to which the fwd writes its own)."""
        it = self.items[0]
        f, kind = self.info(it.layer), self.kind(it)
        self.load_from("X", self.x_addr(it, b), "fwd_in", (1, f["c"], f["h"], f["w"]))
        if kind == "second":
            self.load_from("X", self.stage(it, b), "fwd_in", (1, it.k0, f["ho"], f["wo"]))

    def stage(self, it, b):
        """Where a second piece's whole output is assembled in X (the next item's input)."""
        i = self.items.index(it)
        nxt = self.items[i + 1] if i + 1 < len(self.items) else None
        return self.x_addr(nxt, b) if nxt is not None else self.A.get("X", f"ys{it.layer}", self.out_words(it.layer))

    def forward(self, b, seed, received=False):
        items, P = self.items, self.P
        self.input_sent = None  # a first piece whose input went out with the copy that made it
        for idx, it in enumerate(items):
            li, f, kind = it.layer, self.info(it.layer), self.kind(it)
            if idx == 0 and not received:
                self.receive(b)
            nxt = items[idx + 1] if idx + 1 < len(items) else None
            if kind == "pool":
                ow = self.out_words(li)
                case = dict(x=_Shape(1, f["c"], f["h"], f["w"]), k=f["pk"])
                amsel = int(self.am_in_o(it))
                dsel, d0 = (msgs.DSEL_X, self.x_addr(nxt, b)) if amsel else (msgs.DSEL_O, self.ob(b))
                self.compute("pool_fwd", program.compute_cycles(self.ecfg, "pool_fwd", case),
                             n=1, c=f["c"], ct=tiles(f["c"], P), h=f["h"], w=f["w"], ho=f["ho"], wo=f["wo"],
                             pk=f["pk"], a0=self.x_addr(it, b), d0=d0, d1=self.am_addr(it, b), dsel=dsel,
                             amsel=amsel)
                out = (msgs.BUF_NAMES[msgs.DSEL_BUF[dsel]], d0, ow)
            else:
                p = f["p"]
                name = self.net.layers[li].name
                _, wpiece, _ = self.w_region(it)
                bpiece = self.A.get("B", f"b{li}", tiles(it.k1 - it.k0, P))
                off = b * f["k"] * f["ho"] * f["wo"] + it.k0 * f["ho"] * f["wo"]
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
                self.compute("fwd", program.compute_cycles(self.ecfg, "fwd", case),
                             program.useful_macs("fwd", case), **self.conv_fields(it, 1, it.k0, it.k1),
                             shift=self.shifts[name].fwd, relu=int(self.net.layers[li].relu),
                             stoch=self.mode("fwd_mode"), seed=slice_seed(seed, off),
                             tid=tensor_id(p, "FWD"), a0=self.x_addr(it, b), a1=wpiece, a2=bpiece,
                             d0=d0, dsel=dsel)
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

    def backward(self, b, seed, then=None):
        """Image b's backward pass; ``then(b)`` (e.g. the next forward pass's :meth:`receive`)
        is emitted right after its last compute command, so its LOADs run beside that command
        (or at the end, if the pass computes nothing)."""
        start = len(self.ops)
        self._backward(b, seed)
        if then is not None:
            last = max((i + 1 for i in range(start, len(self.ops))
                        if self.ops[i][0] == "cmd" and "cycles" in self.ops[i][2]), default=len(self.ops))
            tail = self.ops[last:]
            del self.ops[last:]
            then()
            self.ops.extend(tail)

    def _pool_bwd(self, it, b, t0, t1, dsel, d0):
        """pool_bwd of image b over channel tiles ``[t0, t1)`` (channels are independent; a tile
        range is contiguous in every operand), the result to ``d0`` in O or D."""
        f, P = self.info(it.layer), self.P
        c = min(f["c"], t1 * P) - t0 * P
        case = dict(dy=_Shape(1, c, f["ho"], f["wo"]), k=f["pk"])
        self.compute("pool_bwd", program.compute_cycles(self.ecfg, "pool_bwd", case),
                     n=1, c=c, ct=t1 - t0, h=f["h"], w=f["w"], ho=f["ho"], wo=f["wo"], pk=f["pk"],
                     a0=self.dy_in(it, b) + t0 * f["ho"] * f["wo"], a1=self.am_addr(it, b) + t0 * f["ho"] * f["wo"],
                     d0=d0, dsel=dsel, amsel=int(self.am_in_o(it)))

    def _backward(self, b, seed):
        items, P = self.items, self.P
        self.dy_ready = None  # a second piece whose output gradient is already in place
        for idx in reversed(range(len(items))):
            it = items[idx]
            li, f, kind = it.layer, self.info(it.layer), self.kind(it)
            prev = items[idx - 1] if idx > 0 else None
            if idx == len(items) - 1:
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
                            n = _elems("act", dx, self.src_P("bwd_in"))
                            self.ops.append(("move", "bwd_in", "bwd_out", n))
                            if self.counting:
                                self.link["bwd_in"] = self.link.get("bwd_in", 0) + n
                                self.link["bwd_out"] = self.link.get("bwd_out", 0) + n
                    continue
                if p > 0:
                    wfull, _, _ = self.w_region(it)
                    case = self.case(it, 1)
                    case["dy"] = None
                    prev_relu = self.net.param_layers()[p - 1].relu
                    dsel, d0 = self.dx_dest(prev, b)
                    self.compute("bwd_data", program.compute_cycles(self.ecfg, "bwd_data", case),
                                 program.useful_macs("bwd_data", case), **self.conv_fields(it, 1),
                                 shift=self.shifts[name].bwd_data, relu=int(prev_relu),
                                 stoch=self.mode("grad_mode"),
                                 seed=slice_seed(seed, b * f["c"] * f["h"] * f["w"]),
                                 tid=tensor_id(p, "DX"), a0=self.dy_in(it, b), a1=wfull,
                                 a2=self.x_addr(it, b), d0=d0, dsel=dsel)
                    out = (msgs.BUF_NAMES[msgs.DSEL_BUF[dsel]], d0, self.in_words(li))
            if out is None:
                continue
            buf, addr, words = out
            if prev is not None:
                if not (buf == "D" and addr == self.dy_in(prev, b)):
                    self.copy(buf, addr, "D", self.dy_in(prev, b), words * P)
            else:
                self.store(buf, addr, words * P, "bwd_out")

    def weight_phase(self, seed):
        P, B = self.P, self.B
        for it in self.items:
            if it.pool:
                continue
            li, f, kind = it.layer, self.info(it.layer), self.kind(it)
            p, sh = f["p"], self.shifts[self.net.layers[li].name]
            kk = it.k1 - it.k0
            CRS = f["c"] * f["r"] * f["s"]
            _, wpiece, wwords = self.w_region(it)
            g = self.A.get("G", f"g{li}", wwords)
            bb = self.A.get("B", f"b{li}", tiles(kk, P))
            db = self.A.get("B", f"db{li}", tiles(kk, P))
            case = self.case(it, B, it.k0, it.k1)
            d1 = db if it.k0 == 0 else self.A.get("B", f"dbs{li}", tiles(kk, P))
            self.compute("bwd_weight", program.compute_cycles(self.ecfg, "bwd_weight", case),
                         program.useful_macs("bwd_weight", case), **self.conv_fields(it, B, it.k0, it.k1),
                         shift=sh.wgrad, bshift=sh.bgrad, stoch=self.mode("grad_mode"),
                         seed=slice_seed(seed, it.k0 * CRS), tid=tensor_id(p, "DW"),
                         btid=tensor_id(p, "DB"), a0=self.x_addr(it, 0), a1=self.dy_keep(it, 0), d0=g, d1=d1)
            if it.k0 > 0:  # db with its own seed: a 1x1, one-channel bwd_weight over the same dy
                ho, wo = f["ho"], f["wo"]
                xa = self.x_addr(it, 0) if B * ho * wo <= B * self.in_words(li) else \
                    self.A.get("X", f"dbx{li}", B * ho * wo)
                gs = self.A.get("G", f"gs{li}", tiles(kk, P))
                case1 = dict(x=_Shape(B, 1, ho, wo), w_shape=(kk, 1, 1, 1), stride=1, pad=0)
                self.compute("bwd_weight", program.compute_cycles(self.ecfg, "bwd_weight", case1), 0,
                             n=B, c=1, k=kk, ct=1, kt=tiles(kk, P), h=ho, w=wo, ho=ho, wo=wo, r=1, s=1,
                             lgst=0, pad=0, shift=0, bshift=sh.bgrad, stoch=self.mode("grad_mode"),
                             seed=slice_seed(seed, it.k0), tid=0, btid=tensor_id(p, "DB"),
                             a0=xa, a1=self.dy_keep(it, 0), d0=gs, d1=db)
            ucase = dict(w=_Shape(kk, f["c"], f["r"], f["s"]))
            self.compute("update", program.compute_cycles(self.ecfg, "update", ucase), 0,
                         k=kk, c=f["c"], kt=tiles(kk, P), ct=tiles(f["c"], P), r=f["r"], s=f["s"],
                         shift=sh.update_w, stoch=self.mode("update_mode"),
                         seed=slice_seed(seed, it.k0 * CRS), tid=tensor_id(p, "UPDATE_W"),
                         a0=wpiece, a1=g, d0=wpiece)
            # bias SGD in the DMA's scalar unit
            nb = tiles(kk, P) * P
            self.store("B", bb, nb, "scratch")
            self.store("B", db, nb, "scratch")
            self.ops.append(("call", _BiasUpdate(kk, P, sh.update_b, self.fmt.bias_bits, self.cfg.update_mode,
                                                 slice_seed(seed, it.k0), tensor_id(p, "UPDATE_B"))))
            self.load("B", bb, nb, "scratch")
            if kind == "first":
                self.store("W", wpiece, wwords * P * P, "fwd_out")
            elif kind == "second":
                wfull, _, _ = self.w_region(it)
                self.load_from("W", wfull, "fwd_in", (it.k0, f["c"], f["r"], f["s"]), "weight")

    def initial(self, params):
        P = self.P
        for it in self.items:
            if it.pool:
                continue
            li = it.layer
            name = self.net.layers[li].name
            w, b = np.asarray(params[name]["w"]), np.asarray(params[name]["b"])
            wfull, wpiece, _ = self.w_region(it)
            if self.kind(it) == "second":
                vals = pack_weight(w[: it.k1], P)
                self.ops.append(("host_data", [int(v) for v in vals.reshape(-1)]))
                self.load("W", wfull, vals.size, "scratch")
            else:
                vals = pack_weight(w[it.k0: it.k1], P)
                self.ops.append(("host_data", [int(v) for v in vals.reshape(-1)]))
                self.load("W", wpiece, vals.size, "scratch")
            bv = pack_bias(b[it.k0: it.k1], P)
            self.ops.append(("host_data", [int(v) for v in bv.reshape(-1)]))
            self.load("B", self.A.get("B", f"b{li}", tiles(it.k1 - it.k0, P)), bv.size, "scratch")

    def final(self):
        P = self.P
        for it in self.items:
            if it.pool:
                continue
            li = it.layer
            _, wpiece, wwords = self.w_region(it)
            self.store("W", wpiece, wwords * P * P, ("host", ("w", li, it.k0, it.k1)))
            self.store("B", self.A.get("B", f"b{li}", tiles(it.k1 - it.k0, P)),
                       tiles(it.k1 - it.k0, P) * P, ("host", ("b", li, it.k0, it.k1)))


def _elems(kind, shape, P) -> int:
    """Elements of a tensor in the layout of array side ``P`` (padding included)."""
    if kind == "act":
        n, c, h, w = shape
        return n * tiles(c, P) * h * w * P
    k, c, r, s = shape
    return tiles(k, P) * tiles(c, P) * r * s * P * P


class _Relayout:
    """The DMA's relayout: scratch holds one tensor in ``P_a``'s layout -> the same tensor in
    ``P_b``'s layout (``kind``: ``act`` or ``weight``; see the module docstring)."""

    def __init__(self, kind, shape, pa, pb):
        self.kind, self.shape, self.pa, self.pb = kind, tuple(int(v) for v in shape), pa, pb

    def __call__(self, values):
        v = np.asarray(values, dtype=np.int64)
        if len(v) != _elems(self.kind, self.shape, self.pa):
            raise RuntimeError(f"relayout {self.kind}{self.shape} P{self.pa}->P{self.pb}: scratch holds "
                               f"{len(v)} elements, expected {_elems(self.kind, self.shape, self.pa)}")
        if self.kind == "act":
            t = unpack_act(v.reshape(-1, self.pa), self.shape, self.pa)
            out = pack_act(t, self.pb)
        else:
            t = unpack_weight(v.reshape(-1, self.pa * self.pa), self.shape, self.pa)
            out = pack_weight(t, self.pb)
        return [int(x) for x in out.reshape(-1)]

    def __repr__(self):
        return f"relayout({self.kind}{self.shape} P{self.pa}->P{self.pb})"


class _BiasUpdate:
    """The DMA's scalar unit: scratch ``[b..., db...]`` -> ``[b_new...]`` (golden ``sgd_update``)."""

    def __init__(self, k, P, shift, bits, mode, seed, tid):
        self.k, self.P, self.shift, self.bits, self.mode, self.seed, self.tid = k, P, shift, bits, mode, seed, tid

    def __call__(self, values):
        n = tiles(self.k, self.P) * self.P
        b = unpack_bias(np.asarray(values[:n]), self.k, self.P)
        db = unpack_bias(np.asarray(values[n:2 * n]), self.k, self.P)
        nb = golden.sgd_update(b, db, lr_shift=self.shift, bits=self.bits, mode=self.mode, seed=self.seed,
                               tensor_id=self.tid)
        return [int(v) for v in pack_bias(nb, self.P).reshape(-1)]


SCHEDULES = ("1f1b", "gpipe")


def step_order(schedule: str, j: int, n: int, batch: int) -> list:
    """Node ``j``'s order of image passes in one step: ``[("fwd" | "bwd", image)]``.

    ``gpipe``: the forward passes of images ``0..B-1``, then their backward passes (node ``j``
    works on image ``b`` while node ``j+1`` works on image ``b-1``, in each phase).
    ``1f1b`` (as PipeDream): ``n - j + 1`` forward passes, then one backward and one forward pass
    alternately, then the remaining backward passes; with the pipeline full every node works on
    the forward pass of one image and the backward pass of an earlier one, so a node's cycles per
    image are its forward plus its backward work, not the slowest node's in each phase.  (One
    image more in flight than the minimum ``n - j``: node N-1 runs the next image's forward pass
    while the host turns its logits into the loss gradient.)  The compiler also emits the LOADs
    of the next forward pass's input right after the backward pass's last compute command
    (:meth:`_Node.backward`), so they run beside it.  The
    weights change only in the update at the end of the step (the weight gradients are summed over
    the batch in one ``bwd_weight``), so both orders compute exactly the same values."""
    if schedule not in SCHEDULES:
        raise ClusterError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if schedule == "gpipe":
        return [("fwd", b) for b in range(batch)] + [("bwd", b) for b in range(batch)]
    warm = min(batch, n - j + 1)
    order = [("fwd", b) for b in range(warm)]
    for b in range(batch):
        order.append(("bwd", b))
        if b + warm < batch:
            order.append(("fwd", b + warm))
    return order


def compile_cluster(net, ccfg, part, params: dict, tcfg, steps: int, overlap: bool = False,
                    schedule: str = "1f1b") -> ClusterProgram:
    """One program per node for ``steps`` training steps from ``params`` (raw integers).
    ``overlap``: every engine command may overlap earlier ones (``ovl = 1``; the engine checks
    the hazards) and results alternate between two O slots per direction.  ``schedule``: the
    order of the image passes in a step (:func:`step_order`)."""
    step_order(schedule, 0, part.n, part.batch)  # refuse an unknown schedule before compiling
    if tcfg.momentum is not None:
        raise ClusterError("the cluster trains with plain SGD: the engine's update has no momentum "
                           "(give no --momentum)")
    fmt = net.precision(tcfg.precision)
    shifts = net.shifts(tcfg.precision, tcfg.lr_log2)
    for name, sh in shifts.items():
        if sh.update_w < 0:
            raise ClusterError(f"{name}: the weight-update shift {sh.update_w} is negative; the "
                               f"engine's update takes right shifts only")
    nodes = []
    for j in range(part.n):
        nd = _Node(j, ccfg.engines[j], net, part, tcfg, shifts, fmt, [e.P for e in ccfg.engines], overlap)
        nd.initial(params)
        nd.prog.compute_cycles = nd.prog.io_cycles = nd.prog.macs = 0
        nd.prog.phase_compute = {}
        nd.link = {}
        for s in range(steps):
            nd.counting = s == 0
            seed = step_seed(tcfg.seed, tcfg.step + s)
            nd.ops.append(("mark", ("step", s)))
            order = step_order(schedule, j, part.n, part.batch)
            received = set()
            for i, (kind, b) in enumerate(order):
                if kind == "fwd":
                    nd.phase = "fwd"
                    nd.forward(b, seed, received=b in received)
                else:
                    if b == 0:
                        nd.ops.append(("mark", ("bwd", s)))
                    nd.phase = "bwd"
                    then = None
                    if i + 1 < len(order) and order[i + 1][0] == "fwd":
                        nb = order[i + 1][1]
                        received.add(nb)
                        then = functools.partial(nd.receive, nb)
                    nd.backward(b, seed, then)
                nd.ops.append(("done_mark", (kind, s, b)))
            nd.phase = "wg"
            nd.ops.append(("mark", ("wg", s)))
            nd.weight_phase(seed)
        nd.ops.append(("mark", ("end", steps)))
        nd.counting = False
        nd.final()
        nd.prog.link_elems = dict(nd.link)
        nodes.append(nd.prog)
    bad = []
    for prog in nodes:
        for buf in prog.alloc.overflow():
            u = prog.alloc.usage()[buf]
            bad.append(f"node {prog.node} buffer {buf} needs {u['used']} words, has {u['depth']}")
    if bad:
        raise ClusterError("the mapping does not fit the nodes' buffers (batch "
                           f"{part.batch}): " + "; ".join(bad) +
                           ". Use a smaller batch, more nodes or deeper buffers.")
    c, h, w = net.input_shape
    K, ho, wo = net.shapes()[-1]
    p_in, p_out = ccfg.engines[0].P, ccfg.engines[-1].P   # node 0's and node N-1's layouts
    return ClusterProgram(nodes, tiles(c, p_in) * h * w * p_in, tiles(K, p_out) * ho * wo * p_out,
                          (K, ho, wo), steps, part.batch, bool(overlap), schedule)


def unpack_params(net, part, P, host_out: dict, like: dict) -> dict:
    """Reassemble ``{layer: {"w", "b"}}`` from what the nodes stored to the host; ``P`` is the
    array side of every node (an int, or one per node: each piece is in its node's layout)."""
    Ps = [int(P)] * part.n if isinstance(P, (int, np.integer)) else [int(p) for p in P]
    owner = {(it.layer, it.k0, it.k1): Ps[j] for j, items in enumerate(part.nodes) for it in items}
    out = {name: {"w": np.zeros_like(np.asarray(p["w"])), "b": np.zeros_like(np.asarray(p["b"]))}
           for name, p in like.items()}
    for key, vals in host_out.items():
        kind, li, k0, k1 = key
        P = owner[(li, k0, k1)]
        layer = net.layers[li]
        _, C, R, S = net.conv_geometry(layer)["w_shape"]
        if kind == "w":
            words = np.asarray(vals, dtype=np.int64).reshape(-1, P * P)
            out[layer.name]["w"][k0:k1] = unpack_weight(words, (k1 - k0, C, R, S), P)
        else:
            out[layer.name]["b"][k0:k1] = unpack_bias(np.asarray(vals), k1 - k0, P)
    return out
