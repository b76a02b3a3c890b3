"""Pipelined MAC array (RTL): :class:`~pymtl_fp.engine.MacArrayRTL.MacArrayRTL`'s function, bit
for bit, with its results :data:`LATENCY` cycles later, for a 200 MHz clock.

Same ports and parameters as ``MacArrayRTL``; what ``MacArrayRTL`` does in the cycle of its
inputs takes four stages here::

    stage 1  the selected operands (weight tile, its transpose or dy; x or dy) registered
             (the DSP48's A/B input registers), with en, first and bias
    stage 2  the P x P products registered (its P register)
    stage 3  each lane row's sum of P products registered (reduce mode); the products again
             (outer mode)
    stage 4  the accumulators (:class:`~pymtl_fp.engine.MacAccumulateRTL.MacAccumulateRTL`)

so ``res``, the accumulators after a step's products, appears :data:`LATENCY` = 3 cycles after
``MacArrayRTL``'s.  Products and row sums are kept at their exact width (``2 * data_bits`` and
``2 * data_bits + ceil(log2 P)`` bits: a signed ``data_bits`` product is at most
``2**(2*data_bits-2)`` in magnitude) and sign-extended to ``acc_bits`` only at the accumulator, so
the row adder trees are narrow (where ``acc_bits`` is narrower, sums wrap modulo ``2**acc_bits``
as in ``MacArrayRTL``).  ``outer``, ``transpose`` and ``use_bias`` are taken as they are in each
stage: the engine derives them from the command it holds while any step is in the pipeline.
"""

from pymtl3 import Component, InPort, OutPort, Wire, connect, mk_bits, trunc, update, update_ff, zext

from pymtl_fp.cost.latency import PIPELINE_LATENCY
from pymtl_fp.engine.MacAccumulateRTL import MacAccumulateRTL
from pymtl_fp.engine.MacOperandsRTL import MacOperandsRTL

#: cycles by which ``res`` follows the inputs (compared with :class:`MacArrayRTL`; the cost model's number)
LATENCY = PIPELINE_LATENCY["mac"]


class MacArrayPipeRTL(Component):
    def construct(s, P=2, data_bits=8, acc_bits=32):
        s.params = dict(P=P, data_bits=data_bits, acc_bits=acc_bits)
        s.P = P
        PP = P * P
        db = data_bits
        PW = 2 * db  # exact signed product width (< acc_bits: EngineConfig)
        SW = 2 * db + max(1, (P - 1).bit_length())  # exact signed row-sum width
        if SW >= acc_bits:  # the accumulator is no wider: sums are taken modulo 2**acc_bits, as in MacArrayRTL
            SW = acc_bits + 1
        Acc, Prod, Sum = mk_bits(acc_bits), mk_bits(PW), mk_bits(SW)
        ZS = Sum(0)
        # sign extension as zext(x ^ sign) - sign (PyMTL3 3.1.17 mistranslates sext() of a list element)
        SIGN_D, SIGN_DP = mk_bits(db)(1 << (db - 1)), Prod(1 << (db - 1))
        SIGN_P, SIGN_PS, SIGN_PA = Prod(1 << (PW - 1)), Sum(1 << (PW - 1)), Acc(1 << (PW - 1))
        s.en = InPort()
        s.first = InPort()
        s.outer = InPort()
        s.transpose = InPort()
        s.use_bias = InPort()
        s.bp = InPort()  # outer mode of a batch-parallel fwd: u = column col of wt (MacOperandsRTL)
        s.col = InPort(8)
        s.wt = [InPort(db) for _ in range(PP)]
        s.u = [InPort(db) for _ in range(P)]
        s.v = [InPort(db) for _ in range(P)]
        s.bias = [InPort(acc_bits) for _ in range(P)]
        s.res = [OutPort(acc_bits) for _ in range(PP)]

        s.ops = MacOperandsRTL(P, db)
        s.accs = MacAccumulateRTL(P, acc_bits)
        s.ops.outer //= s.outer
        s.ops.transpose //= s.transpose
        s.ops.bp //= s.bp
        s.ops.col //= s.col
        for name in ("outer", "use_bias"):
            connect(getattr(s.accs, name), getattr(s, name))
        for k in range(PP):
            s.ops.wt[k] //= s.wt[k]
            s.res[k] //= s.accs.res[k]
        for i in range(P):
            s.ops.u[i] //= s.u[i]
        # stage 1
        s.a1 = [Wire(db) for _ in range(PP)]
        s.v1 = [Wire(db) for _ in range(P)]
        s.bias_p = [[Wire(acc_bits) for _ in range(P)] for _ in range(3)]  # bias of stages 1, 2, 3
        s.en_p = [Wire() for _ in range(3)]  # en and first of stages 1, 2, 3
        s.first_p = [Wire() for _ in range(3)]
        # stages 2 and 3
        s.prod2 = [Wire(PW) for _ in range(PP)]
        s.rowsum = [Wire(SW) for _ in range(P)]
        s.prod3 = [Wire(PW) for _ in range(PP)]
        s.sum3 = [Wire(SW) for _ in range(P)]
        s.en_acc, s.first_acc = Wire(), Wire()
        s.en_acc //= s.en_p[2]
        s.first_acc //= s.first_p[2]
        s.accs.en //= s.en_acc
        s.accs.first //= s.first_acc
        for i in range(P):
            s.accs.bias[i] //= s.bias_p[2][i]

        @update_ff
        def up_stages():
            for i in range(P):
                for j in range(P):
                    s.a1[i * P + j] <<= s.ops.a[i * P + j]
                    s.prod2[i * P + j] <<= ((zext(s.a1[i * P + j] ^ SIGN_D, Prod) - SIGN_DP)
                                            * (zext(s.v1[j] ^ SIGN_D, Prod) - SIGN_DP))
                    s.prod3[i * P + j] <<= s.prod2[i * P + j]
                s.v1[i] <<= s.v[i]
                s.bias_p[0][i] <<= s.bias[i]
                s.bias_p[1][i] <<= s.bias_p[0][i]
                s.bias_p[2][i] <<= s.bias_p[1][i]
                s.sum3[i] <<= s.rowsum[i]
            if s.reset:
                for k in range(3):
                    s.en_p[k] <<= 0
                    s.first_p[k] <<= 0
            else:
                s.en_p[0] <<= s.en
                s.first_p[0] <<= s.first
                for k in range(1, 3):
                    s.en_p[k] <<= s.en_p[k - 1]
                    s.first_p[k] <<= s.first_p[k - 1]

        @update
        def up_rowsum():
            for i in range(P):
                s.rowsum[i] @= ZS
                for j in range(P):
                    s.rowsum[i] @= s.rowsum[i] + (zext(s.prod2[i * P + j] ^ SIGN_P, Sum) - SIGN_PS)

        @update
        def up_products_wide():  # stage 3's products at the accumulator's width (outer mode)
            for k in range(PP):
                s.accs.prod[k] @= zext(s.prod3[k] ^ SIGN_P, Acc) - SIGN_PA

        if SW < acc_bits:
            SIGN_S, SIGN_SA = Sum(1 << (SW - 1)), Acc(1 << (SW - 1))

            @update
            def up_sum_extend():
                for i in range(P):
                    s.accs.rowsum[i] @= zext(s.sum3[i] ^ SIGN_S, Acc) - SIGN_SA
        else:
            @update
            def up_sum_wrap():
                for i in range(P):
                    s.accs.rowsum[i] @= trunc(s.sum3[i], Acc)

    def line_trace(s):
        return s.accs.line_trace()
