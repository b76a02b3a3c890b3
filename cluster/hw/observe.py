"""What a run reports about each node's router, whatever level produced it: marks, done marks,
per-state cycle counts, traffic and buffer peaks.

:class:`RouterLog` is built from a :class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL` after a run
(:func:`log_from_cl`), from an RTL router's status ports polled every cycle (:class:`StatusPoller`,
PyMTL3 simulation), or from the event logs of a Verilated cluster's compiled test bench.  Labels:
marks ``("step", s)``, ``("bwd", s)``, ``("wg", s)``, ``("end", steps)``; done marks
``("fwd" | "bwd", s, b)`` (:mod:`pymtl_fp.cluster.compiler.emit`): the ``k``-th occurrence of a step-body
mark or done mark belongs to step ``k``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pymtl_fp.cluster.hw.router_config import STATES
from pymtl_fp.cluster.isa.marks import MARK_END, MARK_LABELS, done_label


@dataclass
class RouterLog:
    name: str
    marks: list = field(default_factory=list)       #: (label, cycle)
    mark_stats: list = field(default_factory=list)  #: (label, {state: cycles so far})
    done_marks: list = field(default_factory=list)  #: (label, cycle)
    stats: dict = field(default_factory=dict)       #: state -> cycles
    done_cycle: int | None = None
    scratch_max: int = 0
    outq_max: dict = field(default_factory=dict)    #: fwd_out / bwd_out / host_out -> peak elements
    sent: dict = field(default_factory=dict)
    received: dict = field(default_factory=dict)
    macs: int = 0
    op_counts: dict = field(default_factory=dict)


def label_marks(raw, steps: int) -> list:
    """``[(mark id, cycle, stats tuple)]`` in order -> ``[(label, cycle, stats dict)]``."""
    seen: dict = {}
    out = []
    for mid, cycle, st in raw:
        k = seen.get(mid, 0)
        seen[mid] = k + 1
        label = ("end", steps) if mid == MARK_END else (MARK_LABELS[mid], k)
        out.append((label, cycle, dict(zip(STATES, st))))
    return out


def label_done(raw) -> list:
    """``[(done id, cycle)]`` in order -> ``[((kind, step, image), cycle)]``."""
    seen: dict = {}
    out = []
    for did, cycle in raw:
        k = seen.get(did, 0)
        seen[did] = k + 1
        kind, b = done_label(did)
        out.append(((kind, k, b), cycle))
    return out


def make_log(name, steps, marks, done, stats, done_cycle, scratch_max, outq_max, sent, received, prog) -> RouterLog:
    lm = label_marks(marks, steps)
    ports = ("fwd_out", "bwd_out", "host_out")
    return RouterLog(
        name=name, marks=[(lab, c) for lab, c, _ in lm], mark_stats=[(lab, st) for lab, _, st in lm],
        done_marks=label_done(done), stats=dict(zip(STATES, stats)), done_cycle=done_cycle,
        scratch_max=int(scratch_max), outq_max=dict(zip(ports, (int(v) for v in outq_max))),
        sent=dict(zip(ports, (int(v) for v in sent))),
        received=dict(zip(("fwd_in", "bwd_in", "host_in"), (int(v) for v in received))),
        macs=prog.macs * steps, op_counts=prog.op_counts(steps))


def log_from_cl(router, steps: int, prog) -> RouterLog:
    return make_log(router.node_name, steps, [(m, c, st) for m, c, _, st in router.marks], router.done_marks,
                    router.stats, router.done_cycle, router.scratch_max, router.outq_max, router.sent,
                    router.received, prog)


class StatusPoller:
    """Collects an RTL router's marks, done marks and first done cycle from its status ports,
    called once per cycle after each tick (``node``: a component with the status ports)."""

    def __init__(self, node, name: str):
        self.node, self.name = node, name
        self.marks, self.done, self.done_cycle = [], [], None

    def poll(self):
        nd = self.node
        cyc = int(nd.st_cycle)
        if nd.st_mark_val:
            self.marks.append((int(nd.st_mark_id), cyc, tuple(int(x) for x in nd.st_cnt)))
        if nd.st_done_val:
            self.done.append((int(nd.st_done_id), cyc))
        if self.done_cycle is None and int(nd.st_state) == STATES.index("done"):
            self.done_cycle = cyc

    def log(self, steps: int, prog) -> RouterLog:
        nd = self.node
        return make_log(self.name, steps, self.marks, self.done, [int(x) for x in nd.st_cnt], self.done_cycle,
                        int(nd.st_scratch_peak), [int(x) for x in nd.st_out_peak], [int(x) for x in nd.st_sent],
                        [int(x) for x in nd.st_recv], prog)
