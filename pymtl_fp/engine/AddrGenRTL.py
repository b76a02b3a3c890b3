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
An address is a base plus the sum of one of four address units
(:class:`~pymtl_fp.engine.AddrUnitsRTL.AddrUnitsRTL`: an input-side map, an output-side map, a
weight word, the result's flat index), whose counter x stride terms are registers that add the
stride as the counter moves (the strides are command fields the host computes,
:data:`pymtl_fp.engine.encoding.PRODUCTS`), with one multiplier per unit left for a coordinate
derived from several counters.  Multiplies by the stride (``oh*stride``) are shifts, and
pooling's ``oh*k`` / ``ow*k`` are registers that add ``k`` as their counters move.  Strides are powers of
two (``lgst`` = log2 stride), so ``bwd_data`` needs no divider.
"""

from pymtl3 import Bits1, Bits2, Bits16, Bits32, Component, InPort, OutPort, Wire, connect, update, update_ff, zext

from pymtl_fp.engine import msgs
from pymtl_fp.engine.AddrBatchTileRTL import AddrBatchTileRTL
from pymtl_fp.engine.AddrUnitsRTL import AU_IDX, AU_MAP, AU_OUT, AU_WGT, LEVELS, NL, NPROD, AddrUnitsRTL
from pymtl_fp.engine.EngineStridesRTL import STRIDES
from pymtl_fp.engine.msgs import cmd_type

#: the buffers EX reads, in the order of AddrGenRTL.rd_base / rd_unit
READ_BUFS = ("x", "d", "w", "g", "b")
RB_X, RB_D, RB_W, RB_G, RB_B = range(len(READ_BUFS))
NO_UNIT = 3  #: rd_unit / wr_unit of an address without a product
#: the write addresses of a step, in the order of AddrGenRTL.wr_base / wr_unit: the result, and
#: bwd_weight's db row or pool_fwd's argmax
NWR = 2


class AddrGenRTL(Component):
    def construct(s, P=2):
        s.params = dict(P=P)
        B32 = Bits32
        PP = B32(P)
        ONE = B32(1)
        ZERO = B32(0)
        Z16 = Bits16(0)
        ONE16 = Bits16(1)
        PM1 = Bits16(P - 1)
        OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT
        OP_POOL_FWD, OP_POOL_BWD, OP_UPDATE = msgs.OP_POOL_FWD, msgs.OP_POOL_BWD, msgs.OP_UPDATE
        U_MAP, U_OUT, U_WGT, U_NONE = Bits2(AU_MAP), Bits2(AU_OUT), Bits2(AU_WGT), Bits2(NO_UNIT)
        NRB = len(READ_BUFS)

        s.cmd = InPort(cmd_type())
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

        s.cnt = [Wire(16) for _ in range(NL)]
        s.lim = [Wire(16) for _ in range(NL)]
        s.at = [Wire(1) for _ in range(NL)]
        s.carry = [Wire(1) for _ in range(NL)]  # all inner levels at their limit
        s.running = Wire()
        s.all_at = Wire()

        # 32-bit views of the command fields and counters
        s.u = [Wire(32) for _ in range(NL)]
        s.H, s.W, s.HO, s.WO, s.R, s.S = (Wire(32) for _ in range(6))
        s.PAD, s.PT, s.LG, s.ST = (Wire(32) for _ in range(4))  # column and row (top) padding
        s.A0, s.A1, s.A2, s.D0, s.D1 = (Wire(32) for _ in range(5))
        # fwd: the valid tap range of the current output (taps in the zero padding are skipped)
        s.t_h, s.t_w, s.rlo, s.slo, s.rhi, s.shi, s.r_f, s.s_f = (Wire(32) for _ in range(8))
        # bwd_data helpers
        s.th, s.tw, s.r_d, s.s_d, s.oh_d, s.ow_d = (Wire(32) for _ in range(6))
        s.qh, s.qw, s.mrlo, s.mslo, s.mr, s.ms = (Wire(32) for _ in range(6))
        # bwd_weight (phase 0): the valid output range of the current tap
        s.ohlo, s.owlo, s.ohs, s.ows = (Wire(32) for _ in range(4))
        s.t_oh, s.t_ow, s.rfirst, s.sfirst = (Wire(32) for _ in range(4))
        # fwd / bwd_weight / pool input coordinates
        s.hh, s.ww = Wire(32), Wire(32)
        # pooling: oh*pk and ow*pk, kept by adding pk as levels 2 and 3 count (no multiplier)
        s.ohk, s.owk = Wire(16), Wire(16)
        # the command's strides (EngineStridesRTL) and the address units
        for name in STRIDES:
            setattr(s, name, InPort(32))

        @update
        def up_views():
            for lv in range(NL):
                s.u[lv] @= zext(s.cnt[lv], B32)
            s.H @= zext(s.cmd.h, B32)
            s.W @= zext(s.cmd.w, B32)
            s.HO @= zext(s.cmd.ho, B32)
            s.WO @= zext(s.cmd.wo, B32)
            s.R @= zext(s.cmd.r, B32)
            s.S @= zext(s.cmd.s, B32)
            s.PAD @= zext(s.cmd.pad, B32)
            s.PT @= zext(s.cmd.pt, B32)
            s.LG @= zext(s.cmd.lgst, B32)
            s.ST @= ONE << s.LG
            s.A0 @= zext(s.cmd.a0, B32)
            s.A1 @= zext(s.cmd.a1, B32)
            s.A2 @= zext(s.cmd.a2, B32)
            s.D0 @= zext(s.cmd.d0, B32)
            s.D1 @= zext(s.cmd.d1, B32)

        @update
        def up_limits():
            for lv in range(NL):
                s.lim[lv] @= Z16
            if s.cmd.op == OP_FWD:
                s.lim[0] @= s.cmd.n - ONE16
                s.lim[1] @= s.cmd.kt - ONE16
                s.lim[2] @= s.cmd.ho - ONE16
                s.lim[3] @= s.cmd.wo - ONE16
                s.lim[4] @= s.cmd.ct - ONE16
                s.lim[5] @= s.cmd.r - ONE16
                s.lim[6] @= s.cmd.s - ONE16
                if s.cmd.bp:  # image tiles outermost, every input channel innermost
                    s.lim[0] @= s.cmd.nt - ONE16
                    s.lim[4] @= s.cmd.c - ONE16
            elif s.cmd.op == OP_BWD_DATA:
                s.lim[0] @= s.cmd.n - ONE16
                s.lim[1] @= s.cmd.ct - ONE16
                s.lim[2] @= s.cmd.h - ONE16
                s.lim[3] @= s.cmd.w - ONE16
                s.lim[4] @= s.cmd.kt - ONE16
            elif s.cmd.op == OP_BWD_WEIGHT:
                s.lim[0] @= s.cmd.kt - ONE16
                s.lim[1] @= s.cmd.ct - ONE16
                s.lim[2] @= s.cmd.r - ONE16
                s.lim[3] @= s.cmd.s - ONE16
                s.lim[4] @= s.cmd.n - ONE16
                s.lim[5] @= s.cmd.ho - ONE16
                s.lim[6] @= s.cmd.wo - ONE16
            elif (s.cmd.op == OP_POOL_FWD) | (s.cmd.op == OP_POOL_BWD):
                s.lim[0] @= s.cmd.n - ONE16
                s.lim[1] @= s.cmd.ct - ONE16
                s.lim[2] @= s.cmd.ho - ONE16
                s.lim[3] @= s.cmd.wo - ONE16
                s.lim[4] @= zext(s.cmd.pk, Bits16) - ONE16
                s.lim[5] @= zext(s.cmd.pk, Bits16) - ONE16
            elif s.cmd.op == OP_UPDATE:
                s.lim[0] @= s.cmd.kt - ONE16
                s.lim[1] @= s.cmd.ct - ONE16
                s.lim[2] @= s.cmd.r - ONE16
                s.lim[3] @= s.cmd.s - ONE16
                s.lim[4] @= PM1

        @update
        def up_bwd_data_taps():
            # dx[h] gathers dy[oh] * w[r] over oh*st + r = h + pt: r = (h+pt)%st + mr*st,
            # oh = (h+pt)//st - mr; mr starts where oh < Ho, stops where r >= R or oh < 0
            s.th @= s.u[2] + s.PT
            s.tw @= s.u[3] + s.PAD
            s.qh @= s.th >> s.LG
            s.qw @= s.tw >> s.LG
            if s.qh >= s.HO:
                s.mrlo @= s.qh + ONE - s.HO
            else:
                s.mrlo @= ZERO
            if s.qw >= s.WO:
                s.mslo @= s.qw + ONE - s.WO
            else:
                s.mslo @= ZERO
            s.mr @= s.mrlo + s.u[5]
            s.ms @= s.mslo + s.u[6]
            s.r_d @= (s.th & (s.ST - ONE)) + (s.mr << s.LG)
            s.s_d @= (s.tw & (s.ST - ONE)) + (s.ms << s.LG)
            s.oh_d @= s.qh - s.mr
            s.ow_d @= s.qw - s.ms

        @update
        def up_bwd_weight_taps():
            # dw[r]: the outputs oh whose input row oh*st + r - pt lies inside the input
            if s.PT > s.u[2]:
                s.ohlo @= (s.PT - s.u[2] + s.ST - ONE) >> s.LG
            else:
                s.ohlo @= ZERO
            if s.PAD > s.u[3]:
                s.owlo @= (s.PAD - s.u[3] + s.ST - ONE) >> s.LG
            else:
                s.owlo @= ZERO
            s.ohs @= s.ohlo + s.u[5]
            s.ows @= s.owlo + s.u[6]
            # the first valid tap of output (oh, ow): r = max(0, pt - oh*st)
            s.t_oh @= s.ohs << s.LG
            s.t_ow @= s.ows << s.LG
            if s.PT > s.t_oh:
                s.rfirst @= s.PT - s.t_oh
            else:
                s.rfirst @= ZERO
            if s.PAD > s.t_ow:
                s.sfirst @= s.PAD - s.t_ow
            else:
                s.sfirst @= ZERO

        @update
        def up_fwd_taps():
            s.t_h @= s.u[2] << s.LG
            s.t_w @= s.u[3] << s.LG
            if s.PT > s.t_h:
                s.rlo @= s.PT - s.t_h
            else:
                s.rlo @= ZERO
            if s.PAD > s.t_w:
                s.slo @= s.PAD - s.t_w
            else:
                s.slo @= ZERO
            if (s.H + s.PT - s.t_h) < s.R:
                s.rhi @= s.H + s.PT - s.t_h
            else:
                s.rhi @= s.R
            if (s.W + s.PAD - s.t_w) < s.S:
                s.shi @= s.W + s.PAD - s.t_w
            else:
                s.shi @= s.S
            s.r_f @= s.rlo + s.u[5]
            s.s_f @= s.slo + s.u[6]

        @update
        def up_at():
            for lv in range(NL):
                s.at[lv] @= s.cnt[lv] == s.lim[lv]
            if s.cmd.op == OP_FWD:
                s.at[5] @= (s.r_f + ONE) >= s.rhi
                s.at[6] @= (s.s_f + ONE) >= s.shi
            elif s.cmd.op == OP_BWD_DATA:
                s.at[5] @= ((s.r_d + s.ST) >= s.R) | (s.mr >= s.qh)
                s.at[6] @= ((s.s_d + s.ST) >= s.S) | (s.ms >= s.qw)
            elif s.cmd.op == OP_BWD_WEIGHT:
                s.at[5] @= ((((s.ohs + ONE) << s.LG) + s.u[2]) >= (s.H + s.PT)) | ((s.ohs + ONE) >= s.HO)
                s.at[6] @= ((((s.ows + ONE) << s.LG) + s.u[3]) >= (s.W + s.PAD)) | ((s.ows + ONE) >= s.WO)
            s.carry[6] @= Bits1(1)
            s.carry[5] @= s.at[6]
            s.carry[4] @= s.at[6] & s.at[5]
            s.carry[3] @= s.at[6] & s.at[5] & s.at[4]
            s.carry[2] @= s.at[6] & s.at[5] & s.at[4] & s.at[3]
            s.carry[1] @= s.at[6] & s.at[5] & s.at[4] & s.at[3] & s.at[2]
            s.carry[0] @= s.at[6] & s.at[5] & s.at[4] & s.at[3] & s.at[2] & s.at[1]
            s.all_at @= s.carry[0] & s.at[0]

        @update
        def up_flags():
            s.active @= s.running
            s.db_first @= (s.cnt[1] == Z16) & (s.cnt[2] == Z16) & (s.cnt[3] == Z16)
            s.db_end @= (s.cnt[1] == Z16) & s.at[2] & s.at[3]
            s.first @= (s.cnt[4] == Z16) & (s.cnt[5] == Z16) & (s.cnt[6] == Z16)
            s.last @= s.at[4] & s.at[5] & s.at[6]
            s.row @= s.cnt[4]

        @update_ff
        def up_counters():
            if s.reset:
                s.running <<= 0
                for lv in range(NL):
                    s.cnt[lv] <<= Z16
            elif s.start:
                s.running <<= 1
                for lv in range(NL):
                    s.cnt[lv] <<= Z16
            elif s.advance & s.running:
                if s.all_at:
                    for lv in range(NL):
                        s.cnt[lv] <<= Z16
                    s.running <<= 0
                else:
                    for lv in range(NL):
                        if s.carry[lv]:
                            if s.at[lv]:
                                s.cnt[lv] <<= Z16
                            else:
                                s.cnt[lv] <<= s.cnt[lv] + ONE16

        @update_ff
        def up_pool_offsets():
            if s.reset | s.start:
                s.ohk <<= Z16
                s.owk <<= Z16
            elif s.advance & s.running:
                if s.all_at:
                    s.ohk <<= Z16
                    s.owk <<= Z16
                else:
                    if s.carry[2]:
                        if s.at[2]:
                            s.ohk <<= Z16
                        else:
                            s.ohk <<= s.ohk + zext(s.cmd.pk, Bits16)
                    if s.carry[3]:
                        if s.at[3]:
                            s.owk <<= Z16
                        else:
                            s.owk <<= s.owk + zext(s.cmd.pk, Bits16)

        # ---- coordinates and the address units -------------------------------------------
        @update
        def up_coords():
            s.hh @= ZERO
            s.ww @= ZERO
            if s.cmd.op == OP_FWD:
                s.hh @= s.t_h + s.r_f - s.PT
                s.ww @= s.t_w + s.s_f - s.PAD
            elif s.cmd.op == OP_BWD_WEIGHT:
                s.hh @= (s.ohs << s.LG) + s.u[2] - s.PT
                s.ww @= (s.ows << s.LG) + s.u[3] - s.PAD
            elif (s.cmd.op == OP_POOL_FWD) | (s.cmd.op == OP_POOL_BWD):
                s.hh @= zext(s.ohk, B32) + s.u[4]  # oh*pk + di
                s.ww @= zext(s.owk, B32) + s.u[5]

        s.units = AddrUnitsRTL()
        s.units.cmd //= s.cmd
        for name in STRIDES:
            connect(getattr(s.units, name), getattr(s, name))
        for name in ("start", "advance", "running", "all_at", "hh", "ww", "r_f", "s_f", "r_d", "s_d",
                     "oh_d", "ow_d", "ohs", "ows", "W", "WO", "S"):
            connect(getattr(s.units, name), getattr(s, name))
        s.units.u3 //= s.u[3]
        s.tile = AddrBatchTileRTL(P)  # a batch-parallel fwd's weight column and real images / channels
        s.tile.cmd //= s.cmd
        for name in ("start", "advance", "running", "all_at"):
            connect(getattr(s.tile, name), getattr(s, name))
        for lv in (0, 1, 4):
            connect(getattr(s.tile, f"carry{lv}"), s.carry[lv])
            connect(getattr(s.tile, f"at{lv}"), s.at[lv])
        for name in ("col", "nlanes", "nrows"):
            connect(getattr(s, name), getattr(s.tile, name))
        s.units.bp //= s.tile.bp
        s.units.cl_last //= s.tile.cl_last
        for au in range(NPROD):
            s.prod[au] //= s.units.prod[au]
        for q, lv in enumerate(LEVELS):  # the accumulated levels
            s.units.carry[q] //= s.carry[lv]
            s.units.at[q] //= s.at[lv]

        @update
        def up_addresses():
            for b in range(NRB):
                s.rd_base[b] @= ZERO
                s.rd_unit[b] @= U_NONE
            for j in range(NWR):
                s.wr_base[j] @= ZERO
                s.wr_unit[j] @= U_NONE
            s.idx @= s.units.ksum[AU_IDX]  # (every term of the flat index is accumulated)
            s.idx2 @= ZERO
            s.tap @= 0
            s.zero @= 0
            s.db_acc @= 0
            if s.cmd.op == OP_FWD:
                s.rd_base[RB_X] @= s.A0 + s.units.ksum[AU_MAP]  # fwd: x[n, ct, hh, ww]
                s.rd_unit[RB_X] @= U_MAP
                s.rd_base[RB_W] @= s.A1 + s.units.ksum[AU_WGT]
                s.rd_unit[RB_W] @= U_WGT
                s.rd_base[RB_B] @= s.A2 + s.u[1]
                s.wr_base[0] @= s.D0 + s.units.ksum[AU_OUT]
                s.wr_unit[0] @= U_OUT
                s.zero @= ~((s.hh < s.H) & (s.ww < s.W))
            elif s.cmd.op == OP_BWD_DATA:
                s.rd_base[RB_D] @= s.A0 + s.units.ksum[AU_OUT]
                s.rd_unit[RB_D] @= U_OUT
                s.rd_base[RB_W] @= s.A1 + s.units.ksum[AU_WGT]
                s.rd_unit[RB_W] @= U_WGT
                s.rd_base[RB_X] @= s.A2 + s.units.ksum[AU_MAP]
                s.rd_unit[RB_X] @= U_MAP
                s.wr_base[0] @= s.D0 + s.units.ksum[AU_MAP]
                s.wr_unit[0] @= U_MAP
                s.zero @= ~((s.r_d < s.R) & (s.s_d < s.S) & (s.oh_d < s.HO) & (s.ow_d < s.WO))
            elif s.cmd.op == OP_BWD_WEIGHT:
                s.rd_base[RB_X] @= s.A0 + s.units.ksum[AU_MAP]
                s.rd_unit[RB_X] @= U_MAP
                s.rd_base[RB_D] @= s.A1 + s.units.ksum[AU_OUT]
                s.rd_unit[RB_D] @= U_OUT
                s.wr_base[0] @= s.D0 + s.units.ksum[AU_WGT]
                s.wr_unit[0] @= U_WGT
                s.wr_base[1] @= s.D1 + s.u[0]
                s.idx2 @= s.u[0] * PP
                s.zero @= ~((s.hh < s.H) & (s.ww < s.W) & (s.ohs < s.HO) & (s.ows < s.WO))
                s.db_acc @= ((s.cnt[1] == Z16) & (s.u[2] == s.rfirst) & (s.u[3] == s.sfirst)
                             & (s.hh < s.H) & (s.ww < s.W) & (s.ohs < s.HO) & (s.ows < s.WO))
            elif s.cmd.op == OP_POOL_FWD:
                s.rd_base[RB_X] @= s.A0 + s.units.ksum[AU_MAP]
                s.rd_unit[RB_X] @= U_MAP
                s.wr_base[0] @= s.D0 + s.units.ksum[AU_OUT]
                s.wr_unit[0] @= U_OUT
                s.wr_base[1] @= s.D1 + s.units.ksum[AU_OUT]
                s.wr_unit[1] @= U_OUT
                s.tap @= s.cnt[4][0:8] * s.cmd.pk + s.cnt[5][0:8]
            elif s.cmd.op == OP_POOL_BWD:
                s.rd_base[RB_D] @= s.A0 + s.units.ksum[AU_OUT]
                s.rd_unit[RB_D] @= U_OUT
                s.rd_base[RB_X] @= s.A1 + s.units.ksum[AU_OUT]  # the argmax beside dy
                s.rd_unit[RB_X] @= U_OUT
                s.wr_base[0] @= s.D0 + s.units.ksum[AU_MAP]
                s.wr_unit[0] @= U_MAP
                s.tap @= s.cnt[4][0:8] * s.cmd.pk + s.cnt[5][0:8]
            elif s.cmd.op == OP_UPDATE:
                s.rd_base[RB_W] @= s.A0 + s.units.ksum[AU_WGT]
                s.rd_unit[RB_W] @= U_WGT
                s.rd_base[RB_G] @= s.A1 + s.units.ksum[AU_WGT]
                s.rd_unit[RB_G] @= U_WGT
                s.wr_base[0] @= s.D0 + s.units.ksum[AU_WGT]
                s.wr_unit[0] @= U_WGT

    def line_trace(s):
        c = ",".join(str(int(v)) for v in s.cnt)
        return f"{'R' if s.running else '.'}[{c}]{'f' if s.first else ' '}{'l' if s.last else ' '}{'z' if s.zero else ' '}"
