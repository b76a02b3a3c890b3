"""Moving a node program's LOADs earlier, where nothing they depend on is crossed.

The engine issues commands in program order; a LOAD runs beside a compute command when it is
accepted while that command is busy and their address ranges do not conflict
(:func:`~pymtl_fp.engine.msgs.ranges_conflict`).  A LOAD emitted after the last compute command
of a pass therefore only overlaps that command.  The code generator uses :func:`hoist` to place a
block of LOADs earlier (the next image's input during the weight gradients before a backward pass,
the backward pass's output gradients beside an earlier compute command), so they run beside more
compute.

Moving ``block`` in front of the instructions ``over`` keeps every result and every stream as the
plain in-order program has them when (:func:`may_cross`):

* no instruction of ``over`` reads or writes a word a LOAD of ``block`` writes
  (:func:`~pymtl_fp.engine.msgs.ranges_depend`);
* none takes elements from a source the block takes from (a link, the host, the scratch FIFO):
  each stream is consumed in the same order;
* ``block`` holds only LOADs, and ``over`` only engine instructions (compute, LOAD, STORE) and
  ``NOP``: the router's own instructions (moves, reduces, requantization, gathers) stay barriers;
* no LOAD of ``block`` takes from the scratch FIFO (what it takes may be what ``over`` gives);
* no instruction on either side carries a mark or a done mark (the report's timestamps keep
  their meaning) or ends the step loop.

That is the node's own program.  Across nodes the caller must know that what the block waits for
on a link does not depend on what ``over`` sends (:func:`beside_weight_gradients`: 1F1B's next
input never does), and whether a move pays is the caller's choice too.

:func:`beside_weight_gradients` is the code-generation pass that places a backward pass's LOADs
(over a node's :class:`~pymtl_fp.cluster.compiler.plan.NodePlan`); :func:`hoist` and the estimates take
the plan's emitter (:class:`~pymtl_fp.cluster.compiler.emit.Emitter`: ``ops``, ``prog``, ``P``).
"""

from __future__ import annotations

from pymtl_fp.cluster import isa
from pymtl_fp.cost.engine import stream_beats
from pymtl_fp.engine import msgs

#: the share of this node's forward pass and weight gradients the upstream node's estimated
#: time to the next input may take for its LOADs to move in front of the backward pass
#: (:func:`beside_weight_gradients`; LeNet-digits on 4 nodes with per-image weight gradients and 4
#: elements a beat: node 3's estimate is 89 %, and its input came 25 cycles an image late)
READY_SHARE = 0.85

#: instructions a block of LOADs may be moved across
_CROSSABLE = (isa.ENG, isa.LOAD, isa.STORE, isa.NOP)


_ZERO = {name: 0 for name, _ in isa.CMD_FIELDS}


def _ranges(ins: isa.Instr, P: int) -> list:
    """The buffer words ``ins`` touches (its command's fields; a missing field is 0)."""
    if ins.kind not in (isa.ENG, isa.LOAD, isa.STORE):
        return []
    return msgs.access_ranges({**_ZERO, **ins.cmd}, P)


def _sources(ins: isa.Instr) -> set:
    """The streams ``ins`` takes elements from."""
    if ins.kind in (isa.LOAD, isa.MOVE, isa.REDUCE, isa.GATHER):
        return {ins.src}
    if ins.kind == isa.RELAY:
        return {isa.SRC_FWD_IN, isa.SRC_BWD_IN, isa.SRC_SCRATCH}
    return set()


def _pinned(ins: isa.Instr) -> bool:
    return bool(ins.mark or ins.done or ins.lend)


def may_cross(block: list, over: list, P: int) -> bool:
    """Whether the LOADs of ``block`` may run before the instructions ``over`` (module docstring)."""
    if not block or any(ins.kind != isa.LOAD or _pinned(ins) for ins in block):
        return False
    ranges = [r for ins in block for r in _ranges(ins, P)]
    sources = set().union(*(_sources(ins) for ins in block))
    if isa.SRC_SCRATCH in sources:
        return False
    for ins in over:
        if ins.kind not in _CROSSABLE or _pinned(ins) or _sources(ins) & sources:
            return False
        if msgs.ranges_depend(ranges, _ranges(ins, P)):
            return False
    return True


def hoist(nd, lo: int, hi: int, dst: int) -> bool:
    """Move ``nd.ops[lo:hi]`` (LOADs) to index ``dst <= lo`` of the program emitter ``nd`` builds if
    :func:`may_cross` allows it, renumbering the tables indexed by instruction (``notes``,
    ``useful_macs``).  Returns whether it moved them."""
    ops = nd.ops
    if not 0 <= dst <= lo <= hi <= len(ops):
        raise ValueError(f"hoist: indices {dst}, {lo}, {hi} out of order")
    if dst == lo or not may_cross(ops[lo:hi], ops[dst:lo], nd.P):
        return False
    ops[dst:hi] = ops[lo:hi] + ops[dst:lo]
    n = hi - lo

    def moved(k):
        return k + n if dst <= k < lo else k - (lo - dst) if lo <= k < hi else k

    for table in (nd.prog.notes, nd.prog.useful_macs):
        moves = {k: moved(k) for k in table if dst <= k < hi}
        values = {k: table.pop(k) for k in moves}
        for k, v in values.items():
            table[moves[k]] = v
    return True


def first_compute(ops: list, lo: int, hi: int) -> int | None:
    """The index of the first compute command in ``ops[lo:hi]`` (None if none)."""
    return next((i for i in range(lo, hi) if ops[i].kind == isa.ENG), None)


def compute_cycles(nd, lo: int, hi: int) -> int:
    """The modelled cycles of the compute commands in ``nd.ops[lo:hi]``
    (:meth:`~pymtl_fp.cluster.compiler.emit.Emitter.command_cycles`)."""
    return sum(nd.command_cycles({**_ZERO, **ins.cmd}) for ins in nd.ops[lo:hi] if ins.kind == isa.ENG)


def stream_cycles(nd, lo: int, hi: int) -> int:
    """The cycles the LOADs of ``nd.ops[lo:hi]`` take at one beat of ``stream_lanes`` a cycle."""
    return sum(stream_beats(ins.count, nd.ecfg.stream_lanes) for ins in nd.ops[lo:hi] if ins.kind == isa.LOAD)


def beside_weight_gradients(plan, start: int, then, early=None) -> None:
    """After the backward pass whose instructions begin at ``start``: ``then()`` (e.g. the next forward
    pass's :func:`~pymtl_fp.cluster.compiler.codegen.receive`) is emitted right after its last compute
    command, so its LOADs run beside that command (or at the end, if the pass computes nothing).

    ``early = (f, g)`` (1F1B, per-image weight gradients): the indices where the forward pass before
    this one and the weight gradients that follow it begin.  Where :func:`may_cross` allows, the pass's
    leading LOADs (its output gradient) move behind the first of those weight-gradient commands, so they
    run beside them.  (If their data came late, the later weight-gradient commands would wait behind
    them; one LOAD behind each command instead measured worse: LeNet-digits on 3 nodes at batch 32, one
    element a beat, 88.4 % of the bound against 92.6 %.)  ``then``'s LOADs move in front of the pass's
    first compute command, so they run beside the weight gradients too, if their data will be there: the
    upstream node runs the next image's forward pass after a backward pass that needs this node's last
    output gradient (sent before its last forward pass), so its backward and forward compute
    (``flow.upstream_passes``) and the stream of the last piece it sends (the earlier ones arrive while
    it computes) must take no longer than :data:`READY_SHARE` of this node's forward pass and weight
    gradients (else this pass would wait for them; the estimate leaves out the links' latency and the
    upstream node's own LOADs).  The weight gradients read the slot the next input reuses first
    (:meth:`~pymtl_fp.cluster.compiler.collectives.Collectives.raw_gradients` in ``first_first`` order),
    so the input's LOADs wait for that one only."""
    em = plan.emit
    ops = em.ops
    last = max((i + 1 for i in range(start, len(ops)) if ops[i].kind == isa.ENG), default=len(ops))
    tail = ops[last:]
    del ops[last:]
    tail_notes = {k: em.prog.notes.pop(k) for k in [k for k in em.prog.notes if k >= last]}
    mid = len(ops)
    then()
    recv = len(ops) - mid
    ops.extend(tail)
    em.prog.notes.update({k + recv: v for k, v in tail_notes.items()})  # (the tail's notes move with it)
    if early is None or not recv:
        return
    f0, g0 = early
    first = first_compute(ops, g0, start)
    lead = first_compute(ops, start, mid)
    if first is None or lead is None:
        return
    if lead > start and hoist(em, start, lead, first + 1):
        _count_hoist(em, "dy")
    ready = plan.flow.upstream_passes + stream_cycles(em, mid + recv - 1, mid + recv)  # (its last piece)
    # (the pass's first compute is still at lead)
    if ready <= READY_SHARE * compute_cycles(em, f0, lead) and hoist(em, mid, mid + recv, lead):
        _count_hoist(em, "input")


def _count_hoist(em, what):
    if em.counting:
        em.prog.hoisted[what] = em.prog.hoisted.get(what, 0) + 1
