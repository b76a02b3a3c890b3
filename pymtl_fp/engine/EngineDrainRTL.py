"""``bwd_weight`` drain (RTL): the finished ``dw`` tile and the ``db`` sums, held for write-back.

The MAC array accumulates one ``P x P`` ``dw`` tile at a time.  In the stage-B cycle of a tile's
last step (``vB & lastB``) the tile (the array's result ``mac_res`` after that step's products)
is copied into the drain registers ``dr`` with its G word (``addr``) and element index (``idx``,
which then moves on by ``DR * C*R*S`` a cycle: the index of the rows being drained, an adder
where the write-back used to multiply ``row * C*R*S``),
and ``busy`` stays high for ``P / DR`` cycles (``P`` with the command field ``raw``: one
accumulator-wide row a cycle, into B) (``DR`` = ``drain_rows``, a divisor of ``P``), each
draining ``DR`` consecutive ``dw`` rows ``row .. row + DR - 1`` (``row`` = 0, DR, .., P - DR),
while the array already accumulates the next tile.  The bias gradient needs no pass of its own:
during the ``ct == 0`` tiles a row of ``P`` adders sums each ``dy`` (``d_rd``, sign-extended) once
(``dbaccB``: the first valid tap of its output position; ``dbfirstB`` restarts the sums), and the
tile that completes kt's sums (``dbendB``) copies them into ``dbdr`` (B word ``db_addr``, index
``db_idx``) and drains them in one more cycle (``row`` = P).  The write-back
(:class:`EngineWritebackRTL`) requantizes and writes the current rows.  A batch-parallel ``fwd``
(``bp``) drains its tiles the same way, one row (an output channel of ``P`` images) a cycle into
its output map, ``P`` cycles a tile, without a db row.
"""

from pymtl3 import Bits16, Bits32, Component, InPort, OutPort, Wire, mk_bits, update, update_ff

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type
from pymtl_fp.engine.SignExtendRTL import SignExtendRTL


class EngineDrainRTL(Component):
    def construct(s, P=2, data_bits=8, acc_bits=32, drain_rows=1):
        s.params = dict(P=P, data_bits=data_bits, acc_bits=acc_bits, drain_rows=drain_rows)
        if drain_rows < 1 or P % drain_rows:
            raise ValueError(f"EngineDrainRTL: drain_rows={drain_rows} must divide P={P}")
        PP = P * P
        ZA = mk_bits(acc_bits)(0)
        # cycles per tile (dw, then dw + db), rows per cycle
        Z16, ONE16, LP, LP1 = Bits16(0), Bits16(1), Bits16(P // drain_rows), Bits16(P // drain_rows + 1)
        STEP = Bits16(drain_rows)
        STEP32 = Bits32(drain_rows)
        RP, RP1 = Bits16(P), Bits16(P + 1)  # raw (accumulator-wide rows into B): one row a cycle
        OP_BWD_WEIGHT, OP_FWD = msgs.OP_BWD_WEIGHT, msgs.OP_FWD

        s.cmd = InPort(cmd_type())  # the command being executed (op)
        s.vB, s.firstB, s.lastB = InPort(), InPort(), InPort()
        s.dbaccB, s.dbfirstB, s.dbendB = InPort(), InPort(), InPort()
        s.wr_addrB, s.wr_addr2B, s.idxB, s.idx2B = InPort(32), InPort(32), InPort(32), InPort(32)
        s.mac_res = [InPort(acc_bits) for _ in range(PP)]
        s.d_rd = [InPort(data_bits) for _ in range(P)]  # dy, for the db sums
        s.busy = OutPort()  # rows are drained this cycle
        s.row = OutPort(16)  # which: dw rows row .. row + DR - 1 (row = 0, DR, .., P - DR), P: db
        s.dr = [OutPort(acc_bits) for _ in range(PP)]
        s.addr = OutPort(32)  # G word of the dw tile
        s.idx = OutPort(32)  # element index of dw row ``row`` (the tile's first + row * C*R*S)
        s.CRS = InPort(32)  # c*r*s: one output channel of dw (a command field)
        s.dbdr = [OutPort(acc_bits) for _ in range(P)]
        s.db_addr, s.db_idx = OutPort(32), OutPort(32)  # B word and first element index of db
        # a batch-parallel fwd (bp): its tile is P output channels (rows) x P images (lanes), drained
        # a channel a cycle into the output map (roff and idx move on by ho*wo and hi*wo a row);
        # nlanes images and nrows channels of the tile are real
        s.HOWO, s.IHOWO = InPort(16), InPort(32)  # (a word offset: 16 bits hold any buffer's)
        s.nlanesB, s.nrowsB = InPort(16), InPort(16)
        s.nlanes, s.nrows = OutPort(16), OutPort(16)
        # the row's word is addr + roff: roff adds ho*wo a row apart from addr, so that the tile's
        # address (a product of the address units) stays as narrow as the buffer's address
        s.roff = OutPort(16)
        s.bp = Wire()
        s.tiled = Wire()

        s.left = Wire(16)  # cycles left: P / DR for the dw rows, then (if the tile ends kt's db) 1 for db
        s.dbacc = [Wire(acc_bits) for _ in range(P)]
        s.dbacc_n = [Wire(acc_bits) for _ in range(P)]
        s.dy = SignExtendRTL(data_bits, acc_bits, P)
        for i in range(P):
            s.dy.in_[i] //= s.d_rd[i]

        @update
        def up_db_sum():
            for i in range(P):
                if s.firstB & s.dbfirstB:
                    s.dbacc_n[i] @= ZA
                else:
                    s.dbacc_n[i] @= s.dbacc[i]
                if s.dbaccB:
                    s.dbacc_n[i] @= s.dbacc_n[i] + s.dy.out[i]

        @update_ff
        def up_db_regs():
            for i in range(P):
                if s.vB & (s.cmd.op == OP_BWD_WEIGHT):
                    s.dbacc[i] <<= s.dbacc_n[i]

        @update
        def up_drain_busy():
            s.busy @= s.left != Z16
            s.bp @= (s.cmd.op == OP_FWD) & s.cmd.bp
            s.tiled @= (s.cmd.op == OP_BWD_WEIGHT) | s.bp

        @update_ff
        def up_drain():
            if s.reset:
                s.left <<= Z16
                s.row <<= Z16
            elif s.vB & s.lastB & s.tiled:
                for lv in range(PP):
                    s.dr[lv] <<= s.mac_res[lv]
                s.addr <<= s.wr_addrB
                s.idx <<= s.idxB
                s.row <<= Z16
                s.nlanes <<= s.nlanesB
                s.nrows <<= s.nrowsB
                s.roff <<= Z16
                if s.bp:
                    s.left <<= RP
                elif s.dbendB:
                    for i in range(P):
                        s.dbdr[i] <<= s.dbacc_n[i]
                    s.db_addr <<= s.wr_addr2B
                    s.db_idx <<= s.idx2B
                    if s.cmd.raw:
                        s.left <<= RP1
                    else:
                        s.left <<= LP1
                elif s.cmd.raw:
                    s.left <<= RP
                else:
                    s.left <<= LP
            elif s.left != Z16:
                s.left <<= s.left - ONE16
                if s.bp:  # the next output channel: ho*wo words, hi*wo elements on
                    s.row <<= s.row + ONE16
                    s.roff <<= s.roff + s.HOWO
                    s.idx <<= s.idx + s.IHOWO
                elif s.cmd.raw:
                    s.row <<= s.row + ONE16
                else:
                    s.row <<= s.row + STEP
                    s.idx <<= s.idx + s.CRS * STEP32  # the next DR rows: DR output channels on

    def line_trace(s):
        return f"dr{int(s.left)}" + (f"r{int(s.row)}" if s.busy else "  ")
