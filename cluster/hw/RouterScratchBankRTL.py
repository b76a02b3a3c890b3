"""One bank of the router's scratch FIFO (RTL): ``rows`` elements of ``width`` bits with one write
port and three combinational read ports, the shape Yosys maps to LUT RAM (RAM64M / RAM32M: one
write, up to three reads besides it).  :class:`~pymtl_fp.cluster.hw.RouterScratchRTL.RouterScratchRTL`
keeps a beat of ``lanes`` elements in ``lanes`` of these banks (element ``i`` in bank
``i % lanes``), so each bank takes at most one element an edge.

Ports: ``wen``/``waddr``/``wdata`` (written at the rising edge), ``raddr[k]`` -> ``rdata[k]``
for k = 0 (the FIFO's head), 1 and 2 (the scalar units' random reads).
"""

from pymtl3 import Component, InPort, OutPort, Wire, update, update_ff

#: read ports of a bank
READS = 3


class RouterScratchBankRTL(Component):
    def construct(s, width=32, rows=512):
        if not (isinstance(rows, int) and rows >= 2 and rows & (rows - 1) == 0):
            raise ValueError(f"RouterScratchBankRTL: rows must be a power of two >= 2, got {rows!r}")
        RA = rows.bit_length() - 1
        s.wen = InPort()
        s.waddr = InPort(RA)
        s.wdata = InPort(width)
        s.raddr = [InPort(RA) for _ in range(READS)]
        s.rdata = [OutPort(width) for _ in range(READS)]
        s.mem = [Wire(width) for _ in range(rows)]

        @update
        def up_bank_read():
            for k in range(READS):
                s.rdata[k] @= s.mem[s.raddr[k]]

        @update_ff
        def up_bank_write():
            if s.wen:
                s.mem[s.waddr] <<= s.wdata

    def line_trace(s):
        return f"{'w' if s.wen else ' '}{int(s.waddr)}"
