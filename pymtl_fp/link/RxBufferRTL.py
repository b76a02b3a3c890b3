"""Receive buffer (RTL): the receiver's FIFO of ``credits`` whole messages.

A plain first-in first-out queue without bypass: a message written in cycle t can leave from
cycle t+1 (``deq_val`` is "not empty", from registers only).  Its size is the credit count the
sender starts with, so an accepted message always finds room; ``enq_rdy`` exists so the receiver
can flag an overflow (a protocol bug) instead of losing a message silently.
Synthesizable; elaboration parameters: ``msg_bits``, ``entries``.
"""

from pymtl3 import Bits, Component, InPort, OutPort, Wire, mk_bits, update, update_ff

from pymtl_fp.link.config import clog2


class RxBufferRTL(Component):
    def construct(s, msg_bits, entries):
        if not (isinstance(entries, int) and entries >= 1):
            raise ValueError(f"RxBufferRTL: entries must be an int >= 1, got {entries!r}")
        s.params = dict(msg_bits=msg_bits, entries=entries)
        s.enq_val = InPort()
        s.enq_rdy = OutPort()
        s.enq_msg = InPort(msg_bits)
        s.deq_val = OutPort()
        s.deq_rdy = InPort()
        s.deq_msg = OutPort(msg_bits)
        CB = clog2(entries + 1)
        s.count = Wire(CB)
        FULL = Bits(CB, entries)
        CT = mk_bits(CB)
        s.enq_xfer = Wire()
        s.deq_xfer = Wire()

        @update
        def up_status():
            s.enq_rdy @= s.count != FULL
            s.deq_val @= s.count != 0

        @update
        def up_xfer():
            s.enq_xfer @= s.enq_val & s.enq_rdy
            s.deq_xfer @= s.deq_val & s.deq_rdy

        @update_ff
        def up_count():
            if s.reset:
                s.count <<= 0
            elif s.enq_xfer & ~s.deq_xfer:
                s.count <<= s.count + CT(1)
            elif s.deq_xfer & ~s.enq_xfer:
                s.count <<= s.count - CT(1)

        if entries == 1:
            s.entry = Wire(msg_bits)
            s.deq_msg //= s.entry

            @update_ff
            def up_entry():
                if s.enq_xfer:
                    s.entry <<= s.enq_msg
            return

        AB = clog2(entries)
        LAST = Bits(AB, entries - 1)
        AT = mk_bits(AB)
        s.mem = [Wire(msg_bits) for _ in range(entries)]
        s.head = Wire(AB)
        s.tail = Wire(AB)

        @update
        def up_read():
            s.deq_msg @= s.mem[s.head]

        @update_ff
        def up_ptrs():
            if s.reset:
                s.head <<= 0
                s.tail <<= 0
            else:
                if s.enq_xfer:
                    if s.tail == LAST:
                        s.tail <<= 0
                    else:
                        s.tail <<= s.tail + AT(1)
                if s.deq_xfer:
                    if s.head == LAST:
                        s.head <<= 0
                    else:
                        s.head <<= s.head + AT(1)
            if s.enq_xfer:
                s.mem[s.tail] <<= s.enq_msg

    def line_trace(s):
        return f"({int(s.count):>2})"
