"""Max-pooling lanes (RTL): running maximum and its tap, one per lane, for ``pool_fwd``.

In every stage-B cycle (``vB``) lane ``i`` compares ``x_rd[i]`` (signed) with its running maximum
``pm[i]``; on the first step of a window (``first``) or when the new value is strictly greater
it takes the value and the step's tap ``tap`` (so the first of equal maxima wins, as in
:mod:`pymtl_fp.golden.pool`).  ``pm_n``/``pi_n`` are the maximum and argmax tap *after* this
cycle's value (combinational), so the write-back can store a finished window in the cycle of
its last tap.
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, update_ff


class EnginePoolRTL(Component):
    def construct(s, P=2, data_bits=8):
        s.params = dict(P=P, data_bits=data_bits)
        s.P = P
        SIGN_D = mk_bits(data_bits)(1 << (data_bits - 1))
        s.vB = InPort()
        s.first = InPort()
        s.tap = InPort(8)
        s.x_rd = [InPort(data_bits) for _ in range(P)]
        s.pm_n = [OutPort(data_bits) for _ in range(P)]
        s.pi_n = [OutPort(8) for _ in range(P)]

        s.pm = [Wire(data_bits) for _ in range(P)]
        s.pi = [Wire(8) for _ in range(P)]

        @update
        def up_pool():
            for i in range(P):
                if s.first | ((s.x_rd[i] ^ SIGN_D) > (s.pm[i] ^ SIGN_D)):  # signed compare
                    s.pm_n[i] @= s.x_rd[i]
                    s.pi_n[i] @= s.tap
                else:
                    s.pm_n[i] @= s.pm[i]
                    s.pi_n[i] @= s.pi[i]

        @update_ff
        def up_pool_regs():
            for i in range(P):
                if s.vB:
                    s.pm[i] <<= s.pm_n[i]
                    s.pi[i] <<= s.pi_n[i]

    def line_trace(s):
        return " ".join(f"{int(s.pm_n[i].int())}@{int(s.pi_n[i])}" for i in range(s.P))
