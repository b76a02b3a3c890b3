"""Address generator (RTL): one loop nest per operation over a generic 7-level counter nest.

Levels 0-3 are the outer loops (one output word or tile), levels 4-6 the inner (reduction)
loops; ``first``/``last`` mark the first/last inner step of an output.  Per operation::

    fwd         n, kt, oh, ow | ct, r, s      x[n,ct,oh*st+r-pt,ow*st+s-pad], w[kt,ct,r,s]; r and s
                                              run over the taps inside the input only (no cycles
                                              spent on zero padding)
    fwd, bp=1   nt, kt, oh, ow | c, r, s      batch-parallel: x[nt,c,..] (P images a word), column
                                              c % P (``col``) of w[kt,c//P,r,s]; a tile per (nt, kt,
                                              oh, ow), drained a channel a cycle (``nlanes`` images
                                              and ``nrows`` channels of it are real)
    bwd_data    n, ct, h,  w  | kt, mr, ms    r = (h+pt)%st + mr*st, oh = (h+pt)//st - mr
                                              (only taps that hit an output: no idle steps
                                              for stride > 1 or at the borders),
                                              dy[n,kt,oh,ow], w[kt,ct,r,s]^T
    bwd_weight  kt, ct, r, s  | n, oh, ow     dy[n,kt,oh,ow] (x) x[n,ct,...]   (dw; oh, ow only
                                              where the input is inside the map); db on the
                                              side: while ct == 0, the step whose (r, s) is the
                                              first valid tap of its (oh, ow) adds dy to the db
                                              accumulators (``db_acc``), so every dy counts once
    pool_fwd    n, ct, oh, ow | di, dj        x[n,ct,oh*k+di,ow*k+dj]
    pool_bwd    n, ct, oh, ow | di, dj        dy/argmax[n,ct,oh,ow] -> dx[n,ct,oh*k+di,ow*k+dj]
    update      kt, ct, r, s, i               W/G word [kt,ct,r,s], row i

Rows are padded by ``pt`` above the input window (``pt = pad`` for a whole map, less for a row
band inside the map, :mod:`pymtl_fp.golden.band`), columns by ``pad``; rows and columns past
the window's end are zero.  No cycle is spent on taps in the zero padding, except that an output (or a ``bwd_weight``
tile) with no valid tap at all still takes one step, with ``zero`` set (products forced to 0).
Outputs are combinational functions of the counters and of registers that follow them
(addresses 32 bits, the caller truncates them to the buffer's address width); ``advance`` moves
to the next step.  An address (the reads' and the two writes') leaves in two parts, a base with
the unit's accumulated terms (``rd_base``, ``wr_base``) and which unit's product to add
(``rd_unit``, ``wr_unit``, ``prod``), so that an address stage can register the product before
the last add (:class:`~pymtl_fp.engine.EngineStepAddrRTL.EngineStepAddrRTL`).

This top wires its units (one file each, each with its own ports and test)::

    AddrLimitsRTL          the limit of each level, per operation
    AddrCounterNestRTL     the seven counters (an odometer), first / last / db flags
    AddrFwdTapsRTL         fwd: the valid tap range of an output, its input coordinates
    AddrBwdDataTapsRTL     bwd_data: the taps that hit an output (r = (h+pt)%st + mr*st, ...)
    AddrBwdWeightTapsRTL   bwd_weight: the outputs whose input is inside, the first valid tap
    AddrPoolOffsetsRTL     pooling: oh*k and ow*k as registers, the tap in the window
    AddrUnitsRTL           four address units: counter x stride terms kept as registers (the
                           strides are command fields, :data:`pymtl_fp.engine.encoding.PRODUCTS`),
                           one multiplier per unit for a coordinate derived from several counters
    AddrBatchTileRTL       a batch-parallel fwd's weight column and real images / channels
    AddrRoutesRTL          which unit's sum each read and write of the operation takes

and selects, per operation, which tap unit ends levels 5 and 6 and gives the input coordinates
``hh``/``ww``.  Multiplies by the stride are shifts (strides are powers of two, ``lgst`` = log2
stride), so ``bwd_data`` needs no divider.

:class:`AddrGenRegRTL` (``EngineConfig.registered_taps``, ``--pipeline taps``) takes
the tap units' ``...RegRTL`` forms, fed by :class:`~pymtl_fp.engine.AddrTapRegsRTL.AddrTapRegsRTL`,
which keeps each outer position's tap bounds in registers (loaded from ``cmd_in``, the command the
next ``start`` starts, while the generator is idle, then from the held ``cmd``): the same outputs
in every step, without the tap arithmetic's carry chains between the loop counters and the nest's
end flags.
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, connect, update, zext

from pymtl_fp.engine import msgs
from pymtl_fp.engine.addr_layout import LEVELS, NAU, NL, NPROD
from pymtl_fp.engine.AddrBatchTileRTL import AddrBatchTileRTL
from pymtl_fp.engine.AddrBwdDataTapsRTL import AddrBwdDataTapsRegRTL, AddrBwdDataTapsRTL
from pymtl_fp.engine.AddrBwdWeightTapsRTL import AddrBwdWeightTapsRegRTL, AddrBwdWeightTapsRTL
from pymtl_fp.engine.AddrCounterNestRTL import PLUS_ONE, AddrCounterNestPlusOneRTL, AddrCounterNestRTL
from pymtl_fp.engine.AddrFwdTapsRTL import AddrFwdTapsRegRTL, AddrFwdTapsRTL
from pymtl_fp.engine.AddrLimitsRTL import AddrLimitsRTL
from pymtl_fp.engine.AddrPoolOffsetsRTL import AddrPoolOffsetsRTL
from pymtl_fp.engine.AddrRoutesRTL import NWR, READ_BUFS, AddrRoutesRTL
from pymtl_fp.engine.AddrTapRegsRTL import AddrTapRegsRTL
from pymtl_fp.engine.AddrUnitsRTL import AddrUnitsRTL
from pymtl_fp.engine.EngineStridesRTL import STRIDES
from pymtl_fp.engine.msgs import cmd_type

#: the address generator's step outputs that the routes unit gives
ROUTE_OUTPUTS = ("idx", "idx2", "tap", "zero", "db_acc")


class AddrGenRTL(Component):
    def construct(s, P=2):
        s.build_generator(P, registered_taps=False)

    def build_generator(s, P, registered_taps):
        """The generator's ports, units and wiring (``registered_taps``: the tap units' ``...RegRTL``
        forms and :class:`~pymtl_fp.engine.AddrTapRegsRTL.AddrTapRegsRTL`)."""
        s.params = dict(P=P, registered_taps=registered_taps)
        B32 = Bits32
        ZERO = B32(0)
        OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT
        OP_POOL_FWD, OP_POOL_BWD = msgs.OP_POOL_FWD, msgs.OP_POOL_BWD

        s.cmd = InPort(cmd_type())
        if registered_taps:
            s.cmd_in = InPort(cmd_type())  # the command the next start starts (EX's command register's input)
        s.start = InPort()
        s.advance = InPort()
        s.active = OutPort()  # a step is available
        s.first = OutPort()
        s.last = OutPort()
        s.zero = OutPort()
        s.db_acc = OutPort()  # bwd_weight: add this step's dy to the db accumulators
        s.db_first = OutPort()  # bwd_weight: first step of kt's db sum (restart the accumulators)
        s.db_end = OutPort()  # bwd_weight: this tile completes kt's db sum
        # the read addresses of buffers X, D, W, G, B (READ_BUFS): rd_base + the product of unit
        # rd_unit (AddrUnitsRTL.prod; NO_UNIT: none), added by EngineStepAddrRTL; the write
        # addresses likewise (wr_base, wr_unit)
        s.rd_base = [OutPort(32) for _ in range(len(READ_BUFS))]
        s.rd_unit = [OutPort(2) for _ in range(len(READ_BUFS))]
        s.wr_base = [OutPort(32) for _ in range(NWR)]
        s.wr_unit = [OutPort(2) for _ in range(NWR)]
        s.prod = [OutPort(32) for _ in range(NPROD)]
        s.idx = OutPort(32)
        s.idx2 = OutPort(32)  # bwd_weight: index of kt's first db element (kt*P)
        s.tap = OutPort(8)
        s.row = OutPort(16)
        # batch-parallel fwd: the weight column (c % P) and whether the next channel starts a tile;
        # the real images (lanes) and output channels (rows) of the current tile
        s.col = OutPort(8)
        s.nlanes, s.nrows = OutPort(16), OutPort(16)
        for name in STRIDES:  # the command's strides (EngineStridesRTL)
            setattr(s, name, InPort(32))

        s.u = [Wire(32) for _ in range(NL)]  # 32-bit views of the counters
        s.W, s.WO, s.S = Wire(32), Wire(32), Wire(32)
        s.tap_at, s.at5, s.at6 = Wire(), Wire(), Wire()  # levels 5 and 6 end where a tap unit says
        s.hh, s.ww = Wire(32), Wire(32)  # the input coordinates of the step

        # ---- counters ------------------------------------------------------------------------
        s.limits = AddrLimitsRTL(P)
        s.limits.cmd //= s.cmd
        s.nest = (AddrCounterNestPlusOneRTL if registered_taps else AddrCounterNestRTL)()
        s.nest.start //= s.start
        s.nest.advance //= s.advance
        for lv in range(NL):
            s.nest.lim[lv] //= s.limits.lim[lv]
        for name in ("tap_at", "at5", "at6"):
            connect(getattr(s.nest, name), getattr(s, name))
        for name in ("first", "last", "db_first", "db_end"):
            connect(getattr(s, name), getattr(s.nest, name))
        s.active //= s.nest.running
        s.row //= s.nest.cnt[4]

        # ---- the operations' taps and coordinates -------------------------------------------
        if registered_taps:
            s.tregs = AddrTapRegsRTL()  # the bounds of the step's outer positions, in registers
            for name in ("cmd", "cmd_in", "advance"):
                connect(getattr(s.tregs, name), getattr(s, name))
            s.tregs.running //= s.nest.running
            s.tregs.all_at //= s.nest.all_at
            for k, lv in enumerate(PLUS_ONE):
                connect(getattr(s.tregs, f"carry{lv}"), s.nest.carry[lv])
                connect(getattr(s.tregs, f"at{lv}"), s.nest.at[lv])
                connect(getattr(s.tregs, f"u{lv}n"), s.nest.cnt1[k])
            s.fwd = AddrFwdTapsRegRTL()
            s.bd = AddrBwdDataTapsRegRTL()
            s.bw = AddrBwdWeightTapsRegRTL()
            for taps in (s.fwd, s.bd, s.bw):
                for j in range(3):
                    taps.rv[j] //= s.tregs.rv[j]
                    taps.cv[j] //= s.tregs.cv[j]
                taps.rlast //= s.tregs.rlast
                taps.clast //= s.tregs.clast
                taps.u5 //= s.u[5]
                taps.u6 //= s.u[6]
            s.bd.cmd //= s.cmd
            s.bw.cmd //= s.cmd
            s.bw.u2 //= s.u[2]
            s.bw.u3 //= s.u[3]
        else:
            s.fwd = AddrFwdTapsRTL()
            s.bd = AddrBwdDataTapsRTL()
            s.bw = AddrBwdWeightTapsRTL()
            for taps in (s.fwd, s.bd, s.bw):
                taps.cmd //= s.cmd
                for lv in (2, 3, 5, 6):
                    connect(getattr(taps, f"u{lv}"), s.u[lv])
        s.pool = AddrPoolOffsetsRTL()
        s.pool.u4 //= s.u[4]
        s.pool.u5 //= s.u[5]

        @update
        def up_views():
            for lv in range(NL):
                s.u[lv] @= zext(s.nest.cnt[lv], B32)
            s.W @= zext(s.cmd.w, B32)
            s.WO @= zext(s.cmd.wo, B32)
            s.S @= zext(s.cmd.s, B32)

        @update
        def up_op_taps():
            s.tap_at @= 0
            s.at5 @= 0
            s.at6 @= 0
            s.hh @= ZERO
            s.ww @= ZERO
            if s.cmd.op == OP_FWD:
                s.tap_at @= 1
                s.at5 @= s.fwd.at5
                s.at6 @= s.fwd.at6
                s.hh @= s.fwd.hh
                s.ww @= s.fwd.ww
            elif s.cmd.op == OP_BWD_DATA:
                s.tap_at @= 1
                s.at5 @= s.bd.at5
                s.at6 @= s.bd.at6
            elif s.cmd.op == OP_BWD_WEIGHT:
                s.tap_at @= 1
                s.at5 @= s.bw.at5
                s.at6 @= s.bw.at6
                s.hh @= s.bw.hh
                s.ww @= s.bw.ww
            elif (s.cmd.op == OP_POOL_FWD) | (s.cmd.op == OP_POOL_BWD):
                s.hh @= s.pool.hh
                s.ww @= s.pool.ww

        # ---- the address units and the batch-parallel tile -----------------------------------
        s.units = AddrUnitsRTL()
        s.tile = AddrBatchTileRTL(P)  # a batch-parallel fwd's weight column and real images / channels
        # the registers that follow the counters: the step, and the levels they follow
        for unit, levels in ((s.pool, (2, 3)), (s.units, ()), (s.tile, (0, 1, 4))):
            for name in ("cmd", "start", "advance"):
                connect(getattr(unit, name), getattr(s, name))
            unit.running //= s.nest.running
            unit.all_at //= s.nest.all_at
            for lv in levels:
                connect(getattr(unit, f"carry{lv}"), s.nest.carry[lv])
                connect(getattr(unit, f"at{lv}"), s.nest.at[lv])
        for name in (*STRIDES, "hh", "ww", "W", "WO", "S"):
            connect(getattr(s.units, name), getattr(s, name))
        for name, src in (("r_f", s.fwd.r_f), ("s_f", s.fwd.s_f), ("r_d", s.bd.r_d), ("s_d", s.bd.s_d),
                          ("oh_d", s.bd.oh_d), ("ow_d", s.bd.ow_d), ("ohs", s.bw.ohs), ("ows", s.bw.ows)):
            connect(getattr(s.units, name), src)
        s.units.u3 //= s.u[3]
        for name in ("col", "nlanes", "nrows"):
            connect(getattr(s, name), getattr(s.tile, name))
        s.units.bp //= s.tile.bp
        s.units.cl_last //= s.tile.cl_last
        for au in range(NPROD):
            s.prod[au] //= s.units.prod[au]
        for q, lv in enumerate(LEVELS):  # the accumulated levels
            s.units.carry[q] //= s.nest.carry[lv]
            s.units.at[q] //= s.nest.at[lv]

        # ---- the routes of the units' sums to the buffers' addresses --------------------------
        s.routes = AddrRoutesRTL(P)
        s.routes.cmd //= s.cmd
        for au in range(NAU):
            s.routes.ksum[au] //= s.units.ksum[au]
        for name, src in (("u0", s.u[0]), ("u1", s.u[1]), ("hh", s.hh), ("ww", s.ww), ("bd_tap_ok", s.bd.tap_ok),
                          ("bw_out_inside", s.bw.out_inside), ("bw_first_tap", s.bw.first_tap),
                          ("pool_tap", s.pool.tap)):
            connect(getattr(s.routes, name), src)
        for b in range(len(READ_BUFS)):
            s.rd_base[b] //= s.routes.rd_base[b]
            s.rd_unit[b] //= s.routes.rd_unit[b]
        for j in range(NWR):
            s.wr_base[j] //= s.routes.wr_base[j]
            s.wr_unit[j] //= s.routes.wr_unit[j]
        for name in ROUTE_OUTPUTS:
            connect(getattr(s, name), getattr(s.routes, name))

    def line_trace(s):
        c = ",".join(str(int(v)) for v in s.nest.cnt)
        return (f"{'R' if s.nest.running else '.'}[{c}]{'f' if s.first else ' '}{'l' if s.last else ' '}"
                f"{'z' if s.zero else ' '}")


class AddrGenRegRTL(AddrGenRTL):
    """:class:`AddrGenRTL` with its tap bounds in registers (``EngineConfig.registered_taps``): the
    same ports and outputs in every cycle, and ``cmd_in``, the command the next ``start`` starts."""

    def construct(s, P=2):
        s.build_generator(P, registered_taps=True)
