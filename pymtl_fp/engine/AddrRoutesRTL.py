"""Address routes (RTL, combinational) of :class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`: which
address unit's sum each buffer access of a step takes, per operation.

Each read (X, D, W, G, B: ``READ_BUFS``) and each of the two writes (the result, and
``bwd_weight``'s db row or ``pool_fwd``'s argmax) gets a base, the command's address field plus
the accumulated terms ``ksum`` of an address unit (:class:`~pymtl_fp.engine.AddrUnitsRTL.AddrUnitsRTL`),
and which unit's product is still to be added (``rd_unit``/``wr_unit``, ``NO_UNIT``: none; the
address stage :class:`~pymtl_fp.engine.EngineStepAddrRTL.EngineStepAddrRTL` adds it)::

    fwd         X = a0 + MAP   W = a1 + WGT   B = a2 + kt         result d0 + OUT
    bwd_data    D = a0 + OUT   W = a1 + WGT   X = a2 + MAP (mask) result d0 + MAP
    bwd_weight  X = a0 + MAP   D = a1 + OUT                       result d0 + WGT, db d1 + kt
    pool_fwd    X = a0 + MAP                                      result d0 + OUT, argmax d1 + OUT
    pool_bwd    D = a0 + OUT   X = a1 + OUT (argmax)              result d0 + MAP
    update      W = a0 + WGT   G = a1 + WGT                       result d0 + WGT

Also per step: ``zero`` (no valid tap: the products are forced to 0), ``db_acc`` (``bwd_weight``,
``ct == 0``: the step that counts this ``dy`` into the bias gradient), ``tap`` (pooling), ``idx``
(the result's flat index, unit IDX) and ``idx2`` (``bwd_weight``: kt's first db element, ``kt*P``).
"""

from pymtl3 import Bits2, Bits32, Component, InPort, OutPort, Wire, update, zext

from pymtl_fp.engine import msgs
from pymtl_fp.engine.addr_layout import AU_IDX, AU_MAP, AU_OUT, AU_WGT, NAU
from pymtl_fp.engine.msgs import cmd_type

#: the buffers EX reads, in the order of rd_base / rd_unit
READ_BUFS = ("x", "d", "w", "g", "b")
RB_X, RB_D, RB_W, RB_G, RB_B = range(len(READ_BUFS))
NO_UNIT = 3  #: rd_unit / wr_unit of an address without a product
#: the write addresses of a step, in the order of wr_base / wr_unit: the result, and
#: bwd_weight's db row or pool_fwd's argmax
NWR = 2


class AddrRoutesRTL(Component):
    def construct(s, P=2):
        s.params = dict(P=P)
        B32 = Bits32
        PP, ZERO = B32(P), B32(0)
        OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT
        OP_POOL_FWD, OP_POOL_BWD, OP_UPDATE = msgs.OP_POOL_FWD, msgs.OP_POOL_BWD, msgs.OP_UPDATE
        U_MAP, U_OUT, U_WGT, U_NONE = Bits2(AU_MAP), Bits2(AU_OUT), Bits2(AU_WGT), Bits2(NO_UNIT)
        NRB = len(READ_BUFS)

        s.cmd = InPort(cmd_type())
        s.ksum = [InPort(32) for _ in range(NAU)]  # the address units' accumulated terms
        s.u0, s.u1 = InPort(32), InPort(32)  # loop counters 0 and 1 (fwd's kt, bwd_weight's kt / ct)
        s.hh, s.ww = InPort(32), InPort(32)  # the input coordinates of fwd / bwd_weight
        s.bd_tap_ok = InPort()  # bwd_data: the tap and its output exist
        s.bw_out_inside, s.bw_first_tap = InPort(), InPort()  # bwd_weight: the output exists, first tap
        s.pool_tap = InPort(8)
        s.rd_base = [OutPort(32) for _ in range(NRB)]
        s.rd_unit = [OutPort(2) for _ in range(NRB)]
        s.wr_base = [OutPort(32) for _ in range(NWR)]
        s.wr_unit = [OutPort(2) for _ in range(NWR)]
        s.idx, s.idx2 = OutPort(32), OutPort(32)
        s.tap = OutPort(8)
        s.zero, s.db_acc = OutPort(), OutPort()

        s.H, s.W, s.A0, s.A1, s.A2, s.D0, s.D1 = (Wire(32) for _ in range(7))
        s.in_map = Wire()  # (hh, ww) lies inside the input map

        @update
        def up_route_views():
            s.H @= zext(s.cmd.h, B32)
            s.W @= zext(s.cmd.w, B32)
            s.A0 @= zext(s.cmd.a0, B32)
            s.A1 @= zext(s.cmd.a1, B32)
            s.A2 @= zext(s.cmd.a2, B32)
            s.D0 @= zext(s.cmd.d0, B32)
            s.D1 @= zext(s.cmd.d1, B32)
            s.in_map @= (s.hh < s.H) & (s.ww < s.W)

        @update
        def up_addresses():
            for b in range(NRB):
                s.rd_base[b] @= ZERO
                s.rd_unit[b] @= U_NONE
            for j in range(NWR):
                s.wr_base[j] @= ZERO
                s.wr_unit[j] @= U_NONE
            s.idx @= s.ksum[AU_IDX]  # (every term of the flat index is accumulated)
            s.idx2 @= ZERO
            s.tap @= 0
            s.zero @= 0
            s.db_acc @= 0
            if s.cmd.op == OP_FWD:
                s.rd_base[RB_X] @= s.A0 + s.ksum[AU_MAP]  # fwd: x[n, ct, hh, ww]
                s.rd_unit[RB_X] @= U_MAP
                s.rd_base[RB_W] @= s.A1 + s.ksum[AU_WGT]
                s.rd_unit[RB_W] @= U_WGT
                s.rd_base[RB_B] @= s.A2 + s.u1
                s.wr_base[0] @= s.D0 + s.ksum[AU_OUT]
                s.wr_unit[0] @= U_OUT
                s.zero @= ~s.in_map
            elif s.cmd.op == OP_BWD_DATA:
                s.rd_base[RB_D] @= s.A0 + s.ksum[AU_OUT]
                s.rd_unit[RB_D] @= U_OUT
                s.rd_base[RB_W] @= s.A1 + s.ksum[AU_WGT]
                s.rd_unit[RB_W] @= U_WGT
                s.rd_base[RB_X] @= s.A2 + s.ksum[AU_MAP]
                s.rd_unit[RB_X] @= U_MAP
                s.wr_base[0] @= s.D0 + s.ksum[AU_MAP]
                s.wr_unit[0] @= U_MAP
                s.zero @= ~s.bd_tap_ok
            elif s.cmd.op == OP_BWD_WEIGHT:
                s.rd_base[RB_X] @= s.A0 + s.ksum[AU_MAP]
                s.rd_unit[RB_X] @= U_MAP
                s.rd_base[RB_D] @= s.A1 + s.ksum[AU_OUT]
                s.rd_unit[RB_D] @= U_OUT
                s.wr_base[0] @= s.D0 + s.ksum[AU_WGT]
                s.wr_unit[0] @= U_WGT
                s.wr_base[1] @= s.D1 + s.u0
                s.idx2 @= s.u0 * PP
                s.zero @= ~(s.in_map & s.bw_out_inside)
                s.db_acc @= (s.u1 == ZERO) & s.bw_first_tap & s.in_map & s.bw_out_inside
            elif s.cmd.op == OP_POOL_FWD:
                s.rd_base[RB_X] @= s.A0 + s.ksum[AU_MAP]
                s.rd_unit[RB_X] @= U_MAP
                s.wr_base[0] @= s.D0 + s.ksum[AU_OUT]
                s.wr_unit[0] @= U_OUT
                s.wr_base[1] @= s.D1 + s.ksum[AU_OUT]
                s.wr_unit[1] @= U_OUT
                s.tap @= s.pool_tap
            elif s.cmd.op == OP_POOL_BWD:
                s.rd_base[RB_D] @= s.A0 + s.ksum[AU_OUT]
                s.rd_unit[RB_D] @= U_OUT
                s.rd_base[RB_X] @= s.A1 + s.ksum[AU_OUT]  # the argmax beside dy
                s.rd_unit[RB_X] @= U_OUT
                s.wr_base[0] @= s.D0 + s.ksum[AU_MAP]
                s.wr_unit[0] @= U_MAP
                s.tap @= s.pool_tap
            elif s.cmd.op == OP_UPDATE:
                s.rd_base[RB_W] @= s.A0 + s.ksum[AU_WGT]
                s.rd_unit[RB_W] @= U_WGT
                s.rd_base[RB_G] @= s.A1 + s.ksum[AU_WGT]
                s.rd_unit[RB_G] @= U_WGT
                s.wr_base[0] @= s.D0 + s.ksum[AU_WGT]
                s.wr_unit[0] @= U_WGT

    def line_trace(s):
        return (f"rt[{'z' if s.zero else ' '}{'d' if s.db_acc else ' '} "
                + " ".join(f"{READ_BUFS[b]}{int(s.rd_base[b])}" for b in range(len(READ_BUFS))) + "]")
