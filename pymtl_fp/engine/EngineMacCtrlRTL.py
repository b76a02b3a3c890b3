"""MAC array control (RTL, combinational) of
:class:`~pymtl_fp.engine.EngineComputeCtrlRTL.EngineComputeCtrlRTL`: stage B's step drives
:class:`~pymtl_fp.engine.MacArrayRTL.MacArrayRTL`.

The array accumulates (``mac_en``) on the steps of ``fwd``, ``bwd_data`` and ``bwd_weight``,
restarting at an output's first step (``mac_first``); ``bwd_weight`` and a batch-parallel ``fwd``
(``bp``: on column ``mac_col`` of the weight tile) run it in outer mode (``mac_outer``: ``P x P``
tiles), ``bwd_data`` transposed, ``fwd`` with the bias.  Its operand ``v`` is X (D for
``bwd_data``), or 0 on a step in the padding (``zeroB``).
"""

from pymtl3 import Component, InPort, OutPort, mk_bits, update

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type


class EngineMacCtrlRTL(Component):
    def construct(s, P=2, data_bits=8):
        s.params = dict(P=P, data_bits=data_bits)
        ZD = mk_bits(data_bits)(0)
        OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT

        s.cmd = InPort(cmd_type())  # the command being executed
        s.vB, s.firstB, s.zeroB = InPort(), InPort(), InPort()  # stage B's step
        s.colB = InPort(8)
        s.x_rd = [InPort(data_bits) for _ in range(P)]
        s.d_rd = [InPort(data_bits) for _ in range(P)]
        s.mac_en, s.mac_first, s.mac_outer, s.mac_transpose, s.mac_use_bias = (
            OutPort(), OutPort(), OutPort(), OutPort(), OutPort())
        s.mac_bp = OutPort()  # a batch-parallel fwd: outer mode on column mac_col of the weight tile
        s.mac_col = OutPort(8)
        s.mac_v = [OutPort(data_bits) for _ in range(P)]

        @update
        def up_mac_ctrl():
            s.mac_en @= s.vB & ((s.cmd.op == OP_FWD) | (s.cmd.op == OP_BWD_DATA) | (s.cmd.op == OP_BWD_WEIGHT))
            s.mac_first @= s.firstB
            s.mac_outer @= (s.cmd.op == OP_BWD_WEIGHT) | ((s.cmd.op == OP_FWD) & s.cmd.bp)
            s.mac_bp @= (s.cmd.op == OP_FWD) & s.cmd.bp
            s.mac_col @= s.colB
            s.mac_transpose @= s.cmd.op == OP_BWD_DATA
            s.mac_use_bias @= s.cmd.op == OP_FWD
            for j in range(P):
                if s.zeroB:
                    s.mac_v[j] @= ZD
                elif s.cmd.op == OP_BWD_DATA:
                    s.mac_v[j] @= s.d_rd[j]
                else:
                    s.mac_v[j] @= s.x_rd[j]

    def line_trace(s):
        return f"mac[{'E' if s.mac_en else '.'}{'f' if s.mac_first else ' '}]"
