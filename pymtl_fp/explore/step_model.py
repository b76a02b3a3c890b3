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
  earlier); a backward pass likewise waits for node ``j+1``'s data gradient, and node ``N-1``'s
  for the host's loss gradient (the host answers in the cycle after the last logit arrives, over
  two links);
* the LOADs that receive take the words as the link delivers them: a link holds only its
  credits' worth, so the words cross while those LOADs run, at the link's rate, not before the
  sender's first STORE, and the last one not before the sender's last STORE and ``L`` cycles of
  latency, nor before the sender's link has carried every word the sender put in its output
  buffer (a link slower than the streams, ``msgs_per_cycle < 1``, stretches them; a sender that
  STOREs part of what it sends early in its pass and the rest at its end sends the rest only then);
* a backward pass followed by a forward pass (1F1B after its first backward pass) runs that
  forward pass's receiving LOADs after its last compute command and before its own last STOREs
  (the compiler places them there, :func:`pymtl_fp.cluster.compiler.hoist.beside_weight_gradients`):
  the data gradient it sends back waits for the next input to arrive;
* node 0's inputs come from the host, which always has them ready;
* what a pass sends goes into the node's output buffer, which the link drains at its rate; a STORE
  waits only while that buffer is full;
* a lone first holder of a split layer passes node ``j+1``'s data gradient on to node ``j-1`` in a
  MOVE at the end of its backward pass: the MOVE retires (and the node's program goes on) once the
  last element, which node ``j+1`` STOREs last, has gone through;
* a node holding the second piece of a layer split with node ``j-1`` loads that node's updated
  piece in its weight phase (after its own update of the layer), so the LOAD does not end before
  the piece (node ``j-1``'s last STORE of its weight phase, into its output buffer) has crossed
  the link at the link's rate;
* a step ends when the last node has finished its weight phase, so a step's cycles are the time
  between consecutive step ends; a node's own step ends, as the cluster report's marks count it,
  when its engine has taken the weight phase's last command (a first holder's STORE of its updated
  piece, a second holder's LOAD of it: their cycles, and a LOAD's wait, fall in the next step).

The recurrence is evaluated exactly (every pass of every node, a few steps), so fill, drain and
the bubbles of an unbalanced partition come out of it instead of being assumed: ``(B + N - 1)``
intervals is what it gives only for equal stages.  It is compared with the CL cluster's
measurements by ``pymtl-fp bench model`` (:mod:`.against_cluster`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    (``*_send``).  ``link_io``: ``(pass, "recv" | "send") -> (elements, cycles)`` of those LOADs
    and STOREs, per image (``wg``: per step), which a link slower than the streams stretches."""
    fwd: float
    bwd: float
    wg: float
    fwd_recv: float = 0
    bwd_recv: float = 0
    fwd_send: float = 0
    bwd_send: float = 0
    link_io: dict = field(default_factory=dict)
    #: the weight phase LOADs the updated weights node ``j-1`` sends (this node holds the second
    #: piece of a layer split with it): its busy cycles up to the end of that LOAD (0: none)
    weights_loaded_at: float = 0
    #: elements per image of node ``j+1``'s data gradient it passes on to node ``j-1`` (a lone first
    #: holder of a split layer): a MOVE at the end of its backward pass, which retires after the
    #: last element (node ``j+1``'s last STORE of the pass) has gone through
    relay: float = 0
    #: per image, the backward pass's busy cycles after its last compute command (its last STOREs,
    #: which the compiler puts behind the next forward pass's receiving LOADs) and the elements it
    #: sends to a neighbour in them
    bwd_tail: float = 0
    bwd_tail_out: float = 0
    #: per image, the backward pass's busy cycles from the end of its last STORE to a neighbour
    #: before its last compute command to the end of that command
    bwd_early_gap: float = 0
    #: the cycles of the weight phase's last command: every node's program passes its step's end
    #: (the end of its weight phase; for node 0 the next step's start, the fill's) once the
    #: engine has taken that command
    wg_last: float = 0
    #: the cycles of the backward pass's last command if it computes (0 if the pass ends with a
    #: STORE or computes nothing): the router issues the next command, and marks the weight
    #: phase's start, as soon as the engine has taken it; with a command register
    #: (:attr:`.node_model.NodeCycles.held`) it takes it as the compute command before it starts:
    #: the cycles of both (after a LOAD or STORE, the last command's alone; measured against the CL
    #: cluster: the step's end mark does not move so, docs/explore.md)
    bwd_last_compute: float = 0

    @classmethod
    def of(cls, cyc, batch: int) -> NodePasses:
        """From a :class:`.node_model.NodeCycles` of one step of ``batch`` images."""
        ph, fl, ls = cyc.phase, cyc.receiving, cyc.sending
        # (a command register takes the pass's last command as the one before it starts)
        held_before = cyc.before_last.get("bwd", 0) if cyc.held else 0
        io = {k: (v[0] / (1 if k[0] == "wg" else batch), v[1] / (1 if k[0] == "wg" else batch))
              for k, v in cyc.link_io.items()}
        return cls(ph.get("fwd", 0) / batch, ph.get("bwd", 0) / batch, ph.get("wg", 0),
                   fl.get("fwd", 0), fl.get("bwd", 0), ls.get("fwd", 0), ls.get("bwd", 0), io,
                   cyc.weights_loaded_at, cyc.dma_moves / batch, cyc.tail.get("bwd", 0), cyc.tail_sent.get("bwd", 0),
                   cyc.early_gap.get("bwd", 0), cyc.last_command.get("wg", 0),
                   cyc.last_command.get("bwd", 0) + held_before if cyc.ends_computing.get("bwd") else 0)


@dataclass
class StepPrediction:
    cycles_per_step: float        #: steady state: between the last two step ends
    interval: float               #: node N-1's forward completions in the last step: :func:`steady_interval`
    fill: float                   #: node 0's start of the last step (:attr:`NodePasses.wg_last`) to its first image's logits
    #: the longest weight phase of a node in the last step: from its mark (the last backward
    #: pass's last command taken, :attr:`NodePasses.bwd_last_compute`; the cluster report takes
    #: the later of the mark and the pass's completion) to the end of its step, where its program
    #: passes the step's end once the engine has taken the phase's last command
    #: (:attr:`NodePasses.wg_last`: the waits before that command are included, not a last LOAD's
    #: own wait for its data)
    weight_phase: float
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
                  schedule: str = "1f1b", steps: int = 3, out_buffer: int = 4096) -> StepPrediction:
    """Evaluate the pipeline's recurrence for ``steps`` steps of ``batch`` images on the chain of
    :class:`NodePasses` ``nodes``, links of ``latency`` cycles carrying ``lanes`` elements per
    message at ``msgs_per_cycle``, each fed by an output buffer of ``out_buffer`` elements (the
    router's ``out_depth``)."""
    if schedule not in MODELLED_SCHEDULES:
        raise ValueError(f"the step model covers the schedules {', '.join(MODELLED_SCHEDULES)}, not {schedule!r}")
    n = len(nodes)
    order = [[op for _ in range(steps) for op in step_order(schedule, j, n, batch) + [("wg", None)]]
             for j in range(n)]
    free = [0.0] * n
    pos = [0] * n
    step_of = [0] * n
    # per (node, pass, step, image): (its first STORE to a neighbour's start, its end, when the
    # link has drained what it sent, what it sent before its last compute: source()); per
    # (node, "wg", step, None): likewise for its weight phase
    sent: dict = {}
    wg_start, wg_end, wg_taken = np.zeros((steps, n)), np.zeros((steps, n)), np.zeros((steps, n))
    logits: dict = {}

    def xfer(elems):
        return transfer_cycles(elems, lanes, msgs_per_cycle)

    drain = [{"fwd": 0.0, "bwd": 0.0} for _ in range(n)]  # when each output buffer's link is idle
    received_ahead = [False] * n  # the next forward pass's input was LOADed inside a backward pass

    def receive(j, kind, start, src):
        """When the LOADs that receive a ``kind`` pass's input on node ``j``, begun at ``start``, end:
        they take the words as the link delivers them (the link holds only its credits' worth, so the
        words cross while they run, from the sender's first STORE on), and the last one after the
        sender's last STORE."""
        nd = nodes[j]
        first = nd.fwd_recv if kind == "fwd" else nd.bwd_recv
        n_in, own_in = nd.link_io.get((kind, "recv"), (0, 0))
        loads_at = start + first - own_in
        # the last word it takes has left the sender's output buffer after the sender's STORE of it:
        # the pass's last word, or, if it takes no more than what the sender sent before its last
        # compute command, the last of those
        stored, drained = src[1], src[2]
        if src[3] is not None and n_in <= src[3][0]:
            stored, drained = src[3][2], src[3][1] - xfer(src[3][0] - n_in)
        return max(start + first, max(loads_at, src[0] + latency) + xfer(n_in), stored + latency, drained + latency)

    def source(j, kind, s, b):
        """(its STOREs' start, its end, when the link has drained it, and ``(elements, drained, the
        end of their last STORE)`` of what it sent before its last compute command or None) of the
        pass this one waits for, or None if not yet evaluated."""
        if kind == "fwd":
            if j == 0:
                return -np.inf, -np.inf, -np.inf, None
            return sent.get((j - 1, kind, s, b))
        if j == n - 1:
            at = logits.get((s, b))
            return None if at is None else (at + 1 + latency, at + 1 + latency, -np.inf, None)
        return sent.get((j + 1, kind, s, b))

    left = sum(len(o) for o in order)
    while left:
        moved = False
        for j in range(n):
            while pos[j] < len(order[j]):
                kind, b = order[j][pos[j]]
                s, nd = step_of[j], nodes[j]
                if kind == "wg":
                    wg_start[s, j] = free[j] - nd.bwd_last_compute  # (the weight phase's mark)
                    if nd.weights_loaded_at:
                        if j == 0 or (j - 1, "wg", s, None) not in sent:
                            break
                        # the LOAD of node j-1's updated piece ends when its last word has crossed
                        loaded = max(free[j] + nd.weights_loaded_at, sent[(j - 1, "wg", s, None)][2] + latency)
                        # the engine takes the phase's last command when the one before it ends: a
                        # last LOAD waits for the piece after it has been taken
                        taken = (free[j] + nd.wg - nd.wg_last if nd.weights_loaded_at >= nd.wg
                                 else loaded + nd.wg - nd.weights_loaded_at - nd.wg_last)
                        free[j] = loaded + nd.wg - nd.weights_loaded_at
                    else:
                        free[j] += nd.wg
                        taken = free[j] - nd.wg_last
                    wg_taken[s, j] = taken
                    # the updated piece a first holder sends (its last STORE) goes into its output
                    # buffer towards node j+1, which the link drains at its rate
                    out, cycles = nd.link_io.get(("wg", "send"), (0, 0))
                    drained = max(drain[j]["fwd"], free[j] - cycles) + xfer(out)
                    drain[j]["fwd"] = drained
                    free[j] = max(free[j], drained - xfer(out_buffer))
                    wg_end[s, j] = free[j]
                    sent[(j, "wg", s, None)] = (free[j] - cycles, free[j], drained, None)
                    step_of[j] += 1
                else:
                    src = source(j, kind, s, b)
                    if src is None:
                        break
                    # a backward pass followed by a forward pass runs that pass's receiving LOADs
                    # after its last compute command, before its own last STOREs
                    nxt = order[j][pos[j] + 1] if pos[j] + 1 < len(order[j]) else (None, None)
                    ahead = source(j, "fwd", s, nxt[1]) if kind == "bwd" and nxt[0] == "fwd" else None
                    if kind == "bwd" and nxt[0] == "fwd" and ahead is None:
                        break
                    dur, first = (nd.fwd, nd.fwd_recv) if kind == "fwd" else (nd.bwd, nd.bwd_recv)
                    tail, tail_out = (nd.bwd_tail, nd.bwd_tail_out) if kind == "bwd" else (0, 0)
                    if kind == "fwd" and received_ahead[j]:  # its input is in already
                        received_ahead[j] = False
                        end = free[j] + dur - first
                    else:
                        start = max(free[j], src[0] + latency)  # the first words have crossed
                        end = receive(j, kind, start, src) + dur - first
                    relayed = None
                    if kind == "bwd" and nd.relay:  # the MOVE passing node j+1's last words on
                        passed = max(end + xfer(nd.relay), src[1] + latency, src[2] + latency)
                        relayed = (passed - xfer(nd.relay), passed, passed, None)
                        end = passed
                    computed = end - tail
                    if ahead is not None:
                        end = receive(j, "fwd", computed, ahead) + tail
                        received_ahead[j] = True
                    # what it sends enters its output buffer, which the link drains; a STORE
                    # waits while the buffer is full
                    out = nd.link_io.get((kind, "send"), (0, 0))[0]
                    send = nd.fwd_send if kind == "fwd" else nd.bwd_send
                    sends_at = end - send if send <= tail else computed - (send - tail)
                    drained, early = drain[j][kind], None
                    if out > tail_out:  # sent before its last compute command
                        drained = max(drained, sends_at) + xfer(out - tail_out)
                        early = (out - tail_out, drained, computed - nd.bwd_early_gap if kind == "bwd" else end)
                    if tail_out:
                        drained = max(drained, end - tail) + xfer(tail_out)
                    drain[j][kind] = drained
                    end = max(end, drained - xfer(out_buffer))
                    free[j] = end
                    sent[(j, kind, s, b)] = relayed or (sends_at, end, drained, early)
                    if kind == "fwd" and j == n - 1:  # the host has the last logit once the link drained it
                        logits[(s, b)] = max(end, drained) + latency
                pos[j] += 1
                left -= 1
                moved = True
        if not moved:
            raise RuntimeError("the schedule deadlocks in the step model")
    ends = wg_end.max(axis=1)
    cps = float(ends[-1] - ends[-2]) if steps > 1 else float(ends[0])
    last = steps - 1
    interval = steady_interval([sent[(n - 1, "fwd", last, b)][1] for b in range(batch)])
    # node 0 starts the last step when its program reaches it: once the last command of its weight
    # phase of the step before is accepted
    start0 = float(wg_taken[last - 1, 0]) if steps > 1 else 0.0
    fill = logits[(last, 0)] - start0
    return StepPrediction(cps, interval, fill, float((wg_taken[last] - wg_start[last]).max()), [float(e) for e in ends],
                          {k: v[1] for k, v in sent.items()})
