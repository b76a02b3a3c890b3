"""MAC array (RTL): ``P x P`` signed multipliers with exact per-lane accumulators.

One array serves every conv phase, selected per cycle:

* reduce mode (``outer = 0``; ``fwd``, ``bwd_data``): lane row ``i`` computes
  ``sum_j a[i][j] * v[j]`` into accumulator ``(i, 0)``; ``a`` is the weight tile ``wt``
  (``fwd``) or its transpose (``transpose = 1``, ``bwd_data``);
* outer mode (``outer = 1``; ``bwd_weight``): ``acc[i][j] += u[i] * v[j]`` (``u`` = dy, ``v`` = x).

With ``first``, the accumulator restarts from ``bias[i]`` (``use_bias``, lane ``(i, 0)``) or 0.
``res`` is the accumulator value *after* this cycle's products (combinational), so the
controller can requantize a finished output in the cycle of its last products while the
registers already start the next output.  Products are sign-extended to ``acc_bits`` and summed
exactly (two's-complement wrap is harmless while the final sum fits).  The operand select and
the accumulators are :class:`MacOperandsRTL` and :class:`MacAccumulateRTL`, shared with the
pipelined array (:class:`~pymtl_fp.engine.MacArrayPipeRTL.MacArrayPipeRTL`).
"""

from pymtl3 import Component, InPort, OutPort, Wire, connect, mk_bits, update, zext

from pymtl_fp.engine.MacAccumulateRTL import MacAccumulateRTL
from pymtl_fp.engine.MacOperandsRTL import MacOperandsRTL


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
        s.bp = InPort()  # outer mode of a batch-parallel fwd: u = column col of wt (MacOperandsRTL)
        s.col = InPort(8)
        s.wt = [InPort(data_bits) for _ in range(P * P)]
        s.u = [InPort(data_bits) for _ in range(P)]
        s.v = [InPort(data_bits) for _ in range(P)]
        s.bias = [InPort(acc_bits) for _ in range(P)]
        s.res = [OutPort(acc_bits) for _ in range(P * P)]

        s.ops = MacOperandsRTL(P, data_bits)
        s.accs = MacAccumulateRTL(P, acc_bits)
        s.prod = [Wire(acc_bits) for _ in range(P * P)]
        s.rowsum = [Wire(acc_bits) for _ in range(P)]
        s.ops.outer //= s.outer
        s.ops.transpose //= s.transpose
        s.ops.bp //= s.bp
        s.ops.col //= s.col
        for name in ("en", "first", "outer", "use_bias"):
            connect(getattr(s.accs, name), getattr(s, name))
        for k in range(P * P):
            s.ops.wt[k] //= s.wt[k]
            s.accs.prod[k] //= s.prod[k]
            s.res[k] //= s.accs.res[k]
        for i in range(P):
            s.ops.u[i] //= s.u[i]
            s.accs.bias[i] //= s.bias[i]
            s.accs.rowsum[i] //= s.rowsum[i]

        @update
        def up_products():
            for i in range(P):
                for j in range(P):
                    s.prod[i * P + j] @= ((zext(s.ops.a[i * P + j] ^ SIGN, Acc) - SIGN_ACC)
                                          * (zext(s.v[j] ^ SIGN, Acc) - SIGN_ACC))

        @update
        def up_rowsum():
            for i in range(P):
                s.rowsum[i] @= ZERO
                for j in range(P):
                    s.rowsum[i] @= s.rowsum[i] + s.prod[i * P + j]

    def line_trace(s):
        return s.accs.line_trace()
