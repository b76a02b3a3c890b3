"""EX's addresses of a step (RTL): the address generator's two parts added, with or without the
address stage.

Read address ``b`` (X, D, W, G, B: ``AddrGenRTL.READ_BUFS``) is ``rd_base[b]`` plus the product
of address unit ``rd_unit[b]`` (``prod``; none for ``NO_UNIT``), and write address ``j`` (the
result, and ``bwd_weight``'s db row or ``pool_fwd``'s argmax) ``wr_base[j]`` plus that of
``wr_unit[j]``.  With ``addr_latency`` = 1 (``EngineConfig.pipelined_addr``) the parts are
registered first and added in the next cycle: the address units' products (``derived coordinate
x width``, a DSP48 each) end at a register -- the DSP's own -- and only the last add and the
buffer's read-port select lie before the block RAM (the write addresses then go on to stage B
with the step, :class:`~pymtl_fp.engine.EngineComputeCtrlRTL.EngineComputeCtrlRTL`); with 0 the
sums are combinational, as the address generator's were.
"""

from pymtl3 import Component, InPort, OutPort, Wire, connect, update

from pymtl_fp.engine.addr_layout import NPROD
from pymtl_fp.engine.AddrRoutesRTL import NO_UNIT, NWR, READ_BUFS
from pymtl_fp.primitives.DelayLineRTL import delayed


class EngineStepAddrRTL(Component):
    def construct(s, addr_latency=0):
        s.params = dict(addr_latency=addr_latency)
        NA = len(READ_BUFS) + NWR  # the reads' addresses, then the writes'
        s.rd_base = [InPort(32) for _ in range(len(READ_BUFS))]
        s.rd_unit = [InPort(2) for _ in range(len(READ_BUFS))]
        s.wr_base = [InPort(32) for _ in range(NWR)]
        s.wr_unit = [InPort(2) for _ in range(NWR)]
        s.prod = [InPort(32) for _ in range(NPROD)]
        s.addr = [OutPort(32) for _ in range(len(READ_BUFS))]
        s.wr_addr = [OutPort(32) for _ in range(NWR)]

        s.base_q = [Wire(32) for _ in range(NA)]
        s.unit_q = [Wire(2) for _ in range(NA)]
        s.prod_q = [Wire(32) for _ in range(NPROD)]
        s.sum = [Wire(32) for _ in range(NA)]
        for dst, name, src in ((s.base_q, "a2_base", s.rd_base + s.wr_base),
                               (s.unit_q, "a2_unit", s.rd_unit + s.wr_unit), (s.prod_q, "a2_prod", s.prod)):
            for d, q in zip(dst, delayed(s, name, src, addr_latency)):
                connect(d, q)
        assert NO_UNIT == NPROD  # a unit 0 .. NPROD-1 names a product, NO_UNIT none
        for b in range(len(READ_BUFS)):
            s.addr[b] //= s.sum[b]
        for j in range(NWR):
            s.wr_addr[j] //= s.sum[len(READ_BUFS) + j]

        @update
        def up_step_addresses():
            for a in range(NA):
                s.sum[a] @= s.base_q[a]
                for au in range(NPROD):
                    if s.unit_q[a] == au:
                        s.sum[a] @= s.base_q[a] + s.prod_q[au]

    def line_trace(s):
        return "ra[" + " ".join(str(int(a)) for a in s.addr) + "|" + " ".join(str(int(a)) for a in s.wr_addr) + "]"
