"""MAC array accumulating in the DSP blocks (RTL): :class:`~pymtl_fp.engine.MacArrayPipeRTL.MacArrayPipeRTL`'s
results, bit for bit and in the same cycle, with every lane's product and accumulator in one
DSP48E1.

Same ports, parameters and :data:`LATENCY` as ``MacArrayPipeRTL``.  Every lane ``(i, j)`` is a
:class:`~pymtl_fp.engine.MacLaneDspRTL.MacLaneDspRTL`: its operand registers, product register and
accumulator are the DSP48E1's A/B, M and P registers, and its adder the DSP's post-adder, so
Yosys's ``xilinx_dsp`` pass maps the lane to one DSP and no fabric.  Every lane accumulates its own
product in both modes:

* outer mode (``bwd_weight``, a batch-parallel ``fwd``): lane ``(i, j)``'s accumulator is
  ``res[i*P + j]``, as in the other arrays;
* reduce mode (``fwd``, ``bwd_data``): lane ``(i, j)`` accumulates ``a[i][j] * v[j]`` over an
  output's steps; ``res[i*P]`` is the sum of row ``i``'s ``P`` accumulators (an adder tree on
  the DSPs' outputs, combinational).  ``res[i*P + j]`` for ``j > 0`` is lane ``(i, j)``'s partial
  sum there (the engine reads only ``res[i*P]`` in reduce mode).

The partial sums sum to the other arrays' accumulator modulo ``2**acc_bits`` (each lane wraps at
``acc_bits`` and the tree adds modulo ``2**acc_bits``).  With ``first`` a lane restarts from its
``C`` input: ``bias[i]`` for lane ``(i, 0)`` with ``use_bias``, for every lane of row ``i`` with
``use_bias`` and ``outer`` (a batch-parallel ``fwd``), else 0 -- two ``acc_bits`` selects a row.
``res`` is the DSPs' P registers (and the row sums of them) :data:`LATENCY` cycles after the
inputs, as ``MacArrayPipeRTL``'s; in a cycle whose step had ``en`` low the accumulators hold
(``MacArrayPipeRTL`` shows an unregistered sum there; the engine reads neither).
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, update_ff

from pymtl_fp.cost.latency import PIPELINE_LATENCY
from pymtl_fp.engine.MacLaneDspRTL import MacLaneDspRTL
from pymtl_fp.engine.MacOperandsRTL import MacOperandsRTL

#: cycles by which ``res`` follows the inputs: the DSP48E1's A/B, M and P registers
LATENCY = PIPELINE_LATENCY["mac"]


class MacArrayDspRTL(Component):
    def construct(s, P=2, data_bits=8, acc_bits=32):
        s.params = dict(P=P, data_bits=data_bits, acc_bits=acc_bits)
        s.P = P
        PP = P * P
        db = data_bits
        ZA = mk_bits(acc_bits)(0)
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
        s.ops.outer //= s.outer
        s.ops.transpose //= s.transpose
        s.ops.bp //= s.bp
        s.ops.col //= s.col
        for k in range(PP):
            s.ops.wt[k] //= s.wt[k]
        for i in range(P):
            s.ops.u[i] //= s.u[i]
        # en, first and bias of stages 1 and 2 (the accumulators add in stage 2's cycle)
        s.en_p = [Wire() for _ in range(2)]
        s.first_p = [Wire() for _ in range(2)]
        s.bias_p = [[Wire(acc_bits) for _ in range(P)] for _ in range(2)]
        s.c_lead = [Wire(acc_bits) for _ in range(P)]  # lane (i, 0)'s start
        s.c_rest = [Wire(acc_bits) for _ in range(P)]  # lanes (i, 1..P-1)'s start
        s.rowsum = [Wire(acc_bits) for _ in range(P)]
        s.res_lead = [Wire(acc_bits) for _ in range(P)]  # res[i*P]
        s.lane = [MacLaneDspRTL(db, acc_bits) for _ in range(PP)]
        for i in range(P):
            for j in range(P):
                ln = s.lane[i * P + j]
                ln.a //= s.ops.a[i * P + j]
                ln.v //= s.v[j]
                ln.en //= s.en_p[1]
                ln.first //= s.first_p[1]
                ln.c //= s.c_lead[i] if j == 0 else s.c_rest[i]
                s.res[i * P + j] //= ln.p if j > 0 else s.res_lead[i]

        @update_ff
        def up_dsp_ctrl():
            for i in range(P):
                s.bias_p[0][i] <<= s.bias[i]
                s.bias_p[1][i] <<= s.bias_p[0][i]
            if s.reset:
                for k in range(2):
                    s.en_p[k] <<= 0
                    s.first_p[k] <<= 0
            else:
                s.en_p[0] <<= s.en
                s.first_p[0] <<= s.first
                s.en_p[1] <<= s.en_p[0]
                s.first_p[1] <<= s.first_p[0]

        @update
        def up_dsp_starts():
            for i in range(P):
                s.c_lead[i] @= ZA
                s.c_rest[i] @= ZA
                if s.use_bias:
                    s.c_lead[i] @= s.bias_p[1][i]
                    if s.outer:  # a batch-parallel fwd: every image of row i starts from its bias
                        s.c_rest[i] @= s.bias_p[1][i]

        @update
        def up_dsp_rowsum():
            for i in range(P):
                s.rowsum[i] @= ZA
                for j in range(P):
                    s.rowsum[i] @= s.rowsum[i] + s.lane[i * P + j].p

        @update
        def up_dsp_res():
            for i in range(P):
                if s.outer:
                    s.res_lead[i] @= s.lane[i * P].p
                else:
                    s.res_lead[i] @= s.rowsum[i]

    def line_trace(s):
        return ("E" if s.en_p[1] else ".") + ("f" if s.first_p[1] else " ") + " ".join(
            f"{int(s.res[i].int())}" for i in range(0, s.P * s.P, s.P))
