"""The router's done marks (RTL): instructions with a done mark wait here until the LOAD and STORE
moves issued before them have finished.

A fresh instruction with a done mark (``push``, ``push_id``) enters a queue (a
:class:`~pymtl_fp.primitives.FifoRTL.FifoRTL` of ``depth`` entries) with the counts of LOAD and
STORE moves issued so far (``feed_push``/``drain_push`` count them); the head is complete
(``done_val``, ``done_id``; it leaves at that edge) once as many moves have finished
(``feed_done``/``drain_done``).  ``error`` (sticky): a mark that found the queue full.  Cycle for
cycle the done marks of :class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`.  Elaboration parameter:
``depth`` (marks waiting at once, a power of two).
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, mk_bits, update, update_ff

from pymtl_fp.cluster import isa
from pymtl_fp.primitives.FifoRTL import FifoRTL


class RouterPendRTL(Component):
    def construct(s, depth=4):
        DB = isa.DONE_BITS
        ZC = mk_bits(depth.bit_length())(0)
        W0, W1 = Bits32(0), Bits32(1)
        s.params = dict(depth=depth)

        s.push = InPort()
        s.push_id = InPort(DB)
        s.feed_push = InPort()
        s.drain_push = InPort()
        s.feed_done = InPort()
        s.drain_done = InPort()
        s.done_val = OutPort()
        s.done_id = OutPort(DB)
        s.error = OutPort()

        s.n_feed = Wire(32)       # LOAD / STORE moves issued, and finished
        s.n_drain = Wire(32)
        s.n_feed_done = Wire(32)
        s.n_drain_done = Wire(32)
        s.hd_nf = Wire(32)        # the head mark's counts
        s.hd_nd = Wire(32)
        s.marks = FifoRTL(DB + 64, depth, peak=False)
        s.marks.push //= s.push
        s.marks.push_data[64:64 + DB] //= s.push_id
        s.marks.push_data[32:64] //= s.n_feed
        s.marks.push_data[0:32] //= s.n_drain
        s.marks.pop //= s.done_val
        s.done_id //= s.marks.head[64:64 + DB]
        s.hd_nf //= s.marks.head[32:64]
        s.hd_nd //= s.marks.head[0:32]
        s.error //= s.marks.error

        @update
        def up_pend_ready():
            s.done_val @= (s.marks.count != ZC) & (s.n_feed_done >= s.hd_nf) & (s.n_drain_done >= s.hd_nd)

        @update_ff
        def up_pend_counts():
            if s.reset:
                s.n_feed <<= W0
                s.n_drain <<= W0
                s.n_feed_done <<= W0
                s.n_drain_done <<= W0
            else:
                if s.feed_push:
                    s.n_feed <<= s.n_feed + W1
                if s.drain_push:
                    s.n_drain <<= s.n_drain + W1
                if s.feed_done:
                    s.n_feed_done <<= s.n_feed_done + W1
                if s.drain_done:
                    s.n_drain_done <<= s.n_drain_done + W1

    def line_trace(s):
        return f"P{int(s.marks.count)}"
