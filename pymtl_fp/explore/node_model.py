"""Analytical per-node model of a cluster partition: each node's engine cycles per image.

What it models: one training step of a chain of engines running the layer-level pipeline of
:mod:`cluster` (forward of B images, backward of B images, weight gradients over the batch and the
update), with **serial** engines (commands one at a time: ``overlap=False``).  A node's busy
cycles per step are the sum of its commands' occupancies, every one from the closed forms of
:mod:`pymtl_fp.timing` (the model the RTL validates cycle for cycle):

* compute: ``conv_cycles`` (fwd of its output channels per image; bwd_data of the whole layer
  per image where the node computes the data gradient; one bwd_weight over the batch, plus a
  one-channel bwd_weight for the bias gradient of a second piece), ``pool_cycles``,
  ``update_cycles``;
* stream I/O, derived from the tensor shapes: every tensor a node receives is LOADed
  (``load_cycles``), every tensor it sends is STOREd (``store_cycles``), a layer output consumed
  by the next layer on the same node is written there by the command itself (``dsel``; no
  cycles) except a pooled output before a first piece or after a second piece, which is copied
  through the streams (a STORE and a LOAD; see ``_Node.am_in_o`` in :mod:`pymtl_fp.cluster.compiler.compile`), a split
  layer's holders exchange the first piece's input/output/gradients and weights (a second
  piece's output gradient from a pool on the node: pool_bwd in channel-tile pieces, see
  :mod:`pymtl_fp.cluster.compiler.compile`), biases make a
  STORE/STORE/LOAD round trip through the DMA's scalar unit (a lone first holder's passing of the
  data gradient from link to link is a MOVE of the router at the end of its backward pass, not
  engine work: ``dma_moves``, not busy cycles; :mod:`.step_model` times it);
* one cycle per command for the router to offer the next command (its outputs are registered:
  :data:`pymtl_fp.cost.latency.ISSUE_CYCLES`).

An engine's pipelines add ``wb_latency`` cycles to each compute command (``predict``'s
``wb_latency``, ``EngineConfig.wb_latency``: 17 for the cluster's default engines, every pipeline
on); its command register costs nothing here (a node's router offers the next command while one
runs: :func:`pymtl_fp.cost.engine.compute_cycles`).

Each node's cycles are also split by phase (forward and backward pass of an image, the weight
phase) with what each pass receives and sends (elements, and the cycles of those LOADs and STOREs):
what :mod:`.step_model` needs to put the nodes' passes together into steps.

It is independent of :mod:`pymtl_fp.cluster.compiler.compile` (which writes the programs) and is checked against
the CL cluster simulation of the same partition (``tests/test_explore_vs_cluster.py``, ``pymtl-fp bench
model``).  Nodes must
share the array side ``P`` (a mixed-``P`` relayout is not modelled).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pymtl_fp.cost import engine as timing
from pymtl_fp.cost.latency import ISSUE_CYCLES
from pymtl_fp.explore import residual_terms


def _t(n: int, p: int) -> int:
    return -(-int(n) // p)


@dataclass
class NodeCycles:
    node: int
    compute: int = 0   #: compute commands, cycles per step
    io: int = 0        #: LOAD/STORE commands, cycles per step
    commands: int = 0  #: engine commands per step
    #: elements the router MOVEs from link to link per step (a lone first holder passing a data
    #: gradient on, at the end of its backward pass): not engine work, so not in :meth:`per_step`
    dma_moves: int = 0
    #: busy cycles (compute, I/O and issue) per step of each phase: ``fwd`` and ``bwd`` (every
    #: image's pass), ``wg`` (the weight gradients over the batch, the updates, the biases and a
    #: split layer's weight exchange: the end-of-step weight phase)
    phase: dict = field(default_factory=dict)
    #: per image and pass (``fwd``, ``bwd``): the busy cycles from the pass's start to the end of
    #: the LOADs before its first compute (what it receives), and from its first STORE to a
    #: neighbour to its end (what it sends on)
    receiving: dict = field(default_factory=dict)
    sending: dict = field(default_factory=dict)
    #: elements sent to a neighbour (or the host) per step, by direction: ``fwd`` on towards node
    #: ``j+1`` (a pass's outputs, and a first piece's updated weights), ``bwd`` back towards node
    #: ``j-1``
    sent: dict = field(default_factory=dict)
    #: the weight phase loads the updated weights of a first piece from node ``j-1`` (this node
    #: holds its second piece): the busy cycles of the phase up to the end of that LOAD (0: none)
    weights_loaded_at: int = 0
    #: of ``sent["fwd"]``, the first pieces' updated weights (sent in the weight phase)
    weights_sent: int = 0
    #: per step, ``(pass, "recv" | "send") -> [elements, cycles]`` of the LOADs that receive a
    #: pass's input (before its first compute) and of the STOREs that send to a neighbour: what a
    #: link slower than the streams stretches
    link_io: dict = field(default_factory=dict)
    #: per image and pass (``fwd``, ``bwd``): the busy cycles after its last compute command (0 if it
    #: computes nothing) and the elements it sends to a neighbour in them: where the compiler puts
    #: the next forward pass's receiving LOADs after a backward pass
    #: (:func:`pymtl_fp.cluster.compiler.hoist.beside_weight_gradients`)
    tail: dict = field(default_factory=dict)
    tail_sent: dict = field(default_factory=dict)
    #: per image and pass: the busy cycles from the end of the last STORE to a neighbour before its
    #: last compute command to the end of that command (0 if none)
    early_gap: dict = field(default_factory=dict)
    #: per phase, the cycles of its last command (the router goes on once a command is accepted)
    last_command: dict = field(default_factory=dict)
    #: per phase, whether its last command is a compute command
    ends_computing: dict = field(default_factory=dict)
    #: per phase, the cycles of the command before its last one (in the node's command stream) if
    #: that command computes, else 0 (a LOAD or STORE before it does not hold the last one back)
    before_last: dict = field(default_factory=dict)
    #: the engine has a command register (``EngineConfig.pipelined_cmd``): it takes a command as the
    #: one before it starts, so the router goes on a command earlier (:class:`.step_model.NodePasses`)
    held: bool = False

    def per_step(self) -> int:
        return self.compute + self.io + ISSUE_CYCLES * self.commands

    def per_image(self, batch: int) -> float:
        return self.per_step() / batch


class Acc:
    def __init__(self, node, P, wb_latency=0, unit_latency=0, held=False):
        self.c = NodeCycles(node, held=held)
        self.P = P
        self.wb = wb_latency
        self.unit_latency = unit_latency
        self._last = 0  # (the phase's last command; 0 before its first)
        # the node's last command and the one before it, across phases: (cycles, computes)
        self._latest, self._before = (0, False), (0, False)

    @property
    def last(self) -> int:
        """The cycles of the phase's last command (0 before its first)."""
        return self._last

    @last.setter
    def last(self, cycles: int) -> None:
        self._set_last(cycles, False)

    def _set_last(self, cycles: int, computes: bool) -> None:
        if cycles:
            self._before, self._latest = self._latest, (cycles, computes)
        self._last = cycles

    def act(self, c, h, w) -> int:
        """Elements of one image's ``(c, h, w)`` activation in the engine's layout."""
        return _t(c, self.P) * h * w * self.P

    def begin(self, phase):
        """Start counting ``phase``'s busy cycles, what it receives before its first compute and
        what it sends from its first STORE to a neighbour on."""
        self.phase, self.mark, self.fresh, self.send_at = phase, self.c.per_step(), True, None
        self.computed_at, self.sends, self.last = None, [], 0  # the end of its last compute; (start, end, elements) sent
        self.c.receiving.setdefault(phase, 0)

    def end(self):
        span = self.c.per_step() - self.mark
        self.c.phase[self.phase] = self.c.phase.get(self.phase, 0) + span
        self.c.last_command[self.phase] = self.last
        before, computes = self._before
        self.c.before_last[self.phase] = before if self.last and computes else 0
        self.c.ends_computing[self.phase] = self.computed_at is not None and self.computed_at == span
        if self.send_at is not None:
            self.c.sending[self.phase] = span - self.send_at
        if self.phase in ("fwd", "bwd"):
            after = self.computed_at
            self.c.tail[self.phase] = 0 if after is None else span - after
            self.c.tail_sent[self.phase] = 0 if after is None else sum(n for at, _, n in self.sends if at >= after)
            early = [done for at, done, _ in self.sends if after is not None and at < after]
            self.c.early_gap[self.phase] = after - max(early) if early else 0

    def _link(self, way, n, cycles):
        acc = self.c.link_io.setdefault((self.phase, way), [0, 0])
        acc[0] += n
        acc[1] += cycles

    def load(self, n):
        cyc = self.last = timing.load_cycles(n)
        self.c.io += cyc
        self.c.commands += 1
        if self.fresh:  # received before the pass's first compute
            self.c.receiving[self.phase] = self.c.per_step() - self.mark
            self._link("recv", n, cyc)

    def store(self, n, lanes=None, local=False, towards=None):
        """A STORE of ``n`` elements: sent on in the pass's direction (or ``towards``), unless
        ``local`` (a copy between the node's own buffers, a bias round trip)."""
        towards = towards or (self.phase if self.phase in ("fwd", "bwd") else None)
        cyc = self.last = timing.store_cycles(n, lanes or self.P)
        if not local and towards:
            self.c.sent[towards] = self.c.sent.get(towards, 0) + n
            if self.phase == "wg":
                self.c.weights_sent += n
            if self.send_at is None:
                self.send_at = self.c.per_step() - self.mark
            at = self.c.per_step() - self.mark
            self.sends.append((at, at + cyc + ISSUE_CYCLES, n))
            self._link("send", n, cyc)
        self.fresh = False
        self.c.io += cyc
        self.c.commands += 1

    def copy(self, n):
        self.store(n, local=True)
        self.load(n)

    def compute(self, cycles):
        cycles += self.wb
        self.fresh = False
        self._set_last(cycles, True)
        self.c.compute += cycles
        self.c.commands += 1
        self.computed_at = self.c.per_step() - self.mark


def _conv(P, op, f, n, k, drain_rows=1):
    return timing.conv_cycles(P, op, timing.ConvShape(n=n, c=f["c"], k=k, h=f["h"], w=f["w"], r=f["r"],
                                                      s=f["s"], stride=f["stride"], pad=f["pad"]), drain_rows)


def predict(layers: list, nodes: list, P: int, batch: int, drain_rows: int = 1, wb_latency: int = 0,
            net=None, unit_latency: int = 0, held: bool = False) -> list:
    """Busy cycles of every node for one step.

    ``layers[i]``: a dict of layer ``i``'s shapes (``c, h, w`` in, ``k, ho, wo`` out; conv/fc
    also ``r, s, stride, pad`` and ``p``, its index among the parameter layers; pool ``pk``),
    e.g. :func:`pymtl_fp.cluster.compiler.partition.layer_info`; ``nodes[j]``: node ``j``'s items, each with
    ``layer``, ``k0``, ``k1`` (output channels it computes) and ``pool``; ``P`` and
    ``drain_rows``: the engines' array side and ``bwd_weight`` drain rows per cycle;
    ``wb_latency``: the cycles their pipelines add to each compute command
    (``EngineConfig.wb_latency``); ``net``: the net, for a residual net's adds and average pools
    (:mod:`.residual_terms`); ``unit_latency``: the cycles the routers' pipelined units add to each
    residual-unit instruction (:func:`~pymtl_fp.cost.latency.router_unit_latency`); ``held``: the
    engines have a command register (``EngineConfig.pipelined_cmd``).  Returns
    :class:`NodeCycles` per node."""
    out = []
    sk = residual_terms.Skips(net, nodes)
    for j, items in enumerate(nodes):
        a = Acc(j, P, wb_latency, unit_latency, held)

        def kind(it):
            f = layers[it.layer]
            if it.pool:
                return f.get("res", "pool")
            if it.k0 > 0:
                return "second"
            return f.get("res", "whole") if it.k1 == f["k"] else "first"

        def skip_elems(li):
            f = layers[li]
            return _t(f["c"], P) * f["h"] * f["w"] * P

        for _ in range(batch):  # forward, one image at a time
            a.begin("fwd")
            for idx, it in enumerate(items):
                f, kd = layers[it.layer], kind(it)
                last = idx == len(items) - 1
                if idx == 0:
                    a.load(a.act(f["k"], f["ho"], f["wo"]) if kd == "proj" else a.act(f["c"], f["h"], f["w"]))
                    for li, *_ in sk.crossing(j - 1, j):  # (the skips crossing the cut follow the input)
                        a.load(skip_elems(li))
                if kd in residual_terms.KINDS:
                    n = residual_terms.forward(a, sk, f, kd, it.layer, _conv(P, "fwd", f, 1, f["k"]) if kd == "proj"
                                               else 0)
                    if last:
                        a.store(n)
                    continue
                if kd == "pool":
                    a.compute(timing.pool_cycles(P, 1, f["c"], f["ho"], f["wo"], f["pk"]))
                    if last:
                        a.store(a.act(f["k"], f["ho"], f["wo"]))
                    elif kind(items[idx + 1]) == "first":  # also the second holder's input: sent on
                        a.store(a.act(f["k"], f["ho"], f["wo"]))
                        a.load(a.act(f["k"], f["ho"], f["wo"]))
                    elif idx > 0 and kind(items[idx - 1]) == "second":
                        a.copy(a.act(f["k"], f["ho"], f["wo"]))  # else written into the next input
                                                                  # (the argmax in O)
                    continue
                kk = it.k1 - it.k0
                if kd == "second":
                    a.load(a.act(it.k0, f["ho"], f["wo"]))  # the first holder's piece
                a.compute(_conv(P, "fwd", f, 1, kk))
                if kd == "second":  # written next to the first piece by the fwd itself
                    if last:
                        a.store(a.act(f["k"], f["ho"], f["wo"]))
                elif kd == "first":
                    if idx == 0 or kind(items[idx - 1]) != "pool":  # else sent with the pool's copy
                        a.store(a.act(f["c"], f["h"], f["w"]))  # the input, for the second holder
                    a.store(a.act(kk, f["ho"], f["wo"]))
                elif last:
                    a.store(a.act(kk, f["ho"], f["wo"]))
                # else: written into the next layer's input by the fwd itself
            for li, *_ in sk.crossing(j, j + 1):  # (after the output)
                a.store(skip_elems(li))
            a.end()
        for _ in range(batch):  # backward
            a.begin("bwd")
            done_dy = None  # a second piece whose dy the pool_bwd pieces already put in place
            pending = {}  # the skips' gradient shares waiting for their forks (or to be sent on)
            for idx in reversed(range(len(items))):
                it = items[idx]
                f, kd = layers[it.layer], kind(it)
                if idx == len(items) - 1:
                    kin = it.k1 - it.k0 if kd == "first" else f["k"]
                    a.load(a.act(kin, f["ho"], f["wo"]))
                    for li, t, js, _ in sk.crossing(j, j + 1):  # (the shares follow the gradient)
                        if sk.net.needs_grad(t):
                            a.load(skip_elems(li))
                            pending.setdefault(t if js == j else ("send", li), []).append(skip_elems(li))
                dx = None
                prev = items[idx - 1] if idx > 0 else None
                if kd in residual_terms.KINDS:
                    dx, placed = residual_terms.backward(a, sk, f, kd, it.layer, _conv(P, "bwd_data", f, 1, f["k"])
                                                         if kd == "proj" else 0, pending)
                    if dx is not None:
                        residual_terms.fork(a, it.layer, pending)
                        residual_terms.place(a, dx, placed, first=idx == 0)
                    continue
                if kd == "pool" and prev is not None and kind(prev) == "second":
                    # pooled back in channel-tile pieces straight to where each part goes: the
                    # first holder's tiles (sent on), the own tiles, and all (for bwd_data)
                    pf, ct = layers[prev.layer], _t(f["c"], P)
                    kt0 = prev.k0 // P
                    for t0, t1 in ((0, kt0), (kt0, ct)) + (((0, ct),) if pf["p"] > 0 else ()):
                        c = min(f["c"], t1 * P) - t0 * P
                        a.compute(timing.pool_cycles(P, 1, c, f["ho"], f["wo"], f["pk"]))
                        if t1 == kt0:  # the first holder's tiles, sent on at once
                            a.store(a.act(prev.k0, pf["ho"], pf["wo"]))
                    done_dy = prev
                    continue
                if kd == "pool":
                    a.compute(timing.pool_cycles(P, 1, f["c"], f["ho"], f["wo"], f["pk"]))
                    dx = a.act(f["c"], f["h"], f["w"])
                else:
                    if kd == "second" and done_dy is not it:
                        a.store(a.act(it.k0, f["ho"], f["wo"]))         # dy of the first piece
                        a.copy(a.act(it.k1 - it.k0, f["ho"], f["wo"]))  # own dy to its batch slot
                    if kd == "first":
                        if f["p"] > 0:
                            if idx > 0:
                                a.load(a.act(f["c"], f["h"], f["w"]))
                            else:  # link to link in a MOVE of the router (not engine work)
                                a.c.dma_moves += a.act(f["c"], f["h"], f["w"])
                                a.c.sent["bwd"] = a.c.sent.get("bwd", 0) + a.act(f["c"], f["h"], f["w"])
                        continue
                    if f["p"] > 0:
                        a.compute(_conv(P, "bwd_data", f, 1, f["k"]))
                        dx = a.act(f["c"], f["h"], f["w"])
                if dx is not None:
                    residual_terms.fork(a, it.layer, pending)
                if dx is not None and idx == 0:  # else written into the previous item's dy
                    a.store(dx)
            for li, t, _, _ in sk.crossing(j - 1, j):  # (after the data gradient)
                if sk.net.needs_grad(t):
                    a.store(skip_elems(li))
            a.end()
        a.begin("wg")
        for it in items:  # weight gradients over the batch, update, biases
            if it.pool:
                continue
            f, kd, kk = layers[it.layer], kind(it), it.k1 - it.k0
            a.compute(_conv(P, "bwd_weight", f, batch, kk, drain_rows))
            if it.k0 > 0:
                a.compute(timing.conv_cycles(P, "bwd_weight", timing.ConvShape(
                    n=batch, c=1, k=kk, h=f["ho"], w=f["wo"], r=1, s=1, stride=1, pad=0), drain_rows))
            a.compute(timing.update_cycles(P, kk, f["c"], f["r"], f["s"]))
            nb = _t(kk, P) * P
            a.store(nb, local=True)
            a.store(nb, local=True)
            a.load(nb)
            per_kt = _t(f["c"], P) * f["r"] * f["s"]
            if kd == "first":
                a.store(_t(kk, P) * per_kt * P * P, P * P, towards="fwd")
            elif kd == "second":
                a.load((it.k0 // P) * per_kt * P * P)
                a.c.weights_loaded_at = a.c.per_step() - a.mark
        a.end()
        out.append(a.c)
    return out
