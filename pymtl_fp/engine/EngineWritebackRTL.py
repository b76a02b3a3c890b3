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

This top wires three units: :class:`~pymtl_fp.engine.WritebackSaturateRTL.WritebackSaturateRTL`
(saturate and sign-extend ``q``; ``update``'s ``w_row - q``),
:class:`~pymtl_fp.engine.WritebackResultRTL.WritebackResultRTL` (the ``d0`` result of the cycle)
and :class:`~pymtl_fp.engine.WritebackRequestsRTL.WritebackRequestsRTL` (the requests per buffer).
"""

from pymtl3 import Component, InPort, OutPort, connect

from pymtl_fp.engine.msgs import cmd_type
from pymtl_fp.engine.WritebackRequestsRTL import WRITE_BUFS, WritebackRequestsRTL
from pymtl_fp.engine.WritebackResultRTL import WritebackResultRTL
from pymtl_fp.engine.WritebackSaturateRTL import WritebackSaturateRTL


class EngineWritebackRTL(Component):
    def construct(s, P=2, act_bits=8, weight_bits=8, grad_bits=8, acc_bits=32, act_addr_bits=8,
                  weight_addr_bits=6, bias_addr_bits=4, drain_rows=1):
        s.params = dict(P=P, act_bits=act_bits, weight_bits=weight_bits, grad_bits=grad_bits,
                        acc_bits=acc_bits, act_addr_bits=act_addr_bits,
                        weight_addr_bits=weight_addr_bits, bias_addr_bits=bias_addr_bits,
                        drain_rows=drain_rows)
        DR = drain_rows
        if DR < 1 or P % DR:
            raise ValueError(f"EngineWritebackRTL: drain_rows={DR} must divide P={P}")
        NQ = DR * P  # requantizer lanes
        D = max(act_bits, weight_bits, grad_bits)
        AB = acc_bits

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

        # ---- units -------------------------------------------------------------------------
        s.sat = WritebackSaturateRTL(P, act_bits, weight_bits, grad_bits, AB, DR)
        s.res = WritebackResultRTL(P, D, act_addr_bits)
        s.req = WritebackRequestsRTL(P, D, AB, act_addr_bits, weight_addr_bits, bias_addr_bits, DR)
        s.sat.rowB //= s.rowB
        for i in range(NQ):
            s.sat.q[i] //= s.q[i]
            s.req.y_g[i] //= s.sat.y_g[i]
        for i in range(P):
            s.sat.w_row[i] //= s.w_row[i]
            s.res.y_a[i] //= s.sat.y_a[i]
            s.res.y_g[i] //= s.sat.y_g[i]
            s.req.y_gb[i] //= s.sat.y_gb[i]
            s.req.y_w[i] //= s.sat.y_w[i]
            s.req.wb_data[i] //= s.res.wb_data[i]
            s.req.wb_lane[i] //= s.res.wb_lane[i]
        s.req.wb_en //= s.res.wb_en
        s.req.wb_addr //= s.res.wb_addr
        for unit, names in ((s.res, ("cmd", "ex_busy", "vB", "lastB", "tapB", "wr_addrB", "dr_busy", "dr_row",
                                     "dr_addr", "dr_nlanes", "dr_nrows", "dr_roff", "pm_n", "x_rd", "o_rd", "d_rd")),
                            (s.req, ("cmd", "ex_busy", "vB", "lastB", "rowB", "wr_addrB", "wr_addr2B", "dr_busy",
                                     "dr_row", "dr_addr", "db_addr", "raw", "pi_n"))):
            for name in names:
                mine, theirs = getattr(s, name), getattr(unit, name)
                for a, b in zip(theirs, mine) if isinstance(mine, list) else ((theirs, mine),):
                    connect(a, b)

        # ---- EX write requests, one per buffer ---------------------------------------------
        for name, _ in WRITE_BUFS:
            setattr(s, f"{name}_we", OutPort())
            connect(getattr(s, f"{name}_we"), getattr(s.req, f"{name}_we"))
            setattr(s, f"{name}_addr", OutPort(getattr(s.req, f"{name}_addr").get_type()))
            connect(getattr(s, f"{name}_addr"), getattr(s.req, f"{name}_addr"))
            lanes = getattr(s.req, f"{name}_wen")
            setattr(s, f"{name}_wen", [OutPort() for _ in lanes])
            setattr(s, f"{name}_wdata", [OutPort(lane.get_type()) for lane in getattr(s.req, f"{name}_wdata")])
            for j in range(len(lanes)):
                connect(getattr(s, f"{name}_wen")[j], lanes[j])
                connect(getattr(s, f"{name}_wdata")[j], getattr(s.req, f"{name}_wdata")[j])

    def line_trace(s):
        we = "".join(n.upper() if getattr(s, f"{n}_we") else "." for n, _ in WRITE_BUFS)
        return f"wb[{we}]{'r' if s.res.wb_en else ' '}"
