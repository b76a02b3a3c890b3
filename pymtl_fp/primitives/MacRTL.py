"""Signed multiply-accumulate unit (RTL): one lane of a MAC array.

Every cycle with ``en`` high: ``acc <= (clear ? 0 : acc) + a * b`` with ``a`` and ``b`` signed
two's complement of ``a_bits``/``b_bits`` and the product sign-extended to ``acc_bits``; the
accumulator wraps modulo ``2**acc_bits`` (size it so that it cannot overflow).  With ``en`` low
and ``clear`` high the accumulator is zeroed.  Elaboration parameters: the three widths.
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, sext, update, update_ff


class MacRTL(Component):
    def construct(s, a_bits=8, b_bits=8, acc_bits=24):
        if not (2 <= a_bits and 2 <= b_bits and a_bits + b_bits <= acc_bits <= 128):
            raise ValueError(
                f"MacRTL needs 2 <= a_bits, b_bits and a_bits + b_bits <= acc_bits <= 128, "
                f"got a_bits={a_bits}, b_bits={b_bits}, acc_bits={acc_bits}"
            )
        s.params = dict(a_bits=a_bits, b_bits=b_bits, acc_bits=acc_bits)
        Acc = mk_bits(acc_bits)
        s.en = InPort()
        s.clear = InPort()
        s.a = InPort(a_bits)
        s.b = InPort(b_bits)
        s.acc = OutPort(acc_bits)

        s.prod = Wire(acc_bits)

        @update
        def up_product():
            s.prod @= sext(s.a, Acc) * sext(s.b, Acc)

        @update_ff
        def up_acc():
            if s.reset:
                s.acc <<= 0
            elif s.en:
                if s.clear:
                    s.acc <<= s.prod
                else:
                    s.acc <<= s.acc + s.prod
            elif s.clear:
                s.acc <<= 0

    def line_trace(s):
        flags = f"{'en' if s.en else '  '}{'c' if s.clear else ' '}"
        return f"{flags} {int(s.a.int()):>5}*{int(s.b.int()):>5} acc={int(s.acc.int()):>10}"
