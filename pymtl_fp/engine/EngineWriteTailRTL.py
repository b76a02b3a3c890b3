"""Write tail (RTL) of :class:`~pymtl_fp.engine.EngineComputeCtrlRTL.EngineComputeCtrlRTL`: whether a
write of the command is still on its way to the buffers.

With the pipelined MAC array (results ``mac_latency`` cycles after stage B; the drain runs that
much later too) and the pipelined requantizer (writes ``rq_latency`` cycles after its inputs), the
counter ``tail`` restarts at ``mac_latency + rq_latency`` with every stage-B step (``vB``) and at
``rq_latency`` with every drain cycle (``dr_busy``), and counts down; ``wb_idle`` where it is 0.
Only instantiated with a latency (without one every write happens in its stage-B or drain cycle).
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, update_ff


class EngineWriteTailRTL(Component):
    def construct(s, mac_latency=0, rq_latency=1):
        s.params = dict(mac_latency=mac_latency, rq_latency=rq_latency)
        if mac_latency + rq_latency < 1:
            raise ValueError("EngineWriteTailRTL: needs a latency (mac_latency + rq_latency >= 1)")
        TAIL_B, TAIL_DR = mk_bits(8)(mac_latency + rq_latency), mk_bits(8)(rq_latency)
        ZT, ONET = mk_bits(8)(0), mk_bits(8)(1)

        s.vB = InPort()  # a stage-B step
        s.dr_busy = InPort()  # a drain cycle
        s.wb_idle = OutPort()
        s.tail = Wire(8)

        @update_ff
        def up_tail():
            if s.reset:
                s.tail <<= ZT
            elif s.vB:
                s.tail <<= TAIL_B
            elif s.dr_busy & (s.tail <= TAIL_DR):
                s.tail <<= TAIL_DR
            elif s.tail != ZT:
                s.tail <<= s.tail - ONET

        @update
        def up_wb_idle():
            s.wb_idle @= s.tail == ZT

    def line_trace(s):
        return f"tail{int(s.tail)}"
