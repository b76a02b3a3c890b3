"""Analytical per-node storage model of a cluster partition: the words each node keeps in each of
its engine's six buffers (X, D, O, W, G, B) while the cluster trains.

The storage counterpart of :mod:`pymtl_fp.explore.node_model` (same inputs: the layer shapes, a
partition's items per node, the engine config, the batch), from the cluster's buffer policy alone
(the code generator's regions, :mod:`pymtl_fp.cluster.compiler.regions`, and docs/cluster-fine-grained.md's
"Weight gradients per image" and "Row bands on the cluster").

**Layouts** (:mod:`pymtl_fp.engine.msgs`; ``t(n) = ceil(n / P)``).  One image's activation or
gradient map ``(C, H, W)`` takes ``act(C) = t(C) H W`` words of ``P`` lanes (X, D, O); a weight
piece of ``kk`` output channels ``t(kk) t(C) R S`` words of ``P x P`` lanes (W, G); a bias
``t(kk)`` words of ``P`` accumulators (B).  Layer ``l`` has input ``in = act(C_l)`` and output
``out = act(K_l)`` (over ``Ho x Wo``); an item computing channels ``[k0, k1)`` has
``own = t(k1 - k0) Ho Wo``.

**Images kept.**  With the weight gradients over the batch (``--wgrad batch``, one ``bwd_weight``
with ``n = B`` at the step's end) a node keeps every image's layer inputs and output gradients:
``B`` of each.  Per image (``--wgrad image``, ``auto``'s choice, or a per-image schedule ``cp`` /
``sgd``) an image's tensors are freed with its weight gradients: a layer input in a ring of
``S_j`` slots, the images in flight on node ``j`` (:func:`in_flight`: ``min(B, N - j + 2)`` under
1F1B and ``cp``, ``B`` under GPipe, one under ``sgd``), and the output gradients of ``S_D =
min(B, 1 + overlap)`` images (the one in its backward pass; with overlap also the next).  ``auto``
sends a layer per image where one image's ``bwd_weight`` costs at most ``AUTO_SLACK`` (5 %) more
engine cycles than its share of the batch's (:func:`wgrad_per_image`: the conv layers here; an
fc layer, all drain, stays over the batch).  Once anything on a node is per image, its pools'
argmaxes use the ``S_j`` ring too; otherwise ``B``.

**Per item** (``keep_x``: ``S_j`` for a per-image item, else ``B``; ``keep_dy``: ``S_D`` or ``B``):

====  =========================================================================================
X     conv/fc: ``keep_x * in`` (its input, read by ``bwd_weight`` and, as the ReLU mask, by
      ``bwd_data``);  pool: ``in`` (one image: the pool's input, written by the layer before it)
      and, unless the argmax lives in O (below), ``argmax_slots * out``;  a split layer's second
      piece last on its node: ``out`` (one image: the whole output assembled there)
D     whole layer or first piece: ``keep_dy * own``;  second piece: ``keep_dy * own + out`` (the
      whole layer's incoming gradient, one image, which ``bwd_data`` reads; not for the net's first
      layer followed by a pool, whose backward pieces write each part straight to where it goes);
      pool: ``out`` (its incoming gradient, one image)
O     per node: the result slots, ``max(o_fwd, o_bwd)`` (``2 (o_fwd + o_bwd)`` with overlap: two
      per direction, as 1F1B interleaves them), where ``o_fwd`` is the largest one-image result
      the node sends or copies from O (its last item's output, a first piece's ``own``, a pool's
      output that does not go straight into the next layer's input) and ``o_bwd`` the node's first
      item's ``in`` (its data gradient; none for a tap-packed layer);  per pool whose next item on
      the node is not a first piece and whose previous item is not a second piece (the pool then
      writes its result straight into the next input in X and its argmax to O):
      ``argmax_slots * out``;  per pool after a second piece: ``2 * k0/P * Ho Wo`` of that piece
      (the first holder's part of its gradient, two alternating slots)
W     whole or first piece: its weights; second piece: the whole layer's (the first holder sends
      its updated piece after every step)
G     the piece's weight gradient (same words as its weights);  a second piece over the batch:
      ``t(kk)`` more (its ``db``'s own ``bwd_weight``)
B     bias and bias gradient, ``2 t(kk)``;  a second piece over the batch: ``t(kk)`` more;
      per-image weight gradients of a mini-batch schedule (``--wgrad image | auto``; ``cp`` and
      ``sgd`` round each image's in the engine): the un-rounded sums, ``dw`` in G's layout at
      ``P`` accumulators a word (``P`` times its G words) and ``db`` (``t(kk)``)
====  =========================================================================================

**Weights kept by a neighbour** (``train --weight-home``, ``homes``): a whole layer's weights and
weight gradient (W, G) count at the neighbour keeping them; the node computing with it keeps two
staging slots (one where two do not fit) of its largest chunk in W and of its largest gradient tile
in G, its input and output gradient over the batch, and a word or two more for its tile-by-tile
weight gradient (:func:`remote_terms`).

Pools carry no weights.  Row bands (``--bands``, also ``--bands-backward``) run in place in the
same regions (the band buffers of a node's last layer are the two halves of its O slot), so the
words do not depend on them.  Not modelled (none occurs on nodes that share one array side ``P`` on the digits nets):
the O staging of a tensor re-laid out between nodes of different ``P``, and the extra X a second
piece's ``db`` command needs when a layer's output map is larger than its padded input; nor the
replicas of ``--parallel data | hybrid``.  The
words are what the allocator reserves (its bump pointer per buffer, the report's ``X/D/W/B words
used``): a region is reserved for the whole step, so this is every buffer's peak; node 0 reserves
an O slot for a data gradient the network's first layer never sends.

It is independent of the cluster compiler (:mod:`pymtl_fp.cluster.compiler.compile` and its region code)
and is checked against the words the compiled programs allocate, node by node and buffer by buffer
(``tests/test_explore_storage_vs_cluster.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pymtl_fp import timing
from pymtl_fp.cluster.compiler.schedule import AUTO_SLACK
from pymtl_fp.explore import residual_terms
from pymtl_fp.timing import cdiv

BUFS = ("X", "D", "O", "W", "G", "B")
#: schedules that compute each image's weight gradient after its backward pass
PER_IMAGE_SCHEDULES = ("cp", "sgd")


@dataclass
class NodeWords:
    """Words a node keeps in each buffer, and the terms they add up from."""

    node: int
    X: int = 0
    D: int = 0
    O: int = 0
    W: int = 0
    G: int = 0
    B: int = 0
    #: ``(buffer, what) -> words``
    terms: dict = field(default_factory=dict)

    def add(self, buf: str, what: str, words: int) -> None:
        if words:
            setattr(self, buf, getattr(self, buf) + int(words))
            self.terms[(buf, what)] = self.terms.get((buf, what), 0) + int(words)

    def as_dict(self) -> dict:
        return {b: getattr(self, b) for b in BUFS}

    def total(self) -> int:
        return sum(self.as_dict().values())


def in_flight(schedule: str, j: int, n: int, batch: int) -> int:
    """The ring of images node ``j`` of ``n`` keeps when an image's tensors are freed with its
    weight gradients: 1F1B's ``n - j + 1`` forward passes ahead of the backward passes, one more
    for the next input LOADed during a backward pass (the per-image weight gradients run behind
    that next forward pass, within the same slot count); all of the batch under GPipe; one image
    under ``sgd``.  (:func:`pymtl_fp.cluster.compiler.schedule.images_in_flight` counts it from the order.)"""
    if schedule == "gpipe":
        return batch
    if schedule == "sgd":
        return 1
    return min(batch, n - j + 2)


def wgrad_per_image(f: dict, kk: int, ecfg, batch: int) -> bool:
    """``--wgrad auto``'s choice for a piece of ``kk`` output channels of layer ``f``: per image
    when one image's ``bwd_weight`` (timing model, with the engine's command and write-back
    latencies) costs at most :data:`AUTO_SLACK` times its share of the batch's."""
    def cycles(n):
        shape = timing.ConvShape(n=n, c=f["c"], k=kk, h=f["h"], w=f["w"], r=f["r"], s=f["s"],
                                 stride=f["stride"], pad=f["pad"])
        return timing.compute_cycles(ecfg.P, "bwd_weight", shape.fields(ecfg.P), ecfg.drain_rows, ecfg.wb_latency,
                                     ecfg.cmd_latency)

    return cycles(1) <= AUTO_SLACK * cycles(batch) / batch


def predict(layers: list, nodes: list, ecfg, batch: int, *, wgrad: str = "batch", overlap: bool = False,
            schedule: str = "1f1b", homes: dict | None = None, stage_slots: dict | None = None, net=None) -> list:
    """Words of every node's six buffers (:class:`NodeWords`, one per node).

    ``layers[i]``: layer ``i``'s shape fields as the engine runs it
    (:func:`pymtl_fp.cluster.compiler.partition.layer_info`, with ``packed`` for a tap-packed layer);
    ``nodes[j]``: node ``j``'s items (``layer``, ``k0``, ``k1``, ``pool``); ``ecfg``: the engines'
    config (``P``; its timing for ``auto``); ``wgrad``, ``overlap``, ``schedule``: the run's.
    ``homes``: ``{(node, layer): neighbour}``, whole layers whose weights a neighbour keeps
    (``train --weight-home``; :func:`remote_terms`), with ``stage_slots[node]`` staging slots.
    ``net``: the net, for a residual net's adds, projections and average pools
    (:func:`~pymtl_fp.explore.residual_terms.words`)."""
    P, n, ovl = ecfg.P, len(nodes), int(bool(overlap))
    sk = residual_terms.Skips(net, nodes)
    per_schedule = schedule in PER_IMAGE_SCHEDULES
    homes = homes or {}
    out = []
    for j, items in enumerate(nodes):
        nw = NodeWords(j)
        remote = {li for (u, li) in homes if u == j}

        def kind(it):
            f = layers[it.layer]
            if it.pool:
                return f.get("res", "pool")
            if it.k0 > 0:
                return "second"
            return f.get("res", "whole") if it.k1 == f["k"] else "first"

        def act(c, f):
            return cdiv(c, P) * f["h"] * f["w"]

        def res(c, f):
            return cdiv(c, P) * f["ho"] * f["wo"]

        def per_image(it, remote=remote):
            f = layers[it.layer]
            return it.layer not in remote and (per_schedule or wgrad == "image" or (
                wgrad == "auto" and wgrad_per_image(f, it.k1 - it.k0, ecfg, batch)))

        in_flight_kept = per_schedule or wgrad != "batch"
        slots = in_flight(schedule, j, n, batch) if in_flight_kept else batch
        dy_slots = min(batch, 1 + ovl) if in_flight_kept else batch
        kinds = [kind(it) for it in items]
        o_fwd = o_bwd = 0
        for i, it in enumerate(items):
            f, kd = layers[it.layer], kinds[i]
            name = f"layer {it.layer}"
            last = i == len(items) - 1
            if kd in residual_terms.KINDS and last:  # (its result LOADed into O, sent on)
                o_fwd = max(o_fwd, res(f["k"], f))
            if kd in ("add", "gap"):  # (residual_terms.words)
                continue
            if kd == "pool":
                am_in_o = not last and kinds[i + 1] != "first" and not (i > 0 and kinds[i - 1] == "second")
                nw.add("X", f"{name} input (one image)", act(f["c"], f))
                nw.add("O" if am_in_o else "X", f"{name} argmax ({slots} images)", slots * res(f["k"], f))
                nw.add("D", f"{name} output gradient (one image)", res(f["k"], f))
                if not am_in_o:
                    o_fwd = max(o_fwd, res(f["k"], f))
                if i > 0 and kinds[i - 1] == "second":
                    pf, k0 = layers[items[i - 1].layer], items[i - 1].k0
                    nw.add("O", f"{name} first holder's gradient (two slots)", 2 * (k0 // P) * pf["ho"] * pf["wo"])
            else:
                kk = it.k1 - it.k0
                pi = per_image(it)
                raw = pi and not per_schedule  # summed un-rounded in B (else rounded by the engine)
                keep_x, keep_dy = (slots, dy_slots) if pi else (batch, batch)
                own = res(kk, f)
                nw.add("X", f"{name} input ({keep_x} images)", keep_x * act(f["c"], f))
                nw.add("D", f"{name} output gradient ({keep_dy} images)", keep_dy * own)
                per_kt = cdiv(f["c"], P) * f["r"] * f["s"]
                wwords = cdiv(kk, P) * per_kt
                nw.add("B", f"{name} bias and bias gradient", 2 * cdiv(kk, P))
                if it.layer in remote:
                    remote_terms(nw, name, f, P, batch)
                else:
                    nw.add("W", f"{name} weights", cdiv(f["k"], P) * per_kt if kd == "second" else wwords)
                    nw.add("G", f"{name} weight gradient", wwords)
                if kd == "second":
                    # the whole layer's incoming gradient, where bwd_data reads it: not needed by the
                    # net's first layer when a pool follows (its pool_bwd pieces write each part
                    # straight to where it goes)
                    if f["p"] > 0 or last or kinds[i + 1] != "pool":
                        nw.add("D", f"{name} whole output gradient (one image)", res(f["k"], f))
                    if last:
                        nw.add("X", f"{name} whole output (one image)", res(f["k"], f))
                    if not raw:
                        nw.add("G", f"{name} db of the second piece", cdiv(kk, P))
                        nw.add("B", f"{name} db of the second piece", cdiv(kk, P))
                if raw:
                    nw.add("B", f"{name} un-rounded dw and db sums", wwords * P + cdiv(kk, P))
                if kd == "first" or (kd == "whole" and last):
                    o_fwd = max(o_fwd, own)
            if i == 0 and not layers[it.layer].get("packed"):
                o_bwd = res(f["k"], f) if kd == "proj" else act(f["c"], f)
        residual_terms.words(nw, sk, j, items, layers, P, slots)
        nw.add("O", "result slots", 2 * (o_fwd + o_bwd) if ovl else max(o_fwd, o_bwd))
        if remote:  # the staging slots of the chunks streamed in (W) and of the gradient tiles (G)
            k = (stage_slots or {}).get(j, 2)
            rl = [layers[li] for li in sorted(remote)]
            nw.add("W", "weight chunks (staging)", k * max(max(cdiv(f["c"], P), cdiv(f["k"], P)) * f["r"] * f["s"]
                                                           for f in rl))
            nw.add("G", "gradient tiles (staging)", k * max(cdiv(f["c"], P) * f["r"] * f["s"] for f in rl))
        for (u, li), h in homes.items():  # the weights kept for a neighbour, and their gradient
            if h == j:
                f = layers[li]
                words = cdiv(f["k"], P) * cdiv(f["c"], P) * f["r"] * f["s"]
                nw.add("W", f"layer {li} weights (kept for node {u})", words)
                nw.add("G", f"layer {li} weight gradient (kept for node {u})", words)
        out.append(nw)
    return out


def remote_terms(nw, name: str, f: dict, P: int, batch: int) -> None:
    """A whole layer whose weights a neighbour keeps (``train --weight-home``): its weights and
    gradient only pass through the node's staging slots (counted once per node), its weight
    gradient runs over the batch one output-channel tile at a time, each past the first with a
    one-channel ``db`` command: its ``dw`` word in G and its own ``db`` word in B (and, where the
    layer's output map is larger than its input, an input of ``B Ho Wo`` words for it in X)."""
    kt = cdiv(f["k"], P)
    nw.add("B", f"{name} db of the first tile's command", 1)
    if kt > 1:
        nw.add("G", f"{name} dw of the db commands", 1)
        if f["ho"] * f["wo"] > cdiv(f["c"], P) * f["h"] * f["w"]:
            nw.add("X", f"{name} input of the db commands", batch * f["ho"] * f["wo"])


def table(rows: list, bufs=("X", "D", "W", "B")) -> str:
    """A Markdown table of predicted against allocated words: ``rows`` of ``(node, items,
    predicted NodeWords, allocated {buffer: words})``; the error column is the largest relative
    error over all six buffers (and that of their total)."""
    lines = ["| node | items | " + " | ".join(f"{b} predicted / allocated" for b in bufs)
             + " | error (worst buffer) | error (all six) |",
             "|---" * (len(bufs) + 4) + "|"]
    for node, items, pred, alloc in rows:
        p = pred.as_dict()
        worst = max((abs(p[b] - alloc[b]) / alloc[b] if alloc[b] else float(p[b] != 0)) for b in BUFS)
        tot = sum(alloc[b] for b in BUFS)
        cells = " | ".join(f"{p[b]} / {alloc[b]}" for b in bufs)
        lines.append(f"| {node} | {items} | {cells} | {100 * worst:.1f}% | "
                     f"{100 * (pred.total() - tot) / tot:+.1f}% |")
    return "\n".join(lines)
