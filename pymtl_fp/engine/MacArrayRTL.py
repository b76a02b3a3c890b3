"""MAC array (RTL): ``P x P`` signed multipliers with exact per-lane accumulators.

One array serves every conv phase, selected per cycle:

* reduce mode (``outer = 0``; ``fwd``, ``bwd_data``): lane row ``i`` computes
  ``sum_j a[i][j] * v[j]`` into accumulator ``(i, 0)``; ``a`` is the weight tile ``wt`` (``fwd``)
  or its transpose (``transpose = 1``, ``bwd_data``);
* outer mode (``outer = 1``; ``bwd_weight``): ``acc[i][j] += u[i] * v[j]`` (``u`` = dy, ``v`` = x).

With ``first``, the accumulator restarts from ``bias[i]`` (``use_bias``, lane ``(i, 0)``) or 0.
``res`` is the accumulator value *after* this cycle's products (combinational), so the
controller can requantize a finished output in the cycle of its last products while the
registers already start the next output.  Products are sign-extended to ``acc_bits`` and summed
exactly (two's-complement wrap is harmless while the final sum fits).
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, update_ff, zext


class MacArrayRTL(Component):
    def construct(s, P=2, data_bits=8, acc_bits=32):
        s.params = dict(P=P, data_bits=data_bits, acc_bits=acc_bits)
        Acc = mk_bits(acc_bits)
        ZERO = Acc(0)
        # sign extension as zext(x ^ sign) - sign: PyMTL3 3.1.17 translates sext() of an array
        # element wrongly (drops the sign-bit select)
        SIGN = mk_bits(data_bits)(1 << (data_bits - 1))
        SIGN_ACC = Acc(1 << (data_bits - 1))
        s.P = P
        s.en = InPort()
        s.first = InPort()
        s.outer = InPort()
        s.transpose = InPort()
        s.use_bias = InPort()
        s.wt = [InPort(data_bits) for _ in range(P * P)]
        s.u = [InPort(data_bits) for _ in range(P)]
        s.v = [InPort(data_bits) for _ in range(P)]
        s.bias = [InPort(acc_bits) for _ in range(P)]
        s.res = [OutPort(acc_bits) for _ in range(P * P)]

        s.a_sel = [Wire(data_bits) for _ in range(P * P)]
        s.prod = [Wire(acc_bits) for _ in range(P * P)]
        s.rowsum = [Wire(acc_bits) for _ in range(P)]
        s.base = [Wire(acc_bits) for _ in range(P * P)]
        s.acc = [Wire(acc_bits) for _ in range(P * P)]

        @update
        def up_operands():
            for i in range(P):
                for j in range(P):
                    if s.outer:
                        s.a_sel[i * P + j] @= s.u[i]
                    elif s.transpose:
                        s.a_sel[i * P + j] @= s.wt[j * P + i]
                    else:
                        s.a_sel[i * P + j] @= s.wt[i * P + j]

        @update
        def up_products():
            for i in range(P):
                for j in range(P):
                    s.prod[i * P + j] @= ((zext(s.a_sel[i * P + j] ^ SIGN, Acc) - SIGN_ACC)
                                          * (zext(s.v[j] ^ SIGN, Acc) - SIGN_ACC))

        @update
        def up_rowsum():
            for i in range(P):
                s.rowsum[i] @= ZERO
                for j in range(P):
                    s.rowsum[i] @= s.rowsum[i] + s.prod[i * P + j]

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
