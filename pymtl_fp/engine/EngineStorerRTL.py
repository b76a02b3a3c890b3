"""Storer ST (RTL): executes a STORE, a buffer's read port -> ``dout``, one element per handshake.

Started by ``go`` with the offered command (``STORE target, addr, count``), it reads word
``addr`` of buffer ``target`` (``rd``, address ``raddr``: the word counter cut to ``addr_bits``,
the widest buffer address; the read port of the buffer, :class:`EngineReadPortRTL`, takes its
low bits), then, from the registered read data of the next cycles, offers its
lanes one per ``dout`` handshake, sign-extended to the stream width (``P`` lanes, ``P*P`` for W
and G; the bias buffer B holds accumulator-wide elements), then reads the next word, until
``count`` elements have left.  A STORE of ``count = 0`` leaves the unit idle.
"""

from pymtl3 import (
    Bits16,
    Component,
    InPort,
    OutPort,
    Wire,
    mk_bits,
    trunc,
    update,
    update_ff,
)
from pymtl3.stdlib.stream.ifcs import SendIfcRTL

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type
from pymtl_fp.engine.SignExtendRTL import SignExtendRTL


class EngineStorerRTL(Component):
    def construct(s, P=2, data_bits=8, acc_bits=32, stream_bits=32, addr_bits=16):
        s.params = dict(P=P, data_bits=data_bits, acc_bits=acc_bits, stream_bits=stream_bits,
                        addr_bits=addr_bits)
        AT = mk_bits(addr_bits)
        PP = P * P
        DT, AccT = mk_bits(data_bits), mk_bits(acc_bits)
        BUF_X, BUF_D, BUF_O, BUF_W, BUF_G, BUF_B = (msgs.BUF_X, msgs.BUF_D, msgs.BUF_O, msgs.BUF_W,
                                                    msgs.BUF_G, msgs.BUF_B)
        Z16, ONE16, LP, LPP = Bits16(0), Bits16(1), Bits16(P), Bits16(PP)
        ZD, ZA = DT(0), AccT(0)

        s.cmd = InPort(cmd_type())  # the offered command (target, addr, count)
        s.go = InPort()  # accept it
        s.dout = SendIfcRTL(mk_bits(stream_bits))
        s.busy = OutPort()
        s.rd = OutPort()  # read word addr of buffer tgt this cycle
        s.tgt = OutPort(3)  # buffer
        s.raddr = OutPort(addr_bits)  # current word
        # read data of every buffer (only that of tgt is used)
        s.rd_x = [InPort(data_bits) for _ in range(P)]
        s.rd_d = [InPort(data_bits) for _ in range(P)]
        s.rd_o = [InPort(data_bits) for _ in range(P)]
        s.rd_w = [InPort(data_bits) for _ in range(PP)]
        s.rd_g = [InPort(data_bits) for _ in range(PP)]
        s.rd_b = [InPort(acc_bits) for _ in range(P)]

        s.addr = Wire(16)  # current word
        s.ph = Wire()  # 1 = the current word has been read
        s.lane = Wire(16)  # current lane
        s.left = Wire(msgs.COUNT_BITS)  # elements still to move
        s.lanes = Wire(16)  # lanes of the target buffer
        s.go_out = Wire()  # dout handshake
        s.sel_d = Wire(data_bits)  # the current element (X D O W G) ...
        s.sel_b = Wire(acc_bits)  # ... (B), before sign extension
        s.ext_d = SignExtendRTL(data_bits, stream_bits)
        s.ext_b = SignExtendRTL(acc_bits, stream_bits)
        s.ext_d.in_[0] //= s.sel_d
        s.ext_b.in_[0] //= s.sel_b

        @update
        def up_st_handshake():
            s.rd @= s.busy & ~s.ph
            s.raddr @= trunc(s.addr, AT)
            s.dout.val @= s.busy & s.ph
            s.go_out @= s.dout.rdy & s.busy & s.ph
            if (s.tgt == BUF_W) | (s.tgt == BUF_G):
                s.lanes @= LPP
            else:
                s.lanes @= LP

        @update
        def up_st_select():
            s.sel_d @= ZD
            s.sel_b @= ZA
            for i in range(P):
                if s.lane == i:
                    if s.tgt == BUF_X:
                        s.sel_d @= s.rd_x[i]
                    elif s.tgt == BUF_D:
                        s.sel_d @= s.rd_d[i]
                    elif s.tgt == BUF_O:
                        s.sel_d @= s.rd_o[i]
                    elif s.tgt == BUF_B:
                        s.sel_b @= s.rd_b[i]
            for i in range(PP):
                if s.lane == i:
                    if s.tgt == BUF_W:
                        s.sel_d @= s.rd_w[i]
                    elif s.tgt == BUF_G:
                        s.sel_d @= s.rd_g[i]

        @update
        def up_st_data():
            if s.tgt == BUF_B:
                s.dout.msg @= s.ext_b.out[0]
            else:
                s.dout.msg @= s.ext_d.out[0]

        @update_ff
        def up_st_regs():
            if s.reset:
                s.busy <<= 0
                s.ph <<= 0
                s.left <<= 0
                s.lane <<= Z16
                s.addr <<= Z16
            elif s.busy:
                if ~s.ph:
                    s.ph <<= 1
                elif s.go_out:
                    s.left <<= s.left - 1
                    if s.lane == s.lanes - ONE16:
                        s.lane <<= Z16
                        s.addr <<= s.addr + ONE16
                        s.ph <<= 0
                    else:
                        s.lane <<= s.lane + ONE16
                    if s.left == 1:
                        s.busy <<= 0
            elif s.go:
                s.tgt <<= s.cmd.target
                s.addr <<= s.cmd.addr
                s.lane <<= Z16
                s.left <<= s.cmd.count
                s.ph <<= 0
                s.busy <<= s.cmd.count != 0

    def line_trace(s):
        if not s.busy:
            return "S.   "
        return (f"S{int(s.left):<4}{msgs.BUF_NAMES.get(int(s.tgt), '?')}[{int(s.addr)}.{int(s.lane)}]"
                f"{'r' if s.rd else ' '}{s.dout}")
