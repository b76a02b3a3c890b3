"""Loader LD (RTL): executes a LOAD, one ``din`` beat of ``E`` elements per handshake into a
buffer's write port.

Started by ``go`` with the offered command (``LOAD target, addr, count``), it takes ``count``
elements from ``din`` in ``ceil(count / E)`` beats (``din_rdy`` is high while it is busy) and
writes element ``e`` to word ``addr + e // L``, lane ``e % L`` of buffer ``target`` (``L`` lanes:
``P``, ``P*P`` for W and G; ``E`` divides ``L``, so a beat fills lanes ``lane .. lane + E - 1`` of
one word).  It does not see the data: in a cycle with ``we`` (the ``din`` handshake) the write
port of buffer ``tgt`` (:class:`EngineWritePortRTL`) writes beat lane ``j`` of ``din.msg`` to word
``waddr``, lane ``lane + j``, for every ``j`` with ``lmask[j]`` (``j < `` the elements still to
move: the surplus lanes of the last beat are not written).  ``waddr``: the word counter cut to
``addr_bits``, the widest buffer address; each buffer takes its own low bits.  A LOAD of
``count = 0`` leaves the unit idle.
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

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import cmd_type


class EngineLoaderRTL(Component):
    def construct(s, P=2, addr_bits=16, E=1):
        s.params = dict(P=P, addr_bits=addr_bits, E=E)
        AT = mk_bits(addr_bits)
        CT = mk_bits(msgs.COUNT_BITS)
        BUF_W, BUF_G = msgs.BUF_W, msgs.BUF_G
        Z16, ONE16, LE, LP, LPP = Bits16(0), Bits16(1), Bits16(E), Bits16(P), Bits16(P * P)
        CE = CT(E)

        s.cmd = InPort(cmd_type())  # the offered command (target, addr, count)
        s.go = InPort()  # accept it
        s.din_val = InPort()
        s.din_rdy = OutPort()
        s.busy = OutPort()
        s.we = OutPort()  # a beat is written this cycle
        s.tgt = OutPort(3)  # buffer
        s.waddr = OutPort(addr_bits)  # current word
        s.lane = OutPort(16)  # first lane of the current beat (a multiple of E)
        s.lmask = OutPort(E)  # beat lanes holding an element (all but the surplus of the last beat)

        s.addr = Wire(16)  # current word

        s.left = Wire(msgs.COUNT_BITS)  # elements still to move
        s.lanes = Wire(16)  # lanes of the target buffer

        @update
        def up_ld_handshake():
            s.din_rdy @= s.busy
            s.waddr @= trunc(s.addr, AT)
            s.we @= s.din_val & s.busy
            if (s.tgt == BUF_W) | (s.tgt == BUF_G):
                s.lanes @= LPP
            else:
                s.lanes @= LP

        @update
        def up_ld_mask():
            for j in range(E):
                s.lmask[j] @= s.left > j

        @update_ff
        def up_ld_regs():
            if s.reset:
                s.busy <<= 0
                s.left <<= 0
                s.lane <<= Z16
                s.addr <<= Z16
            elif s.busy:
                if s.we:
                    s.left <<= s.left - CE
                    if s.lane == s.lanes - LE:
                        s.lane <<= Z16
                        s.addr <<= s.addr + ONE16
                    else:
                        s.lane <<= s.lane + LE
                    if s.left <= CE:
                        s.busy <<= 0
            elif s.go:
                s.tgt <<= s.cmd.target
                s.addr <<= s.cmd.addr
                s.lane <<= Z16
                s.left <<= s.cmd.count
                s.busy <<= s.cmd.count != 0

    def line_trace(s):
        if not s.busy:
            return "L.   "
        return f"L{int(s.left):<4}{msgs.BUF_NAMES.get(int(s.tgt), '?')}[{int(s.addr)}.{int(s.lane)}]"
