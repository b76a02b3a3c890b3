"""Choose a cluster's partition by simulating its compiled node programs (CL, one short run).

FPDeep's rule and the min-max search (:mod:`pymtl_fp.cluster.compiler.partition`) balance the engine's
modelled compute per image.  With overlapping engine commands a node's pace is also set by what
the model does not see: LOADs waiting for link data hold the commands behind them, X's one write
port is shared by link LOADs, results, argmax and pooled copies, and a split layer's second holder
waits for the first holder's output.  Measured on LeNet (CL, batch 8): the 3-node rule's cuts run
at 2030 cycles/image (74.5 % of their compute bound) where another cut vector runs at 1412 (92.9 %).

:func:`search_partition` therefore ranks every valid cut vector by its compiled programs' slowest
node's compute per image (``phase_compute``: what the steady-state bound counts), simulates the
``keep`` best and the rule's own choice on the CL cluster (direct scheduler, one step of the run's
first images) and returns the fastest.  The CL cluster is cycle-equal to the RTL one, so the
choice holds at every level; it is deterministic (same images, same programs, same cycles).
"""

from __future__ import annotations

import itertools
import math

from pymtl_fp.cluster.compiler.compile import choose_partition, compile_pipeline, splits_layers
from pymtl_fp.cluster.compiler.mapping import DEFAULT, Mapping
from pymtl_fp.cluster.compiler.partition import grid_unit, layer_ends
from pymtl_fp.cluster.compiler.schedule import split_allowed
from pymtl_fp.cluster.config import ClusterError

#: most cut vectors the search compiles (beyond it: the rule's partition only)
MAX_CANDIDATES = 5_000


def candidates(net, ccfg, batch, params, tcfg, total: int, mapping: Mapping = DEFAULT) -> list:
    """``[(compute bound per image, cuts)]`` of every cut vector over ``total`` tiles the compiler
    accepts for ``mapping`` (its ``split``, ``pack``, ``overlap``, ``schedule``, ``wgrad``), best
    first (the bound: the slowest node's modelled compute of its image passes).  Where the partition
    keeps layers whole (``split`` off, or a residual net) the cuts are layer boundaries
    (:func:`~pymtl_fp.cluster.compiler.partition.layer_ends`): resnet8-mnist's 81 tiles make too many
    tile-position vectors for 4 or 8 nodes, its 10 layers 84 and 36."""
    n = ccfg.n
    split = splits_layers(net, mapping)
    inner_positions = range(1, total) if split else layer_ends(net, grid_unit(ccfg))[1:-1]
    if n == 1 or math.comb(len(inner_positions), n - 1) > MAX_CANDIDATES:
        return []
    out = []
    for inner in itertools.combinations(inner_positions, n - 1):
        cuts = [0, *inner, total]
        try:
            part = choose_partition(net, ccfg, batch, mapping.replace(cuts=cuts), tcfg=tcfg)
            _, cprog = compile_pipeline(net, ccfg, part, params, tcfg, 1, mapping.replace(cuts=cuts))
        except ClusterError:  # a 3-way split, a misfit in the buffers, ...
            continue
        out.append((max(p.image_compute() for p in cprog.nodes) / batch, cuts))
    return sorted(out)


def search_partition(net, ccfg, params, images, labels, tcfg, batch: int, mapping: Mapping = DEFAULT, *,
                     keep: int = 6) -> dict:
    """The fastest of the ``keep`` best-modelled cut vectors and the rule's own, by the CL
    cluster's cycles for one step of ``images[:batch]``: ``{"cuts", "rule_cuts", "table"}``
    (``table``: per simulated candidate, its cuts, modelled bound and cycles).  The candidates run
    ``mapping``'s schedule, weight gradients, tap packing and overlap, in whole layers with every
    node's weights on its own node (``bands`` 0, ``weight_home`` ``auto``: the rule's partitions
    rarely need a home); one pipeline (``parallel`` ``pipeline``)."""
    from pymtl_fp.cluster.run.train import train_on_cluster

    if mapping.replicated:
        raise ClusterError(f"--partition search tunes one pipeline's cuts; not with --parallel {mapping.parallel}")
    if mapping.cuts is not None:
        raise ClusterError("--partition search chooses the cuts: give --cuts or --partition search, not both")
    probe = Mapping(schedule=mapping.schedule, wgrad=mapping.wgrad, pack=mapping.pack, overlap=mapping.overlap,
                    split=split_allowed(mapping.schedule, mapping.split))
    rule = choose_partition(net, ccfg, batch, probe, tcfg=tcfg).cuts
    ranked = candidates(net, ccfg, batch, params, tcfg, rule[-1], probe)
    tried = [list(rule)] + [c for _, c in ranked[:keep] if list(c) != list(rule)]
    bound = {tuple(c): b for b, c in ranked}
    table = []
    for cuts in tried:
        run = train_on_cluster(net, params, images[:batch], labels[:batch], tcfg, ccfg, probe.replace(cuts=cuts),
                               steps=1, batch=batch, levels=["cl"] * ccfg.n)
        table.append({"cuts": list(cuts), "compute_bound_per_image": bound.get(tuple(cuts)), "cycles": run.cycles})
    best = min(table, key=lambda r: r["cycles"])  # (ties: the rule's, listed first)
    return {"cuts": best["cuts"], "rule_cuts": list(rule), "table": table}
