"""Signed saturation (RTL, combinational): ``in_`` clamped to a narrower two's-complement width.

``out = clamp(in, -2**(out_bits-1), 2**(out_bits-1)-1)``: the bits above the result's sign bit
must be a sign extension, else the result is the limit on the input's side.  Used by the
engine's write-back (results to their word widths) and the pipelined requantizer.
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update


class SaturateRTL(Component):
    """``out = clamp(in, -2**(out_bits-1), 2**(out_bits-1)-1)`` (signed, combinational)."""

    def construct(s, in_bits=32, out_bits=8):
        s.params = dict(in_bits=in_bits, out_bits=out_bits)
        s.in_ = InPort(in_bits)
        s.out = OutPort(out_bits)
        if out_bits >= in_bits:
            raise ValueError("SaturateRTL needs out_bits < in_bits")
        TopT = mk_bits(in_bits - out_bits + 1)
        Out = mk_bits(out_bits)
        TOP_ZERO, TOP_ONES = TopT(0), TopT(-1)
        OUT_MAX, OUT_MIN = Out((1 << (out_bits - 1)) - 1), Out(1 << (out_bits - 1))
        OUT_SIGN, IN_SIGN = out_bits - 1, in_bits - 1
        s.top = Wire(in_bits - out_bits + 1)

        @update
        def up_sat():
            s.top @= s.in_[OUT_SIGN:in_bits]
            if (s.top == TOP_ZERO) | (s.top == TOP_ONES):
                s.out @= s.in_[0:out_bits]
            elif s.in_[IN_SIGN]:
                s.out @= OUT_MIN
            else:
                s.out @= OUT_MAX

    def line_trace(s):
        return f"sat({int(s.in_.int())})={int(s.out.int())}"
