"""Engine, register-transfer level: the conv/backprop datapath of one FPGA (synthesizable).

Structure (each block in its own file)::

    cmd --> controller (this file) ---- load/store unit (this file) <--> din / dout
                 |                              |
           AddrGenRTL --- read addresses ---> buffers X D O (P lanes), W G (P*P), B (bias)
                 | stage A                      | registered read
                 v                              v
           stage-B registers ----------> MacArrayRTL (P x P, exact accumulators)
                                               |  res (after this cycle's products)
                          drain registers <----+----> RequantBankRTL -> saturate/ReLU/mask
                          (bwd_weight, P rows)             |
                                                           v  writeback to O / G / B / W / X

Pipeline: stage A issues one step of the operation's loop nest per cycle (buffer reads);
stage B, one cycle later, multiplies/accumulates (or max-compares for pooling).  A finished
output is requantized in the cycle of its last products and written while the array starts
the next one; ``bwd_weight`` copies its ``P x P`` finished tile into drain registers and writes
it back one row per cycle (``P`` cycles) while the array accumulates the next tile — the
address generator holds a tile's last step only if the previous drain is not done yet.  The
bias gradient ``db`` needs no pass of its own: during the ``ct == 0`` tiles a row of ``P``
adders sums each ``dy`` once (at the first valid tap of its output position) and the sum is
drained as one more row after the tile that completes it.

Three units run concurrently, one command each: the loader LD (LOAD: ``din`` -> a buffer's
write port), the storer ST (STORE: a buffer's read port -> ``dout``) and the compute unit EX
(everything above).  Commands are accepted in order; ``cmd.rdy`` (combinational in ``cmd.msg``)
is high when all units are idle, or when the command has ``ovl = 1``, its own unit is idle and
none of its address ranges conflicts with those of a busy unit (same port of the same buffer, or
a write intersecting a read; rule and proof of in-order semantics: :mod:`pymtl_fp.engine.msgs`).
The ranges of each command are computed from its fields at acceptance (``c_*``, in elements of
the buffer: words times lanes, so a LOAD/STORE needs no division) and kept in registers while
its unit is busy (``ld_*``, ``st_*``, ``ex_*``).  Buffers are not split: a read port belongs to
ST while ST streams that buffer, else to EX; a write port to LD while LD fills that buffer, else
to EX (the rule guarantees that they never both need it).
"""

from pymtl3 import (
    Bits1, Bits3, Bits16, Bits32, Component, OutPort, Wire, mk_bits, trunc, update, update_ff, zext,
)
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.engine import msgs
from pymtl_fp.engine.AddrGenRTL import AddrGenRTL
from pymtl_fp.engine.BankedBufferRTL import BankedBufferRTL
from pymtl_fp.engine.MacArrayRTL import MacArrayRTL
from pymtl_fp.engine.RequantBankRTL import RequantBankRTL, SaturateRTL
from pymtl_fp.engine.msgs import cmd_type, data_type
from pymtl_fp.primitives.SramRTL import addr_bits

NSLOT = 5  # address-range slots of a command (fields a0, a1, a2, d0, d1)


class EngineRTL(Component):
    def construct(s, cfg):
        s.cfg = cfg
        s.params = cfg.params()
        P = cfg.P
        PP = P * P
        D = cfg.data_bits
        AB = cfg.acc_bits
        SB = cfg.stream_bits
        DT, AccT, StrT = mk_bits(D), mk_bits(AB), mk_bits(SB)
        XA, WA, BA = addr_bits(cfg.act_depth), addr_bits(cfg.weight_depth), addr_bits(cfg.bias_depth)
        XAT, WAT, BAT = mk_bits(XA), mk_bits(WA), mk_bits(BA)
        OP_LOAD, OP_STORE = msgs.OP_LOAD, msgs.OP_STORE
        OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT
        OP_POOL_FWD, OP_POOL_BWD, OP_UPDATE = msgs.OP_POOL_FWD, msgs.OP_POOL_BWD, msgs.OP_UPDATE
        BUF_X, BUF_D, BUF_O, BUF_W, BUF_G, BUF_B = (msgs.BUF_X, msgs.BUF_D, msgs.BUF_O, msgs.BUF_W,
                                                    msgs.BUF_G, msgs.BUF_B)
        DSEL_X, DSEL_D = msgs.DSEL_X, msgs.DSEL_D
        ZD, ONED, ZA, ZS = DT(0), DT(1), AccT(0), StrT(0)
        Z16, ONE16 = Bits16(0), Bits16(1)
        LP, LPP = Bits16(P), Bits16(PP)
        COOL, COOL_DB = Bits16(P - 1), Bits16(P)
        LP1 = Bits16(P + 1)
        LP32, LPP32 = Bits32(P), Bits32(PP)
        B32 = Bits32
        ACT_SIGN = D - 1
        SIGN_D = DT(1 << (D - 1))
        STO_EN = Bits1(1 if cfg.stochastic else 0)  # stochastic rounding built (else tied off)
        # sign extension as zext(x ^ sign) - sign: PyMTL3 3.1.17 translates sext() of an array
        # element wrongly (the sign-bit select is dropped: {24{x[i]}} instead of {24{x[i][7]}})
        GT, AT, WT = mk_bits(cfg.grad_bits), mk_bits(cfg.act_bits), mk_bits(cfg.weight_bits)
        SG, SA, SW = GT(1 << (cfg.grad_bits - 1)), AT(1 << (cfg.act_bits - 1)), WT(1 << (cfg.weight_bits - 1))
        SD_S, SD_A = StrT(1 << (D - 1)), AccT(1 << (D - 1))
        SACC, SACC_S = AccT(1 << (AB - 1)), StrT(1 << (AB - 1))
        SG_A, SG_D = AccT(1 << (cfg.grad_bits - 1)), DT(1 << (cfg.grad_bits - 1))
        SA_D, SW_D = DT(1 << (cfg.act_bits - 1)), DT(1 << (cfg.weight_bits - 1))

        # ---- interface ---------------------------------------------------------------------
        s.cmd = RecvIfcRTL(cmd_type())
        s.din = RecvIfcRTL(data_type(cfg))
        s.dout = SendIfcRTL(data_type(cfg))
        s.busy = OutPort()

        # ---- children ----------------------------------------------------------------------
        s.bx = BankedBufferRTL(P, D, cfg.act_depth)
        s.bd = BankedBufferRTL(P, D, cfg.act_depth)
        s.bo = BankedBufferRTL(P, D, cfg.act_depth)
        s.bw = BankedBufferRTL(PP, D, cfg.weight_depth)
        s.bg = BankedBufferRTL(PP, D, cfg.weight_depth)
        s.bb = BankedBufferRTL(P, AB, cfg.bias_depth)
        s.ag = AddrGenRTL(P)
        s.mac = MacArrayRTL(P, D, AB)
        s.rq = RequantBankRTL(P, AB)
        s.sat_a = [SaturateRTL(AB, cfg.act_bits) for _ in range(P)]
        s.sat_g = [SaturateRTL(AB, cfg.grad_bits) for _ in range(P)]
        s.sat_w = [SaturateRTL(AB, cfg.weight_bits) for _ in range(P)]

        # ---- controller state --------------------------------------------------------------
        s.ld_busy, s.st_busy, s.ex_busy = Wire(), Wire(), Wire()
        s.cmd_r = Wire(cmd_type())  # EX: the compute command
        s.ld_tgt, s.st_tgt = Wire(3), Wire(3)  # LD / ST: buffer
        s.ld_addr, s.st_addr = Wire(16), Wire(16)  # LD / ST: current word
        s.ld_lane, s.st_lane = Wire(16), Wire(16)  # LD / ST: current lane
        s.ld_left, s.st_left = Wire(msgs.COUNT_BITS), Wire(msgs.COUNT_BITS)  # elements still to move
        s.st_ph = Wire()  # store: 1 = the current word has been read
        s.ld_lanes, s.st_lanes = Wire(16), Wire(16)  # lanes of the LD / ST buffer
        s.ls_data = Wire(SB)  # store: the selected element
        s.cmd_go, s.din_go, s.dout_go = Wire(), Wire(), Wire()
        s.is_compute, s.is_load, s.is_store = Wire(), Wire(), Wire()
        s.any_busy, s.own_busy, s.conf = Wire(), Wire(), Wire()
        # address ranges [lo, hi) in elements: of the offered command (c_*), of the busy units
        s.sz_x, s.sz_dy, s.sz_w, s.sz_pool, s.sz_kt = Wire(32), Wire(32), Wire(32), Wire(32), Wire(32)
        s.t_mul = Wire(32)
        s.c_base = [Wire(32) for _ in range(NSLOT)]
        s.c_size = [Wire(32) for _ in range(NSLOT)]
        s.c_mul = [Wire(32) for _ in range(NSLOT)]
        s.c_buf = [Wire(3) for _ in range(NSLOT)]
        s.c_lo = [Wire(32) for _ in range(NSLOT)]
        s.c_hi = [Wire(32) for _ in range(NSLOT)]
        s.c_wr = [Wire() for _ in range(NSLOT)]
        s.c_v = [Wire() for _ in range(NSLOT)]
        s.ex_buf = [Wire(3) for _ in range(NSLOT)]
        s.ex_lo = [Wire(32) for _ in range(NSLOT)]
        s.ex_hi = [Wire(32) for _ in range(NSLOT)]
        s.ex_wr = [Wire() for _ in range(NSLOT)]
        s.ex_v = [Wire() for _ in range(NSLOT)]
        s.ld_lo, s.ld_hi, s.st_lo, s.st_hi = Wire(32), Wire(32), Wire(32), Wire(32)
        s.c_dbuf = Wire(3)  # the buffer of the offered command's d0 result (field dsel)
        s.c_ambuf = Wire(3)  # the buffer of the offered pool command's argmax (field amsel)
        s.am_rd = [Wire(D) for _ in range(P)]  # pool_bwd: the argmax read (X or O)
        # EX's d0 result write: enable, word, lanes (routed to O, X or D by cmd_r.dsel)
        s.wb_en = Wire()
        s.wb_addr = Wire(XA)
        s.wb_data = [Wire(D) for _ in range(P)]

        # stage B
        s.vB, s.firstB, s.lastB, s.zeroB = Wire(), Wire(), Wire(), Wire()
        s.dbaccB, s.dbfirstB, s.dbendB = Wire(), Wire(), Wire()
        s.wrB, s.wr_addr2B, s.idxB, s.idx2B = Wire(32), Wire(32), Wire(32), Wire(32)
        s.tapB = Wire(8)
        s.rowB = Wire(16)
        # drain (bwd_weight)
        s.dr = [Wire(AB) for _ in range(PP)]
        s.dr_addr, s.dr_idx = Wire(32), Wire(32)
        s.dr_left = Wire(16)  # drain rows left: P dw rows, then (if the tile ends kt's db) 1 db row
        # db accumulators (bwd_weight): summed on the side of the ct == 0 tiles
        s.dbacc = [Wire(AB) for _ in range(P)]
        s.dbacc_n = [Wire(AB) for _ in range(P)]
        s.dbdr = [Wire(AB) for _ in range(P)]
        s.db_addr, s.db_idx = Wire(32), Wire(32)
        s.dr_row = Wire(16)
        s.cool = Wire(16)
        s.stall = Wire()
        s.adv = Wire()
        s.comp_done = Wire()
        # pooling
        s.pm = [Wire(D) for _ in range(P)]
        s.pi = [Wire(8) for _ in range(P)]
        s.pm_n = [Wire(D) for _ in range(P)]
        s.pi_n = [Wire(8) for _ in range(P)]
        # strides of the element index
        s.HOWO, s.HW, s.RS, s.CRS = Wire(32), Wire(32), Wire(32), Wire(32)
        # writeback values
        s.upd_w = [Wire(AB) for _ in range(P)]
        s.rq_acc = [Wire(AB) for _ in range(P)]
        s.mask = [Wire() for _ in range(P)]

        s.ag.cmd //= s.cmd_r

        # ---- address ranges and acceptance ---------------------------------------------------
        @update
        def up_sizes():
            s.sz_x @= zext(s.cmd.msg.n, B32) * zext(s.cmd.msg.ct, B32) * zext(s.cmd.msg.h, B32) * zext(s.cmd.msg.w, B32)
            s.sz_dy @= zext(s.cmd.msg.n, B32) * zext(s.cmd.msg.kt, B32) * zext(s.cmd.msg.ho, B32) * zext(s.cmd.msg.wo, B32)
            s.sz_w @= zext(s.cmd.msg.kt, B32) * zext(s.cmd.msg.ct, B32) * zext(s.cmd.msg.r, B32) * zext(s.cmd.msg.s, B32)
            s.sz_pool @= zext(s.cmd.msg.n, B32) * zext(s.cmd.msg.ct, B32) * zext(s.cmd.msg.ho, B32) * zext(s.cmd.msg.wo, B32)
            s.sz_kt @= zext(s.cmd.msg.kt, B32)

        @update
        def up_cmd_dbuf():
            if s.cmd.msg.dsel == DSEL_X:
                s.c_dbuf @= Bits3(BUF_X)
            elif s.cmd.msg.dsel == DSEL_D:
                s.c_dbuf @= Bits3(BUF_D)
            else:
                s.c_dbuf @= Bits3(BUF_O)
            if s.cmd.msg.amsel:
                s.c_ambuf @= Bits3(BUF_O)
            else:
                s.c_ambuf @= Bits3(BUF_X)

        @update
        def up_cmd_ranges():
            # slot i is address field i (a0 a1 a2 read, d0 d1 written), as msgs.access_ranges
            s.c_base[0] @= zext(s.cmd.msg.a0, B32)
            s.c_base[1] @= zext(s.cmd.msg.a1, B32)
            s.c_base[2] @= zext(s.cmd.msg.a2, B32)
            s.c_base[3] @= zext(s.cmd.msg.d0, B32)
            s.c_base[4] @= zext(s.cmd.msg.d1, B32)
            s.c_wr[0] @= 0
            s.c_wr[1] @= 0
            s.c_wr[2] @= 0
            s.c_wr[3] @= 1
            s.c_wr[4] @= 1
            for i in range(NSLOT):
                s.c_buf[i] @= Bits3(BUF_X)
                s.c_size[i] @= B32(0)
                s.c_v[i] @= 0
            if s.cmd.msg.op == OP_FWD:
                s.c_buf[1] @= Bits3(BUF_W)
                s.c_buf[2] @= Bits3(BUF_B)
                s.c_buf[3] @= s.c_dbuf
                s.c_size[0] @= s.sz_x
                s.c_size[1] @= s.sz_w
                s.c_size[2] @= s.sz_kt
                s.c_size[3] @= s.sz_dy
                s.c_v[0] @= 1
                s.c_v[1] @= 1
                s.c_v[2] @= 1
                s.c_v[3] @= 1
            elif s.cmd.msg.op == OP_BWD_DATA:
                s.c_buf[0] @= Bits3(BUF_D)
                s.c_buf[1] @= Bits3(BUF_W)
                s.c_buf[3] @= s.c_dbuf
                s.c_size[0] @= s.sz_dy
                s.c_size[1] @= s.sz_w
                s.c_size[2] @= s.sz_x
                s.c_size[3] @= s.sz_x
                s.c_v[0] @= 1
                s.c_v[1] @= 1
                s.c_v[2] @= 1
                s.c_v[3] @= 1
            elif s.cmd.msg.op == OP_BWD_WEIGHT:
                s.c_buf[1] @= Bits3(BUF_D)
                s.c_buf[3] @= Bits3(BUF_G)
                s.c_buf[4] @= Bits3(BUF_B)
                s.c_size[0] @= s.sz_x
                s.c_size[1] @= s.sz_dy
                s.c_size[3] @= s.sz_w
                s.c_size[4] @= s.sz_kt
                s.c_v[0] @= 1
                s.c_v[1] @= 1
                s.c_v[3] @= 1
                s.c_v[4] @= 1
            elif s.cmd.msg.op == OP_POOL_FWD:
                s.c_buf[3] @= s.c_dbuf
                s.c_buf[4] @= s.c_ambuf
                s.c_size[0] @= s.sz_x
                s.c_size[3] @= s.sz_pool
                s.c_size[4] @= s.sz_pool
                s.c_v[0] @= 1
                s.c_v[3] @= 1
                s.c_v[4] @= 1
            elif s.cmd.msg.op == OP_POOL_BWD:
                s.c_buf[0] @= Bits3(BUF_D)
                s.c_buf[1] @= s.c_ambuf
                s.c_buf[3] @= s.c_dbuf
                s.c_size[0] @= s.sz_pool
                s.c_size[1] @= s.sz_pool
                s.c_size[3] @= s.sz_x
                s.c_v[0] @= 1
                s.c_v[1] @= 1
                s.c_v[3] @= 1
            elif s.cmd.msg.op == OP_UPDATE:
                s.c_buf[0] @= Bits3(BUF_W)
                s.c_buf[1] @= Bits3(BUF_G)
                s.c_buf[3] @= Bits3(BUF_W)
                s.c_size[0] @= s.sz_w
                s.c_size[1] @= s.sz_w
                s.c_size[3] @= s.sz_w
                s.c_v[0] @= 1
                s.c_v[1] @= 1
                s.c_v[3] @= 1
            for i in range(NSLOT):
                if (s.c_buf[i] == BUF_W) | (s.c_buf[i] == BUF_G):
                    s.c_mul[i] @= LPP32
                else:
                    s.c_mul[i] @= LP32
                s.c_lo[i] @= s.c_base[i] * s.c_mul[i]
                s.c_hi[i] @= (s.c_base[i] + s.c_size[i]) * s.c_mul[i]
            if (s.cmd.msg.target == BUF_W) | (s.cmd.msg.target == BUF_G):
                s.t_mul @= LPP32
            else:
                s.t_mul @= LP32
            if s.is_load | s.is_store:  # one range: elements [addr * lanes, addr * lanes + count)
                s.c_buf[0] @= s.cmd.msg.target
                s.c_wr[0] @= s.is_load
                s.c_v[0] @= 1
                s.c_lo[0] @= zext(s.cmd.msg.addr, B32) * s.t_mul
                s.c_hi[0] @= zext(s.cmd.msg.addr, B32) * s.t_mul + zext(s.cmd.msg.count, B32)

        @update
        def up_conflict():
            # a conflict with a busy unit: same buffer, and the same port or intersecting ranges
            s.conf @= 0
            for i in range(NSLOT):
                if s.c_v[i] & (s.c_lo[i] < s.c_hi[i]):
                    if s.ld_busy & (s.c_buf[i] == s.ld_tgt) & (s.c_lo[i] < s.ld_hi) & (s.ld_lo < s.c_hi[i]):
                        s.conf @= 1
                    if s.st_busy & (s.c_buf[i] == s.st_tgt) & (s.c_lo[i] < s.st_hi) & (s.st_lo < s.c_hi[i]):
                        s.conf @= 1
                    for j in range(NSLOT):
                        if (s.ex_busy & s.ex_v[j] & (s.c_buf[i] == s.ex_buf[j]) & (s.ex_lo[j] < s.ex_hi[j])
                                & (s.c_lo[i] < s.ex_hi[j]) & (s.ex_lo[j] < s.c_hi[i])):
                            s.conf @= 1
                if s.c_v[i]:
                    if s.ld_busy & (s.c_buf[i] == s.ld_tgt) & s.c_wr[i]:
                        s.conf @= 1
                    if s.st_busy & (s.c_buf[i] == s.st_tgt) & ~s.c_wr[i]:
                        s.conf @= 1
                    for j in range(NSLOT):
                        if s.ex_busy & s.ex_v[j] & (s.c_buf[i] == s.ex_buf[j]) & (s.c_wr[i] == s.ex_wr[j]):
                            s.conf @= 1

        @update_ff
        def up_range_regs():
            if s.cmd_go & s.is_compute:
                for i in range(NSLOT):
                    s.ex_buf[i] <<= s.c_buf[i]
                    s.ex_lo[i] <<= s.c_lo[i]
                    s.ex_hi[i] <<= s.c_hi[i]
                    s.ex_wr[i] <<= s.c_wr[i]
                    s.ex_v[i] <<= s.c_v[i]
            if s.cmd_go & s.is_load:
                s.ld_lo <<= s.c_lo[0]
                s.ld_hi <<= s.c_hi[0]
            if s.cmd_go & s.is_store:
                s.st_lo <<= s.c_lo[0]
                s.st_hi <<= s.c_hi[0]

        # ---- command / load / store ----------------------------------------------------------
        @update
        def up_handshakes():
            s.is_load @= s.cmd.msg.op == OP_LOAD
            s.is_store @= s.cmd.msg.op == OP_STORE
            s.is_compute @= (s.cmd.msg.op != OP_LOAD) & (s.cmd.msg.op != OP_STORE)
            s.any_busy @= s.ld_busy | s.st_busy | s.ex_busy
            s.own_busy @= (s.is_load & s.ld_busy) | (s.is_store & s.st_busy) | (s.is_compute & s.ex_busy)
            s.cmd.rdy @= ~s.any_busy | (s.cmd.msg.ovl & ~s.own_busy & ~s.conf)
            s.cmd_go @= s.cmd.val & s.cmd.rdy
            s.din.rdy @= s.ld_busy
            s.dout.val @= s.st_busy & s.st_ph
            s.din_go @= s.din.val & s.ld_busy
            s.dout_go @= s.dout.rdy & s.st_busy & s.st_ph
            s.busy @= s.any_busy
            if (s.ld_tgt == BUF_W) | (s.ld_tgt == BUF_G):
                s.ld_lanes @= LPP
            else:
                s.ld_lanes @= LP
            if (s.st_tgt == BUF_W) | (s.st_tgt == BUF_G):
                s.st_lanes @= LPP
            else:
                s.st_lanes @= LP

        @update
        def up_store_data():
            s.ls_data @= ZS
            for i in range(P):
                if s.st_lane == i:
                    if s.st_tgt == BUF_X:
                        s.ls_data @= zext(s.bx.rdata[i] ^ SIGN_D, StrT) - SD_S
                    elif s.st_tgt == BUF_D:
                        s.ls_data @= zext(s.bd.rdata[i] ^ SIGN_D, StrT) - SD_S
                    elif s.st_tgt == BUF_O:
                        s.ls_data @= zext(s.bo.rdata[i] ^ SIGN_D, StrT) - SD_S
                    elif s.st_tgt == BUF_B:
                        s.ls_data @= zext(s.bb.rdata[i] ^ SACC, StrT) - SACC_S
            for i in range(PP):
                if s.st_lane == i:
                    if s.st_tgt == BUF_W:
                        s.ls_data @= zext(s.bw.rdata[i] ^ SIGN_D, StrT) - SD_S
                    elif s.st_tgt == BUF_G:
                        s.ls_data @= zext(s.bg.rdata[i] ^ SIGN_D, StrT) - SD_S
            s.dout.msg @= s.ls_data

        @update_ff
        def up_control():
            if s.reset:
                s.ld_busy <<= 0
                s.st_busy <<= 0
                s.ex_busy <<= 0
                s.st_ph <<= 0
                s.ld_left <<= 0
                s.st_left <<= 0
                s.ld_lane <<= Z16
                s.st_lane <<= Z16
                s.ld_addr <<= Z16
                s.st_addr <<= Z16
            else:
                # LD
                if s.ld_busy:
                    if s.din_go:
                        s.ld_left <<= s.ld_left - 1
                        if s.ld_lane == s.ld_lanes - ONE16:
                            s.ld_lane <<= Z16
                            s.ld_addr <<= s.ld_addr + ONE16
                        else:
                            s.ld_lane <<= s.ld_lane + ONE16
                        if s.ld_left == 1:
                            s.ld_busy <<= 0
                elif s.cmd_go & s.is_load:
                    s.ld_tgt <<= s.cmd.msg.target
                    s.ld_addr <<= s.cmd.msg.addr
                    s.ld_lane <<= Z16
                    s.ld_left <<= s.cmd.msg.count
                    s.ld_busy <<= s.cmd.msg.count != 0
                # ST
                if s.st_busy:
                    if ~s.st_ph:
                        s.st_ph <<= 1
                    elif s.dout_go:
                        s.st_left <<= s.st_left - 1
                        if s.st_lane == s.st_lanes - ONE16:
                            s.st_lane <<= Z16
                            s.st_addr <<= s.st_addr + ONE16
                            s.st_ph <<= 0
                        else:
                            s.st_lane <<= s.st_lane + ONE16
                        if s.st_left == 1:
                            s.st_busy <<= 0
                elif s.cmd_go & s.is_store:
                    s.st_tgt <<= s.cmd.msg.target
                    s.st_addr <<= s.cmd.msg.addr
                    s.st_lane <<= Z16
                    s.st_left <<= s.cmd.msg.count
                    s.st_ph <<= 0
                    s.st_busy <<= s.cmd.msg.count != 0
                # EX
                if s.ex_busy:
                    if s.comp_done:
                        s.ex_busy <<= 0
                elif s.cmd_go & s.is_compute:
                    s.cmd_r <<= s.cmd.msg
                    s.ex_busy <<= 1

        # ---- compute: stage A ---------------------------------------------------------------
        @update
        def up_stage_a():
            s.ag.start @= s.cmd_go & s.is_compute
            s.stall @= (s.cmd_r.op == OP_BWD_WEIGHT) & s.ag.last & (s.cool != Z16)
            s.adv @= s.ex_busy & s.ag.active & ~s.stall
            s.ag.advance @= s.adv
            s.comp_done @= ~s.ag.active & ~s.vB & (s.dr_left == Z16)

        @update
        def up_strides():
            s.HOWO @= zext(s.cmd_r.ho, B32) * zext(s.cmd_r.wo, B32)
            s.HW @= zext(s.cmd_r.h, B32) * zext(s.cmd_r.w, B32)
            s.RS @= zext(s.cmd_r.r, B32) * zext(s.cmd_r.s, B32)
            s.CRS @= zext(s.cmd_r.c, B32) * s.RS

        @update_ff
        def up_stage_b():
            if s.reset:
                s.vB <<= 0
                s.cool <<= Z16
            else:
                s.vB <<= s.adv
                s.firstB <<= s.ag.first
                s.lastB <<= s.ag.last
                s.zeroB <<= s.ag.zero
                s.dbaccB <<= s.ag.db_acc
                s.dbfirstB <<= s.ag.db_first
                s.dbendB <<= s.ag.db_end
                s.wrB <<= s.ag.wr_addr
                s.wr_addr2B <<= s.ag.wr_addr2
                s.idxB <<= s.ag.idx
                s.idx2B <<= s.ag.idx2
                s.tapB <<= s.ag.tap
                s.rowB <<= s.ag.row
                if s.adv & s.ag.last & (s.cmd_r.op == OP_BWD_WEIGHT):
                    if s.ag.db_end:
                        s.cool <<= COOL_DB
                    else:
                        s.cool <<= COOL
                elif s.cool != Z16:
                    s.cool <<= s.cool - ONE16

        # ---- compute: stage B (MAC array / pooling) ------------------------------------------
        @update
        def up_mac_inputs():
            s.mac.en @= s.vB & ((s.cmd_r.op == OP_FWD) | (s.cmd_r.op == OP_BWD_DATA)
                                | (s.cmd_r.op == OP_BWD_WEIGHT))
            s.mac.first @= s.firstB
            s.mac.outer @= s.cmd_r.op == OP_BWD_WEIGHT
            s.mac.transpose @= s.cmd_r.op == OP_BWD_DATA
            s.mac.use_bias @= s.cmd_r.op == OP_FWD
            for j in range(P):
                if s.zeroB:
                    s.mac.v[j] @= ZD
                elif s.cmd_r.op == OP_BWD_DATA:
                    s.mac.v[j] @= s.bd.rdata[j]
                else:
                    s.mac.v[j] @= s.bx.rdata[j]
                s.mac.u[j] @= s.bd.rdata[j]
                s.mac.bias[j] @= s.bb.rdata[j]
            for lv in range(PP):
                s.mac.wt[lv] @= s.bw.rdata[lv]

        @update
        def up_pool():
            for i in range(P):
                if s.firstB | ((s.bx.rdata[i] ^ SIGN_D) > (s.pm[i] ^ SIGN_D)):
                    s.pm_n[i] @= s.bx.rdata[i]
                    s.pi_n[i] @= s.tapB
                else:
                    s.pm_n[i] @= s.pm[i]
                    s.pi_n[i] @= s.pi[i]

        @update_ff
        def up_pool_regs():
            for i in range(P):
                if s.vB:
                    s.pm[i] <<= s.pm_n[i]
                    s.pi[i] <<= s.pi_n[i]

        # ---- db accumulators and drain registers (bwd_weight) ---------------------------------
        @update
        def up_db_sum():
            for i in range(P):
                if s.firstB & s.dbfirstB:
                    s.dbacc_n[i] @= ZA
                else:
                    s.dbacc_n[i] @= s.dbacc[i]
                if s.dbaccB:
                    s.dbacc_n[i] @= s.dbacc_n[i] + (zext(s.bd.rdata[i] ^ SIGN_D, AccT) - SD_A)

        @update_ff
        def up_db_regs():
            for i in range(P):
                if s.vB & (s.cmd_r.op == OP_BWD_WEIGHT):
                    s.dbacc[i] <<= s.dbacc_n[i]

        @update_ff
        def up_drain():
            if s.reset:
                s.dr_left <<= Z16
                s.dr_row <<= Z16
            elif s.vB & s.lastB & (s.cmd_r.op == OP_BWD_WEIGHT):
                for lv in range(PP):
                    s.dr[lv] <<= s.mac.res[lv]
                s.dr_addr <<= s.wrB
                s.dr_idx <<= s.idxB
                s.dr_row <<= Z16
                if s.dbendB:
                    for i in range(P):
                        s.dbdr[i] <<= s.dbacc_n[i]
                    s.db_addr <<= s.wr_addr2B
                    s.db_idx <<= s.idx2B
                    s.dr_left <<= LP1
                else:
                    s.dr_left <<= LP
            elif s.dr_left != Z16:
                s.dr_left <<= s.dr_left - ONE16
                s.dr_row <<= s.dr_row + ONE16

        # ---- requantize --------------------------------------------------------------------
        @update
        def up_requant_inputs():
            s.rq.shift @= s.cmd_r.shift
            s.rq.stochastic @= s.cmd_r.stoch & STO_EN
            s.rq.seed @= s.cmd_r.seed
            s.rq.tensor_id @= s.cmd_r.tid
            s.rq.relu @= (s.cmd_r.op == OP_FWD) & s.cmd_r.relu
            s.rq.idx_base @= s.idxB
            s.rq.idx_stride @= s.HOWO
            for i in range(P):
                s.rq_acc[i] @= s.mac.res[i * P]
            if s.dr_left != Z16:
                if s.dr_row == LP:  # the db row after the P dw rows
                    s.rq.shift @= s.cmd_r.bshift
                    s.rq.tensor_id @= s.cmd_r.btid
                    s.rq.idx_base @= s.db_idx
                    s.rq.idx_stride @= B32(1)
                    for i in range(P):
                        s.rq_acc[i] @= s.dbdr[i]
                else:
                    s.rq.idx_base @= s.dr_idx + zext(s.dr_row, B32) * s.CRS
                    s.rq.idx_stride @= s.RS
                    for r in range(P):
                        if s.dr_row == r:
                            for j in range(P):
                                s.rq_acc[j] @= s.dr[r * P + j]
            elif s.cmd_r.op == OP_UPDATE:
                s.rq.idx_stride @= s.RS
                for r in range(P):
                    if s.rowB == r:
                        for j in range(P):
                            s.rq_acc[j] @= (zext(s.bg.rdata[r * P + j] ^ SIGN_D, AccT) - SD_A)
            elif s.cmd_r.op == OP_BWD_DATA:
                s.rq.idx_stride @= s.HW
            for i in range(P):
                s.rq.acc[i] @= s.rq_acc[i]

        @update
        def up_update_values():
            for j in range(P):
                s.upd_w[j] @= ZA
            for r in range(P):
                if s.rowB == r:
                    for j in range(P):
                        s.upd_w[j] @= (zext(s.bw.rdata[r * P + j] ^ SIGN_D, AccT) - SD_A) - s.rq.q[j]
            for i in range(P):
                s.sat_a[i].in_ @= s.rq.q[i]
                s.sat_g[i].in_ @= s.rq.q[i]
                s.sat_w[i].in_ @= s.upd_w[i]
                # bwd_data ReLU mask: the forward input x <= 0
                s.mask[i] @= s.cmd_r.relu & (s.bx.rdata[i][ACT_SIGN] | (s.bx.rdata[i] == ZD))

        # ---- buffer ports --------------------------------------------------------------------
        s.st_rd = Wire()

        @update
        def up_reads():
            # a read port is ST's while ST streams that buffer, else EX's
            s.st_rd @= s.st_busy & ~s.st_ph
            s.bx.ren @= s.adv
            s.bd.ren @= s.adv
            s.bw.ren @= s.adv
            s.bg.ren @= s.adv
            s.bb.ren @= s.adv
            s.bo.ren @= 0
            s.bx.raddr @= trunc(s.ag.x_addr, XAT)
            s.bd.raddr @= trunc(s.ag.d_addr, XAT)
            s.bo.raddr @= trunc(s.st_addr, XAT)
            if s.ex_busy & (s.cmd_r.op == OP_POOL_BWD) & s.cmd_r.amsel:  # the argmax from O
                s.bo.raddr @= trunc(s.ag.x_addr, XAT)
                s.bo.ren @= s.adv
            s.bw.raddr @= trunc(s.ag.w_addr, WAT)
            s.bg.raddr @= trunc(s.ag.g_addr, WAT)
            s.bb.raddr @= trunc(s.ag.b_addr, BAT)
            if s.st_busy:
                if s.st_tgt == BUF_X:
                    s.bx.raddr @= trunc(s.st_addr, XAT)
                    s.bx.ren @= s.st_rd
                elif s.st_tgt == BUF_D:
                    s.bd.raddr @= trunc(s.st_addr, XAT)
                    s.bd.ren @= s.st_rd
                elif s.st_tgt == BUF_O:
                    s.bo.ren @= s.st_rd
                elif s.st_tgt == BUF_W:
                    s.bw.raddr @= trunc(s.st_addr, WAT)
                    s.bw.ren @= s.st_rd
                elif s.st_tgt == BUF_G:
                    s.bg.raddr @= trunc(s.st_addr, WAT)
                    s.bg.ren @= s.st_rd
                elif s.st_tgt == BUF_B:
                    s.bb.raddr @= trunc(s.st_addr, BAT)
                    s.bb.ren @= s.st_rd

        @update
        def up_writes():
            # defaults: the loader; EX drives the write ports of the buffers it writes (never the
            # one LD fills: an ovl command that would need it is not accepted)
            s.bx.waddr @= trunc(s.ld_addr, XAT)
            s.bd.waddr @= trunc(s.ld_addr, XAT)
            s.bo.waddr @= trunc(s.ld_addr, XAT)
            s.bw.waddr @= trunc(s.ld_addr, WAT)
            s.bg.waddr @= trunc(s.ld_addr, WAT)
            s.bb.waddr @= trunc(s.ld_addr, BAT)
            for i in range(P):
                s.bx.wdata[i] @= trunc(s.din.msg, DT)
                s.bd.wdata[i] @= trunc(s.din.msg, DT)
                s.bo.wdata[i] @= trunc(s.din.msg, DT)
                s.bb.wdata[i] @= trunc(s.din.msg, AccT)
                s.bx.wen[i] @= s.din_go & (s.ld_tgt == BUF_X) & (s.ld_lane == i)
                s.bd.wen[i] @= s.din_go & (s.ld_tgt == BUF_D) & (s.ld_lane == i)
                s.bo.wen[i] @= s.din_go & (s.ld_tgt == BUF_O) & (s.ld_lane == i)
                s.bb.wen[i] @= s.din_go & (s.ld_tgt == BUF_B) & (s.ld_lane == i)
            for lv in range(PP):
                s.bw.wdata[lv] @= trunc(s.din.msg, DT)
                s.bg.wdata[lv] @= trunc(s.din.msg, DT)
                s.bw.wen[lv] @= s.din_go & (s.ld_tgt == BUF_W) & (s.ld_lane == lv)
                s.bg.wen[lv] @= s.din_go & (s.ld_tgt == BUF_G) & (s.ld_lane == lv)
            if s.ex_busy:
                # drain of bwd_weight: dw rows to G, db to B
                if s.dr_left != Z16:
                    if s.dr_row == LP:
                        s.bb.waddr @= trunc(s.db_addr, BAT)
                        for i in range(P):
                            s.bb.wen[i] @= 1
                            s.bb.wdata[i] @= zext(s.sat_g[i].out ^ SG, AccT) - SG_A
                    else:
                        s.bg.waddr @= trunc(s.dr_addr, WAT)
                        for r in range(P):
                            for j in range(P):
                                s.bg.wen[r * P + j] @= s.dr_row == r
                                s.bg.wdata[r * P + j] @= zext(s.sat_g[j].out ^ SG, DT) - SG_D
                if s.vB:
                    if (s.cmd_r.op == OP_POOL_FWD) & s.lastB:  # the argmax, to X or O (amsel)
                        if s.cmd_r.amsel:
                            s.bo.waddr @= trunc(s.wr_addr2B, XAT)
                            for i in range(P):
                                s.bo.wen[i] @= 1
                                s.bo.wdata[i] @= zext(s.pi_n[i], DT)
                        else:
                            s.bx.waddr @= trunc(s.wr_addr2B, XAT)
                            for i in range(P):
                                s.bx.wen[i] @= 1
                                s.bx.wdata[i] @= zext(s.pi_n[i], DT)
                    elif s.cmd_r.op == OP_UPDATE:
                        s.bw.waddr @= trunc(s.wrB, WAT)
                        for r in range(P):
                            for j in range(P):
                                s.bw.wen[r * P + j] @= s.rowB == r
                                s.bw.wdata[r * P + j] @= zext(s.sat_w[j].out ^ SW, DT) - SW_D
            # the d0 result (fwd, bwd_data, pool_fwd, pool_bwd) to the buffer dsel names
            if s.wb_en:
                if s.cmd_r.dsel == DSEL_X:
                    s.bx.waddr @= s.wb_addr
                    for i in range(P):
                        s.bx.wen[i] @= 1
                        s.bx.wdata[i] @= s.wb_data[i]
                elif s.cmd_r.dsel == DSEL_D:
                    s.bd.waddr @= s.wb_addr
                    for i in range(P):
                        s.bd.wen[i] @= 1
                        s.bd.wdata[i] @= s.wb_data[i]
                else:
                    s.bo.waddr @= s.wb_addr
                    for i in range(P):
                        s.bo.wen[i] @= 1
                        s.bo.wdata[i] @= s.wb_data[i]

        @update
        def up_result():
            # EX's d0 result of this cycle (up_writes routes it to O, X or D)
            s.wb_en @= 0
            s.wb_addr @= trunc(s.wrB, XAT)
            for i in range(P):
                s.wb_data[i] @= ZD
            if s.ex_busy & s.vB:
                if (s.cmd_r.op == OP_FWD) & s.lastB:
                    s.wb_en @= 1
                    for i in range(P):
                        s.wb_data[i] @= zext(s.sat_a[i].out ^ SA, DT) - SA_D
                elif (s.cmd_r.op == OP_BWD_DATA) & s.lastB:
                    s.wb_en @= 1
                    for i in range(P):
                        if ~s.mask[i]:
                            s.wb_data[i] @= zext(s.sat_g[i].out ^ SG, DT) - SG_D
                elif (s.cmd_r.op == OP_POOL_FWD) & s.lastB:
                    s.wb_en @= 1
                    for i in range(P):
                        s.wb_data[i] @= s.pm_n[i]
                elif s.cmd_r.op == OP_POOL_BWD:
                    s.wb_en @= 1
                    for i in range(P):
                        if s.am_rd[i] == zext(s.tapB, DT):
                            s.wb_data[i] @= s.bd.rdata[i]

        @update
        def up_am_rd():
            for i in range(P):
                if s.cmd_r.amsel:
                    s.am_rd[i] @= s.bo.rdata[i]
                else:
                    s.am_rd[i] @= s.bx.rdata[i]

    def line_trace(s):
        ld = f"L{int(s.ld_left):<4}" if s.ld_busy else "L.   "
        st = f"S{int(s.st_left):<4}" if s.st_busy else "S.   "
        op = msgs.OP_NAMES.get(int(s.cmd_r.op), "?") if s.ex_busy else "."
        return (f"{s.cmd}|{s.din}|{s.dout} {ld} {st} X {op:<10} {s.ag.line_trace()} "
                f"{'B' if s.vB else '.'} mac[{s.mac.line_trace()}] dr{int(s.dr_left)}")
