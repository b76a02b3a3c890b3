"""First-in first-out buffer (RTL): a register array with an asynchronous (combinational) head
read, kept by the ring pointers of :class:`~pymtl_fp.primitives.RingPtrRTL.RingPtrRTL`.

Models, at register-transfer level, the output buffers, the skid and move queues and the done-mark
queue of the router/DMA: ``push`` writes ``push_data`` at the tail and ``pop`` drops the head at a
rising edge (both in one edge is fine, also when full); ``head`` is the oldest element, readable in
the cycle after it was pushed; ``count`` the number held after the last edge; ``peak`` the largest
``count`` since reset (with ``peak`` set).  A push that does not fit or a pop when empty is a caller bug: it sets the
sticky ``error`` output and is ignored.

Elaboration parameters: ``width`` (bits per element), ``depth`` (elements, a power of two >= 2),
``peak`` (whether to keep ``peak``).  :class:`FifoWregRTL` is the same FIFO with its write
registered: a pushed element waits one edge in a register (``wr_val``, ``wr_addr``, ``wr_data``)
before it is written into the array, and the head is read from that register while its slot is the
head's; the same values at every port in every cycle, with only registers in front of the array's
write port (the output buffers of a pipelined router).
In an FPGA flow the asynchronous read maps to distributed (LUT) RAM, or to block RAM when the head's
address register is merged into its read port (a deep buffer).
"""

from pymtl3 import Component, InPort, OutPort, Wire, update, update_ff

from pymtl_fp.primitives.RingPtrRTL import RingPtrRTL


class FifoRTL(Component):
    def construct(s, width=32, depth=16, peak=True):
        _fifo(s, width, depth, peak, False)

    def line_trace(s):
        return f"[{int(s.count)}]"


class FifoWregRTL(FifoRTL):
    """:class:`FifoRTL` with its write registered (the module docstring)."""

    def construct(s, width=32, depth=16, peak=True):
        _fifo(s, width, depth, peak, True)


def _fifo(s, width, depth, peak, wreg):
    """The FIFO's ports, ring, array and update blocks; ``wreg``: the registered write."""
    if not (isinstance(depth, int) and depth >= 2 and depth & (depth - 1) == 0):
        raise ValueError(f"FifoRTL: depth must be a power of two >= 2, got {depth!r}")
    s.params = dict(width=width, depth=depth, peak=peak)
    if wreg:
        s.params["wreg"] = True
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

    if not wreg:
        @update
        def up_fifo_head():
            s.head @= s.mem[s.ring.hd]

        @update_ff
        def up_fifo_mem():
            if s.push & s.ring.ok_push:
                s.mem[s.ring.tl] <<= s.push_data
    else:
        s.wr_val = Wire()
        s.wr_addr = Wire(C - 1)
        s.wr_data = Wire(width)

        @update
        def up_fifo_head_wreg():
            if s.wr_val & (s.wr_addr == s.ring.hd):
                s.head @= s.wr_data
            else:
                s.head @= s.mem[s.ring.hd]

        @update_ff
        def up_fifo_mem_wreg():
            if s.reset:
                s.wr_val <<= 0
            else:
                s.wr_val <<= s.push & s.ring.ok_push
            s.wr_addr <<= s.ring.tl
            s.wr_data <<= s.push_data
            if s.wr_val:
                s.mem[s.wr_addr] <<= s.wr_data
