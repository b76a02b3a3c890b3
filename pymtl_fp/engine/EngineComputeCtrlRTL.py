"""Compute controller (RTL): the EX unit's command register and its two-stage pipeline around
:class:`AddrGenRTL` and :class:`MacArrayRTL`.

Started by ``go`` with a compute command (kept in ``cmd_r`` while ``busy``), it starts the
address generator (``ag_start``), then advances it one step per cycle (``adv``: stage A; every
read port of EX is enabled with it, ``o_ren`` only for a ``pool_bwd`` reading its argmax from O).
Stage B, one cycle later, holds that step's flags and indices (``vB`` ... ``rowB``) while the
buffers' registered read data arrive, and drives the MAC array (``mac_*``; the operand ``v`` is
X, D for ``bwd_data``, or 0 on a step in the padding).  ``bwd_weight`` writes each finished tile
back over ``P / DR`` (``P / DR + 1`` with a db row; ``P`` and ``P + 1`` with ``raw``) cycles from drain registers
(:class:`EngineDrainRTL`, ``DR`` = ``drain_rows`` dw rows a cycle): the cool-down counter
``cool`` holds the next tile's last step until the previous drain is done.  A batch-parallel
``fwd`` (``bp``) runs the array in outer mode too (on column ``col`` of the weight tile) and drains
its ``P x P`` tiles of images x output channels the same way, one output channel a cycle.
With ``addr_latency`` = 1 (``EngineConfig.pipelined_addr``) a register stage sits between the
address generator and the buffers (the engine delays EX's read addresses and enables by a cycle),
so stage B is two cycles after stage A: each step's flags and indices wait a cycle in ``step_*``.
The step's write addresses (``wr_addr``, ``wr_addr2``) come from that address stage
(:class:`~pymtl_fp.engine.EngineStepAddrRTL.EngineStepAddrRTL`), already in step with stage B.

The command is done when the generator has no step left, stages A2 and B are empty, the drain is idle
(``dr_busy`` low) and every write is done: with the pipelined MAC array (its results
``mac_latency`` cycles after stage B; the drain runs that much later too) and the pipelined
requantizer (writes ``rq_latency`` cycles after its inputs), the counter ``tail`` waits
``mac_latency + rq_latency`` cycles after the last stage-B step and ``rq_latency`` after the last
drain cycle (:class:`~pymtl_fp.engine.EngineWriteTailRTL.EngineWriteTailRTL`).  Stage B drives the
MAC array through :class:`~pymtl_fp.engine.EngineMacCtrlRTL.EngineMacCtrlRTL`.
"""

from pymtl3 import Bits16, Component, InPort, OutPort, Wire, connect, update, update_ff

from pymtl_fp.engine import msgs
from pymtl_fp.engine.EngineMacCtrlRTL import EngineMacCtrlRTL
from pymtl_fp.engine.EngineWriteTailRTL import EngineWriteTailRTL
from pymtl_fp.engine.msgs import cmd_type
from pymtl_fp.primitives.DelayLineRTL import delayed

#: a step's flags and indices from the address generator to stage B: name, bits
STEP_FIELDS = (("first", 1), ("last", 1), ("zero", 1), ("db_acc", 1), ("db_first", 1), ("db_end", 1),
               ("idx", 32), ("idx2", 32), ("tap", 8), ("row", 16), ("col", 8), ("nlanes", 16), ("nrows", 16))


class EngineComputeCtrlRTL(Component):
    def construct(s, P=2, data_bits=8, drain_rows=1, mac_latency=0, rq_latency=0, addr_latency=0):
        s.params = dict(P=P, data_bits=data_bits, drain_rows=drain_rows, mac_latency=mac_latency,
                        rq_latency=rq_latency, addr_latency=addr_latency)
        Z16, ONE16 = Bits16(0), Bits16(1)
        # a tile's last step follows the previous one's by at least the drain's P / DR cycles
        COOL, COOL_DB = Bits16(P // drain_rows - 1), Bits16(P // drain_rows)
        RCOOL, RCOOL_DB = Bits16(P - 1), Bits16(P)  # raw bwd_weight: the drain writes one row a cycle
        OP_FWD, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_WEIGHT
        OP_POOL_BWD = msgs.OP_POOL_BWD

        s.cmd = InPort(cmd_type())  # the offered command
        s.go = InPort()  # accept it
        s.busy = OutPort()
        s.cmd_r = OutPort(cmd_type())  # the command being executed
        s.dr_busy = InPort()  # the bwd_weight drain is writing a tile back
        s.acc_hold = InPort()  # a raw acc row waits for its B word (EngineRawAccRTL)
        # address generator
        s.ag_start, s.ag_advance = OutPort(), OutPort()
        s.ag_active, s.ag_first, s.ag_last, s.ag_zero = InPort(), InPort(), InPort(), InPort()
        s.ag_db_acc, s.ag_db_first, s.ag_db_end = InPort(), InPort(), InPort()
        s.ag_idx, s.ag_idx2 = InPort(32), InPort(32)
        # the write addresses of the step stage B takes next (from the address stage)
        s.wr_addr, s.wr_addr2 = InPort(32), InPort(32)
        s.ag_tap = InPort(8)
        s.ag_row = InPort(16)
        s.ag_col, s.ag_nlanes, s.ag_nrows = InPort(8), InPort(16), InPort(16)  # batch-parallel fwd
        s.ren, s.o_ren = OutPort(), OutPort()  # EX's buffer reads this cycle (O: the pool argmax)
        # stage B
        s.vB, s.firstB, s.lastB = OutPort(), OutPort(), OutPort()
        s.dbaccB, s.dbfirstB, s.dbendB = OutPort(), OutPort(), OutPort()
        s.wr_addrB, s.wr_addr2B, s.idxB, s.idx2B = OutPort(32), OutPort(32), OutPort(32), OutPort(32)
        s.tapB = OutPort(8)
        s.rowB = OutPort(16)
        s.nlanesB, s.nrowsB = OutPort(16), OutPort(16)  # a batch-parallel tile's real images, channels
        s.colB = Wire(8)
        # MAC array
        s.x_rd = [InPort(data_bits) for _ in range(P)]
        s.d_rd = [InPort(data_bits) for _ in range(P)]
        s.mac_en, s.mac_first, s.mac_outer, s.mac_transpose, s.mac_use_bias = (
            OutPort(), OutPort(), OutPort(), OutPort(), OutPort())
        s.mac_bp = OutPort()  # a batch-parallel fwd: outer mode on column mac_col of the weight tile
        s.mac_col = OutPort(8)
        s.tiled = Wire()  # the command drains P x P tiles (bwd_weight, a batch-parallel fwd)
        s.mac_v = [OutPort(data_bits) for _ in range(P)]

        s.zeroB = Wire()  # the step is in the padding: products forced to 0
        s.cool = Wire(16)
        s.stall = Wire()
        s.adv = Wire()
        s.done = Wire()
        # the step stage B takes: the generator's, or (addr_latency) the one of a cycle before
        s.step_v = Wire()
        connect(s.step_v, delayed(s, "a2_v", s.adv, addr_latency, True))
        for name, bits in STEP_FIELDS:
            setattr(s, f"step_{name}", Wire(bits))
            connect(getattr(s, f"step_{name}"), delayed(s, f"a2_{name}", getattr(s, f"ag_{name}"), addr_latency))
        s.wb_idle = Wire()  # no write of this command is still on its way to the buffers
        if mac_latency + rq_latency:
            s.wtail = EngineWriteTailRTL(mac_latency, rq_latency)
            s.wtail.vB //= s.vB
            s.wtail.dr_busy //= s.dr_busy
            s.wb_idle //= s.wtail.wb_idle
        else:
            @update
            def up_wb_idle_now():
                s.wb_idle @= 1

        # ---- stage A ------------------------------------------------------------------------
        @update
        def up_stage_a():
            s.ag_start @= s.go
            s.tiled @= (s.cmd_r.op == OP_BWD_WEIGHT) | ((s.cmd_r.op == OP_FWD) & s.cmd_r.bp)
            s.stall @= s.tiled & s.ag_last & (s.cool != Z16)
            s.adv @= s.busy & s.ag_active & ~s.stall
            s.ag_advance @= s.adv
            s.ren @= s.adv
            s.o_ren @= s.adv & (s.cmd_r.op == OP_POOL_BWD) & s.cmd_r.amsel
            s.done @= ~s.ag_active & ~s.step_v & ~s.vB & ~s.dr_busy & s.wb_idle & ~s.acc_hold

        @update_ff
        def up_ex_regs():
            if s.reset:
                s.busy <<= 0
            elif s.busy:
                if s.done:
                    s.busy <<= 0
            elif s.go:
                s.cmd_r <<= s.cmd
                s.busy <<= 1

        @update_ff
        def up_stage_b():
            if s.reset:
                s.vB <<= 0
                s.cool <<= Z16
            else:
                s.vB <<= s.step_v
                s.firstB <<= s.step_first
                s.lastB <<= s.step_last
                s.zeroB <<= s.step_zero
                s.dbaccB <<= s.step_db_acc
                s.dbfirstB <<= s.step_db_first
                s.dbendB <<= s.step_db_end
                s.wr_addrB <<= s.wr_addr
                s.wr_addr2B <<= s.wr_addr2
                s.idxB <<= s.step_idx
                s.idx2B <<= s.step_idx2
                s.tapB <<= s.step_tap
                s.rowB <<= s.step_row
                s.colB <<= s.step_col
                s.nlanesB <<= s.step_nlanes
                s.nrowsB <<= s.step_nrows
                if s.adv & s.ag_last & s.tiled:
                    if s.cmd_r.op == OP_FWD:  # batch-parallel: one output channel a cycle, no db
                        s.cool <<= RCOOL
                    elif s.cmd_r.raw:
                        if s.ag_db_end:
                            s.cool <<= RCOOL_DB
                        else:
                            s.cool <<= RCOOL
                    elif s.ag_db_end:
                        s.cool <<= COOL_DB
                    else:
                        s.cool <<= COOL
                elif s.cool != Z16:
                    s.cool <<= s.cool - ONE16

        # ---- stage B: MAC array control and operand ----------------------------------------
        s.macc = EngineMacCtrlRTL(P, data_bits)
        s.macc.cmd //= s.cmd_r
        for name in ("vB", "firstB", "zeroB", "colB"):
            connect(getattr(s.macc, name), getattr(s, name))
        for name in ("mac_en", "mac_first", "mac_outer", "mac_transpose", "mac_use_bias", "mac_bp", "mac_col"):
            connect(getattr(s, name), getattr(s.macc, name))
        for j in range(P):
            s.macc.x_rd[j] //= s.x_rd[j]
            s.macc.d_rd[j] //= s.d_rd[j]
            s.mac_v[j] //= s.macc.mac_v[j]

    def line_trace(s):
        op = msgs.OP_NAMES.get(int(s.cmd_r.op), "?") if s.busy else "."
        return (f"X {op:<10} {'A' if s.adv else ('s' if s.stall else '.')}{'B' if s.vB else '.'}"
                f"{'f' if s.firstB else ' '}{'l' if s.lastB else ' '} cool{int(s.cool)}")
