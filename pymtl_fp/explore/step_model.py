"""Analytical step model of the cluster's layer pipeline: cycles per training step, the steady-state
interval, the pipeline fill and the end-of-step weight phase, from each node's pass occupancies.

What it models: ``N`` serial engines in a chain (the cluster's default: commands one at a time, no
row bands), each running its image passes in the schedule's order
(:func:`pymtl_fp.cluster.compiler.schedule.step_order`: ``1f1b`` or ``gpipe``) and then its weight
phase (the weight gradients over the batch, the update, the biases), step after step.  A pass's
occupancy comes from :mod:`.node_model` (compute, stream I/O and issue cycles of the node's
commands, closed forms of :mod:`pymtl_fp.cost.engine`); this module adds what the per-node model
leaves out, the waits between nodes:

* a forward pass of image ``b`` on node ``j`` starts when node ``j`` is free and the first words
  node ``j-1`` sends have crossed the link (its first STORE to node ``j`` started ``L`` cycles
  earlier); the LOADs that receive them cannot end before the sender's STOREs have ended and the
  last word has crossed (``L`` cycles of latency, at the link's rate);  a backward pass likewise waits for node
  ``j+1``'s data gradient, and node ``N-1``'s for the host's loss gradient (the host answers in
  the cycle after the last logit arrives, over two links);
* node 0's inputs come from the host, which always has them ready;
* a node holding the second piece of a layer split with node ``j-1`` loads that node's updated
  piece in its weight phase (after its own update of the layer), so the LOAD does not end before
  node ``j-1``'s weight phase has ended (the piece is its last STORE) and the piece has crossed
  the link;
* a step ends when the last node has finished its weight phase (the cluster report's step
  boundary), so a step's cycles are the time between consecutive step ends.

The recurrence is evaluated exactly (every pass of every node, a few steps), so fill, drain and
the bubbles of an unbalanced partition come out of it instead of being assumed: ``(B + N - 1)``
intervals is what it gives only for equal stages.  It is compared with the CL cluster's
measurements by ``pymtl-fp explore validate`` (:mod:`.validate`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymtl_fp.cluster.compiler.schedule import step_order
from pymtl_fp.cost.link import transfer_cycles

#: schedules the model covers (the per-image schedules update inside the step: not modelled)
MODELLED_SCHEDULES = ("1f1b", "gpipe")


@dataclass(frozen=True)
class NodePasses:
    """One node's occupancies: per image ``fwd`` and ``bwd`` pass (busy cycles), the weight phase
    ``wg`` per step, and per pass the busy cycles to the end of what it receives (``*_recv``: the
    LOADs before its first compute) and from its first STORE to a neighbour to its end
    (``*_send``); ``fwd_out``/``bwd_out``: the elements per image it sends on (for the link's rate)."""
    fwd: float
    bwd: float
    wg: float
    fwd_recv: float
    bwd_recv: float
    fwd_send: float
    bwd_send: float
    fwd_out: float
    bwd_out: float
    #: the weight phase LOADs the updated weights node ``j-1`` sends (this node holds the second
    #: piece of a layer split with it): its busy cycles up to the end of that LOAD (0: none)
    weights_loaded_at: float = 0

    @classmethod
    def of(cls, cyc, batch: int, fwd_out: float, bwd_out: float) -> NodePasses:
        """From a :class:`.node_model.NodeCycles` of one step of ``batch`` images."""
        ph, fl, ls = cyc.phase, cyc.receiving, cyc.sending
        return cls(ph.get("fwd", 0) / batch, ph.get("bwd", 0) / batch, ph.get("wg", 0),
                   fl.get("fwd", 0), fl.get("bwd", 0), ls.get("fwd", 0), ls.get("bwd", 0), fwd_out, bwd_out,
                   cyc.weights_loaded_at)


@dataclass
class StepPrediction:
    cycles_per_step: float        #: steady state: between the last two step ends
    interval: float               #: node N-1's forward completions in the last step: :func:`steady_interval`
    fill: float                   #: node 0's start of the last step to its first image's logits
    weight_phase: float           #: the longest weight phase of a node in the last step, waits included
    step_ends: list               #: every step's end
    #: every pass's end: ``(node, "fwd" | "bwd", step, image) -> cycle``; the weight phases'
    #: ends: ``(node, "wg", step, None)``
    ends: dict


def steady_interval(times) -> float | None:
    """Cycles per image with the pipeline full, from the cycles at which consecutive images
    completed a pass: the median of the later half of the gaps (1F1B's first forward passes run
    before the pipeline is full, at the forward pass's rate alone).  None for fewer than two."""
    gaps = np.diff(np.asarray([t for t in times if t is not None], dtype=float))
    if len(gaps) == 0:
        return None
    return float(np.median(gaps[len(gaps) // 2:]))


def predict_steps(nodes: list, batch: int, latency: int, lanes: int, msgs_per_cycle: float = 1.0,
                  schedule: str = "1f1b", steps: int = 3) -> StepPrediction:
    """Evaluate the pipeline's recurrence for ``steps`` steps of ``batch`` images on the chain of
    :class:`NodePasses` ``nodes``, links of ``latency`` cycles carrying ``lanes`` elements per
    message at ``msgs_per_cycle``."""
    if schedule not in MODELLED_SCHEDULES:
        raise ValueError(f"the step model covers the schedules {', '.join(MODELLED_SCHEDULES)}, not {schedule!r}")
    n = len(nodes)
    order = [[op for _ in range(steps) for op in step_order(schedule, j, n, batch) + [("wg", None)]]
             for j in range(n)]
    free = [0.0] * n
    pos = [0] * n
    step_of = [0] * n
    # per (node, pass, step, image): (its last STORE's start, its end)
    sent: dict = {}
    wg_start, wg_end = np.zeros((steps, n)), np.zeros((steps, n))
    logits: dict = {}

    def xfer(elems):
        return transfer_cycles(elems, lanes, msgs_per_cycle)

    def source(j, kind, s, b):
        """(store start, end, elements) of what the pass waits for, or None if not yet there."""
        if kind == "fwd":
            if j == 0:
                return -np.inf, -np.inf, 0.0
            return sent.get((j - 1, kind, s, b))
        if j == n - 1:
            at = logits.get((s, b))
            return None if at is None else (at + 1 + latency, at + 1 + latency, 0.0)
        return sent.get((j + 1, kind, s, b))

    left = sum(len(o) for o in order)
    while left:
        moved = False
        for j in range(n):
            while pos[j] < len(order[j]):
                kind, b = order[j][pos[j]]
                s, nd = step_of[j], nodes[j]
                if kind == "wg":
                    wg_start[s, j] = free[j]
                    if nd.weights_loaded_at:
                        if j == 0 or (j - 1, "wg", s, None) not in sent:
                            break
                        loaded = max(free[j] + nd.weights_loaded_at, sent[(j - 1, "wg", s, None)][1] + latency)
                        free[j] = loaded + nd.wg - nd.weights_loaded_at
                    else:
                        free[j] += nd.wg
                    wg_end[s, j] = free[j]
                    sent[(j, "wg", s, None)] = (free[j], free[j], 0.0)
                    step_of[j] += 1
                else:
                    src = source(j, kind, s, b)
                    if src is None:
                        break
                    st_start, st_end, elems = src
                    dur, first = (nd.fwd, nd.fwd_recv) if kind == "fwd" else (nd.bwd, nd.bwd_recv)
                    start = max(free[j], st_start + latency)
                    arrive = max(st_end, st_start + xfer(elems)) + latency
                    end = start + dur + max(0.0, arrive - (start + first))
                    free[j] = end
                    out = nd.fwd_out if kind == "fwd" else nd.bwd_out
                    store = nd.fwd_send if kind == "fwd" else nd.bwd_send
                    sent[(j, kind, s, b)] = (end - store, end, out)
                    if kind == "fwd" and j == n - 1:
                        logits[(s, b)] = end + latency
                pos[j] += 1
                left -= 1
                moved = True
        if not moved:
            raise RuntimeError("the schedule deadlocks in the step model")
    ends = wg_end.max(axis=1)
    cps = float(ends[-1] - ends[-2]) if steps > 1 else float(ends[0])
    last = steps - 1
    interval = steady_interval([sent[(n - 1, "fwd", last, b)][1] for b in range(batch)])
    # node 0 starts the last step when its own weight phase of the step before ends
    start0 = float(wg_end[last - 1, 0]) if steps > 1 else 0.0
    fill = logits[(last, 0)] - start0
    return StepPrediction(cps, interval, fill, float((wg_end[last] - wg_start[last]).max()), [float(e) for e in ends],
                          {k: v[1] for k, v in sent.items()})
