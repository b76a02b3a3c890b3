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
on a link does not depend on what ``over`` sends (:meth:`NodeCodegen.backward`: 1F1B's next
input never does), and whether a move pays is the caller's choice too.
"""

from __future__ import annotations

from pymtl_fp.cluster import isa
from pymtl_fp.cost.engine import stream_beats
from pymtl_fp.engine import msgs

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
    """Move ``nd.ops[lo:hi]`` (LOADs) to index ``dst <= lo`` of code generator ``nd``'s program if
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
    (:meth:`~pymtl_fp.cluster.compiler.emit.NodeEmitter.command_cycles`)."""
    return sum(nd.command_cycles({**_ZERO, **ins.cmd}) for ins in nd.ops[lo:hi] if ins.kind == isa.ENG)


def stream_cycles(nd, lo: int, hi: int) -> int:
    """The cycles the LOADs of ``nd.ops[lo:hi]`` take at one beat of ``stream_lanes`` a cycle."""
    return sum(stream_beats(ins.count, nd.ecfg.stream_lanes) for ins in nd.ops[lo:hi] if ins.kind == isa.LOAD)
