"""Saturation of the requantized values (RTL, combinational), for
:class:`~pymtl_fp.engine.EngineWritebackRTL.EngineWritebackRTL`.

The requantizer's values ``q`` (accumulator width) become the values a result buffer stores,
saturated (:class:`~pymtl_fp.primitives.SaturateRTL.SaturateRTL`) and sign-extended
(:class:`~pymtl_fp.engine.SignExtendRTL.SignExtendRTL`) to the buffer's element width:

* ``y_a``: lanes ``0 .. P-1`` saturated to the activation width (``fwd``), to the data width;
* ``y_g``: all ``DR * P`` lanes saturated to the gradient width (``bwd_data``, the ``dw`` drain
  rows), to the data width; ``y_gb``: its first ``P`` lanes to the accumulator width (``db`` in B);
* ``y_w``: ``update``'s new weight row ``w_row - q`` (``w_row`` sign-extended; 0 where ``rowB``
  names no row of the ``P x P`` word) saturated to the weight width, to the data width.
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update

from pymtl_fp.engine.SignExtendRTL import SignExtendRTL
from pymtl_fp.primitives.SaturateRTL import SaturateRTL


class WritebackSaturateRTL(Component):
    def construct(s, P=2, act_bits=8, weight_bits=8, grad_bits=8, acc_bits=32, drain_rows=1):
        s.params = dict(P=P, act_bits=act_bits, weight_bits=weight_bits, grad_bits=grad_bits,
                        acc_bits=acc_bits, drain_rows=drain_rows)
        NQ = drain_rows * P  # requantizer lanes
        D = max(act_bits, weight_bits, grad_bits)
        AB = acc_bits
        ZA = mk_bits(AB)(0)
        LP = mk_bits(16)(P)

        s.q = [InPort(AB) for _ in range(NQ)]  # the requantized values
        s.w_row = [InPort(D) for _ in range(P)]  # update: row rowB of the W word read
        s.rowB = InPort(16)
        s.y_a = [OutPort(D) for _ in range(P)]
        s.y_g = [OutPort(D) for _ in range(NQ)]
        s.y_gb = [OutPort(AB) for _ in range(P)]
        s.y_w = [OutPort(D) for _ in range(P)]

        s.row_ok = Wire()  # rowB names a row of the P x P word (update)
        s.w_ext = SignExtendRTL(D, AB, P)
        s.upd_w = [Wire(AB) for _ in range(P)]  # update: w - q
        s.sat_a = [SaturateRTL(AB, act_bits) for _ in range(P)]
        s.sat_g = [SaturateRTL(AB, grad_bits) for _ in range(NQ)]  # all DR rows: the drain
        s.sat_w = [SaturateRTL(AB, weight_bits) for _ in range(P)]
        s.ext_a = SignExtendRTL(act_bits, D, P)  # saturated results, sign-extended to the buffers
        s.ext_g = SignExtendRTL(grad_bits, D, NQ)
        s.ext_gb = SignExtendRTL(grad_bits, AB, P)
        s.ext_w = SignExtendRTL(weight_bits, D, P)
        for i in range(P):
            s.w_ext.in_[i] //= s.w_row[i]
            s.sat_a[i].in_ //= s.q[i]
            s.sat_w[i].in_ //= s.upd_w[i]
            s.ext_a.in_[i] //= s.sat_a[i].out
            s.ext_gb.in_[i] //= s.sat_g[i].out
            s.ext_w.in_[i] //= s.sat_w[i].out
            s.y_a[i] //= s.ext_a.out[i]
            s.y_gb[i] //= s.ext_gb.out[i]
            s.y_w[i] //= s.ext_w.out[i]
        for i in range(NQ):
            s.sat_g[i].in_ //= s.q[i]
            s.ext_g.in_[i] //= s.sat_g[i].out
            s.y_g[i] //= s.ext_g.out[i]

        @update
        def up_update_values():
            s.row_ok @= s.rowB < LP
            for j in range(P):
                if s.row_ok:
                    s.upd_w[j] @= s.w_ext.out[j] - s.q[j]
                else:
                    s.upd_w[j] @= ZA

    def line_trace(s):
        return "sat[" + " ".join(str(int(v)) for v in s.y_a) + "]"
