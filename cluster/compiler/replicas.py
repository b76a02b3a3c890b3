"""Data-parallel and hybrid training on the chain: ``G`` replicas of an ``m = N / G``-node
pipeline, each on its share of the mini-batch, their weight gradients all-reduced before the
update (FPDeep's baseline, "distributed synchronous SGD"; CATERPILLAR's collectives).

* ``--parallel data``: ``G = N`` replicas of the whole net, one node each;
* ``--parallel hybrid --groups G``: ``G`` replicas of an ``N / G``-node pipeline (the partition of
  an ``N / G``-node cluster, whole layers per node, the same cuts in every replica);
* ``--parallel pipeline`` (the default): one pipeline over all nodes (:mod:`pymtl_fp.cluster.compiler.compile`).

Replica ``g`` holds chain positions ``g*m .. g*m + m - 1``; its stage ``s`` is node ``g*m + s``.
The host stays at the chain's ends (images into node 0, logits out of node N-1, loss gradients
back into node N-1), so the traffic of one replica passes through the others' boards (``MOVE``),
in an order that lets every replica work at once: replica ``G-1`` (nearest the logit end) takes
the first images of the batch, replica ``G-2`` the next, ..., replica 0 the last (so the host
receives logits in image order).  One step of node ``g*m + s``:

1. pass on the images of replicas ``> g`` (they come first on ``fwd_in``);
2. the forward passes of its own images (the pipeline's code: stage 0 LOADs each image);
3. pass on the logits of replicas ``< g`` (they follow its own results on ``fwd_out``);
4. the last stage LOADs all its share's loss gradients, then every stage passes on those of
   replicas ``< g``, then runs the backward passes (GPipe order within the replica);
5. ``bwd_weight`` with ``raw = 1`` for its layers (accumulator-wide partial sums in B), then, for
   each stage's layers in a global order (last stage first), either its part in the all-reduce of
   ``db`` and ``dw`` with the same stage of the other replicas (:mod:`pymtl_fp.cluster.compiler.collectives`)
   followed by one rounding and the update, or the pass-through of another stage's all-reduce.

Bits: every replica applies the one-node gradient of the whole batch (rounded once from the exact
sum), and every image is rounded as image ``b0 + b`` of the batch, so the final weights equal
:func:`pymtl_fp.golden.train.train_step` on one node exactly
(:func:`pymtl_fp.golden.data_parallel.train_step_data_parallel` states it and tests it); every
replica sends its final weights back and the run checks that they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from pymtl_fp.cluster.compiler import codegen
from pymtl_fp.cluster.compiler.collectives import Collectives, collective_sizes
from pymtl_fp.cluster.compiler.compile import (
    begin_step,
    check_beats,
    check_fit,
    check_training,
    end_step,
    fit_bias,
    image_elems,
    image_pack,
    params_equal,
    roomy_bias,
    split_host_out,
    unpack_params,
)
from pymtl_fp.cluster.compiler.mapping import DEFAULT, PARALLEL, Mapping
from pymtl_fp.cluster.compiler.partition import Partition, layer_info
from pymtl_fp.cluster.compiler.partition import partition as make_partition
from pymtl_fp.cluster.compiler.plan import make_plan
from pymtl_fp.cluster.compiler.program import ClusterProgram
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.cluster.isa.marks import MARK_BWD, MARK_WG, done_id
from pymtl_fp.engine.msgs import tiles


@dataclass(frozen=True)
class Replicas:
    """``groups`` replicas of a ``size``-node pipeline; ``shares[g]``: replica ``g``'s images."""

    groups: int
    size: int
    shares: tuple
    parallel: str = "data"

    @property
    def batch(self) -> int:
        return sum(self.shares)

    def first(self, g: int) -> int:
        """Replica ``g``'s first image (replicas ``g+1 ..`` take the earlier ones)."""
        return sum(self.shares[g + 1:])

    def members(self, stage: int) -> list:
        """Chain positions of stage ``stage`` in every replica (ascending)."""
        return [g * self.size + stage for g in range(self.groups)]

    def describe(self) -> str:
        return (f"{self.parallel}: {self.groups} replica(s) of a {self.size}-node pipeline, images per replica "
                f"{list(self.shares)} (replica {self.groups - 1} takes the first)")


def replicas_for(parallel: str, n: int, batch: int, groups: int | None = None) -> Replicas | None:
    """The replica layout of ``--parallel`` on ``n`` nodes (``None``: one pipeline), refused with
    a one-line :class:`ClusterError` where it cannot be built.  The batch is split as evenly as
    it goes (the first images' replicas take one more)."""
    if parallel not in PARALLEL:
        raise ClusterError(f"unknown --parallel {parallel!r}; choose one of {', '.join(PARALLEL)}")
    if parallel == "pipeline":
        if groups not in (None, 1):
            raise ClusterError("--groups is for --parallel hybrid")
        return None
    if parallel == "data":
        if groups not in (None, n):
            raise ClusterError(f"--parallel data runs one replica per node ({n}); --groups is for hybrid")
        groups = n
    elif groups is None:
        raise ClusterError("--parallel hybrid needs --groups G (replicas; G divides the nodes)")
    if not 1 <= groups <= n or n % groups:
        raise ClusterError(f"--groups {groups} must divide the {n} nodes")
    if batch < groups:
        raise ClusterError(f"a batch of {batch} cannot give each of {groups} replicas an image")
    base, extra = divmod(batch, groups)
    shares = tuple(base + (g >= groups - extra) for g in range(groups))  # replica G-1 takes the first
    return Replicas(groups, n // groups, shares, parallel)


def check_replica_cluster(ccfg) -> None:
    """Replicas need equal array sides (one layout for every image and partial sum)."""
    if len(set(ccfg.Ps)) > 1:
        raise ClusterError(f"data-parallel and hybrid runs need nodes of one array side, got P = {list(ccfg.Ps)}")


def replica_partitions(net, ccfg, rep: Replicas, pack: str = "off") -> list:
    """Each replica's partition of its ``size`` nodes (whole layers; one cut vector and one
    tap-packing choice for all)."""
    sub = ccfg.replace(engines=ccfg.engines[:rep.size], link_overrides={}, topology="chain")
    first = make_partition(net, sub, max(rep.shares), split=False, pack=pack)
    pack = "on" if first.packed else "off"
    return [make_partition(net, sub, share, split=False, cuts=first.cuts, pack=pack) for share in rep.shares]


def whole_partition(rep: Replicas, parts: list) -> Partition:
    """One partition over every node (for the report): the replicas' items side by side."""
    p = parts[0]
    return Partition(p.net, p.P, rep.batch, p.cuts, [items for part in parts for items in part.nodes],
                     [w for part in parts for w in part.work], f"{p.method}, {rep.groups} replica(s)", p.packed)


def compile_replicas(net, ccfg, rep: Replicas, params: dict, tcfg, steps: int, mapping: Mapping = DEFAULT,
                     chunk: int | None = None):
    """One program per node for ``steps`` data-parallel / hybrid steps (``mapping``'s ``overlap``
    and ``pack``; :class:`~pymtl_fp.cluster.compiler.mapping.Mapping` refuses the choices replicas
    cannot run), the all-reduces in chunks of at most ``chunk`` elements
    (:func:`~pymtl_fp.cluster.compiler.collectives.collective_chunk`; None: whole); returns the cluster with
    its engines' B deepened to hold the un-rounded partial sums (the power of two the programs
    need; compiled once against room to spare, then each node's plan rebound to its engine), the
    :class:`ClusterProgram` and each replica's partition."""
    roomy, overlap, pack = roomy_bias(ccfg), mapping.overlap, mapping.pack
    try:
        cprog, parts = _compile(net, roomy, rep, params, tcfg, steps, overlap, pack, chunk)
    except ClusterError:
        if pack != "auto":
            raise
        cprog, parts = _compile(net, roomy, rep, params, tcfg, steps, overlap, "off", chunk)
    return fit_bias(ccfg, cprog), cprog, parts


def _compile(net, ccfg, rep: Replicas, params: dict, tcfg, steps: int, overlap: bool, pack: str = "off",
             chunk: int | None = None):
    fmt, shifts = check_training(net, tcfg, steps, rep.batch)
    parts = replica_partitions(net, ccfg, rep, pack)
    P, m = ccfg.P, rep.size
    K, ho, wo = net.shapes()[-1]
    img_elems, logit_elems = image_elems(net, parts[0], P), tiles(K, P) * ho * wo * P
    # the all-reduces, in one order for every node: the last stage's layers first
    order = [(s, it) for s in reversed(range(m)) for it in reversed(parts[0].nodes[s]) if not it.pool]
    nodes = []
    for g in range(rep.groups):
        later, earlier = rep.first(g), sum(rep.shares[:g])  # images before / after the replica's
        for s in range(m):
            j = g * m + s
            plan = make_plan(s, ccfg.engines[j], net, parts[g], tcfg, shifts, fmt, [P] * m, overlap, b0=rep.first(g))
            plan.prog.node, S, em = j, rep.shares[g], plan.emit
            seed = begin_step(plan, params)
            em.phase = "fwd"
            if later:
                em.move("fwd_in", "fwd_out", later * img_elems)
            for b in range(S):
                codegen.forward(plan, b, seed)
                em.done_mark(done_id("fwd", rep.first(g) + b))
            if earlier:
                em.move("fwd_in", "fwd_out", earlier * logit_elems)
            em.mark(MARK_BWD)
            em.phase = "bwd"
            if s == m - 1:  # the share's loss gradients first, so the others' pass at once
                last = plan.node.items[-1]
                for b in range(S):
                    em.load("D", plan.regions.dy_keep(last, b), logit_elems, "bwd_in")
                plan.flow.dy_loaded = True
            if earlier:
                em.move("bwd_in", "bwd_out", earlier * logit_elems)
            for b in range(S):
                codegen.backward(plan, b, seed)
                em.done_mark(done_id("bwd", rep.first(g) + b))
            em.phase = "wg"
            em.mark(MARK_WG)
            collectives = Collectives(plan, chunk)
            collectives.raw_gradients()
            for stage, it in order:
                members = rep.members(stage)
                if stage == s:
                    collectives.reduce_and_update(it, seed, j, members)
                elif members[0] < j < members[-1]:
                    for n in collective_sizes(layer_info(net, it.layer, it.layer in parts[0].packed), it, P):
                        collectives.pass_collective(n)
            nodes.append(end_step(plan, steps))
    check_fit(nodes, rep.batch)
    check_beats(nodes, ccfg.lanes)
    return ClusterProgram(nodes, img_elems, logit_elems, (K, ho, wo), steps, rep.batch, bool(overlap), "gpipe",
                          rep, image_pack(net, parts[0])), parts


def replica_params(net, rep: Replicas, parts: list, cprog, P: int, streams: list, like: dict) -> dict:
    """The trained weights every replica sent back (``streams[j]``: node j's host stream); a
    :class:`ClusterError` if two replicas disagree (the all-reduce gave them different updates)."""
    out = None
    for g, part in enumerate(parts):
        host_out = {}
        for j in range(g * rep.size, (g + 1) * rep.size):
            host_out.update(split_host_out(cprog.nodes[j], streams[j]))
        got = unpack_params(net, part, P, host_out, like)
        if out is None:
            out = got
        elif not params_equal(out, got):
            raise ClusterError(f"replica {g}'s final weights differ from replica 0's")
    return out

