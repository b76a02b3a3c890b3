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

from pymtl_fp.cluster.compiler.compile import choose_partition, compile_pipeline
from pymtl_fp.cluster.compiler.schedule import split_allowed
from pymtl_fp.cluster.config import ClusterError

#: most cut vectors the search compiles (beyond it: the rule's partition only)
MAX_CANDIDATES = 5_000


def candidates(net, ccfg, batch, params, tcfg, total: int, *, split=True, overlap=True, schedule="1f1b",
               pack="off", wgrad="batch") -> list:
    """``[(compute bound per image, cuts)]`` of every cut vector over ``total`` tiles the compiler
    accepts, best first (the bound: the slowest node's modelled compute of its image passes)."""
    n = ccfg.n
    if n == 1 or math.comb(total - 1, n - 1) > MAX_CANDIDATES:
        return []
    out = []
    for inner in itertools.combinations(range(1, total), n - 1):
        cuts = [0, *inner, total]
        try:
            part = choose_partition(net, ccfg, batch, split=split, cuts=cuts, pack=pack, tcfg=tcfg, overlap=overlap,
                                    schedule=schedule, wgrad=wgrad)
            if not split and part.split_layers():
                continue
            _, cprog = compile_pipeline(net, ccfg, part, params, tcfg, 1, overlap, schedule, wgrad)
        except ClusterError:  # a 3-way split, a misfit in the buffers, ...
            continue
        out.append((max(p.image_compute() for p in cprog.nodes) / batch, cuts))
    return sorted(out)


def search_partition(net, ccfg, params, images, labels, tcfg, batch: int, *, split: bool = True,
                     overlap: bool = True, schedule: str = "1f1b", keep: int = 6, pack: str = "off",
                     wgrad: str = "batch") -> dict:
    """The fastest of the ``keep`` best-modelled cut vectors and the rule's own, by the CL
    cluster's cycles for one step of ``images[:batch]``: ``{"cuts", "rule_cuts", "table"}``
    (``table``: per simulated candidate, its cuts, modelled bound and cycles)."""
    from pymtl_fp.cluster.run.train import train_on_cluster

    split = split_allowed(schedule, split)
    rule = choose_partition(net, ccfg, batch, split=split, pack=pack, tcfg=tcfg, overlap=overlap, schedule=schedule,
                            wgrad=wgrad).cuts
    ranked = candidates(net, ccfg, batch, params, tcfg, rule[-1], split=split, overlap=overlap, schedule=schedule,
                        pack=pack, wgrad=wgrad)
    tried = [list(rule)] + [c for _, c in ranked[:keep] if list(c) != list(rule)]
    bound = {tuple(c): b for b, c in ranked}
    table = []
    for cuts in tried:
        run = train_on_cluster(net, params, images[:batch], labels[:batch], tcfg, ccfg, steps=1, batch=batch,
                               levels=["cl"] * ccfg.n, cuts=cuts, overlap=overlap, schedule=schedule,
                               split=split, pack=pack, wgrad=wgrad)
        table.append({"cuts": list(cuts), "compute_bound_per_image": bound.get(tuple(cuts)), "cycles": run.cycles})
    best = min(table, key=lambda r: r["cycles"])  # (ties: the rule's, listed first)
    return {"cuts": best["cuts"], "rule_cuts": list(rule), "table": table}
