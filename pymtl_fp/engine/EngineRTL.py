"""Engine, register-transfer level: the conv/backprop datapath of one FPGA (synthesizable).

Structure (one component per file; this top instantiates and wires them)::

    cmd --> EngineAcceptRTL ----go----> EngineLoaderRTL  <-- din      (LD)
            (EngineCmdRangesRTL:   +---> EngineStorerRTL  --> dout     (ST)
             hazard check)         |          | buffer ports: EngineReadPortRTL (ST or EX),
                 | go              |          | EngineWritePortRTL (LD or EX)
                 v                            v
           EngineComputeCtrlRTL --- AddrGenRTL -> EngineStepAddrRTL --> buffers X D O (P lanes),
                 | stage A / stage B   ^ EngineStridesRTL           W G (P*P), B (bias)
                 |                       (strides: command fields the host computes)
                 v                                                  | registered read
           MacArrayRTL (P x P, exact accumulators) <----------------+--> EnginePoolRTL (max),
                 |  res (after this cycle's products)                    EngineUpdateRowsRTL
           EngineDrainRTL (bwd_weight rows, db) ---> EngineRequantSelectRTL --> RequantBankRTL
                                                                                  | q
                                      EngineWritebackRTL <------------------------+
                                        | saturate, ReLU mask, dsel/amsel routing: EX's writes

Pipeline: stage A issues one step of the operation's loop nest per cycle (buffer reads);
stage B, one cycle later, multiplies/accumulates (or max-compares for pooling).  A finished
output is requantized in the cycle of its last products and written while the array starts
the next one; ``bwd_weight`` copies its ``P x P`` finished tile into drain registers and writes
it back ``DR`` rows per cycle (``P / DR`` cycles; ``DR`` = ``cfg.drain_rows``, through ``DR x P``
requantizers) while the array accumulates the next tile — the compute control holds a tile's
last step only if the previous drain is not done yet.  A batch-parallel ``fwd`` (``bp``) runs the
array in the same outer mode, on one column of the weight word (``col``) against ``P`` images, and
drains its ``P x P`` tiles (images x output channels) one output channel a cycle into its result
map (:class:`~pymtl_fp.engine.AddrBatchTileRTL.AddrBatchTileRTL`).  The bias gradient ``db`` needs no pass
of its own: during the ``ct == 0`` tiles a row of ``P`` adders sums each ``dy`` once (at the
first valid tap of its output position) and the sum is drained in one more cycle (one row)
after the tile that completes it.

Four optional pipelines (``EngineConfig.pipelined_cmd`` / ``_addr`` / ``_mac`` / ``_requant``, for a
200 MHz clock) leave all of this in place and add stages: a command register in front of the
acceptance (:class:`EngineAcceptRTL`: ``cmd.rdy`` from registers only, the units take the held
command), a register between the address generator and the buffers (:class:`EngineStepAddrRTL`,
for the reads' and the writes' addresses; stage B two cycles after A), the pipelined MAC array (its
results, and with them the drain and the requantizer's operand select, ``mac_latency`` cycles
after stage B: stage "C") and the pipelined requantizer (the write-back ``rq_latency`` cycles
after C: stage "W").  Every stage-B signal a later stage uses reaches it through a
:class:`~pymtl_fp.primitives.DelayLineRTL.DelayLineRTL`; with no pipeline they are wires.

Three units run concurrently, one command each: the loader LD (LOAD: ``din`` -> a buffer's
write port), the storer ST (STORE: a buffer's read port -> ``dout``) and the compute unit EX
(everything above).  ``din`` and ``dout`` carry ``E = stream_lanes`` elements per beat (``E``
divides ``P``): LD writes the ``E`` lanes of a beat into one word in one cycle, ST offers ``E``
lanes of the word it has read per beat.  Commands are accepted in order: a command starts
(``cmd.rdy``, combinational in ``cmd.msg``; with the command register, decided on the held
command) when all units are idle, or when it has ``ovl = 1``, its own unit is idle and none of
its address ranges conflicts with those of a busy unit (same port of the same buffer, or
a write intersecting a read; rule and proof of in-order semantics: :mod:`pymtl_fp.engine.msgs`).
Buffers are not split: a read port belongs to ST while ST streams that buffer, else to EX; a
write port to LD while LD fills that buffer, else to EX (the rule guarantees that they never
both need it).
"""

from pymtl3 import Component, OutPort, connect
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.engine import msgs
from pymtl_fp.engine.addr_layout import NPROD
from pymtl_fp.engine.AddrGenRTL import AddrGenRegRTL, AddrGenRTL
from pymtl_fp.engine.AddrRoutesRTL import NWR, READ_BUFS
from pymtl_fp.engine.BankedBufferRTL import BankedBufferRTL
from pymtl_fp.engine.EngineAcceptRTL import EngineAcceptRTL
from pymtl_fp.engine.EngineComputeCtrlRTL import EngineComputeCtrlRTL
from pymtl_fp.engine.EngineDrainRTL import EngineDrainRTL
from pymtl_fp.engine.EngineLoaderRTL import EngineLoaderRTL
from pymtl_fp.engine.EnginePoolRTL import EnginePoolRTL
from pymtl_fp.engine.EngineRawAccRTL import EngineRawAccRTL
from pymtl_fp.engine.EngineReadPortRTL import EngineReadPortRTL
from pymtl_fp.engine.EngineRequantSelectRTL import EngineRequantSelectRTL
from pymtl_fp.engine.EngineStepAddrRTL import EngineStepAddrRTL
from pymtl_fp.engine.EngineStorerRTL import EngineStorerRTL
from pymtl_fp.engine.EngineStridesRTL import STRIDES, EngineStridesRTL
from pymtl_fp.engine.EngineUpdateRowsRTL import EngineUpdateRowsRTL
from pymtl_fp.engine.EngineWritebackRTL import EngineWritebackRTL
from pymtl_fp.engine.EngineWritePortRTL import EngineWritePortRTL
from pymtl_fp.engine.MacArrayDspRTL import MacArrayDspRTL
from pymtl_fp.engine.MacArrayPipeRTL import MacArrayPipeRTL
from pymtl_fp.engine.MacArrayRTL import MacArrayRTL
from pymtl_fp.engine.msgs import cmd_type, data_type
from pymtl_fp.engine.RequantBankRTL import RequantBankRTL
from pymtl_fp.primitives.DelayLineRTL import delayed
from pymtl_fp.primitives.SramRTL import addr_bits

AG_OUTPUTS = ("active", "first", "last", "zero", "db_acc", "db_first", "db_end", "idx", "idx2", "tap", "row",
              "col", "nlanes", "nrows")


class EngineRTL(Component):
    def construct(s, cfg):
        s.cfg = cfg
        s.params = cfg.params()
        P = cfg.P
        PP = P * P
        D = cfg.data_bits
        AB = cfg.acc_bits
        XA, WA, BA = addr_bits(cfg.act_depth), addr_bits(cfg.weight_depth), addr_bits(cfg.bias_depth)

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
        s.acc = EngineAcceptRTL(P, cfg.pipelined_cmd)
        E, SB = cfg.stream_lanes, cfg.stream_bits
        s.ld = EngineLoaderRTL(P, max(XA, WA, BA), E)
        s.st = EngineStorerRTL(P, D, AB, SB, max(XA, WA, BA), E)
        DR = cfg.drain_rows
        K, L = cfg.mac_latency, cfg.rq_latency  # stage B -> MAC results -> requantized values
        A2 = cfg.addr_latency  # stage A -> the buffers' reads
        s.ex = EngineComputeCtrlRTL(P, D, DR, K, L, A2)
        s.ag = (AddrGenRegRTL if cfg.registered_taps else AddrGenRTL)(P)  # tap bounds in registers (--pipeline taps)
        s.strides = EngineStridesRTL(P)
        s.mac = (MacArrayDspRTL if cfg.dsp_mac else MacArrayPipeRTL if cfg.pipelined_mac else MacArrayRTL)(P, D, AB)
        s.pool = EnginePoolRTL(P, D)
        s.rows = EngineUpdateRowsRTL(P, D)
        s.drain = EngineDrainRTL(P, D, AB, DR)
        s.sel = EngineRequantSelectRTL(P, D, AB, cfg.stochastic, DR)
        s.rq = RequantBankRTL(P, AB, DR, cfg.pipelined_requant)
        s.wb = EngineWritebackRTL(P, cfg.act_bits, cfg.weight_bits, cfg.grad_bits, AB, XA, WA, BA, DR)
        s.racc = EngineRawAccRTL(P, AB, BA)  # B's compute-side ports (raw bwd_weight with acc)
        # name, id, buffer, lanes, element bits, address bits
        bufs = (("x", msgs.BUF_X, s.bx, P, D, XA), ("d", msgs.BUF_D, s.bd, P, D, XA),
                ("o", msgs.BUF_O, s.bo, P, D, XA), ("w", msgs.BUF_W, s.bw, PP, D, WA),
                ("g", msgs.BUF_G, s.bg, PP, D, WA), ("b", msgs.BUF_B, s.bb, P, AB, BA))
        s.rp_x, s.rp_d, s.rp_o, s.rp_w, s.rp_g, s.rp_b = (
            EngineReadPortRTL(b, a) for _, b, _, _, _, a in bufs)
        s.wp_x, s.wp_d, s.wp_o, s.wp_w, s.wp_g, s.wp_b = (
            EngineWritePortRTL(b, n, w, a, E) for _, b, _, n, w, a in bufs)

        # ---- command acceptance and the three units ---------------------------------------
        s.acc.cmd //= s.cmd
        s.busy //= s.acc.busy
        for unit, go in ((s.ld, s.acc.go_ld), (s.st, s.acc.go_st), (s.ex, s.acc.go_ex)):
            unit.cmd //= s.acc.msg
            unit.go //= go
        s.acc.ld_busy //= s.ld.busy
        s.acc.ld_tgt //= s.ld.tgt
        s.acc.st_busy //= s.st.busy
        s.acc.st_tgt //= s.st.tgt
        s.acc.ex_busy //= s.ex.busy
        s.ld.din_val //= s.din.val
        s.din.rdy //= s.ld.din_rdy
        s.dout //= s.st.dout

        # ---- compute: address generator, stage B, MAC array, pooling, drain ---------------
        s.ag.cmd //= s.ex.cmd_r
        if cfg.registered_taps:
            s.ag.cmd_in //= s.acc.msg  # the command EX's register takes when the generator starts
        s.strides.cmd //= s.ex.cmd_r
        for name in STRIDES:
            connect(getattr(s.ag, name), getattr(s.strides, name))
        s.ag.start //= s.ex.ag_start
        s.ag.advance //= s.ex.ag_advance
        for name in AG_OUTPUTS:
            connect(getattr(s.ex, f"ag_{name}"), getattr(s.ag, name))
        s.ex.dr_busy //= s.drain.busy
        s.mac.en //= s.ex.mac_en
        s.mac.first //= s.ex.mac_first
        s.mac.outer //= s.ex.mac_outer
        s.mac.transpose //= s.ex.mac_transpose
        s.mac.use_bias //= s.ex.mac_use_bias
        s.mac.bp //= s.ex.mac_bp
        s.mac.col //= s.ex.mac_col
        for j in range(P):
            s.ex.x_rd[j] //= s.bx.rdata[j]
            s.ex.d_rd[j] //= s.bd.rdata[j]
            s.mac.v[j] //= s.ex.mac_v[j]
            s.mac.u[j] //= s.bd.rdata[j]
            s.mac.bias[j] //= s.bb.rdata[j]
            s.pool.x_rd[j] //= s.bx.rdata[j]
        for lv in range(PP):
            s.mac.wt[lv] //= s.bw.rdata[lv]
            s.rows.w_rd[lv] //= s.bw.rdata[lv]
            s.rows.g_rd[lv] //= s.bg.rdata[lv]
            s.drain.mac_res[lv] //= s.mac.res[lv]
        s.rows.rowB //= s.ex.rowB
        s.pool.vB //= s.ex.vB
        s.pool.first //= s.ex.firstB
        s.pool.tap //= s.ex.tapB
        s.drain.cmd //= s.ex.cmd_r
        # the drain and the requantizer's operand select work where the MAC array's results are:
        # stage B, or K cycles later (stage "C"); the write-back L cycles after that (stage "W")
        at_c = {name: delayed(s, f"c_{name}", getattr(s.ex, name), K, name == "vB")
                for name in ("vB", "firstB", "lastB", "dbaccB", "dbfirstB", "dbendB", "wr_addrB", "wr_addr2B",
                             "idxB", "idx2B", "tapB", "rowB", "nlanesB", "nrowsB")}
        for name in ("g_row", "w_row"):
            at_c[name] = delayed(s, f"c_{name}", getattr(s.rows, name), K)
        at_c["busy"] = delayed(s, "c_busy", s.ex.busy, K, True)
        at_c["d_rd"] = delayed(s, "c_d_rd", s.bd.rdata, K)
        for name, sig in (("pm_n", s.pool.pm_n), ("pi_n", s.pool.pi_n), ("x_rd", s.bx.rdata), ("o_rd", s.bo.rdata)):
            at_c[name] = delayed(s, f"c_{name}", sig, K)
        for name in ("vB", "firstB", "lastB", "dbaccB", "dbfirstB", "dbendB", "wr_addrB", "wr_addr2B", "idxB",
                     "idx2B", "nlanesB", "nrowsB"):
            connect(getattr(s.drain, name), at_c[name])
        s.drain.HOWO //= s.strides.howo[0:16]
        s.drain.IHOWO //= s.strides.ihowo
        for j in range(P):
            s.drain.d_rd[j] //= at_c["d_rd"][j]

        s._requantize_and_write_back(cfg, at_c)
        s._buffer_ports(cfg, bufs)

    def _requantize_and_write_back(s, cfg, at_c):
        """The requantizer's operands (stage B or C), the requantizer, and the write-back with its
        stage-B inputs delayed as long as the requantizer takes."""
        P, PP, DR, L = cfg.P, cfg.P * cfg.P, cfg.drain_rows, cfg.rq_latency
        s.sel.cmd //= s.ex.cmd_r
        s.sel.IHOWO //= s.strides.ihowo
        s.sel.IHW //= s.strides.ihw
        s.sel.RS //= s.strides.rs
        s.sel.KHOWO //= s.strides.khowo
        if DR > 1:
            s.sel.CRS //= s.strides.crs
            s.rq.row_stride //= s.sel.rq_row_stride
        s.sel.rowB //= at_c["rowB"]
        s.sel.idxB //= at_c["idxB"]
        s.sel.dr_busy //= s.drain.busy
        s.sel.dr_row //= s.drain.row
        s.sel.dr_idx //= s.drain.idx
        s.sel.db_idx //= s.drain.db_idx
        s.drain.CRS //= s.strides.crs
        for lv in range(PP):
            s.sel.dr[lv] //= s.drain.dr[lv]
        for i in range(P):
            s.sel.acc[i] //= s.mac.res[i * P]
            s.sel.dbdr[i] //= s.drain.dbdr[i]
            s.sel.g_row[i] //= at_c["g_row"][i]
        for name in ("shift", "stochastic", "seed", "tensor_id", "relu", "idx_base", "idx_stride"):
            connect(getattr(s.rq, name), getattr(s.sel, f"rq_{name}"))
        for i in range(DR * P):
            s.rq.acc[i] //= s.sel.rq_acc[i]
            s.wb.q[i] //= s.rq.q[i]
        s.wb.cmd //= s.ex.cmd_r  # held while EX is busy, so also in the write-back's cycle
        # the write-back's other inputs, delayed as long as the requantizer takes
        at_c.update(dr_busy=s.drain.busy, dr_row=s.drain.row, dr_addr=s.drain.addr, db_addr=s.drain.db_addr,
                    raw=s.sel.raw, dr_nlanes=s.drain.nlanes, dr_nrows=s.drain.nrows, dr_roff=s.drain.roff)
        for name in ("busy", "vB", "dr_busy", "lastB", "rowB", "tapB", "wr_addrB", "wr_addr2B", "dr_row", "dr_addr",
                     "db_addr", "raw", "w_row", "pm_n", "pi_n", "x_rd", "o_rd", "d_rd", "dr_nlanes", "dr_nrows",
                     "dr_roff"):
            late = delayed(s, f"w_{name}", at_c[name], L, name in ("busy", "vB", "dr_busy"))
            dst = getattr(s.wb, "ex_busy" if name == "busy" else name)
            for d, src in zip(dst, late) if isinstance(dst, list) else ((dst, late),):
                connect(d, src)

    def _buffer_ports(s, cfg, bufs):
        """The address stage, EX's reads, B's compute-side ports and every buffer's read and write
        ports: reads (ST or EX), writes (LD or EX), store data."""
        P, E, SB = cfg.P, cfg.stream_lanes, cfg.stream_bits
        A2, BA = cfg.addr_latency, addr_bits(cfg.bias_depth)
        s.addrs = EngineStepAddrRTL(A2)
        for b in range(len(READ_BUFS)):
            s.addrs.rd_base[b] //= s.ag.rd_base[b]
            s.addrs.rd_unit[b] //= s.ag.rd_unit[b]
        for j in range(NWR):
            s.addrs.wr_base[j] //= s.ag.wr_base[j]
            s.addrs.wr_unit[j] //= s.ag.wr_unit[j]
        s.ex.wr_addr //= s.addrs.wr_addr[0]
        s.ex.wr_addr2 //= s.addrs.wr_addr[1]
        for au in range(NPROD):
            s.addrs.prod[au] //= s.ag.prod[au]
        ex_raddr = {name: s.addrs.addr[READ_BUFS.index("x" if name == "o" else name)] for name in "xdowgb"}
        # EX's reads: the address generator's step, or (A2) the one of a cycle before
        ex_ren = dict(x=delayed(s, "a2_ren", s.ex.ren, A2, True), o=delayed(s, "a2_o_ren", s.ex.o_ren, A2, True))
        # B's compute-side requests pass EngineRawAccRTL (which, with acc, reads before it writes)
        s.racc.cmd //= s.ex.cmd_r
        s.racc.ex_busy //= s.ex.busy
        s.ex.acc_hold //= s.racc.hold
        s.racc.ex_ren //= ex_ren["x"]
        s.racc.ex_addr //= ex_raddr["b"][0:BA]
        s.racc.wb_we //= s.wb.b_we
        s.racc.wb_addr //= s.wb.b_addr
        for i in range(P):
            s.racc.wb_wen[i] //= s.wb.b_wen[i]
            s.racc.wb_wdata[i] //= s.wb.b_wdata[i]
            s.racc.rdata[i] //= s.bb.rdata[i]
        ex_side = dict.fromkeys("xdowg", s.wb) | {"b": s.racc}  # EX's write requests
        ex_read = {name: (ex_ren["o" if name == "o" else "x"], ex_raddr[name][0:a]) for name, *_, a in bufs}
        ex_read["b"] = (s.racc.b_ren, s.racc.b_raddr)
        for name, _, buf, lanes, width, a in bufs:
            rp, wp = getattr(s, f"rp_{name}"), getattr(s, f"wp_{name}")
            rp.st_busy //= s.st.busy
            rp.st_tgt //= s.st.tgt
            rp.st_rd //= s.st.rd
            rp.st_addr //= s.st.raddr[0:a]
            rp.ex_ren //= ex_read[name][0]
            rp.ex_addr //= ex_read[name][1]
            buf.raddr //= rp.raddr
            buf.ren //= rp.ren
            wp.ld_we //= s.ld.we
            wp.ld_tgt //= s.ld.tgt
            wp.ld_addr //= s.ld.waddr[0:a]
            wp.ld_lane //= s.ld.lane
            wp.ld_lmask //= s.ld.lmask
            for j in range(E):  # beat lane j: bits [j*SB, j*SB + width) of din.msg
                wp.ld_data[j] //= s.din.msg[j * SB:j * SB + width]
            wp.ex_we //= getattr(ex_side[name], f"{name}_we")
            wp.ex_addr //= getattr(ex_side[name], f"{name}_addr")
            buf.waddr //= wp.waddr
            for i in range(lanes):
                wp.ex_wen[i] //= getattr(ex_side[name], f"{name}_wen")[i]
                wp.ex_wdata[i] //= getattr(ex_side[name], f"{name}_wdata")[i]
                buf.wen[i] //= wp.wen[i]
                buf.wdata[i] //= wp.wdata[i]
                getattr(s.st, f"rd_{name}")[i] //= buf.rdata[i]

    def line_trace(s):
        op = msgs.OP_NAMES.get(int(s.ex.cmd_r.op), "?") if s.ex.busy else "."
        ld = f"L{int(s.ld.left):<4}" if s.ld.busy else "L.   "
        st = f"S{int(s.st.left):<4}" if s.st.busy else "S.   "
        return (f"{s.cmd}|{s.din}|{s.dout} {ld} {st} X {op:<10} "
                f"{s.ag.line_trace()} {'B' if s.ex.vB else '.'} mac[{s.mac.line_trace()}] dr{int(s.drain.left)}")
