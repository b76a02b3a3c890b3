"""MAC operand select (RTL, combinational): the left operand of every lane of both MAC arrays.

Lane ``(i, j)`` multiplies ``a[i*P + j]`` by ``v[j]``: ``a`` is the weight tile ``wt``
(``fwd``), its transpose (``transpose``: ``bwd_data``), or ``u[i]`` in every column (``outer``:
``bwd_weight``, ``u`` = dy), or with ``outer`` and ``bp`` (a batch-parallel ``fwd``) column ``col``
of the weight tile in every column: ``wt[i*P + col]``, output channel ``i``'s weight of the input
channel the step reads.
"""

from pymtl3 import Component, InPort, OutPort, Wire, update


class MacOperandsRTL(Component):
    def construct(s, P=2, data_bits=8):
        s.params = dict(P=P, data_bits=data_bits)
        s.outer = InPort()
        s.transpose = InPort()
        s.bp = InPort()
        s.col = InPort(8)
        s.wt = [InPort(data_bits) for _ in range(P * P)]
        s.u = [InPort(data_bits) for _ in range(P)]
        s.a = [OutPort(data_bits) for _ in range(P * P)]
        s.wcol = [Wire(data_bits) for _ in range(P)]  # column col of the weight tile

        @update
        def up_weight_column():
            for i in range(P):
                s.wcol[i] @= s.wt[i * P]
                for c in range(1, P):
                    if s.col == c:
                        s.wcol[i] @= s.wt[i * P + c]

        @update
        def up_operands():
            for i in range(P):
                for j in range(P):
                    if s.outer & s.bp:
                        s.a[i * P + j] @= s.wcol[i]
                    elif s.outer:
                        s.a[i * P + j] @= s.u[i]
                    elif s.transpose:
                        s.a[i * P + j] @= s.wt[j * P + i]
                    else:
                        s.a[i * P + j] @= s.wt[i * P + j]

    def line_trace(s):
        mode = f"bp{int(s.col)}" if s.outer and s.bp else "outer" if s.outer else ("T" if s.transpose else "W")
        return f"ops[{mode}]"
