"""Address unit operands (RTL, combinational) of :class:`~pymtl_fp.engine.AddrUnitsRTL.AddrUnitsRTL`:
per operation, the stride of each counter x stride term (``kst``), the coordinate derived from several
counters that a unit multiplies by a width (``m2``) and its linear term (``lin``).

The unit ``au``'s term for loop level ``LEVELS[q]`` is ``kst[au*NQ + q]``; the strides are command
fields the host computes (:data:`pymtl_fp.engine.encoding.PRODUCTS`, through
:class:`~pymtl_fp.engine.EngineStridesRTL.EngineStridesRTL`) or width fields.  A term an operation
does not use has stride 0.
"""

from pymtl3 import Bits32, Component, InPort, OutPort, update

from pymtl_fp.engine import msgs
from pymtl_fp.engine.addr_layout import AU_IDX, AU_MAP, AU_OUT, AU_WGT, NAU, NQ
from pymtl_fp.engine.EngineStridesRTL import STRIDES
from pymtl_fp.engine.msgs import cmd_type


class AddrUnitOperandsRTL(Component):
    def construct(s):
        s.params = {}
        B32 = Bits32
        ZERO = B32(0)
        OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT = msgs.OP_FWD, msgs.OP_BWD_DATA, msgs.OP_BWD_WEIGHT
        OP_POOL_FWD, OP_POOL_BWD, OP_UPDATE = msgs.OP_POOL_FWD, msgs.OP_POOL_BWD, msgs.OP_UPDATE

        s.cmd = InPort(cmd_type())  # the command being executed
        for name in STRIDES:
            setattr(s, name, InPort(32))
        # coordinates derived from several counters, and level 3's counter
        s.hh, s.ww, s.r_f, s.s_f, s.r_d, s.s_d = (InPort(32) for _ in range(6))
        s.oh_d, s.ow_d, s.ohs, s.ows, s.u3 = (InPort(32) for _ in range(5))
        s.W, s.WO, s.S = InPort(32), InPort(32), InPort(32)
        # a batch-parallel fwd (bp), and whether its channel counter c is at the end of a tile
        s.bp, s.cl_last = InPort(), InPort()
        s.kst = [OutPort(32) for _ in range(NAU * NQ)]
        s.m2 = [OutPort(32) for _ in range(NAU)]
        s.lin = [OutPort(32) for _ in range(NAU)]

        # Three address units walk the three kinds of tensor, sum(kacc) + m2*f2 + lin with the
        # tensor's strides (command fields, EngineStridesRTL): MAP an input-side map (n, c, h, w:
        # ct*h*w, h*w, w), OUT an output-side map (n, k, ho, wo: kt*ho*wo or ct*ho*wo, ho*wo,
        # wo) and WGT a weight word (kt, ct, r, s: ct*r*s, r*s, s); every op uses each at most
        # once and routes its sum to the ports that name that tensor (AddrRoutesRTL).  IDX is the
        # result element's flat index (stochastic rounding).  The op only chooses the strides
        # (of the terms kacc accumulates) and the derived coordinate m2.
        def terms(au):
            return tuple(au * NQ + q for q in range(NQ))  # the kst/kacc indices of levels 0, 1, 2, 4

        MAP_0, MAP_1, MAP_2, MAP_4 = terms(AU_MAP)
        OUT_0, OUT_1, OUT_2, OUT_4 = terms(AU_OUT)
        WGT_0, WGT_1, WGT_2, WGT_4 = terms(AU_WGT)
        IDX_0, IDX_1, IDX_2, IDX_4 = terms(AU_IDX)

        @update
        def up_address_operands():
            for j in range(NAU * NQ):
                s.kst[j] @= ZERO
            for au in range(NAU):
                s.m2[au] @= ZERO
                s.lin[au] @= ZERO
            if s.cmd.op == OP_FWD:
                # n=u0 kt=u1 oh=u2 ow=u3 ct=u4 r=rlo+u5 s=slo+u6 (only taps inside the input)
                s.kst[MAP_0] @= s.cthw    # x[n, ct, hh, ww]
                s.kst[MAP_4] @= s.hw
                s.m2[AU_MAP] @= s.hh
                s.lin[AU_MAP] @= s.ww
                s.kst[WGT_1] @= s.ctrs    # w[kt, ct, r, s]
                s.kst[WGT_4] @= s.rs
                s.m2[AU_WGT] @= s.r_f
                s.lin[AU_WGT] @= s.s_f
                s.kst[OUT_0] @= s.kthowo  # y[n, kt, oh, ow]
                s.kst[OUT_1] @= s.howo
                s.kst[OUT_2] @= s.WO
                s.lin[AU_OUT] @= s.u3
                s.kst[IDX_0] @= s.khowo   # ((n*K + kt*P)*hi + oh)*Wo + ow (hi: the whole map's Ho)
                s.kst[IDX_1] @= s.pihowo
                s.kst[IDX_2] @= s.WO
                s.lin[AU_IDX] @= s.u3
                if s.bp:
                    # nt=u0 kt=u1 oh=u2 ow=u3 c=u4: x[nt, c, hh, ww] (cthw = c*hp*w words an image
                    # tile, hw a channel); w[kt, c//P, r, s] (+ r*s where c leaves a tile); the
                    # tile's first output word y[nt, kt*P, oh, ow] (kthowo = k*hop*wo an image tile,
                    # P*howo a channel tile) and its element (nt*P*K + kt*P)*hi*Wo + oh*Wo + ow
                    if s.cl_last:
                        s.kst[WGT_4] @= s.rs
                    else:
                        s.kst[WGT_4] @= ZERO
                    s.kst[OUT_1] @= s.phowo
                    s.kst[IDX_0] @= s.pkhowo
            elif s.cmd.op == OP_BWD_DATA:
                # n=u0 ct=u1 h=u2 w=u3 kt=u4 mr=u5 ms=u6
                s.kst[OUT_0] @= s.kthowo  # dy[n, kt, oh, ow]
                s.kst[OUT_4] @= s.howo
                s.m2[AU_OUT] @= s.oh_d
                s.lin[AU_OUT] @= s.ow_d
                s.kst[WGT_4] @= s.ctrs    # w[kt, ct, r, s]
                s.kst[WGT_1] @= s.rs
                s.m2[AU_WGT] @= s.r_d
                s.lin[AU_WGT] @= s.s_d
                s.kst[MAP_0] @= s.cthw    # x (the ReLU mask) and dx[n, ct, h, w]
                s.kst[MAP_1] @= s.hw
                s.kst[MAP_2] @= s.W
                s.lin[AU_MAP] @= s.u3
                s.kst[IDX_0] @= s.chw     # ((n*C + ct*P)*hi + h)*W + w (hi: the whole map's H)
                s.kst[IDX_1] @= s.pihw
                s.kst[IDX_2] @= s.W
                s.lin[AU_IDX] @= s.u3
            elif s.cmd.op == OP_BWD_WEIGHT:
                # kt=u0 ct=u1 r=u2 s=u3 n=u4 oh=ohlo+u5 ow=owlo+u6 (outputs whose input is inside)
                s.kst[OUT_4] @= s.kthowo  # dy[n, kt, oh, ow]
                s.kst[OUT_0] @= s.howo
                s.m2[AU_OUT] @= s.ohs
                s.lin[AU_OUT] @= s.ows
                s.kst[MAP_4] @= s.cthw    # x[n, ct, hh, ww]
                s.kst[MAP_1] @= s.hw
                s.m2[AU_MAP] @= s.hh
                s.lin[AU_MAP] @= s.ww
                s.kst[WGT_0] @= s.ctrs    # dw word [kt, ct, r, s]
                s.kst[WGT_1] @= s.rs
                s.kst[WGT_2] @= s.S
                s.lin[AU_WGT] @= s.u3
                s.kst[IDX_0] @= s.pcrs    # ((kt*P*C + ct*P)*R + r)*S + s
                s.kst[IDX_1] @= s.prs
                s.kst[IDX_2] @= s.S
                s.lin[AU_IDX] @= s.u3
            elif (s.cmd.op == OP_POOL_FWD) | (s.cmd.op == OP_POOL_BWD):
                # n=u0 ct=u1 oh=u2 ow=u3 di=u4 dj=u5: the map (x, or dx) and the pooled side
                s.kst[MAP_0] @= s.cthw
                s.kst[MAP_1] @= s.hw
                s.m2[AU_MAP] @= s.hh
                s.lin[AU_MAP] @= s.ww
                s.kst[OUT_0] @= s.cthowo
                s.kst[OUT_1] @= s.howo
                s.kst[OUT_2] @= s.WO
                s.lin[AU_OUT] @= s.u3
            elif s.cmd.op == OP_UPDATE:
                # kt=u0 ct=u1 r=u2 s=u3 i=u4: W/G word (kt, ct, r, s), row i
                s.kst[WGT_0] @= s.ctrs
                s.kst[WGT_1] @= s.rs
                s.kst[WGT_2] @= s.S
                s.lin[AU_WGT] @= s.u3
                s.kst[IDX_0] @= s.pcrs    # ((kt*P + i)*C + ct*P)*R*S + r*S + s
                s.kst[IDX_4] @= s.crs
                s.kst[IDX_1] @= s.prs
                s.kst[IDX_2] @= s.S
                s.lin[AU_IDX] @= s.u3

    def line_trace(s):
        return "ops[" + " ".join(str(int(v)) for v in s.m2) + "]"
