"""The router's scratch FIFO (RTL): a ring buffer with a FIFO interface for the DMA's copies and
random reads relative to its head for the scalar units.

* ``push``/``push_data`` append at the tail, ``pop`` drops the head (the feeder's reads), at a
  rising edge; ``head`` is the oldest element (combinational read), ``count`` what is held;
* ``raddr0``/``raddr1`` read the elements at those offsets from the head (combinational:
  ``rdata0``/``rdata1``): the bias unit reads ``b[i]`` and ``db[i]``, the gather unit its runs;
* ``drop`` discards ``drop_n`` elements at the head (a scalar unit's consumed input) in one edge
  (with a push in the same edge allowed; ``pop`` and ``drop`` never come together);
* ``peak``: the largest ``count`` since reset; ``error`` (sticky): a push when full, or a pop /
  drop of more than is held.

Elaboration parameters: ``width``, ``depth`` (a power of two).
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, update_ff


class RouterScratchRTL(Component):
    def construct(s, width=32, depth=1024):
        if not (isinstance(depth, int) and depth >= 2 and depth & (depth - 1) == 0):
            raise ValueError(f"RouterScratchRTL: depth must be a power of two >= 2, got {depth!r}")
        s.params = dict(width=width, depth=depth)
        A = depth.bit_length() - 1
        C = A + 1
        CT = mk_bits(C)
        AT = mk_bits(A)
        FULL = CT(depth)
        ONE_A = AT(1)
        ONE_C = CT(1)
        ZERO_C = CT(0)

        s.push = InPort()
        s.push_data = InPort(width)
        s.pop = InPort()
        s.head = OutPort(width)
        s.count = OutPort(C)
        s.peak = OutPort(C)
        s.error = OutPort()
        s.raddr0 = InPort(A)
        s.rdata0 = OutPort(width)
        s.raddr1 = InPort(A)
        s.rdata1 = OutPort(width)
        s.drop = InPort()
        s.drop_n = InPort(C)

        s.mem = [Wire(width) for _ in range(depth)]
        s.hd = Wire(A)
        s.tl = Wire(A)
        s.do_push = Wire()
        s.do_pop = Wire()
        s.do_drop = Wire()
        s.a0 = Wire(A)
        s.a1 = Wire(A)
        s.cnt_next = Wire(C)

        @update
        def up_scratch_read():
            s.head @= s.mem[s.hd]
            s.a0 @= s.hd + s.raddr0
            s.a1 @= s.hd + s.raddr1
            s.rdata0 @= s.mem[s.a0]
            s.rdata1 @= s.mem[s.a1]
            s.do_pop @= s.pop & (s.count != ZERO_C)
            s.do_push @= s.push & ((s.count != FULL) | s.do_pop)  # (a REDUCE pops and pushes at once)
            s.do_drop @= s.drop & (s.drop_n <= s.count)

        @update
        def up_scratch_count():
            s.cnt_next @= s.count
            if s.do_drop:
                s.cnt_next @= s.count - s.drop_n
            elif s.do_pop:
                s.cnt_next @= s.count - ONE_C
            if s.do_push:
                s.cnt_next @= s.cnt_next + ONE_C

        @update_ff
        def up_scratch_mem():
            if s.do_push:
                s.mem[s.tl] <<= s.push_data

        @update_ff
        def up_scratch_ptrs():
            if s.reset:
                s.hd <<= AT(0)
                s.tl <<= AT(0)
                s.count <<= ZERO_C
                s.peak <<= ZERO_C
                s.error <<= 0
            else:
                if s.do_push:
                    s.tl <<= s.tl + ONE_A
                if s.do_drop:
                    s.hd <<= s.hd + s.drop_n[0:A]
                elif s.do_pop:
                    s.hd <<= s.hd + ONE_A
                s.count <<= s.cnt_next
                if s.cnt_next > s.peak:
                    s.peak <<= s.cnt_next
                if (s.push & ~s.do_push) | (s.pop & ~s.do_pop) | (s.drop & ~s.do_drop):
                    s.error <<= 1

    def line_trace(s):
        return f"[{int(s.count)}]"
