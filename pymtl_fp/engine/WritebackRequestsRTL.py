"""EX's write requests to the buffers (RTL, combinational), for
:class:`~pymtl_fp.engine.EngineWritebackRTL.EngineWritebackRTL`: one request per buffer
(``<b>_we`` with ``<b>_addr`` and every lane's ``<b>_wen`` / ``<b>_wdata``, for the write ports
:class:`~pymtl_fp.engine.EngineWritePortRTL.EngineWritePortRTL`), in this order of precedence (a
later one overrides an earlier one; valid commands never make two in one cycle,
:func:`~pymtl_fp.engine.msgs.check_cmd`):

* the ``bwd_weight`` drain: ``dw`` rows ``dr_row .. dr_row + DR - 1`` (``y_g``, ``DR * P`` lanes of
  the ``P * P``-lane word) to G word ``dr_addr``, the ``db`` row (``dr_row == P``, ``y_gb``) to B
  word ``db_addr``; with the command field ``raw``, un-rounded (the row ``raw``): ``dw`` row
  ``dr_row`` to B word ``d0 + (dr_addr - d0) * P + dr_row`` (the tile's G word order, a row per
  word), the ``db`` row to B;
* ``pool_fwd``'s argmax taps ``pi_n`` to X or O (field ``amsel``) word ``wr_addr2B``; ``update``'s
  new weight row ``y_w`` to row ``rowB`` of W word ``wr_addrB``;
* the ``d0`` result (:class:`~pymtl_fp.engine.WritebackResultRTL.WritebackResultRTL`) to O, X or D
  (field ``dsel``).
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, mk_bits, trunc, update, zext

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type

#: the buffers EX writes: name, buffer id
WRITE_BUFS = (("x", msgs.BUF_X), ("d", msgs.BUF_D), ("o", msgs.BUF_O), ("w", msgs.BUF_W),
              ("g", msgs.BUF_G), ("b", msgs.BUF_B))


class WritebackRequestsRTL(Component):
    def construct(s, P=2, data_bits=8, acc_bits=32, act_addr_bits=8, weight_addr_bits=6, bias_addr_bits=4,
                  drain_rows=1):
        s.params = dict(P=P, data_bits=data_bits, acc_bits=acc_bits, act_addr_bits=act_addr_bits,
                        weight_addr_bits=weight_addr_bits, bias_addr_bits=bias_addr_bits, drain_rows=drain_rows)
        PP = P * P
        DR = drain_rows
        NG = P // DR  # drain cycles per tile (row groups)
        NQ = DR * P  # requantizer lanes
        D, AB = data_bits, acc_bits
        DT = mk_bits(D)
        XAT, WAT, BAT = mk_bits(act_addr_bits), mk_bits(weight_addr_bits), mk_bits(bias_addr_bits)
        B32 = Bits32
        LP = mk_bits(16)(P)
        OP_FWD, OP_POOL_FWD, OP_UPDATE = msgs.OP_FWD, msgs.OP_POOL_FWD, msgs.OP_UPDATE
        DSEL_X, DSEL_D = msgs.DSEL_X, msgs.DSEL_D

        s.cmd = InPort(cmd_type())  # the command being executed
        s.ex_busy = InPort()
        s.vB, s.lastB = InPort(), InPort()
        s.rowB = InPort(16)
        s.wr_addrB, s.wr_addr2B = InPort(32), InPort(32)
        s.dr_busy = InPort()  # bwd_weight drain (EngineDrainRTL)
        s.dr_row = InPort(16)
        s.dr_addr, s.db_addr = InPort(32), InPort(32)
        s.raw = [InPort(AB) for _ in range(P)]  # the raw drain's row (EngineRequantSelectRTL)
        s.pi_n = [InPort(8) for _ in range(P)]  # pool_fwd argmax (EnginePoolRTL)
        s.y_g = [InPort(D) for _ in range(NQ)]  # saturated values (WritebackSaturateRTL)
        s.y_gb = [InPort(AB) for _ in range(P)]
        s.y_w = [InPort(D) for _ in range(P)]
        s.wb_en = InPort()  # the d0 result (WritebackResultRTL)
        s.wb_addr = InPort(act_addr_bits)
        s.wb_data = [InPort(D) for _ in range(P)]
        s.wb_lane = [InPort() for _ in range(P)]
        for name, buf in WRITE_BUFS:
            lanes = PP if buf in (msgs.BUF_W, msgs.BUF_G) else P
            width = AB if buf == msgs.BUF_B else D
            abits = {msgs.BUF_W: weight_addr_bits, msgs.BUF_G: weight_addr_bits,
                     msgs.BUF_B: bias_addr_bits}.get(buf, act_addr_bits)
            setattr(s, f"{name}_we", OutPort())
            setattr(s, f"{name}_addr", OutPort(abits))
            setattr(s, f"{name}_wen", [OutPort() for _ in range(lanes)])
            setattr(s, f"{name}_wdata", [OutPort(width) for _ in range(lanes)])

        s.bp = Wire()
        s.raw_addr = Wire(bias_addr_bits)  # raw bwd_weight: B word d0 + tile * P + row
        # the drain, by row group g (rows g*DR .. g*DR + DR-1 = lanes g*DR*P .. of the P*P tile)
        s.g_grp_en = [Wire() for _ in range(NG)]  # write row group g to G
        for g in range(NG):
            for i in range(NQ):
                s.g_wen[g * NQ + i] //= s.g_grp_en[g]
                s.g_wdata[g * NQ + i] //= s.y_g[i]  # G lane g*DR*P + i takes the bank's lane i

        @update
        def up_raw_addr():
            s.bp @= (s.cmd.op == OP_FWD) & s.cmd.bp
            s.raw_addr @= trunc(zext(s.cmd.d0, B32) + (s.dr_addr - zext(s.cmd.d0, B32)) * B32(P)
                                + zext(s.dr_row, B32), BAT)

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
                s.b_wdata[i] @= s.y_gb[i]
            for r in range(P):
                for j in range(P):
                    s.w_wen[r * P + j] @= 0
                    s.w_wdata[r * P + j] @= s.y_w[j]
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
        return "req[" + "".join(n.upper() if getattr(s, f"{n}_we") else "." for n, _ in WRITE_BUFS) + "]"
