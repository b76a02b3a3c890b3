"""First-in first-out buffer (RTL): a register array with head/tail pointers and an
asynchronous (combinational) head read.

Models, at register-transfer level, the output buffers of the router/DMA: ``push`` writes
``push_data`` at the tail and ``pop`` drops the head at a rising edge (both in one edge is
fine); ``head`` is the oldest element, readable in the cycle after it was pushed; ``count`` the
number held after the last edge; ``peak`` the largest ``count`` since reset.  A push when full
or a pop when empty is a caller bug: it sets the sticky ``error`` output and is ignored.

Elaboration parameters: ``width`` (bits per element), ``depth`` (elements, a power of two >= 2).
In an FPGA flow the asynchronous read maps to distributed (LUT) RAM.
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, update_ff


def _log2(depth: int) -> int:
    return depth.bit_length() - 1


class FifoRTL(Component):
    def construct(s, width=32, depth=16):
        if not (isinstance(depth, int) and depth >= 2 and depth & (depth - 1) == 0):
            raise ValueError(f"FifoRTL: depth must be a power of two >= 2, got {depth!r}")
        s.params = dict(width=width, depth=depth)
        A = _log2(depth)
        C = A + 1
        CT = mk_bits(C)
        AT = mk_bits(A)
        FULL = CT(depth)
        ONE_A = AT(1)
        ONE_C = CT(1)

        s.push = InPort()
        s.push_data = InPort(width)
        s.pop = InPort()
        s.head = OutPort(width)
        s.count = OutPort(C)
        s.peak = OutPort(C)
        s.error = OutPort()

        s.mem = [Wire(width) for _ in range(depth)]
        s.hd = Wire(A)
        s.tl = Wire(A)
        s.do_push = Wire()
        s.do_pop = Wire()

        @update
        def up_fifo_head():
            s.head @= s.mem[s.hd]
            s.do_push @= s.push & (s.count != FULL)
            s.do_pop @= s.pop & (s.count != CT(0))

        @update_ff
        def up_fifo_mem():
            if s.do_push:
                s.mem[s.tl] <<= s.push_data

        @update_ff
        def up_fifo_ptrs():
            if s.reset:
                s.hd <<= AT(0)
                s.tl <<= AT(0)
                s.count <<= CT(0)
                s.peak <<= CT(0)
                s.error <<= 0
            else:
                if s.do_push:
                    s.tl <<= s.tl + ONE_A
                if s.do_pop:
                    s.hd <<= s.hd + ONE_A
                if s.do_push & ~s.do_pop:
                    s.count <<= s.count + ONE_C
                    if s.count + ONE_C > s.peak:
                        s.peak <<= s.count + ONE_C
                elif s.do_pop & ~s.do_push:
                    s.count <<= s.count - ONE_C
                if (s.push & ~s.do_push) | (s.pop & ~s.do_pop):
                    s.error <<= 1

    def line_trace(s):
        return f"[{int(s.count)}]"
