"""Address ranges of an offered command (RTL, combinational): what the hazard check compares.

A command touches up to ``NSLOT = 5`` ranges, slot ``i`` = address field ``i`` of the command
(``a0 a1 a2`` read, ``d0 d1`` written; a raw ``bwd_weight`` with ``acc`` reads B's ``dw`` and ``db``
words in slot 2), exactly as :func:`pymtl_fp.engine.msgs.access_ranges` lists them; a LOAD (write)
or STORE (read) has one range, in slot 0.  Each slot gives the buffer
(``buf_id``), whether the command writes it (``wr``), whether the slot is used (``v``) and the range
``[lo, hi)`` in *elements* of that buffer (words times lanes: ``P`` lanes, ``P*P`` for W and G),
so a LOAD/STORE range is ``[addr * lanes, addr * lanes + count)`` without a division.  Two
element ranges of a buffer intersect exactly when the word ranges of ``access_ranges`` do.
Arithmetic is 32-bit (exact for every command whose ranges fit the buffers).  The tensor sizes
(``n*ct*h*w`` words, ...) are command fields the host computes
(:data:`pymtl_fp.engine.encoding.PRODUCTS`); what is left are multiplies by the constant lanes.
"""

from pymtl3 import Bits3, Bits32, Component, InPort, OutPort, Wire, update, zext

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type

NSLOT = 5  # address-range slots of a command (fields a0, a1, a2, d0, d1)


class EngineCmdRangesRTL(Component):
    def construct(s, P=2):
        s.params = dict(P=P)
        B32 = Bits32
        LP32, LPP32 = B32(P), B32(P * P)
        OP_LOAD, OP_STORE = msgs.OP_LOAD, msgs.OP_STORE
        OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT
        OP_POOL_FWD, OP_POOL_BWD, OP_UPDATE = msgs.OP_POOL_FWD, msgs.OP_POOL_BWD, msgs.OP_UPDATE
        BUF_X, BUF_D, BUF_O, BUF_W, BUF_G, BUF_B = (msgs.BUF_X, msgs.BUF_D, msgs.BUF_O, msgs.BUF_W,
                                                    msgs.BUF_G, msgs.BUF_B)
        DSEL_X, DSEL_D = msgs.DSEL_X, msgs.DSEL_D

        s.cmd = InPort(cmd_type())
        s.buf_id = [OutPort(3) for _ in range(NSLOT)]
        s.lo = [OutPort(32) for _ in range(NSLOT)]
        s.hi = [OutPort(32) for _ in range(NSLOT)]
        s.wr = [OutPort() for _ in range(NSLOT)]
        s.v = [OutPort() for _ in range(NSLOT)]

        s.is_ldst = Wire()  # LOAD or STORE: one range in slot 0
        # tensor sizes in words: x, dy, w, pooled output, bias/db
        s.sz_x, s.sz_dy, s.sz_w, s.sz_pool, s.sz_kt = Wire(32), Wire(32), Wire(32), Wire(32), Wire(32)
        s.base = [Wire(32) for _ in range(NSLOT)]
        s.size = [Wire(32) for _ in range(NSLOT)]
        s.dbuf = Wire(3)  # the buffer of the d0 result (field dsel)
        s.ambuf = Wire(3)  # the buffer of a pool command's argmax (field amsel)

        @update
        def up_sizes():
            # the host's products (encoding.PRODUCTS): no multiplier on the acceptance path
            s.sz_x @= zext(s.cmd.sz_x, B32)
            s.sz_dy @= zext(s.cmd.sz_dy, B32)
            s.sz_w @= zext(s.cmd.sz_w, B32)
            s.sz_pool @= zext(s.cmd.sz_pool, B32)
            s.sz_kt @= zext(s.cmd.kt, B32)

        @update
        def up_result_bufs():
            if s.cmd.dsel == DSEL_X:
                s.dbuf @= Bits3(BUF_X)
            elif s.cmd.dsel == DSEL_D:
                s.dbuf @= Bits3(BUF_D)
            else:
                s.dbuf @= Bits3(BUF_O)
            if s.cmd.amsel:
                s.ambuf @= Bits3(BUF_O)
            else:
                s.ambuf @= Bits3(BUF_X)

        @update
        def up_ranges():
            # slot i is address field i (a0 a1 a2 read, d0 d1 written), as msgs.access_ranges
            s.is_ldst @= (s.cmd.op == OP_LOAD) | (s.cmd.op == OP_STORE)
            s.base[0] @= zext(s.cmd.a0, B32)
            s.base[1] @= zext(s.cmd.a1, B32)
            s.base[2] @= zext(s.cmd.a2, B32)
            s.base[3] @= zext(s.cmd.d0, B32)
            s.base[4] @= zext(s.cmd.d1, B32)
            s.wr[0] @= 0
            s.wr[1] @= 0
            s.wr[2] @= 0
            s.wr[3] @= 1
            s.wr[4] @= 1
            for i in range(NSLOT):
                s.buf_id[i] @= Bits3(BUF_X)
                s.size[i] @= B32(0)
                s.v[i] @= 0
            if s.cmd.op == OP_FWD:
                s.buf_id[1] @= Bits3(BUF_W)
                s.buf_id[2] @= Bits3(BUF_B)
                s.buf_id[3] @= s.dbuf
                s.size[0] @= s.sz_x
                s.size[1] @= s.sz_w
                s.size[2] @= s.sz_kt
                s.size[3] @= s.sz_dy
                s.v[0] @= 1
                s.v[1] @= 1
                s.v[2] @= 1
                s.v[3] @= 1
            elif s.cmd.op == OP_BWD_DATA:
                s.buf_id[0] @= Bits3(BUF_D)
                s.buf_id[1] @= Bits3(BUF_W)
                s.buf_id[3] @= s.dbuf
                s.size[0] @= s.sz_dy
                s.size[1] @= s.sz_w
                s.size[2] @= s.sz_x
                s.size[3] @= s.sz_x
                s.v[0] @= 1
                s.v[1] @= 1
                s.v[2] @= 1
                s.v[3] @= 1
            elif s.cmd.op == OP_BWD_WEIGHT:
                s.buf_id[1] @= Bits3(BUF_D)
                s.buf_id[3] @= Bits3(BUF_G)
                s.buf_id[4] @= Bits3(BUF_B)
                s.size[0] @= s.sz_x
                s.size[1] @= s.sz_dy
                s.size[3] @= s.sz_w
                if s.cmd.raw:  # accumulator-wide dw rows in B: P words per tile
                    s.buf_id[3] @= Bits3(BUF_B)
                    s.size[3] @= s.sz_w * LP32
                    if s.cmd.acc:  # adds to them: reads dw and db (right after dw) in B, slot 2
                        s.buf_id[2] @= Bits3(BUF_B)
                        s.v[2] @= 1
                s.size[4] @= s.sz_kt
                s.v[0] @= 1
                s.v[1] @= 1
                s.v[3] @= 1
                s.v[4] @= 1
            elif s.cmd.op == OP_POOL_FWD:
                s.buf_id[3] @= s.dbuf
                s.buf_id[4] @= s.ambuf
                s.size[0] @= s.sz_x
                s.size[3] @= s.sz_pool
                s.size[4] @= s.sz_pool
                s.v[0] @= 1
                s.v[3] @= 1
                s.v[4] @= 1
            elif s.cmd.op == OP_POOL_BWD:
                s.buf_id[0] @= Bits3(BUF_D)
                s.buf_id[1] @= s.ambuf
                s.buf_id[3] @= s.dbuf
                s.size[0] @= s.sz_pool
                s.size[1] @= s.sz_pool
                s.size[3] @= s.sz_x
                s.v[0] @= 1
                s.v[1] @= 1
                s.v[3] @= 1
            elif s.cmd.op == OP_UPDATE:
                s.buf_id[0] @= Bits3(BUF_W)
                s.buf_id[1] @= Bits3(BUF_G)
                s.buf_id[3] @= Bits3(BUF_W)
                s.size[0] @= s.sz_w
                s.size[1] @= s.sz_w
                s.size[3] @= s.sz_w
                s.v[0] @= 1
                s.v[1] @= 1
                s.v[3] @= 1
            # words -> elements: a multiply by a constant (P or P*P lanes) in each branch, not by
            # a selected lane count (that would be a variable multiplier, DSP48s on this path)
            for i in range(NSLOT):
                if (s.buf_id[i] == BUF_W) | (s.buf_id[i] == BUF_G):
                    s.lo[i] @= s.base[i] * LPP32
                    s.hi[i] @= (s.base[i] + s.size[i]) * LPP32
                else:
                    s.lo[i] @= s.base[i] * LP32
                    s.hi[i] @= (s.base[i] + s.size[i]) * LP32
            if (s.cmd.op == OP_BWD_WEIGHT) & s.cmd.raw & s.cmd.acc:
                # the read of dw and db: from dw's first element (slot 3) to db's end (slot 4; db
                # follows dw, msgs.check_cmd), so no adder of its own on the acceptance path
                s.lo[2] @= s.lo[3]
                s.hi[2] @= s.hi[4]
            if s.is_ldst:  # one range: elements [addr * lanes, addr * lanes + count)
                s.buf_id[0] @= s.cmd.target
                s.wr[0] @= s.cmd.op == OP_LOAD
                s.v[0] @= 1
                if (s.cmd.target == BUF_W) | (s.cmd.target == BUF_G):
                    s.lo[0] @= zext(s.cmd.addr, B32) * LPP32
                    s.hi[0] @= zext(s.cmd.addr, B32) * LPP32 + zext(s.cmd.count, B32)
                else:
                    s.lo[0] @= zext(s.cmd.addr, B32) * LP32
                    s.hi[0] @= zext(s.cmd.addr, B32) * LP32 + zext(s.cmd.count, B32)

    def line_trace(s):
        names = msgs.BUF_NAMES
        return " ".join(
            f"{'w' if s.wr[i] else 'r'}{names.get(int(s.buf_id[i]), '?')}[{int(s.lo[i])},{int(s.hi[i])})"
            for i in range(NSLOT) if s.v[i])
