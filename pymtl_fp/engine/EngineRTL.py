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

Commands run one at a time (LOAD, STORE, compute); see :mod:`pymtl_fp.engine.msgs`.
"""

from pymtl3 import (
    Bits1, Bits2, Bits16, Bits32, Component, OutPort, Wire, mk_bits, trunc, update, update_ff, zext,
)
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.engine import msgs
from pymtl_fp.engine.AddrGenRTL import AddrGenRTL
from pymtl_fp.engine.BankedBufferRTL import BankedBufferRTL
from pymtl_fp.engine.MacArrayRTL import MacArrayRTL
from pymtl_fp.engine.RequantBankRTL import RequantBankRTL, SaturateRTL
from pymtl_fp.engine.msgs import cmd_type, data_type
from pymtl_fp.primitives.SramRTL import addr_bits

S_IDLE, S_LOAD, S_STORE, S_COMP = 0, 1, 2, 3


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
        IDLE, LOAD, STORE, COMP = Bits2(S_IDLE), Bits2(S_LOAD), Bits2(S_STORE), Bits2(S_COMP)
        OP_LOAD, OP_STORE = msgs.OP_LOAD, msgs.OP_STORE
        OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT
        OP_POOL_FWD, OP_POOL_BWD, OP_UPDATE = msgs.OP_POOL_FWD, msgs.OP_POOL_BWD, msgs.OP_UPDATE
        BUF_X, BUF_D, BUF_O, BUF_W, BUF_G, BUF_B = (msgs.BUF_X, msgs.BUF_D, msgs.BUF_O, msgs.BUF_W,
                                                    msgs.BUF_G, msgs.BUF_B)
        ZD, ONED, ZA, ZS = DT(0), DT(1), AccT(0), StrT(0)
        Z16, ONE16 = Bits16(0), Bits16(1)
        LP, LPP = Bits16(P), Bits16(PP)
        COOL, COOL_DB = Bits16(P - 1), Bits16(P)
        LP1 = Bits16(P + 1)
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
        s.state = Wire(2)
        s.cmd_r = Wire(cmd_type())
        s.ls_addr = Wire(16)  # load/store: current word
        s.ls_lane = Wire(16)  # load/store: current lane
        s.ls_left = Wire(msgs.COUNT_BITS)  # load/store: elements still to move
        s.st_ph = Wire()  # store: 1 = the current word has been read
        s.ls_lanes = Wire(16)  # lanes of the selected buffer
        s.ls_data = Wire(SB)  # store: the selected element
        s.cmd_go, s.din_go, s.dout_go = Wire(), Wire(), Wire()
        s.is_compute = Wire()

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

        # ---- command / load / store ----------------------------------------------------------
        @update
        def up_handshakes():
            s.cmd.rdy @= s.state == IDLE
            s.din.rdy @= s.state == LOAD
            s.dout.val @= (s.state == STORE) & s.st_ph
            s.cmd_go @= s.cmd.val & (s.state == IDLE)
            s.din_go @= s.din.val & (s.state == LOAD)
            s.dout_go @= s.dout.rdy & (s.state == STORE) & s.st_ph
            s.is_compute @= (s.cmd.msg.op != OP_LOAD) & (s.cmd.msg.op != OP_STORE)
            s.busy @= s.state != IDLE
            if (s.cmd_r.target == BUF_W) | (s.cmd_r.target == BUF_G):
                s.ls_lanes @= LPP
            else:
                s.ls_lanes @= LP

        @update
        def up_store_data():
            s.ls_data @= ZS
            for i in range(P):
                if s.ls_lane == i:
                    if s.cmd_r.target == BUF_X:
                        s.ls_data @= zext(s.bx.rdata[i] ^ SIGN_D, StrT) - SD_S
                    elif s.cmd_r.target == BUF_D:
                        s.ls_data @= zext(s.bd.rdata[i] ^ SIGN_D, StrT) - SD_S
                    elif s.cmd_r.target == BUF_O:
                        s.ls_data @= zext(s.bo.rdata[i] ^ SIGN_D, StrT) - SD_S
                    elif s.cmd_r.target == BUF_B:
                        s.ls_data @= zext(s.bb.rdata[i] ^ SACC, StrT) - SACC_S
            for i in range(PP):
                if s.ls_lane == i:
                    if s.cmd_r.target == BUF_W:
                        s.ls_data @= zext(s.bw.rdata[i] ^ SIGN_D, StrT) - SD_S
                    elif s.cmd_r.target == BUF_G:
                        s.ls_data @= zext(s.bg.rdata[i] ^ SIGN_D, StrT) - SD_S
            s.dout.msg @= s.ls_data

        @update_ff
        def up_control():
            if s.reset:
                s.state <<= IDLE
                s.st_ph <<= 0
                s.ls_left <<= 0
                s.ls_lane <<= Z16
                s.ls_addr <<= Z16
            elif s.state == IDLE:
                if s.cmd_go:
                    s.cmd_r <<= s.cmd.msg
                    s.ls_addr <<= s.cmd.msg.addr
                    s.ls_lane <<= Z16
                    s.ls_left <<= s.cmd.msg.count
                    s.st_ph <<= 0
                    if s.is_compute:
                        s.state <<= COMP
                    elif s.cmd.msg.count == 0:
                        s.state <<= IDLE
                    elif s.cmd.msg.op == OP_LOAD:
                        s.state <<= LOAD
                    else:
                        s.state <<= STORE
            elif s.state == LOAD:
                if s.din_go:
                    s.ls_left <<= s.ls_left - 1
                    if s.ls_lane == s.ls_lanes - ONE16:
                        s.ls_lane <<= Z16
                        s.ls_addr <<= s.ls_addr + ONE16
                    else:
                        s.ls_lane <<= s.ls_lane + ONE16
                    if s.ls_left == 1:
                        s.state <<= IDLE
            elif s.state == STORE:
                if ~s.st_ph:
                    s.st_ph <<= 1
                elif s.dout_go:
                    s.ls_left <<= s.ls_left - 1
                    if s.ls_lane == s.ls_lanes - ONE16:
                        s.ls_lane <<= Z16
                        s.ls_addr <<= s.ls_addr + ONE16
                        s.st_ph <<= 0
                    else:
                        s.ls_lane <<= s.ls_lane + ONE16
                    if s.ls_left == 1:
                        s.state <<= IDLE
            else:  # COMP
                if s.comp_done:
                    s.state <<= IDLE

        # ---- compute: stage A ---------------------------------------------------------------
        @update
        def up_stage_a():
            s.ag.start @= s.cmd_go & s.is_compute
            s.stall @= (s.cmd_r.op == OP_BWD_WEIGHT) & s.ag.last & (s.cool != Z16)
            s.adv @= (s.state == COMP) & s.ag.active & ~s.stall
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
            s.st_rd @= (s.state == STORE) & ~s.st_ph
            s.bx.ren @= s.adv
            s.bd.ren @= s.adv
            s.bw.ren @= s.adv
            s.bg.ren @= s.adv
            s.bb.ren @= s.adv
            s.bo.ren @= 0
            s.bx.raddr @= trunc(s.ag.x_addr, XAT)
            s.bd.raddr @= trunc(s.ag.d_addr, XAT)
            s.bo.raddr @= trunc(s.ls_addr, XAT)
            s.bw.raddr @= trunc(s.ag.w_addr, WAT)
            s.bg.raddr @= trunc(s.ag.g_addr, WAT)
            s.bb.raddr @= trunc(s.ag.b_addr, BAT)
            if s.state != COMP:
                s.bx.raddr @= trunc(s.ls_addr, XAT)
                s.bd.raddr @= trunc(s.ls_addr, XAT)
                s.bw.raddr @= trunc(s.ls_addr, WAT)
                s.bg.raddr @= trunc(s.ls_addr, WAT)
                s.bb.raddr @= trunc(s.ls_addr, BAT)
                s.bx.ren @= s.st_rd & (s.cmd_r.target == BUF_X)
                s.bd.ren @= s.st_rd & (s.cmd_r.target == BUF_D)
                s.bo.ren @= s.st_rd & (s.cmd_r.target == BUF_O)
                s.bw.ren @= s.st_rd & (s.cmd_r.target == BUF_W)
                s.bg.ren @= s.st_rd & (s.cmd_r.target == BUF_G)
                s.bb.ren @= s.st_rd & (s.cmd_r.target == BUF_B)

        @update
        def up_writes():
            # defaults: the loader
            s.bx.waddr @= trunc(s.ls_addr, XAT)
            s.bd.waddr @= trunc(s.ls_addr, XAT)
            s.bo.waddr @= trunc(s.ls_addr, XAT)
            s.bw.waddr @= trunc(s.ls_addr, WAT)
            s.bg.waddr @= trunc(s.ls_addr, WAT)
            s.bb.waddr @= trunc(s.ls_addr, BAT)
            for i in range(P):
                s.bx.wdata[i] @= trunc(s.din.msg, DT)
                s.bd.wdata[i] @= trunc(s.din.msg, DT)
                s.bo.wdata[i] @= trunc(s.din.msg, DT)
                s.bb.wdata[i] @= trunc(s.din.msg, AccT)
                s.bx.wen[i] @= s.din_go & (s.cmd_r.target == BUF_X) & (s.ls_lane == i)
                s.bd.wen[i] @= s.din_go & (s.cmd_r.target == BUF_D) & (s.ls_lane == i)
                s.bo.wen[i] @= s.din_go & (s.cmd_r.target == BUF_O) & (s.ls_lane == i)
                s.bb.wen[i] @= s.din_go & (s.cmd_r.target == BUF_B) & (s.ls_lane == i)
            for lv in range(PP):
                s.bw.wdata[lv] @= trunc(s.din.msg, DT)
                s.bg.wdata[lv] @= trunc(s.din.msg, DT)
                s.bw.wen[lv] @= s.din_go & (s.cmd_r.target == BUF_W) & (s.ls_lane == lv)
                s.bg.wen[lv] @= s.din_go & (s.cmd_r.target == BUF_G) & (s.ls_lane == lv)
            if s.state == COMP:
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
                    if (s.cmd_r.op == OP_FWD) & s.lastB:
                        s.bo.waddr @= trunc(s.wrB, XAT)
                        for i in range(P):
                            s.bo.wen[i] @= 1
                            s.bo.wdata[i] @= zext(s.sat_a[i].out ^ SA, DT) - SA_D
                    elif (s.cmd_r.op == OP_BWD_DATA) & s.lastB:
                        s.bo.waddr @= trunc(s.wrB, XAT)
                        for i in range(P):
                            s.bo.wen[i] @= 1
                            if s.mask[i]:
                                s.bo.wdata[i] @= ZD
                            else:
                                s.bo.wdata[i] @= zext(s.sat_g[i].out ^ SG, DT) - SG_D
                    elif (s.cmd_r.op == OP_POOL_FWD) & s.lastB:
                        s.bo.waddr @= trunc(s.wrB, XAT)
                        s.bx.waddr @= trunc(s.wr_addr2B, XAT)
                        for i in range(P):
                            s.bo.wen[i] @= 1
                            s.bo.wdata[i] @= s.pm_n[i]
                            s.bx.wen[i] @= 1
                            s.bx.wdata[i] @= zext(s.pi_n[i], DT)
                    elif s.cmd_r.op == OP_POOL_BWD:
                        s.bo.waddr @= trunc(s.wrB, XAT)
                        for i in range(P):
                            s.bo.wen[i] @= 1
                            if s.bx.rdata[i] == zext(s.tapB, DT):
                                s.bo.wdata[i] @= s.bd.rdata[i]
                            else:
                                s.bo.wdata[i] @= ZD
                    elif s.cmd_r.op == OP_UPDATE:
                        s.bw.waddr @= trunc(s.wrB, WAT)
                        for r in range(P):
                            for j in range(P):
                                s.bw.wen[r * P + j] @= s.rowB == r
                                s.bw.wdata[r * P + j] @= zext(s.sat_w[j].out ^ SW, DT) - SW_D

    def line_trace(s):
        st = "ILSC"[int(s.state)]
        op = msgs.OP_NAMES.get(int(s.cmd_r.op), "?")
        return (f"{s.cmd}|{s.din}|{s.dout} {st} {op:<10} {s.ag.line_trace()} "
                f"{'B' if s.vB else '.'} mac[{s.mac.line_trace()}] dr{int(s.dr_left)}")
