"""Write-back (RTL, combinational): EX's writes to the buffers, from the requantized values.

It runs ``wb_latency`` cycles after stage B (``EngineConfig.wb_latency``: 0, or the pipelined
requantizer's latency): every stage-B input here (``vB``, ``lastB``, ``rowB``, the drain's row and
addresses, the buffer reads, the pooling results, ``w_row`` and ``raw`` picked by
:class:`EngineRequantSelectRTL`) arrives delayed by as much as the requantized values ``q``
(:class:`EngineRTL` puts the delay lines in).  The command ``cmd`` stays put: EX is busy, and takes
no new command, until the last write is done.

The requantized values ``q`` are saturated to the result's width (:class:`SaturateRTL`: act for
``fwd``, grad for ``bwd_data``/``dw``/``db``; ``update`` first subtracts ``q`` from the weight
row and saturates to the weight width) and sign-extended to the buffer's element width.  EX's
writes, one request per buffer (``<b>_we`` with ``<b>_addr`` and every lane's ``<b>_wen`` /
``<b>_wdata``, for the write ports :class:`EngineWritePortRTL`):

* a batch-parallel ``fwd``'s drain (``bp``): its row ``dr_row`` (an output channel of ``P`` images)
  to word ``dr_addr + dr_roff`` of O, X or D (``dsel``), where the row is a real channel (``< dr_nrows``), in
  the lanes of real images (``< dr_nlanes``);
* the ``d0`` result of ``fwd`` / ``bwd_data`` (ReLU mask: forward input ``x <= 0`` gives 0) /
  ``pool_fwd`` (the maximum) in the stage-B cycle of an output's last step, and of ``pool_bwd``
  (``dy`` where the tap is the window's argmax, else 0) every step: to O, X or D (field ``dsel``);
* ``pool_fwd``'s argmax tap to X or O (field ``amsel``; ``pool_bwd`` reads it from there);
* ``update``: the new weight row ``rowB`` (``w_row - q``) of W word ``wr_addrB``;
* the ``bwd_weight`` drain: ``dw`` rows ``dr_row .. dr_row + DR - 1`` (``DR * P`` lanes of the
  ``P * P``-lane word) to G word ``dr_addr``, the ``db`` row to B; with the command field
  ``raw``, un-rounded (the row ``raw``): ``dw`` row ``dr_row`` to B word ``d0 + (dr_addr - d0) *
  P + dr_row`` (the tile's G word order, a row per word), the ``db`` row to B.

A later request for a buffer overrides an earlier one in this order: drain, pool argmax /
update, ``d0`` result (valid commands never make two in one cycle: :func:`msgs.check_cmd`).
"""

from pymtl3 import (
    Bits16,
    Bits32,
    Component,
    InPort,
    OutPort,
    Wire,
    mk_bits,
    trunc,
    update,
    zext,
)

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type
from pymtl_fp.engine.SignExtendRTL import SignExtendRTL
from pymtl_fp.primitives.SaturateRTL import SaturateRTL

#: the buffers EX writes: name, buffer id, lanes (in units of P), element width ("d" or "acc")
WRITE_BUFS = (("x", msgs.BUF_X), ("d", msgs.BUF_D), ("o", msgs.BUF_O), ("w", msgs.BUF_W),
              ("g", msgs.BUF_G), ("b", msgs.BUF_B))


class EngineWritebackRTL(Component):
    def construct(s, P=2, act_bits=8, weight_bits=8, grad_bits=8, acc_bits=32, act_addr_bits=8,
                  weight_addr_bits=6, bias_addr_bits=4, drain_rows=1):
        s.params = dict(P=P, act_bits=act_bits, weight_bits=weight_bits, grad_bits=grad_bits,
                        acc_bits=acc_bits, act_addr_bits=act_addr_bits,
                        weight_addr_bits=weight_addr_bits, bias_addr_bits=bias_addr_bits,
                        drain_rows=drain_rows)
        PP = P * P
        DR = drain_rows
        if DR < 1 or P % DR:
            raise ValueError(f"EngineWritebackRTL: drain_rows={DR} must divide P={P}")
        NG = P // DR  # drain cycles per tile (row groups)
        NQ = DR * P  # requantizer lanes
        D = max(act_bits, weight_bits, grad_bits)
        AB = acc_bits
        DT, AccT = mk_bits(D), mk_bits(AB)
        XAT, WAT, BAT = mk_bits(act_addr_bits), mk_bits(weight_addr_bits), mk_bits(bias_addr_bits)
        B32 = Bits32
        ZD, ZA = DT(0), AccT(0)
        LP = mk_bits(16)(P)
        ACT_SIGN = D - 1
        OP_FWD, OP_BWD_DATA, OP_POOL_FWD = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_POOL_FWD
        OP_POOL_BWD, OP_UPDATE = msgs.OP_POOL_BWD, msgs.OP_UPDATE
        DSEL_X, DSEL_D = msgs.DSEL_X, msgs.DSEL_D

        # ---- inputs ------------------------------------------------------------------------
        s.cmd = InPort(cmd_type())  # the command being executed
        s.ex_busy = InPort()
        s.vB, s.lastB = InPort(), InPort()
        s.rowB = InPort(16)
        s.tapB = InPort(8)
        s.wr_addrB, s.wr_addr2B = InPort(32), InPort(32)
        s.dr_busy = InPort()  # bwd_weight drain (EngineDrainRTL)
        s.dr_row = InPort(16)
        s.raw = [InPort(AB) for _ in range(P)]  # the raw drain's row (EngineRequantSelectRTL)
        s.dr_addr, s.db_addr = InPort(32), InPort(32)
        s.dr_nlanes, s.dr_nrows = InPort(16), InPort(16)  # a batch-parallel tile's real images, channels
        s.dr_roff = InPort(16)  # and its row's word offset from dr_addr
        s.pm_n = [InPort(D) for _ in range(P)]  # pool_fwd maximum and argmax (EnginePoolRTL)
        s.pi_n = [InPort(8) for _ in range(P)]
        s.x_rd = [InPort(D) for _ in range(P)]  # buffer read data
        s.o_rd = [InPort(D) for _ in range(P)]
        s.d_rd = [InPort(D) for _ in range(P)]
        s.w_row = [InPort(D) for _ in range(P)]  # update: row rowB of the W word read
        s.q = [InPort(AB) for _ in range(NQ)]  # the requantized values
        # ---- EX write requests, one per buffer ---------------------------------------------
        for name, buf in WRITE_BUFS:
            lanes = PP if buf in (msgs.BUF_W, msgs.BUF_G) else P
            width = AB if buf == msgs.BUF_B else D
            abits = {msgs.BUF_W: weight_addr_bits, msgs.BUF_G: weight_addr_bits,
                     msgs.BUF_B: bias_addr_bits}.get(buf, act_addr_bits)
            setattr(s, f"{name}_we", OutPort())
            setattr(s, f"{name}_addr", OutPort(abits))
            setattr(s, f"{name}_wen", [OutPort() for _ in range(lanes)])
            setattr(s, f"{name}_wdata", [OutPort(width) for _ in range(lanes)])

        # ---- internals ---------------------------------------------------------------------
        s.row_ok = Wire()  # rowB names a row of the P x P word (update)
        s.w_ext = SignExtendRTL(D, AB, P)
        s.upd_w = [Wire(AB) for _ in range(P)]  # update: w - q
        s.sat_a = [SaturateRTL(AB, act_bits) for _ in range(P)]
        s.sat_g = [SaturateRTL(AB, grad_bits) for _ in range(NQ)]  # all DR rows: the drain
        s.sat_w = [SaturateRTL(AB, weight_bits) for _ in range(P)]
        s.y_a = SignExtendRTL(act_bits, D, P)  # saturated results, sign-extended to the buffers
        s.y_g = SignExtendRTL(grad_bits, D, NQ)
        s.y_gb = SignExtendRTL(grad_bits, AB, P)
        s.y_w = SignExtendRTL(weight_bits, D, P)
        s.raw_addr = Wire(bias_addr_bits)  # raw bwd_weight: B word d0 + tile * P + row
        s.mask = [Wire() for _ in range(P)]  # bwd_data ReLU mask
        s.am_rd = [Wire(D) for _ in range(P)]  # pool_bwd: the argmax read (X or O)
        s.wb_en = Wire()  # the d0 result: enable, word, lanes (routed to O, X or D by dsel)
        s.wb_addr = Wire(act_addr_bits)
        s.wb_data = [Wire(D) for _ in range(P)]
        s.wb_lane = [Wire() for _ in range(P)]  # its lanes (a batch-parallel tile: the real images)
        s.bp = Wire()
        for i in range(P):
            s.w_ext.in_[i] //= s.w_row[i]
            s.sat_a[i].in_ //= s.q[i]
            s.sat_w[i].in_ //= s.upd_w[i]
            s.y_a.in_[i] //= s.sat_a[i].out
            s.y_gb.in_[i] //= s.sat_g[i].out
            s.y_w.in_[i] //= s.sat_w[i].out
        for i in range(NQ):
            s.sat_g[i].in_ //= s.q[i]
            s.y_g.in_[i] //= s.sat_g[i].out
        # the drain, by row group g (rows g*DR .. g*DR + DR-1 = lanes g*DR*P .. of the P*P tile)
        s.g_grp_en = [Wire() for _ in range(NG)]  # write row group g to G
        for g in range(NG):
            for i in range(NQ):
                s.g_wen[g * NQ + i] //= s.g_grp_en[g]
                s.g_wdata[g * NQ + i] //= s.y_g.out[i]  # G lane g*DR*P + i takes the bank's lane i

        @update
        def up_row_ok():
            s.row_ok @= s.rowB < LP

        @update
        def up_raw_addr():
            s.raw_addr @= trunc(zext(s.cmd.d0, B32) + (s.dr_addr - zext(s.cmd.d0, B32)) * B32(P)
                                + zext(s.dr_row, B32), BAT)

        @update
        def up_update_values():
            for j in range(P):
                if s.row_ok:
                    s.upd_w[j] @= s.w_ext.out[j] - s.q[j]
                else:
                    s.upd_w[j] @= ZA

        @update
        def up_operands():
            for i in range(P):
                # bwd_data ReLU mask: the forward input x <= 0
                s.mask[i] @= s.cmd.relu & (s.x_rd[i][ACT_SIGN] | (s.x_rd[i] == ZD))
                if s.cmd.amsel:
                    s.am_rd[i] @= s.o_rd[i]
                else:
                    s.am_rd[i] @= s.x_rd[i]

        @update
        def up_result():
            # EX's d0 result of this cycle (up_ex_writes routes it to O, X or D)
            s.bp @= (s.cmd.op == OP_FWD) & s.cmd.bp
            s.wb_en @= 0
            s.wb_addr @= trunc(s.wr_addrB, XAT)
            for i in range(P):
                s.wb_data[i] @= ZD
                s.wb_lane[i] @= 1
            if s.ex_busy & s.bp:
                # a batch-parallel fwd: the drain's row (an output channel of P images), the real
                # images of a real channel only
                if s.dr_busy & (s.dr_row < s.dr_nrows):
                    s.wb_en @= 1
                    s.wb_addr @= trunc(s.dr_addr + zext(s.dr_roff, B32), XAT)
                    for i in range(P):
                        s.wb_data[i] @= s.y_a.out[i]
                        s.wb_lane[i] @= Bits16(i) < s.dr_nlanes
            elif s.ex_busy & s.vB:
                if (s.cmd.op == OP_FWD) & s.lastB:
                    s.wb_en @= 1
                    for i in range(P):
                        s.wb_data[i] @= s.y_a.out[i]
                elif (s.cmd.op == OP_BWD_DATA) & s.lastB:
                    s.wb_en @= 1
                    for i in range(P):
                        if ~s.mask[i]:
                            s.wb_data[i] @= s.y_g.out[i]
                elif (s.cmd.op == OP_POOL_FWD) & s.lastB:
                    s.wb_en @= 1
                    for i in range(P):
                        s.wb_data[i] @= s.pm_n[i]
                elif s.cmd.op == OP_POOL_BWD:
                    s.wb_en @= 1
                    for i in range(P):
                        if s.am_rd[i] == zext(s.tapB, DT):
                            s.wb_data[i] @= s.d_rd[i]

        @update
        def up_ex_writes():
            # no request by default (the write ports then serve the loader)
            s.x_we @= 0
            s.d_we @= 0
            s.o_we @= 0
            s.w_we @= 0
            s.g_we @= 0
            s.b_we @= 0
            s.x_addr @= s.wb_addr
            s.d_addr @= s.wb_addr
            s.o_addr @= s.wb_addr
            s.w_addr @= trunc(s.wr_addrB, WAT)
            s.g_addr @= trunc(s.dr_addr, WAT)
            s.b_addr @= trunc(s.db_addr, BAT)
            for i in range(P):
                s.x_wen[i] @= 0
                s.d_wen[i] @= 0
                s.o_wen[i] @= 0
                s.b_wen[i] @= 0
                s.x_wdata[i] @= s.wb_data[i]
                s.d_wdata[i] @= s.wb_data[i]
                s.o_wdata[i] @= s.wb_data[i]
                s.b_wdata[i] @= s.y_gb.out[i]
            for r in range(P):
                for j in range(P):
                    s.w_wen[r * P + j] @= 0
                    s.w_wdata[r * P + j] @= s.y_w.out[j]
            for g in range(NG):
                s.g_grp_en[g] @= 0
            if s.ex_busy:
                # drain of bwd_weight: dw rows to G, db to B (raw: both un-rounded, to B)
                if s.dr_busy & s.cmd.raw:
                    s.b_we @= 1
                    for i in range(P):
                        s.b_wen[i] @= 1
                    for i in range(P):
                        s.b_wdata[i] @= s.raw[i]
                    if s.dr_row != LP:
                        s.b_addr @= s.raw_addr
                elif s.dr_busy & ~s.bp:
                    if s.dr_row == LP:
                        s.b_we @= 1
                        for i in range(P):
                            s.b_wen[i] @= 1
                    else:
                        s.g_we @= 1
                        for g in range(NG):
                            s.g_grp_en[g] @= s.dr_row == g * DR
                if s.vB:
                    if (s.cmd.op == OP_POOL_FWD) & s.lastB:  # the argmax, to X or O (amsel)
                        if s.cmd.amsel:
                            s.o_we @= 1
                            s.o_addr @= trunc(s.wr_addr2B, XAT)
                            for i in range(P):
                                s.o_wen[i] @= 1
                                s.o_wdata[i] @= zext(s.pi_n[i], DT)
                        else:
                            s.x_we @= 1
                            s.x_addr @= trunc(s.wr_addr2B, XAT)
                            for i in range(P):
                                s.x_wen[i] @= 1
                                s.x_wdata[i] @= zext(s.pi_n[i], DT)
                    elif s.cmd.op == OP_UPDATE:
                        s.w_we @= 1
                        for r in range(P):
                            for j in range(P):
                                s.w_wen[r * P + j] @= s.rowB == r
            # the d0 result (fwd, bwd_data, pool_fwd, pool_bwd) to the buffer dsel names
            if s.wb_en:
                if s.cmd.dsel == DSEL_X:
                    s.x_we @= 1
                    s.x_addr @= s.wb_addr
                    for i in range(P):
                        s.x_wen[i] @= s.wb_lane[i]
                        s.x_wdata[i] @= s.wb_data[i]
                elif s.cmd.dsel == DSEL_D:
                    s.d_we @= 1
                    for i in range(P):
                        s.d_wen[i] @= s.wb_lane[i]
                else:
                    s.o_we @= 1
                    s.o_addr @= s.wb_addr
                    for i in range(P):
                        s.o_wen[i] @= s.wb_lane[i]
                        s.o_wdata[i] @= s.wb_data[i]

    def line_trace(s):
        we = "".join(n.upper() if getattr(s, f"{n}_we") else "." for n, _ in WRITE_BUFS)
        return f"wb[{we}]{'r' if s.wb_en else ' '}"
