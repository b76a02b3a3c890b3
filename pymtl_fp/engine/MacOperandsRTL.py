"""MAC operand select (RTL, combinational): the left operand of every lane of both MAC arrays.

Lane ``(i, j)`` multiplies ``a[i*P + j]`` by ``v[j]``: ``a`` is the weight tile ``wt``
(``fwd``), its transpose (``transpose``: ``bwd_data``), or ``u[i]`` in every column (``outer``:
``bwd_weight``, ``u`` = dy).
"""

from pymtl3 import Component, InPort, OutPort, update


class MacOperandsRTL(Component):
    def construct(s, P=2, data_bits=8):
        s.params = dict(P=P, data_bits=data_bits)
        s.outer = InPort()
        s.transpose = InPort()
        s.wt = [InPort(data_bits) for _ in range(P * P)]
        s.u = [InPort(data_bits) for _ in range(P)]
        s.a = [OutPort(data_bits) for _ in range(P * P)]

        @update
        def up_operands():
            for i in range(P):
                for j in range(P):
                    if s.outer:
                        s.a[i * P + j] @= s.u[i]
                    elif s.transpose:
                        s.a[i * P + j] @= s.wt[j * P + i]
                    else:
                        s.a[i * P + j] @= s.wt[i * P + j]

    def line_trace(s):
        return f"ops[{'outer' if s.outer else ('T' if s.transpose else 'W')}]"
