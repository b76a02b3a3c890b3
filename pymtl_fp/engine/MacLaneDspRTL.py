"""One MAC lane of the DSP-accumulating array (RTL), written in the shape Yosys's ``xilinx_dsp``
pass packs into one DSP48E1: ``p <= (first ? c : p) + a*v`` with the operands, the product and the
sum registered.

Three register stages, as the DSP48E1 has them::

    stage 1  a1 <= a, v1 <= v                      (the A and B input registers: AREG, BREG)
    stage 2  m <= a1 * v1, exact signed product    (MREG)
    stage 3  p <= (first ? c : p) + m, when en     (the post-adder, its Z-mux between P and C
                                                    (OPMODE[4] = first) and PREG, CEP = en,
                                                    RSTP = reset)

``first``, ``en`` and ``c`` belong to stage 3's addition (the caller aligns them); ``p`` is the
accumulator (``acc_bits``, two's-complement wrap).  The product is sign-extended from its exact
width ``2 * data_bits``, so the adder's product input is a plain sign extension of the multiplier's
output, as the pass requires.  Scalar ports and registers only: ``sext`` of a list element
translates wrongly in PyMTL3 3.1.17.
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, sext, update, update_ff


class MacLaneDspRTL(Component):
    def construct(s, data_bits=8, acc_bits=32):
        s.params = dict(data_bits=data_bits, acc_bits=acc_bits)
        PW = 2 * data_bits
        Prod, Acc = mk_bits(PW), mk_bits(acc_bits)
        s.a = InPort(data_bits)
        s.v = InPort(data_bits)
        s.en = InPort()
        s.first = InPort()
        s.c = InPort(acc_bits)
        s.p = OutPort(acc_bits)
        s.a1 = Wire(data_bits)
        s.v1 = Wire(data_bits)
        s.m = Wire(PW)
        s.acc = Wire(acc_bits)
        s.base = Wire(acc_bits)
        s.sum = Wire(acc_bits)
        s.p //= s.acc

        @update
        def up_lane_sum():
            if s.first:
                s.base @= s.c
            else:
                s.base @= s.acc
            s.sum @= s.base + sext(s.m, Acc)

        @update_ff
        def up_lane_regs():
            s.a1 <<= s.a
            s.v1 <<= s.v
            s.m <<= sext(s.a1, Prod) * sext(s.v1, Prod)
            if s.reset:
                s.acc <<= Acc(0)
            elif s.en:
                s.acc <<= s.sum

    def line_trace(s):
        return f"{int(s.acc.int())}"
