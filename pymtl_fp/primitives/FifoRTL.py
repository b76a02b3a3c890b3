"""First-in first-out buffer (RTL): a register array with an asynchronous (combinational) head
read, kept by the ring pointers of :class:`~pymtl_fp.primitives.RingPtrRTL.RingPtrRTL`.

Models, at register-transfer level, the output buffers, the skid and move queues and the done-mark
queue of the router/DMA: ``push`` writes ``push_data`` at the tail and ``pop`` drops the head at a
rising edge (both in one edge is fine, also when full); ``head`` is the oldest element, readable in
the cycle after it was pushed; ``count`` the number held after the last edge; ``peak`` the largest
``count`` since reset (with ``peak`` set).  A push that does not fit or a pop when empty is a caller bug: it sets the
sticky ``error`` output and is ignored.

Elaboration parameters: ``width`` (bits per element), ``depth`` (elements, a power of two >= 2),
``peak`` (whether to keep ``peak``).
In an FPGA flow the asynchronous read maps to distributed (LUT) RAM.
"""

from pymtl3 import Component, InPort, OutPort, Wire, update, update_ff

from pymtl_fp.primitives.RingPtrRTL import RingPtrRTL


class FifoRTL(Component):
    def construct(s, width=32, depth=16, peak=True):
        if not (isinstance(depth, int) and depth >= 2 and depth & (depth - 1) == 0):
            raise ValueError(f"FifoRTL: depth must be a power of two >= 2, got {depth!r}")
        s.params = dict(width=width, depth=depth, peak=peak)
        C = depth.bit_length()

        s.push = InPort()
        s.push_data = InPort(width)
        s.pop = InPort()
        s.head = OutPort(width)
        s.count = OutPort(C)
        s.error = OutPort()

        s.ring = RingPtrRTL(depth, 1, 1, peak)
        s.ring.push_n //= s.push
        s.ring.pop_n //= s.pop
        s.count //= s.ring.count
        if peak:
            s.peak = OutPort(C)
            s.peak //= s.ring.peak
        s.error //= s.ring.error
        s.mem = [Wire(width) for _ in range(depth)]

        @update
        def up_fifo_head():
            s.head @= s.mem[s.ring.hd]

        @update_ff
        def up_fifo_mem():
            if s.push & s.ring.ok_push:
                s.mem[s.ring.tl] <<= s.push_data

    def line_trace(s):
        return f"[{int(s.count)}]"
