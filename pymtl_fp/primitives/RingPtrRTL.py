"""Ring-buffer pointers (RTL): the head and tail addresses, the count, its peak and the overflow
flag of a ring of ``depth`` entries, for the FIFOs and rings that keep their entries beside it.

At a rising edge ``push_n`` entries append at the tail and ``pop_n`` entries leave the head (both
in one edge is fine, also when the ring is full: the pop makes the room):

* ``ok_push``: ``count - pop_n + push_n <= depth`` (combinational, from this cycle's inputs; the
  owner writes its entries at ``tl`` .. ``tl + push_n - 1`` only when ``ok_push``); a pop needs
  ``pop_n <= count``;
* ``hd``/``tl``: the head and tail addresses (modulo ``depth``), ``count`` the entries held after
  the last edge, ``peak`` the largest ``count`` since reset;
* a push that does not fit or a pop of more than is held is a caller bug: it is ignored and sets
  the sticky ``error`` (counts are kept on ``log2(depth) + 1`` bits, so a push is seen not to fit while
  ``count - pop_n + push_n < 2 * depth``: by up to ``depth - 1`` entries; the router's pushes are at
  most a beat, half its FIFOs' depth).

Elaboration parameters: ``depth`` (entries, a power of two >= 2), ``push_bits`` and ``pop_bits``
(the widths of ``push_n`` and ``pop_n``, at most ``log2(depth) + 1``), ``peak`` (whether to keep
``peak``), ``fast`` (the same values, computed for a short path from ``push_n``/``pop_n``: the
candidate counts in parallel, and the peak's update from ``push_n - pop_n`` against ``peak - count``,
a difference of registers, instead of from the next count; after an overflow or underflow,
which sets ``error``, its count and peak may differ from the plain ring's).
"""

from pymtl3 import Component, InPort, OutPort, Wire, mk_bits, update, update_ff, zext


class RingPtrRTL(Component):
    def construct(s, depth=16, push_bits=1, pop_bits=1, peak=True, fast=False):
        if not (isinstance(depth, int) and depth >= 2 and depth & (depth - 1) == 0):
            raise ValueError(f"RingPtrRTL: depth must be a power of two >= 2, got {depth!r}")
        A = depth.bit_length() - 1
        C = A + 1
        if not (1 <= push_bits <= C and 1 <= pop_bits <= C):
            raise ValueError(f"RingPtrRTL: push_bits and pop_bits must be 1..{C}, got {push_bits}, {pop_bits}")
        s.params = dict(depth=depth, push_bits=push_bits, pop_bits=pop_bits, peak=peak)
        if fast:
            s.params["fast"] = True
        CT, AT = mk_bits(C), mk_bits(A)
        FULL = CT(depth)
        ZERO_C = CT(0)

        s.push_n = InPort(push_bits)
        s.pop_n = InPort(pop_bits)
        s.ok_push = OutPort()
        s.hd = OutPort(A)
        s.tl = OutPort(A)
        s.count = OutPort(C)
        s.error = OutPort()

        s.ok_pop = Wire()
        s.push_c = Wire(C)
        s.pop_c = Wire(C)
        s.cnt_next = Wire(C)

        if not fast:
            @update
            def up_ring_next():
                s.push_c @= zext(s.push_n, C)
                s.pop_c @= zext(s.pop_n, C)
                s.ok_pop @= s.pop_c <= s.count
                s.ok_push @= (s.count - s.pop_c + s.push_c) <= FULL
                s.cnt_next @= s.count
                if s.ok_pop:
                    s.cnt_next @= s.count - s.pop_c
                if s.ok_push:
                    s.cnt_next @= s.cnt_next + s.push_c
        else:
            # the four counts an edge can leave, in parallel: pop and push, pop only, push only, neither
            DT = mk_bits(C + 1)
            s.c_both = Wire(C)
            s.c_pop = Wire(C)
            s.c_push = Wire(C)
            s.d = Wire(C + 1)      # push_n - pop_n, signed

            @update
            def up_ring_next_fast():
                s.push_c @= zext(s.push_n, C)
                s.pop_c @= zext(s.pop_n, C)
                s.d @= zext(s.push_n, DT) - zext(s.pop_n, DT)
                s.c_pop @= s.count - s.pop_c
                s.c_push @= s.count + s.push_c
                s.c_both @= s.count + s.d[0:C]
                s.ok_pop @= s.pop_c <= s.count
                s.ok_push @= s.c_both <= FULL
                if s.ok_pop & s.ok_push:
                    s.cnt_next @= s.c_both
                elif s.ok_pop:
                    s.cnt_next @= s.c_pop
                elif s.ok_push:
                    s.cnt_next @= s.c_push
                else:
                    s.cnt_next @= s.count

        @update_ff
        def up_ring_regs():
            if s.reset:
                s.hd <<= AT(0)
                s.tl <<= AT(0)
                s.count <<= ZERO_C
                s.error <<= 0
            else:
                if s.ok_push:
                    s.tl <<= s.tl + s.push_c[0:A]
                if s.ok_pop:
                    s.hd <<= s.hd + s.pop_c[0:A]
                s.count <<= s.cnt_next
                if ~s.ok_push | ~s.ok_pop:
                    s.error <<= 1

        if peak and not fast:
            s.peak = OutPort(C)

            @update_ff
            def up_ring_peak():
                if s.reset:
                    s.peak <<= ZERO_C
                elif s.cnt_next > s.peak:
                    s.peak <<= s.cnt_next
        elif peak:
            # count <= peak always, so the next count exceeds the peak only when something is pushed:
            # by push_n - pop_n > peak - count (both popped and pushed) or push_n > peak - count
            s.peak = OutPort(C)
            s.gap = Wire(C)
            s.peak_up = Wire()     # the next count exceeds the peak

            @update
            def up_ring_peak_gap():
                s.gap @= s.peak - s.count
                s.peak_up @= s.ok_push & ((s.ok_pop & ~s.d[C] & (s.d[0:C] > s.gap))
                                          | (~s.ok_pop & (s.push_c > s.gap)))

            @update_ff
            def up_ring_peak_fast():
                if s.reset:
                    s.peak <<= ZERO_C
                elif s.peak_up:
                    s.peak <<= s.cnt_next

    def line_trace(s):
        return f"{int(s.hd)}:{int(s.tl)}[{int(s.count)}]"
