"""Tap bounds of one outer position (RTL, combinational), for
:class:`~pymtl_fp.engine.AddrTapRegsRTL.AddrTapRegsRTL`.

A tap unit walks an inner counter ``i`` (level 5 for rows, 6 for columns) for each value ``u`` of
an outer counter (level 2, 3).  What the walk needs of ``u`` alone, for one dimension (rows: ``size``
= H, ``osize`` = Ho, ``k`` = R, ``pad`` = pt; columns: W, Wo, S, pad) and stride ``st = 1 << lg``,
with every sum on 32 bits as the combinational units compute it:

``fwd`` (:class:`~pymtl_fp.engine.AddrFwdTapsRTL.AddrFwdTapsRTL`; ``u`` = oh, ``t = u*st``)
    ``v0 = lo = max(0, pad - t)`` (the first valid tap), ``v1 = t + lo - pad`` (the input
    coordinate of that tap), ``last = hi - lo - 1`` or 0 where ``hi = min(k, size + pad - t) <= lo``;
``bwd_data`` (:class:`~pymtl_fp.engine.AddrBwdDataTapsRTL.AddrBwdDataTapsRTL`; ``u`` = h)
    with ``th = u + pad``, ``q = th >> lg``, ``lo = q >= osize ? q + 1 - osize : 0``: ``v0 = lo``,
    ``v1 = (th & (st-1)) + lo*st`` (the first tap), ``v2 = q - lo`` (its output), ``last =
    min(ka - lo - 1, q - lo)`` or 0 where ``ka <= lo``, ``ka = ceil((k - (th & (st-1))) / st)``;
``bwd_weight`` (:class:`~pymtl_fp.engine.AddrBwdWeightTapsRTL.AddrBwdWeightTapsRTL`; ``u`` = r)
    ``lo = ceil(max(0, pad - u) / st)`` (the first output whose input is inside): ``v0 = lo``,
    ``v1 = lo*st``, ``v2 = lo*st + u - pad`` (its input coordinate), ``last = min(kb, osize) - lo -
    1`` or 0 where that is below 1, ``kb = ceil((size + pad - u) / st)``.

``last`` is the inner count at which the combinational unit's end flag (``at5``/``at6``) first
holds (the walk restarts there), so the flag is ``i == last``.  The arithmetic is :data:`BW` bits
wide and ``last`` 16: for a valid command every value above is below 2^17 (positions and sizes
are 16-bit fields, pads 8-bit, and an output's first input row ``oh*st`` is at most ``H + 2*pad -
R``) and every ``last`` below 2^16, so the bounds equal the 32-bit ones the combinational units
compute.  The three are computed side by side and ``op`` chooses (``fwd``'s for every other
operation, which walks no taps).  The shifts by the stride are multiplexer stages
(:class:`~pymtl_fp.primitives.ShiftRTL.ShiftRTL`), not shift operators: synthesis (Yosys's
``share``) merges shift cells used under exclusive conditions -- the three operations', and the
units of :class:`~pymtl_fp.engine.AddrTapRegsRTL.AddrTapRegsRTL` -- with selects in front of them
that put those conditions on the bounds' path (docs/verilog.md, "The tap bounds in registers").
"""

from pymtl3 import Bits4, Bits16, Bits32, Component, InPort, OutPort, Wire, mk_bits, update, zext

from pymtl_fp.engine import msgs
from pymtl_fp.primitives.ShiftRTL import ShiftRTL

#: the bounds' width (see the module docstring)
BW = 18


class AddrTapBoundsRTL(Component):
    def construct(s):
        s.params = {}
        B = mk_bits(BW)
        ONE, ZERO, ONE16 = B(1), B(0), Bits16(1)
        OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT

        s.op = InPort(Bits4)
        s.size, s.osize, s.k, s.pad = (InPort(BW) for _ in range(4))
        s.lg = InPort(3)  # the stride's log2 (command field lgst)
        s.u = InPort(BW)  # the outer counter
        s.v = [OutPort(32) for _ in range(3)]
        s.last = OutPort(16)
        # the variable shifts by lg, as multiplexer stages (ShiftRTL: not shift cells that synthesis
        # would share between the units and operations, with selects in front of them)
        s.sh_st, s.sh_ft, s.sh_dq, s.sh_dka, s.sh_dlo, s.sh_wlo, s.sh_wkb, s.sh_wt = (
            ShiftRTL(BW, 3, left) for left in (True, True, False, False, True, False, False, True))
        for sh in (s.sh_st, s.sh_ft, s.sh_dq, s.sh_dka, s.sh_dlo, s.sh_wlo, s.sh_wkb, s.sh_wt):
            sh.amt //= s.lg
        s.sh_st.in_ //= ONE
        s.st = Wire(BW)  # the stride
        s.st //= s.sh_st.out
        # fwd
        s.f_t, s.f_lo, s.f_hi, s.f_v1 = (Wire(BW) for _ in range(4))
        s.sh_ft.in_ //= s.u
        s.f_t //= s.sh_ft.out
        # bwd_data
        s.d_th, s.d_q, s.d_fr, s.d_lo, s.d_ka, s.d_a, s.d_b, s.d_v1 = (Wire(BW) for _ in range(8))
        s.d_kn = Wire(BW)  # k - fr + st - 1 (where k > fr), before its shift
        s.sh_dq.in_ //= s.d_th
        s.d_q //= s.sh_dq.out
        s.sh_dka.in_ //= s.d_kn
        s.d_ka //= s.sh_dka.out
        s.sh_dlo.in_ //= s.d_lo
        # bwd_weight
        s.w_lo, s.w_kb, s.w_hi, s.w_t, s.w_v2 = (Wire(BW) for _ in range(5))
        s.w_lon, s.w_kbn = Wire(BW), Wire(BW)  # the two ceiling divisions' dividends plus st - 1
        s.sh_wlo.in_ //= s.w_lon
        s.w_lo //= s.sh_wlo.out
        s.sh_wkb.in_ //= s.w_kbn
        s.w_kb //= s.sh_wkb.out
        s.sh_wt.in_ //= s.w_lo
        s.w_t //= s.sh_wt.out
        s.f_last, s.d_last, s.w_last = Wire(16), Wire(16), Wire(16)

        @update
        def up_fwd_bounds():
            if s.pad > s.f_t:
                s.f_lo @= s.pad - s.f_t
            else:
                s.f_lo @= ZERO
            if (s.size + s.pad - s.f_t) < s.k:
                s.f_hi @= s.size + s.pad - s.f_t
            else:
                s.f_hi @= s.k
            s.f_v1 @= s.f_t + s.f_lo - s.pad
            if s.f_hi > s.f_lo:
                s.f_last @= s.f_hi[0:16] - s.f_lo[0:16] - ONE16
            else:
                s.f_last @= 0

        @update
        def up_bwd_data_terms():
            s.d_th @= s.u + s.pad
            s.d_fr @= s.d_th & (s.st - ONE)
            if s.k > s.d_fr:
                s.d_kn @= s.k - s.d_fr + s.st - ONE
            else:
                s.d_kn @= ZERO

        @update
        def up_bwd_data_bounds():
            if s.d_q >= s.osize:
                s.d_lo @= s.d_q + ONE - s.osize
            else:
                s.d_lo @= ZERO
            s.d_a @= s.d_ka - s.d_lo - ONE
            s.d_b @= s.d_q - s.d_lo
            s.d_v1 @= s.d_fr + s.sh_dlo.out
            if s.d_ka > s.d_lo:
                if s.d_a < s.d_b:
                    s.d_last @= s.d_a[0:16]
                else:
                    s.d_last @= s.d_b[0:16]
            else:
                s.d_last @= 0

        @update
        def up_bwd_weight_terms():
            if s.pad > s.u:
                s.w_lon @= s.pad - s.u + s.st - ONE
            else:
                s.w_lon @= ZERO
            if (s.size + s.pad) > s.u:
                s.w_kbn @= s.size + s.pad - s.u + s.st - ONE
            else:
                s.w_kbn @= ZERO

        @update
        def up_bwd_weight_bounds():
            if s.w_kb < s.osize:
                s.w_hi @= s.w_kb
            else:
                s.w_hi @= s.osize
            s.w_v2 @= s.w_t + s.u - s.pad
            if s.w_hi > s.w_lo:
                s.w_last @= s.w_hi[0:16] - s.w_lo[0:16] - ONE16
            else:
                s.w_last @= 0

        @update
        def up_bounds_select():
            if s.op == OP_BWD_DATA:
                s.v[0] @= zext(s.d_lo, Bits32)
                s.v[1] @= zext(s.d_v1, Bits32)
                s.v[2] @= zext(s.d_b, Bits32)
                s.last @= s.d_last
            elif s.op == OP_BWD_WEIGHT:
                s.v[0] @= zext(s.w_lo, Bits32)
                s.v[1] @= zext(s.w_t, Bits32)
                s.v[2] @= zext(s.w_v2, Bits32)
                s.last @= s.w_last
            else:
                s.v[0] @= zext(s.f_lo, Bits32)
                s.v[1] @= zext(s.f_v1, Bits32)
                s.v[2] @= 0
                s.last @= s.f_last

    def line_trace(s):
        return f"bounds[{int(s.v[0])},{int(s.v[1])},{int(s.v[2])} last{int(s.last)}]"
