"""EX's read addresses (RTL): the address generator's two parts added, with or without the
address stage.

Read address ``b`` (X, D, W, G, B: ``AddrGenRTL.READ_BUFS``) is ``rd_base[b]`` plus the product
of address unit ``rd_unit[b]`` (``prod``; none for ``NO_UNIT``).  With ``addr_latency`` = 1
(``EngineConfig.pipelined_addr``) the parts are registered first and added in the next cycle: the
address units' products (``derived coordinate x width``, a DSP48 each) end at a register -- the
DSP's own -- and only the last add and the buffer's read-port select lie before the block RAM;
with 0 the sum is combinational, as the address generator's was.
"""

from pymtl3 import Component, InPort, OutPort, Wire, connect, update

from pymtl_fp.engine.AddrGenRTL import NO_UNIT, READ_BUFS
from pymtl_fp.engine.AddrUnitsRTL import NPROD
from pymtl_fp.primitives.DelayLineRTL import delayed


class EngineReadAddrRTL(Component):
    def construct(s, addr_latency=0):
        s.params = dict(addr_latency=addr_latency)
        NB = len(READ_BUFS)
        s.rd_base = [InPort(32) for _ in range(NB)]
        s.rd_unit = [InPort(2) for _ in range(NB)]
        s.prod = [InPort(32) for _ in range(NPROD)]
        s.addr = [OutPort(32) for _ in range(NB)]

        s.base_q = [Wire(32) for _ in range(NB)]
        s.unit_q = [Wire(2) for _ in range(NB)]
        s.prod_q = [Wire(32) for _ in range(NPROD)]
        for dst, name, src in ((s.base_q, "a2_base", s.rd_base), (s.unit_q, "a2_unit", s.rd_unit),
                               (s.prod_q, "a2_prod", s.prod)):
            for d, q in zip(dst, delayed(s, name, src, addr_latency)):
                connect(d, q)
        assert NO_UNIT == NPROD  # rd_unit 0 .. NPROD-1 names a product, NO_UNIT none

        @update
        def up_read_addresses():
            for b in range(NB):
                s.addr[b] @= s.base_q[b]
                for au in range(NPROD):
                    if s.unit_q[b] == au:
                        s.addr[b] @= s.base_q[b] + s.prod_q[au]

    def line_trace(s):
        return "ra[" + " ".join(str(int(a)) for a in s.addr) + "]"
