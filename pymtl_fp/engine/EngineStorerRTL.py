"""Storer ST (RTL): executes a STORE, a buffer's read port -> ``dout``, one beat of ``E``
elements per handshake.

Started by ``go`` with the offered command (``STORE target, addr, count``), it reads word
``addr`` of buffer ``target`` (``rd``, address ``raddr``: the word counter cut to ``addr_bits``,
the widest buffer address; the read port of the buffer, :class:`EngineReadPortRTL`, takes its
low bits), then, from the registered read data of the next cycles, offers its lanes ``E`` per
``dout`` handshake (lanes ``lane .. lane + E - 1`` of the word in beat lanes ``0 .. E - 1``), each
sign-extended to ``stream_bits`` (``P`` lanes, ``P*P`` for W and G; the bias buffer B holds
accumulator-wide elements), then reads the next word, until ``count`` elements have left; the
lanes of the last beat beyond ``count`` are zero.  ``E`` divides the lanes of every buffer, so a
beat never crosses a word.  A STORE of ``count = 0`` leaves the unit idle.
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
    def construct(s, P=2, data_bits=8, acc_bits=32, stream_bits=32, addr_bits=16, E=1):
        if P % E:
            raise ValueError(f"EngineStorerRTL: E={E} must divide P={P}")
        s.params = dict(P=P, data_bits=data_bits, acc_bits=acc_bits, stream_bits=stream_bits,
                        addr_bits=addr_bits, E=E)
        AT = mk_bits(addr_bits)
        PP = P * P
        DT, AccT = mk_bits(data_bits), mk_bits(acc_bits)
        BUF_X, BUF_D, BUF_O, BUF_W, BUF_G, BUF_B = (msgs.BUF_X, msgs.BUF_D, msgs.BUF_O, msgs.BUF_W,
                                                    msgs.BUF_G, msgs.BUF_B)
        Z16, ONE16, LE, LP, LPP = Bits16(0), Bits16(1), Bits16(E), Bits16(P), Bits16(PP)
        ZD, ZA, ZS = DT(0), AccT(0), mk_bits(stream_bits)(0)
        CE = mk_bits(msgs.COUNT_BITS)(E)
        NBP, NBPP = P // E, PP // E  # beats per word: X D O B, W G

        s.cmd = InPort(cmd_type())  # the offered command (target, addr, count)
        s.go = InPort()  # accept it
        s.dout = SendIfcRTL(mk_bits(E * stream_bits))
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
        s.lane = Wire(16)  # first lane of the current beat (a multiple of E)
        s.left = Wire(msgs.COUNT_BITS)  # elements still to move
        s.lanes = Wire(16)  # lanes of the target buffer
        s.go_out = Wire()  # dout handshake
        s.lmask = Wire(E)  # beat lanes holding an element (the surplus of the last beat: 0)
        s.sel_d = [Wire(data_bits) for _ in range(E)]  # the current beat's elements (X D O W G) ...
        s.sel_b = [Wire(acc_bits) for _ in range(E)]  # ... (B), before sign extension
        s.lane_out = [Wire(stream_bits) for _ in range(E)]  # beat lane j of dout.msg
        s.ext_d = SignExtendRTL(data_bits, stream_bits, E)
        s.ext_b = SignExtendRTL(acc_bits, stream_bits, E)
        for j in range(E):
            s.ext_d.in_[j] //= s.sel_d[j]
            s.ext_b.in_[j] //= s.sel_b[j]
        if E == 1:
            s.dout.msg //= s.lane_out[0]
        else:
            for j in range(E):
                s.dout.msg[j * stream_bits:(j + 1) * stream_bits] //= s.lane_out[j]

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

        # the read data as beats: rdb_<buf>[b][j] = lane b*E + j (wiring only; PyMTL3 types an
        # index computed in an update block too wide for the array)
        for buf, width, nbeats in (("x", data_bits, NBP), ("d", data_bits, NBP), ("o", data_bits, NBP),
                                   ("b", acc_bits, NBP), ("w", data_bits, NBPP), ("g", data_bits, NBPP)):
            rd = getattr(s, f"rd_{buf}")
            setattr(s, f"rdb_{buf}", [[Wire(width) for _ in range(E)] for _ in range(nbeats)])
            rdb = getattr(s, f"rdb_{buf}")
            for b in range(nbeats):
                for j in range(E):
                    rdb[b][j] //= rd[b * E + j]

        @update
        def up_st_select():
            for j in range(E):
                s.sel_d[j] @= ZD
                s.sel_b[j] @= ZA
            for b in range(NBP):
                if s.lane == b * E:
                    for j in range(E):
                        if s.tgt == BUF_X:
                            s.sel_d[j] @= s.rdb_x[b][j]
                        elif s.tgt == BUF_D:
                            s.sel_d[j] @= s.rdb_d[b][j]
                        elif s.tgt == BUF_O:
                            s.sel_d[j] @= s.rdb_o[b][j]
                        elif s.tgt == BUF_B:
                            s.sel_b[j] @= s.rdb_b[b][j]
            for b in range(NBPP):
                if s.lane == b * E:
                    for j in range(E):
                        if s.tgt == BUF_W:
                            s.sel_d[j] @= s.rdb_w[b][j]
                        elif s.tgt == BUF_G:
                            s.sel_d[j] @= s.rdb_g[b][j]

        @update
        def up_st_data():
            for j in range(E):
                s.lmask[j] @= s.left > j
                if s.lmask[j]:
                    if s.tgt == BUF_B:
                        s.lane_out[j] @= s.ext_b.out[j]
                    else:
                        s.lane_out[j] @= s.ext_d.out[j]
                else:
                    s.lane_out[j] @= ZS

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
                    s.left <<= s.left - CE
                    if s.lane == s.lanes - LE:
                        s.lane <<= Z16
                        s.addr <<= s.addr + ONE16
                        s.ph <<= 0
                    else:
                        s.lane <<= s.lane + LE
                    if s.left <= CE:
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
