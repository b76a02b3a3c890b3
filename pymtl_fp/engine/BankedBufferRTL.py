"""Banked on-chip buffer (RTL): ``lanes`` SramRTL banks sharing one read and one write address.

A word of ``lanes`` elements is read in one cycle (registered read: data the cycle after
``raddr``/``ren``); writes have a per-lane enable, so a loader can fill one element per cycle
and the datapath can write a whole word, or one row of a ``P x P`` weight word, at once.
Elaboration parameters: ``lanes``, ``width`` (bits per element), ``depth`` (words).
"""

from pymtl3 import Component, InPort, OutPort

from pymtl_fp.primitives.SramRTL import SramRTL, addr_bits


class BankedBufferRTL(Component):
    def construct(s, lanes=4, width=8, depth=64):
        s.params = dict(lanes=lanes, width=width, depth=depth)
        A = addr_bits(depth)
        s.raddr = InPort(A)
        s.ren = InPort()
        s.waddr = InPort(A)
        s.wen = [InPort() for _ in range(lanes)]
        s.wdata = [InPort(width) for _ in range(lanes)]
        s.rdata = [OutPort(width) for _ in range(lanes)]
        s.bank = [SramRTL(width, depth) for _ in range(lanes)]
        for i in range(lanes):
            s.bank[i].raddr //= s.raddr
            s.bank[i].ren //= s.ren
            s.bank[i].waddr //= s.waddr
            s.bank[i].wen //= s.wen[i]
            s.bank[i].wdata //= s.wdata[i]
            s.rdata[i] //= s.bank[i].rdata

    def line_trace(s):
        wl = "".join("w" if s.wen[i] else "." for i in range(len(s.wen)))
        return f"R{int(s.raddr):>4}{'*' if s.ren else ' '} W{int(s.waddr):>4}[{wl}]"
