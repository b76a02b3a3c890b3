"""Requantizer bank (RTL): ``rows x P`` lanes of :class:`RequantRTL` plus per-lane element
indices.

Lane ``d*P + i`` (row ``d``, column ``i``) rounds ``acc[d*P + i]`` with the stochastic-rounding
index ``idx_base + d * row_stride + i * idx_stride`` (the flat C-order index of the element in
its result tensor), so the hardware draws exactly the random bits of
:func:`pymtl_fp.numerics.requantize`.  The result keeps the accumulator width (no saturation
here): the writeback clamps it to the word width of the result
(:class:`~pymtl_fp.primitives.SaturateRTL.SaturateRTL`), or first
subtracts it from a weight (``update``).

``rows`` is the engine's ``drain_rows`` (``DR``): row 0 serves every operation; rows 1 .. DR-1
only the ``bwd_weight`` drain, which writes ``DR`` dw rows of a tile per cycle.  Every element
needs its own rounding (its own stochastic hash of its own index), so ``DR`` rows per cycle cost
``DR`` times the requantizers: the cheapest datapath that keeps the results bit-exact (a
narrower bank time-shared over the rows would drain no faster).  ``row_stride`` exists only
when ``rows > 1``.

With ``pipelined``, the lanes are :class:`~pymtl_fp.primitives.RequantPipeRTL.RequantPipeRTL`:
``q`` follows its inputs by :data:`~pymtl_fp.primitives.RequantPipeRTL.LATENCY` cycles (the
lane indices are formed before the pipeline, in the cycle of the inputs); else combinational.
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, update

from pymtl_fp.primitives.RequantPipeRTL import RequantPipeRTL
from pymtl_fp.primitives.RequantRTL import RequantRTL


class RequantBankRTL(Component):
    def construct(s, P=2, acc_bits=32, rows=1, pipelined=False):
        s.params = dict(P=P, acc_bits=acc_bits, rows=rows, pipelined=pipelined)
        s.P = P
        N = rows * P
        s.nlanes = N
        s.acc = [InPort(acc_bits) for _ in range(N)]
        s.idx_base = InPort(32)
        s.idx_stride = InPort(32)
        s.shift = InPort(6)
        s.stochastic = InPort()
        s.relu = InPort()
        s.seed = InPort(32)
        s.tensor_id = InPort(8)
        s.q = [OutPort(acc_bits) for _ in range(N)]

        s.lane_idx = [Wire(32) for _ in range(N)]
        lane = RequantPipeRTL if pipelined else RequantRTL
        s.lane = [lane(acc_bits, acc_bits) for _ in range(N)]

        if rows == 1:
            @update
            def up_index():
                for i in range(P):
                    s.lane_idx[i] @= s.idx_base + s.idx_stride * Bits32(i)
        else:
            s.row_stride = InPort(32)

            @update
            def up_index_rows():  # (a name of its own: PyMTL3 translates a block from its source by name)
                for d in range(rows):
                    for i in range(P):
                        s.lane_idx[d * P + i] @= s.idx_base + s.row_stride * Bits32(d) + s.idx_stride * Bits32(i)

        for i in range(N):
            s.lane[i].acc //= s.acc[i]
            s.lane[i].shift //= s.shift
            s.lane[i].stochastic //= s.stochastic
            s.lane[i].relu //= s.relu
            s.lane[i].seed //= s.seed
            s.lane[i].tensor_id //= s.tensor_id
            s.lane[i].index //= s.lane_idx[i]
            s.q[i] //= s.lane[i].out

    def line_trace(s):
        return " ".join(f"{int(s.acc[i].int())}>{int(s.q[i].int())}" for i in range(s.nlanes))
