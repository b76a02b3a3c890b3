"""One bank of the router's scratch FIFO (RTL): ``rows`` elements of ``width`` bits with one write
port and three combinational read ports, the shape Yosys maps to LUT RAM (RAM64M / RAM32M: one
write, up to three reads besides it).  :class:`~pymtl_fp.cluster.hw.RouterScratchRTL.RouterScratchRTL`
keeps a beat of ``lanes`` elements in ``lanes`` of these banks (element ``i`` in bank
``i % lanes``), so each bank takes at most one element an edge.

Ports: ``wen``/``waddr``/``wdata`` (written at the rising edge), ``raddr[k]`` -> ``rdata[k]``
for k = 0 (the FIFO's head), 1 and 2 (the scalar units' random reads).

With ``wreg`` (a pipelined router's) the write is registered: an element written at an edge waits
in a register (``wr_val``, ``wr_addr``, ``wr_data``) until the next edge writes it into the LUT RAM,
and a read of its row meanwhile takes the register.  Every read port gives the same value in every
cycle as without it, but nothing drives the memory's data inputs but that register: the data
input of a deep LUT RAM fans out to every one of its RAM64M cells (4,096 rows of a scratch FIFO:
256 of them a bit), which the logic in front of it (the engine's store selection, the router's
push selection) would otherwise have to drive in the same cycle.
"""

from pymtl3 import Component, InPort, OutPort, Wire, update, update_ff

#: read ports of a bank
READS = 3


class RouterScratchBankRTL(Component):
    def construct(s, width=32, rows=512, wreg=False):
        if not (isinstance(rows, int) and rows >= 2 and rows & (rows - 1) == 0):
            raise ValueError(f"RouterScratchBankRTL: rows must be a power of two >= 2, got {rows!r}")
        RA = rows.bit_length() - 1
        s.wen = InPort()
        s.waddr = InPort(RA)
        s.wdata = InPort(width)
        s.raddr = [InPort(RA) for _ in range(READS)]
        s.rdata = [OutPort(width) for _ in range(READS)]
        s.mem = [Wire(width) for _ in range(rows)]
        if wreg:
            s.params = dict(width=width, rows=rows, wreg=True)
            s.wr_val = Wire()
            s.wr_addr = Wire(RA)
            s.wr_data = Wire(width)

            @update
            def up_bank_read_wreg():
                for k in range(READS):
                    if s.wr_val & (s.wr_addr == s.raddr[k]):
                        s.rdata[k] @= s.wr_data
                    else:
                        s.rdata[k] @= s.mem[s.raddr[k]]

            @update_ff
            def up_bank_write_wreg():
                if s.reset:
                    s.wr_val <<= 0
                else:
                    s.wr_val <<= s.wen
                s.wr_addr <<= s.waddr
                s.wr_data <<= s.wdata
                if s.wr_val:
                    s.mem[s.wr_addr] <<= s.wr_data
        else:
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
