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

The compute operations' ranges come from one table, :data:`RANGES` (an entry per operation: for
each slot the buffer and the tensor size, or ``None`` for an unused slot), which the construct turns
into constant wires that the command's op code selects; a raw ``bwd_weight`` (``raw``, ``acc``) and
LOAD/STORE adjust the table's ranges after it.
"""


from pymtl3 import Bits1, Bits3, Bits32, Component, InPort, OutPort, Wire, mk_bits, update, zext

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type

NSLOT = 5  # address-range slots of a command (fields a0, a1, a2, d0, d1)
#: where a slot's buffer comes from: a fixed buffer, or the result buffer of field dsel, or the
#: argmax buffer of field amsel (the index is the code the table's wires hold)
BUF_SOURCES = ("x", "d", "o", "w", "g", "b", "dsel", "amsel")
#: a slot's size in words: none, or a tensor size (the host's products, encoding.PRODUCTS; kt: the
#: bias / db words)
SIZE_SOURCES = ("none", "x", "dy", "w", "pool", "kt", "none", "none")
#: per compute operation, slot i (address field a0 a1 a2 d0 d1) = (buffer source, size source), or
#: None where the operation does not use the field (as msgs.access_ranges lists them)
RANGES = {
    msgs.OP_FWD: (("x", "x"), ("w", "w"), ("b", "kt"), ("dsel", "dy"), None),
    msgs.OP_BWD_DATA: (("d", "dy"), ("w", "w"), ("x", "x"), ("dsel", "x"), None),
    msgs.OP_BWD_WEIGHT: (("x", "x"), ("d", "dy"), None, ("g", "w"), ("b", "kt")),
    msgs.OP_POOL_FWD: (("x", "x"), None, None, ("dsel", "pool"), ("amsel", "pool")),
    msgs.OP_POOL_BWD: (("d", "pool"), ("amsel", "pool"), None, ("dsel", "x"), None),
    msgs.OP_UPDATE: (("w", "w"), ("g", "w"), None, ("w", "w"), None),
}


class EngineCmdRangesRTL(Component):
    def construct(s, P=2):
        s.params = dict(P=P)
        B32 = Bits32
        LP32, LPP32 = B32(P), B32(P * P)
        OP_LOAD, OP_STORE, OP_BWD_WEIGHT = msgs.OP_LOAD, msgs.OP_STORE, msgs.OP_BWD_WEIGHT
        BUF_X, BUF_D, BUF_O, BUF_W, BUF_G, BUF_B = (msgs.BUF_X, msgs.BUF_D, msgs.BUF_O, msgs.BUF_W,
                                                    msgs.BUF_G, msgs.BUF_B)
        DSEL_X, DSEL_D = msgs.DSEL_X, msgs.DSEL_D
        OpT = mk_bits(dict(msgs.CMD_FIELDS)["op"])
        NOPS = len(RANGES)

        s.cmd = InPort(cmd_type())
        s.buf_id = [OutPort(3) for _ in range(NSLOT)]
        s.lo = [OutPort(32) for _ in range(NSLOT)]
        s.hi = [OutPort(32) for _ in range(NSLOT)]
        s.wr = [OutPort() for _ in range(NSLOT)]
        s.v = [OutPort() for _ in range(NSLOT)]

        # the table RANGES as constant wires: entry k is operation t_op[k], its slot i at k*NSLOT + i
        s.t_op = [Wire(OpT) for _ in range(NOPS)]
        s.t_buf = [Wire(3) for _ in range(NOPS * NSLOT)]
        s.t_size = [Wire(3) for _ in range(NOPS * NSLOT)]
        s.t_v = [Wire(1) for _ in range(NOPS * NSLOT)]
        for k, (op, slots) in enumerate(RANGES.items()):
            s.t_op[k] //= OpT(op)
            for i, slot in enumerate(slots):
                buf, size = slot or ("x", "none")
                s.t_buf[k * NSLOT + i] //= Bits3(BUF_SOURCES.index(buf))
                s.t_size[k * NSLOT + i] //= Bits3(SIZE_SOURCES.index(size))
                s.t_v[k * NSLOT + i] //= Bits1(slot is not None)

        s.is_ldst = Wire()  # LOAD or STORE: one range in slot 0
        s.bufs = [Wire(3) for _ in range(len(BUF_SOURCES))]  # the buffer of each BUF_SOURCES code
        s.sizes = [Wire(32) for _ in range(len(SIZE_SOURCES))]  # the size of each SIZE_SOURCES code
        s.bsel = [Wire(3) for _ in range(NSLOT)]  # the slot's codes
        s.zsel = [Wire(3) for _ in range(NSLOT)]
        s.base = [Wire(32) for _ in range(NSLOT)]
        s.size = [Wire(32) for _ in range(NSLOT)]
        for code, name in enumerate(BUF_SOURCES[:6]):
            s.bufs[code] //= Bits3(msgs.BUF_IDS[name.upper()])

        @update
        def up_sources():
            # the host's products (encoding.PRODUCTS): no multiplier on the acceptance path
            s.sizes[0] @= B32(0)
            s.sizes[1] @= zext(s.cmd.sz_x, B32)
            s.sizes[2] @= zext(s.cmd.sz_dy, B32)
            s.sizes[3] @= zext(s.cmd.sz_w, B32)
            s.sizes[4] @= zext(s.cmd.sz_pool, B32)
            s.sizes[5] @= zext(s.cmd.kt, B32)
            s.sizes[6] @= B32(0)
            s.sizes[7] @= B32(0)
            # the buffer of the d0 result (field dsel) and of a pool command's argmax (field amsel)
            if s.cmd.dsel == DSEL_X:
                s.bufs[6] @= Bits3(BUF_X)
            elif s.cmd.dsel == DSEL_D:
                s.bufs[6] @= Bits3(BUF_D)
            else:
                s.bufs[6] @= Bits3(BUF_O)
            if s.cmd.amsel:
                s.bufs[7] @= Bits3(BUF_O)
            else:
                s.bufs[7] @= Bits3(BUF_X)

        @update
        def up_ranges():
            # the op's entry of RANGES (no entry: no range); slot i is address field i (a0 a1 a2
            # read, d0 d1 written), as msgs.access_ranges
            for i in range(NSLOT):
                s.bsel[i] @= 0
                s.zsel[i] @= 0
                s.v[i] @= 0
            for k in range(NOPS):
                if s.cmd.op == s.t_op[k]:
                    for i in range(NSLOT):
                        s.bsel[i] @= s.t_buf[k * NSLOT + i]
                        s.zsel[i] @= s.t_size[k * NSLOT + i]
                        s.v[i] @= s.t_v[k * NSLOT + i]
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
                s.buf_id[i] @= s.bufs[s.bsel[i]]
                s.size[i] @= s.sizes[s.zsel[i]]
            if (s.cmd.op == OP_BWD_WEIGHT) & s.cmd.raw:  # accumulator-wide dw rows in B: P words per tile
                s.buf_id[3] @= Bits3(BUF_B)
                s.size[3] @= s.sizes[3] * LP32
                if s.cmd.acc:  # adds to them: reads dw and db (right after dw) in B, slot 2
                    s.buf_id[2] @= Bits3(BUF_B)
                    s.v[2] @= 1
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
