"""``update``'s operand rows (RTL, combinational, stage B): row ``rowB`` of the W and G words read.

``update`` steps through the rows of each ``P x P`` weight word, one a cycle; this picks row
``rowB`` of the word read from W (``w_row``: the weights the write-back subtracts from) and from
G (``g_row``: the gradient the requantizer rounds), so that only ``P`` lanes of each travel down
the pipeline, not ``P x P``.  Rows outside the word (``rowB >= P``) read as zeros.
"""

from pymtl3 import Component, InPort, OutPort, mk_bits, update


class EngineUpdateRowsRTL(Component):
    def construct(s, P=2, data_bits=8):
        s.params = dict(P=P, data_bits=data_bits)
        ZD = mk_bits(data_bits)(0)
        s.rowB = InPort(16)
        s.w_rd = [InPort(data_bits) for _ in range(P * P)]
        s.g_rd = [InPort(data_bits) for _ in range(P * P)]
        s.w_row = [OutPort(data_bits) for _ in range(P)]
        s.g_row = [OutPort(data_bits) for _ in range(P)]

        @update
        def up_update_rows():
            for j in range(P):
                s.w_row[j] @= ZD
                s.g_row[j] @= ZD
            for r in range(P):
                if s.rowB == r:
                    for j in range(P):
                        s.w_row[j] @= s.w_rd[r * P + j]
                        s.g_row[j] @= s.g_rd[r * P + j]

    def line_trace(s):
        return f"rows[{int(s.rowB)}]"
