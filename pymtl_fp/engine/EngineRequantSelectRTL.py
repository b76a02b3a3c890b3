"""Requantizer operands (RTL, combinational, stage B): what :class:`RequantBankRTL` rounds this
cycle, and the stage-B picks the write-back needs later.

To the requantizer bank (``DR x P`` lanes, ``DR`` = ``drain_rows``): the ``bwd_weight`` drain's
rows (``dw`` rows ``dr_row .. dr_row + DR - 1`` of the drain registers on the bank's ``DR`` rows,
or the ``db`` row after them on row 0, with ``bshift``/``btid``), else for ``update`` the ``dw``
row ``rowB`` of the G word read, else the MAC array's finished outputs ``acc`` (lane ``i`` =
accumulator ``(i, 0)``); outside the drain, bank rows 1 .. DR-1 get 0.  Lane ``d*P + i``'s
stochastic-rounding index is ``idx_base + d * row_stride + i * idx_stride`` (the element's flat
index in its result tensor; the drain's ``row_stride`` is ``C*R*S``, one output channel).

It runs where the MAC array's results are (stage B, or ``mac_latency`` cycles later with the
pipelined array: then ``rowB``, ``idxB`` and ``update``'s G row ``g_row`` come delayed as much).
For :class:`EngineWritebackRTL`, which runs ``rq_latency`` cycles later still (the pipelined
requantizer): ``raw``, the row the un-rounded (``raw``) drain writes (``dw`` row ``dr_row``, or the
``db`` row), so that only ``P`` lanes travel, not the ``P x P`` tile.  A batch-parallel ``fwd``'s
drain rounds that row too (output channel ``dr_row`` of ``P`` images, lanes ``k*hi*wo`` elements
apart in the flat index of ``y``).
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, mk_bits, update

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type
from pymtl_fp.engine.SignExtendRTL import SignExtendRTL


class EngineRequantSelectRTL(Component):
    def construct(s, P=2, data_bits=8, acc_bits=32, stochastic=True, drain_rows=1):
        s.params = dict(P=P, data_bits=data_bits, acc_bits=acc_bits, stochastic=stochastic,
                        drain_rows=drain_rows)
        PP, DR, D, AB = P * P, drain_rows, data_bits, acc_bits
        NG, NQ = P // DR, DR * P  # drain cycles per tile (row groups), requantizer lanes
        ZA = mk_bits(AB)(0)
        LP = mk_bits(16)(P)
        STO_EN = mk_bits(1)(1 if stochastic else 0)  # stochastic rounding built (else tied off)
        OP_FWD, OP_BWD_DATA, OP_UPDATE = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_UPDATE

        s.cmd = InPort(cmd_type())
        s.dr_busy = InPort()
        s.dr_row = InPort(16)
        s.rowB = InPort(16)
        s.idxB, s.dr_idx, s.db_idx = InPort(32), InPort(32), InPort(32)
        s.acc = [InPort(AB) for _ in range(P)]  # the MAC array's finished outputs
        s.dr = [InPort(AB) for _ in range(PP)]  # the drain registers (a P x P tile)
        s.dbdr = [InPort(AB) for _ in range(P)]
        s.g_row = [InPort(D) for _ in range(P)]  # update: row rowB of the G word read
        # element strides of the command (its product fields: hi*wo and hi*w, a channel in the whole
        # result map's flat index; r*s, c*r*s)
        s.IHOWO, s.IHW, s.RS = InPort(32), InPort(32), InPort(32)
        s.KHOWO = InPort(32)  # a batch-parallel fwd's lanes (images) are k*hi*wo elements apart
        s.rq_acc = [OutPort(AB) for _ in range(NQ)]
        s.rq_idx_base, s.rq_idx_stride = OutPort(32), OutPort(32)
        if DR > 1:
            s.CRS = InPort(32)  # the drain's rows are one output channel apart
            s.rq_row_stride = OutPort(32)
        s.rq_shift = OutPort(6)
        s.rq_stochastic, s.rq_relu = OutPort(), OutPort()
        s.rq_seed = OutPort(32)
        s.rq_tensor_id = OutPort(8)
        s.raw = [OutPort(AB) for _ in range(P)]

        s.row_ok = Wire()
        s.g_ext = SignExtendRTL(D, AB, P)
        for i in range(P):
            s.g_ext.in_[i] //= s.g_row[i]
        # the drain's row groups g (rows g*DR .. g*DR + DR-1 = lanes g*DR*P .. of the tile), wired
        # here so that the update blocks index only within a group
        s.dr_grp = [[Wire(AB) for _ in range(NQ)] for _ in range(NG)]
        for g in range(NG):
            for i in range(NQ):
                s.dr_grp[g][i] //= s.dr[g * NQ + i]

        if DR > 1:
            @update
            def up_row_stride():
                s.rq_row_stride @= s.CRS  # the drain's rows: one output channel apart

        @update
        def up_rows():
            s.row_ok @= s.rowB < LP
            for j in range(P):
                s.raw[j] @= s.dbdr[j]  # the db row after the P dw rows
            for r in range(P):
                if s.dr_row == r:
                    for j in range(P):
                        s.raw[j] @= s.dr[r * P + j]

        @update
        def up_requant_inputs():
            s.rq_shift @= s.cmd.shift
            s.rq_stochastic @= s.cmd.stoch & STO_EN
            s.rq_seed @= s.cmd.seed
            s.rq_tensor_id @= s.cmd.tid
            s.rq_relu @= (s.cmd.op == OP_FWD) & s.cmd.relu
            s.rq_idx_base @= s.idxB
            s.rq_idx_stride @= s.IHOWO
            for i in range(NQ):  # bank rows 1 .. DR-1: only the drain's
                s.rq_acc[i] @= ZA
            for i in range(P):
                s.rq_acc[i] @= s.acc[i]
            if s.dr_busy & (s.cmd.op == OP_FWD) & s.cmd.bp:
                # a batch-parallel fwd's drain: output channel dr_row of P images, on bank row 0
                s.rq_idx_base @= s.dr_idx
                s.rq_idx_stride @= s.KHOWO
                for i in range(P):
                    s.rq_acc[i] @= s.raw[i]
            elif s.dr_busy:
                if s.dr_row == LP:  # the db row after the P dw rows
                    s.rq_shift @= s.cmd.bshift
                    s.rq_tensor_id @= s.cmd.btid
                    s.rq_idx_base @= s.db_idx
                    s.rq_idx_stride @= Bits32(1)
                    for i in range(P):
                        s.rq_acc[i] @= s.dbdr[i]
                else:
                    s.rq_idx_base @= s.dr_idx  # row dr_row's index (the drain adds C*R*S a row)
                    s.rq_idx_stride @= s.RS
                    for g in range(NG):
                        if s.dr_row == g * DR:
                            for i in range(NQ):
                                s.rq_acc[i] @= s.dr_grp[g][i]
            elif s.cmd.op == OP_UPDATE:
                s.rq_idx_stride @= s.RS
                if s.row_ok:
                    for j in range(P):
                        s.rq_acc[j] @= s.g_ext.out[j]
            elif s.cmd.op == OP_BWD_DATA:
                s.rq_idx_stride @= s.IHW

    def line_trace(s):
        return f"rqsel[{int(s.rq_idx_base)}+{int(s.rq_idx_stride)}]"
