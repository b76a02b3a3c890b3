"""The BIAS / REQUANT units' result (RTL, combinational): an element's step and its saturation to a
runtime width.

* The step ``q``: ``db << lshift`` (``rdata1``; a learning rate above one) when ``lshift > 0``, else
  the requantized ``db`` (``rq_out``); BIAS subtracts it from ``b`` (``rdata0``), REQUANT (``req``)
  keeps it;
* saturated to ``sat_bits`` bits (``hi = 2**(sat_bits-1) - 1``, ``lo = -hi - 1``; signed compares
  as unsigned ones on sign-flipped values), on ``DW = max(bits, 63) + 2`` bits, wide enough for
  ``b - (db << lshift)`` exactly (the golden update keeps ``|db << s| < 2**62``);
* ``val``: the saturated value for a real element (BIAS: ``in_k``, the element is below ``k``;
  REQUANT: ``in_tensor``), else 0 (padding).

Elaboration parameter: ``bits`` (element width).
"""

from pymtl3 import Bits6, Component, InPort, OutPort, Wire, mk_bits, sext, trunc, update, zext


class RouterUnitSatRTL(Component):
    def construct(s, bits=32):
        T = mk_bits(bits)
        DW = max(bits, 63) + 2
        D = mk_bits(DW)
        ZERO_T = T(0)
        ONE_D = D(1)
        SIGN_D = D(1 << (DW - 1))  # the sign bit of a D value
        B7_1 = mk_bits(7)(1)
        s.params = dict(bits=bits)

        s.rdata0 = InPort(bits)
        s.rdata1 = InPort(bits)
        s.rq_out = InPort(bits)
        s.lshift = InPort(6)
        s.sat_bits = InPort(7)
        s.req = InPort()
        s.in_tensor = InPort()
        s.in_k = InPort()
        s.val = OutPort(bits)

        s.diff = Wire(DW)
        s.hi = Wire(DW)
        s.lo = Wire(DW)
        s.q = Wire(DW)
        s.clamped = Wire(bits)
        s.bm1 = Wire(7)
        s.diff_f = Wire(DW)
        s.hi_f = Wire(DW)
        s.lo_f = Wire(DW)

        @update
        def up_sat():
            if s.lshift != Bits6(0):
                s.q @= sext(s.rdata1, D) << zext(s.lshift, D)
            else:
                s.q @= sext(s.rq_out, D)
            if s.req:
                s.diff @= s.q
            else:
                s.diff @= sext(s.rdata0, D) - s.q
            s.bm1 @= s.sat_bits - B7_1
            s.hi @= (ONE_D << zext(s.bm1, D)) - ONE_D
            s.lo @= ~s.hi
            s.diff_f @= s.diff ^ SIGN_D
            s.hi_f @= s.hi ^ SIGN_D
            s.lo_f @= s.lo ^ SIGN_D
            if s.diff_f > s.hi_f:
                s.clamped @= trunc(s.hi, T)
            elif s.diff_f < s.lo_f:
                s.clamped @= trunc(s.lo, T)
            else:
                s.clamped @= trunc(s.diff, T)
            if s.req:
                if s.in_tensor:
                    s.val @= s.clamped
                else:
                    s.val @= ZERO_T
            elif s.in_k:
                s.val @= s.clamped
            else:
                s.val @= ZERO_T

    def line_trace(s):
        return f"{int(s.val):x}"
