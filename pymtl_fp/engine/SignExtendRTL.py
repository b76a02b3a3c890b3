"""Sign extension of ``n`` lanes (RTL, combinational): ``out[i] = in_[i]`` as a signed
``in_bits``-bit value, sign-extended to ``out_bits`` bits (``out_bits >= in_bits``).

Written as ``zext(x ^ sign, out) - sign``: PyMTL3 3.1.17 translates ``sext()`` of an array
element wrongly (the sign-bit select is dropped: ``{24{x[i]}}`` instead of ``{24{x[i][7]}}``),
so every sign extension of the engine's lanes goes through this one helper.
"""

from pymtl3 import Component, InPort, OutPort, mk_bits, update, zext


class SignExtendRTL(Component):
    def construct(s, in_bits=8, out_bits=32, n=1):
        if out_bits < in_bits:
            raise ValueError(f"SignExtendRTL needs out_bits >= in_bits, got {in_bits} -> {out_bits}")
        s.params = dict(in_bits=in_bits, out_bits=out_bits, n=n)
        s.n = n
        Out = mk_bits(out_bits)
        SIGN_IN, SIGN_OUT = mk_bits(in_bits)(1 << (in_bits - 1)), Out(1 << (in_bits - 1))
        s.in_ = [InPort(in_bits) for _ in range(n)]
        s.out = [OutPort(out_bits) for _ in range(n)]

        @update
        def up_sext():
            for i in range(n):
                s.out[i] @= zext(s.in_[i] ^ SIGN_IN, Out) - SIGN_OUT

    def line_trace(s):
        return " ".join(f"{int(s.out[i].int())}" for i in range(s.n))
