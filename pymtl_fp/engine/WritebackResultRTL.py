"""The ``d0`` result of a write-back cycle (RTL, combinational), for
:class:`~pymtl_fp.engine.EngineWritebackRTL.EngineWritebackRTL`: whether EX writes its result map
this cycle (``wb_en``), to which word (``wb_addr``), which lanes (``wb_lane``) and what
(``wb_data``); the write-back's routes send it to O, X or D (command field ``dsel``).

* a batch-parallel ``fwd`` (``bp``): the drain's row ``dr_row`` (an output channel of ``P`` images)
  to word ``dr_addr + dr_roff`` where the row is a real channel (``< dr_nrows``), in the lanes of
  real images (``< dr_nlanes``), saturated to the activation width (``y_a``);
* ``fwd`` (``y_a``), ``bwd_data`` (``y_g``, 0 where the ReLU mask holds: forward input ``x <= 0``)
  and ``pool_fwd`` (the window's maximum ``pm_n``) in the stage-B cycle of an output's last step,
  to word ``wr_addrB``;
* ``pool_bwd`` every step: ``dy`` (``d_rd``) where the step's tap ``tapB`` is the window's argmax
  (read from X or O, field ``amsel``), else 0.
"""

from pymtl3 import Bits16, Bits32, Component, InPort, OutPort, Wire, mk_bits, trunc, update, zext

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type


class WritebackResultRTL(Component):
    def construct(s, P=2, data_bits=8, act_addr_bits=8):
        s.params = dict(P=P, data_bits=data_bits, act_addr_bits=act_addr_bits)
        D = data_bits
        DT, XAT = mk_bits(D), mk_bits(act_addr_bits)
        ZD = DT(0)
        ACT_SIGN = D - 1
        OP_FWD, OP_BWD_DATA = msgs.OP_FWD, msgs.OP_BWD_DATA
        OP_POOL_FWD, OP_POOL_BWD = msgs.OP_POOL_FWD, msgs.OP_POOL_BWD

        s.cmd = InPort(cmd_type())  # the command being executed
        s.ex_busy = InPort()
        s.vB, s.lastB = InPort(), InPort()
        s.tapB = InPort(8)
        s.wr_addrB = InPort(32)
        s.dr_busy = InPort()  # the drain (a batch-parallel fwd's tile)
        s.dr_row = InPort(16)
        s.dr_addr = InPort(32)
        s.dr_nlanes, s.dr_nrows, s.dr_roff = InPort(16), InPort(16), InPort(16)
        s.pm_n = [InPort(D) for _ in range(P)]  # pool_fwd maximum
        s.x_rd = [InPort(D) for _ in range(P)]  # buffer read data
        s.o_rd = [InPort(D) for _ in range(P)]
        s.d_rd = [InPort(D) for _ in range(P)]
        s.y_a = [InPort(D) for _ in range(P)]  # saturated results (WritebackSaturateRTL)
        s.y_g = [InPort(D) for _ in range(P)]
        s.wb_en = OutPort()
        s.wb_addr = OutPort(act_addr_bits)
        s.wb_data = [OutPort(D) for _ in range(P)]
        s.wb_lane = [OutPort() for _ in range(P)]  # its lanes (a batch-parallel tile: the real images)

        s.bp = Wire()
        s.mask = [Wire() for _ in range(P)]  # bwd_data ReLU mask
        s.am_rd = [Wire(D) for _ in range(P)]  # pool_bwd: the argmax read (X or O)

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
                    s.wb_addr @= trunc(s.dr_addr + zext(s.dr_roff, Bits32), XAT)
                    for i in range(P):
                        s.wb_data[i] @= s.y_a[i]
                        s.wb_lane[i] @= Bits16(i) < s.dr_nlanes
            elif s.ex_busy & s.vB:
                if (s.cmd.op == OP_FWD) & s.lastB:
                    s.wb_en @= 1
                    for i in range(P):
                        s.wb_data[i] @= s.y_a[i]
                elif (s.cmd.op == OP_BWD_DATA) & s.lastB:
                    s.wb_en @= 1
                    for i in range(P):
                        if ~s.mask[i]:
                            s.wb_data[i] @= s.y_g[i]
                elif (s.cmd.op == OP_POOL_FWD) & s.lastB:
                    s.wb_en @= 1
                    for i in range(P):
                        s.wb_data[i] @= s.pm_n[i]
                elif s.cmd.op == OP_POOL_BWD:
                    s.wb_en @= 1
                    for i in range(P):
                        if s.am_rd[i] == zext(s.tapB, DT):
                            s.wb_data[i] @= s.d_rd[i]

    def line_trace(s):
        return f"res[{'W' if s.wb_en else '.'}{int(s.wb_addr)}]"
