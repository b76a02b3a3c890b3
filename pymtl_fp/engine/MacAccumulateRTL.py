"""MAC accumulators (RTL): the last stage of both MAC arrays, ``P x P`` exact accumulators.

Reduce mode (``outer = 0``): accumulator ``(i, 0)`` adds lane row ``i``'s sum of products
``rowsum[i]``; the others hold.  Outer mode (``outer = 1``): every accumulator ``(i, j)`` adds its
own product ``prod[i*P + j]``.  With ``first``, an accumulator restarts from ``bias[i]``
(``use_bias``: lane ``(i, 0)``, or in outer mode every lane of row ``i``: a batch-parallel
``fwd``) or 0.  ``res`` is the accumulators *after* this cycle's sums (combinational); the
registers take it in a cycle with ``en``.  All at ``acc_bits``
(two's-complement wrap is harmless while the final sum fits).
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, update_ff


class MacAccumulateRTL(Component):
    def construct(s, P=2, acc_bits=32):
        s.params = dict(P=P, acc_bits=acc_bits)
        s.P = P
        ZERO = mk_bits(acc_bits)(0)
        s.en = InPort()
        s.first = InPort()
        s.outer = InPort()
        s.use_bias = InPort()
        s.bias = [InPort(acc_bits) for _ in range(P)]
        s.rowsum = [InPort(acc_bits) for _ in range(P)]
        s.prod = [InPort(acc_bits) for _ in range(P * P)]
        s.res = [OutPort(acc_bits) for _ in range(P * P)]
        s.base = [Wire(acc_bits) for _ in range(P * P)]
        s.acc = [Wire(acc_bits) for _ in range(P * P)]

        @update
        def up_base():
            for i in range(P):
                for j in range(P):
                    if s.first:
                        s.base[i * P + j] @= ZERO
                    else:
                        s.base[i * P + j] @= s.acc[i * P + j]
                if s.first & s.use_bias:
                    s.base[i * P] @= s.bias[i]
                    if s.outer:  # a batch-parallel fwd: every image of row i starts from its bias
                        for j in range(1, P):
                            s.base[i * P + j] @= s.bias[i]

        @update
        def up_result():
            for i in range(P):
                for j in range(P):
                    if s.outer:
                        s.res[i * P + j] @= s.base[i * P + j] + s.prod[i * P + j]
                    else:
                        s.res[i * P + j] @= s.base[i * P + j]
                if ~s.outer:
                    s.res[i * P] @= s.base[i * P] + s.rowsum[i]

        @update_ff
        def up_acc():
            for i in range(P * P):
                if s.reset:
                    s.acc[i] <<= ZERO
                elif s.en:
                    s.acc[i] <<= s.res[i]

    def line_trace(s):
        return ("E" if s.en else ".") + ("f" if s.first else " ") + " ".join(
            f"{int(s.acc[i].int())}" for i in range(0, s.P * s.P, s.P))
