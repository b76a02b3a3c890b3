"""Simple dual-port SRAM (RTL): one write port, one read port, registered read.

Models, at register-transfer level, an on-chip block RAM in "simple dual port" use (the shape
Xilinx/Intel tools map to BRAM / M20K): one clock, one write port and one read port.

* write: when ``wen`` is high at a rising edge, ``mem[waddr] <= wdata``;
* read: when ``ren`` is high at a rising edge, ``rdata <= mem[raddr]`` -- the data appears the
  cycle after ``raddr``/``ren``; with ``ren`` low, ``rdata`` holds its value;
* read and write of the same address in the same cycle return the **old** word (read-first);
* ``reset`` clears ``rdata`` only (a synchronous output-register reset, which BRAMs have); writes
  still happen during reset, and the array itself is never reset, so that synthesis can map it
  to a block RAM.  The PyMTL3 simulation starts the array at zero, Verilator's model at its
  X-initial value: read only words that were written;
* when ``depth`` is not a power of two, writes to addresses ``>= depth`` are ignored and reads
  from them return 0 (with a power-of-two depth there is no such address and no guard logic).

Elaboration parameters: ``width`` (bits per word, 1..1024), ``depth`` (words, >= 1).
Ports: in ``raddr`` (addr_bits), ``ren`` (1), ``waddr`` (addr_bits), ``wen`` (1),
``wdata`` (width); out ``rdata`` (width), where ``addr_bits = max(1, ceil(log2(depth)))``
(:func:`addr_bits`).
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update_ff


def addr_bits(depth: int) -> int:
    """Address width of an SRAM of ``depth`` words."""
    return max(1, (depth - 1).bit_length())


class SramRTL(Component):
    def construct(s, width=32, depth=256):
        if not (1 <= width <= 1024 and depth >= 1):
            raise ValueError(f"SramRTL needs 1 <= width <= 1024 and depth >= 1, got width={width}, depth={depth}")
        s.params = dict(width=width, depth=depth)
        s.addr_bits = nbits = addr_bits(depth)
        Word = mk_bits(width)
        Addr = mk_bits(nbits)
        ZERO = Word(0)

        s.raddr = InPort(nbits)
        s.ren = InPort()
        s.rdata = OutPort(width)
        s.waddr = InPort(nbits)
        s.wen = InPort()
        s.wdata = InPort(width)

        s.mem = [Wire(width) for _ in range(depth)]

        if (1 << nbits) == depth:
            @update_ff
            def up_write():
                if s.wen:
                    s.mem[s.waddr] <<= s.wdata

            @update_ff
            def up_read():
                if s.reset:
                    s.rdata <<= ZERO
                elif s.ren:
                    s.rdata <<= s.mem[s.raddr]
        else:
            DEPTH = Addr(depth)

            @update_ff
            def up_write_guarded():
                if s.wen & (s.waddr < DEPTH):
                    s.mem[s.waddr] <<= s.wdata

            @update_ff
            def up_read_guarded():
                if s.reset:
                    s.rdata <<= ZERO
                elif s.ren:
                    if s.raddr < DEPTH:
                        s.rdata <<= s.mem[s.raddr]
                    else:
                        s.rdata <<= ZERO

    def line_trace(s):
        w = f"W[{int(s.waddr):>4}]={s.wdata}" if s.wen else " " * (9 + len(str(s.wdata)))
        r = f"R[{int(s.raddr):>4}]" if s.ren else " " * 7
        return f"{w} {r} > {s.rdata}"
