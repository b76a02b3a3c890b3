"""A partition under ``--memory-limit`` with FPDeep's weight balancing (analytic, paper scale).

:func:`~pymtl_fp.explore.partition.dp_optimal` with ``memory_limit`` forbids every stage whose
fine-grained-pipeline storage exceeds its FPGA's RAM, even where FPGAs elsewhere in the chain
have room.  FPDeep instead keeps such a stage's surplus weights on FPGAs with room and streams
them in (:mod:`~pymtl_fp.explore.weight_balance`).  :func:`evaluate_balanced` evaluates a cut
vector that way:

* the placement: :func:`~pymtl_fp.explore.weight_balance.balance` over the FPGAs' own RAM sizes
  (the largest load as a share of its FPGA's RAM, then the fewest bit-hops), each exporter keeping
  its staging (two weight chunks and a sum chunk of its own array side);
* the links: each cut carries the moved weights' streams (twice a mini-batch towards their user,
  the gradient sums once back) beside its activations and gradients (the evaluation's
  ``fwd_bits`` / ``bwd_bits``, so the energy estimate charges them too);
* feasibility: every FPGA holds at most its RAM after the moves, else the II is infinite.

:func:`balanced_dp` applies it to the DP optimum without the memory limit (the fastest cuts when
storage is free): the partition ``explore partition --memory-limit`` reports as ``dp+wb``
(:func:`compare_balanced`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from pymtl_fp.explore.partition import Cluster, Evaluation, _link_seconds, compare, dp_optimal, evaluate
from pymtl_fp.explore.weight_balance import balance, staging_bits, stream_bits


def evaluate_balanced(chain, cluster: Cluster, cuts, method: str = "") -> Evaluation:
    """:func:`~pymtl_fp.explore.partition.evaluate` of ``cuts`` with the weights balanced (module
    docstring): storage after the moves, link time with the weight streams, ``moved_bits``."""
    free = dataclasses.replace(cluster, memory_limit=False)
    ev = evaluate(chain, free, cuts, method)
    cuts = ev.cuts
    a, b = cuts[:-1], cuts[1:]
    weights = chain.storage()["weights"].vec(a, b)
    by_P = {P: staging_bits(chain, cuts, P) for P in {arr.P for arr in cluster.arrays}}
    staging = np.array([by_P[arr.P][i] for i, arr in enumerate(cluster.arrays)])
    bal = balance(ev.storage_bits, weights, ev.onchip_bits, staging)
    prec = chain.precision
    right, left = stream_bits(bal.flow, prec.weight_bits, prec.acc_bits, prec.grad_bits, chain.batch)
    inner = cuts[1:-1]
    link_s = _link_seconds(chain, cluster, inner, (right, left))
    # (the linear programs' solution is exact to ~1e-9 of a load: a full FPGA counts as full)
    held = np.where(bal.held <= ev.onchip_bits * (1 + 1e-9), np.minimum(bal.held, ev.onchip_bits), bal.held)
    fits = bool(np.all(held <= ev.onchip_bits))
    ii = max(float(ev.stage_s.max()), float(link_s.max()) if len(link_s) else 0.0) if fits else math.inf
    util = ev.stage_util * (ev.ii / ii) if math.isfinite(ii) else np.zeros(cluster.n)  # (MACs / (lanes x clock x II))
    return dataclasses.replace(ev, ii=ii, link_s=link_s, stage_util=util, fwd_bits=ev.fwd_bits + right,
                               bwd_bits=ev.bwd_bits + left,
                               storage_bits=held, moved_bits=bal.moved, bit_hops=bal.bit_hops)


def balanced_dp(chain, cluster: Cluster, method: str = "dp+wb") -> Evaluation:
    """The DP optimum without the memory limit, its weights balanced (:func:`evaluate_balanced`)."""
    cuts = dp_optimal(chain, dataclasses.replace(cluster, memory_limit=False))
    return evaluate_balanced(chain, cluster, cuts, method)


def compare_balanced(chain, cluster: Cluster) -> dict:
    """:func:`~pymtl_fp.explore.partition.compare`, and with ``memory_limit`` also ``dp+wb``
    (:func:`balanced_dp`)."""
    out = compare(chain, cluster)
    if cluster.memory_limit:
        out["dp+wb"] = balanced_dp(chain, cluster)
    return out
