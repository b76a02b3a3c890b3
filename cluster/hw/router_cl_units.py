"""The scalar units of the cycle-level router (:class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`): BIAS (the
bias SGD step), GATHER (a relayout through the gather table), REQUANT (the rounding of all-reduced sums) and
the residual unit's ADD, MASK, GAP and GAPB (:func:`~pymtl_fp.cluster.isa.residual.apply_residual`) on the scratch
FIFO, as Python behaviour timed like :class:`~pymtl_fp.cluster.hw.RouterUnitRTL.RouterUnitRTL`.  This is the
node's functional level too: :class:`~pymtl_fp.cluster.hw.node.NodeFL` joins an FL engine to this router,
whose units compute each instruction's whole result at once.

A unit starts when the feeder and drainer are idle, replaces the scratch FIFO's contents with its result at
once (nothing can read the FIFO while it runs) and retires :func:`~pymtl_fp.cluster.isa.unit_cycles` edges
later; the scratch FIFO's peak counts the RTL's one appended result per edge (a GAP's: one per ``A`` edges;
with pipelined units, ``RouterConfig.pipelined_units``, every kind's but GATHER's from ``unit_latency`` edges
later on).
"""

from __future__ import annotations

from collections import deque

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.isa import residual


class RouterUnitsCL:
    """The scalar units' behaviour, mixed into :class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL` (its state:
    ``scratch``, ``table``, ``iter``, ``unit_left``, ``scratch_max``)."""

    def _start_unit(s, ins):
        if ins.kind in isa.RES_KINDS and not s.cfg.residual:
            raise RuntimeError(f"{s.node_name}: {isa.KIND_NAMES[ins.kind].upper()} on a router built without the "
                               "residual unit (RouterConfig.residual)")
        vals = list(s.scratch)
        if ins.kind in isa.RES_KINDS:
            want = residual.inputs(ins)
        else:
            want = 2 * ins.count if ins.kind == isa.BIAS else ins.count  # (BIAS holds [b, db])
        if len(vals) != want:
            raise RuntimeError(f"{s.node_name}: {isa.KIND_NAMES[ins.kind].upper()} of {ins.count} elements with "
                               f"{len(vals)} in the scratch FIFO")
        if ins.kind == isa.BIAS:
            n = ins.count
            out = bias_update(vals[:n], vals[n:], ins.field("k"), ins.field("shift"), ins.field("stoch"),
                              s._seed(ins), ins.field("tid"), ins.bits, ins.field("bshift"))
        elif ins.kind == isa.REQUANT:
            out = isa.apply_requant(vals, ins, s._seed(ins))
        elif ins.kind in isa.RES_KINDS:
            out = residual.apply_residual(vals, ins, s._seed(ins), s.bits)
        else:
            out = isa.apply_gather(vals, s.table[ins.tbase: ins.tbase + ins.tlen])
        lat = 0 if ins.kind == isa.GATHER else s.cfg.unit_latency  # (pipelined units: BIAS and REQUANT)
        s.unit_left = isa.unit_cycles(ins, s.table, lat) - 1
        s.unit_in, s.unit_out, s.unit_edge = len(vals), len(out), -lat
        s.unit_every = residual.push_every(ins) if ins.kind in isa.RES_KINDS else 1
        s.scratch = deque(out)

    def _unit_step(s) -> bool:
        """One edge of a running unit; True when it retires at this edge."""
        s.unit_left -= 1
        s.unit_edge += 1  # the RTL appends one result per edge (a GAP's per A edges; after its pipeline)
        pushed = s.unit_edge // s.unit_every  # (... before it drops its input)
        if 0 < pushed <= s.unit_out:
            s.scratch_max = max(s.scratch_max, s.unit_in + pushed)
        return s.unit_left == 0

    def _seed(s, ins) -> int:
        """The rounding seed of an instruction at this loop iteration (``seedstep``)."""
        return (ins.field("seed") + (s.iter if ins.seedstep else 0)) % 2**32


def bias_update(b, db, k, shift, stoch, seed, tid, bits, lshift=0) -> list:
    """The scalar unit's result: ``saturate(b - requantize(db, shift), bits)`` (``lshift > 0``:
    ``saturate(b - (db << lshift), bits)``) for the first ``k`` biases (the golden ``sgd_update``
    for values in range; any value for the RTL's twin), 0 for the padding after them."""
    import numpy as np

    from pymtl_fp.numerics import requantize

    n = len(b)
    d = np.asarray(db[:k], dtype=np.int64)
    if lshift:
        q = [int(v) << lshift for v in d]
    else:
        q = [int(v) for v in requantize(d, shift, 64, "stochastic" if stoch else "nearest", seed=seed, tensor_id=tid)]
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return [min(hi, max(lo, int(bv) - qv)) for bv, qv in zip(b[:k], q)] + [0] * (n - k)
