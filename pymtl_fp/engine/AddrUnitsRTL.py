"""Address units (RTL) of :class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL`: four sums of
counter x stride terms, one per kind of tensor a step touches.

``sum(kacc[au]) + m2*f2 + lin`` for the units MAP (an input-side map: n, c, h, w),
OUT (an output-side map: n, k, ho, wo), WGT (a weight word: kt, ct, r, s) and IDX (the result
element's flat index, for stochastic rounding).  Per operation the unit chooses, for each of
the loop levels 0, 1, 2 and 4, the stride of its term ``counter x stride`` (``kst``: a command
field the host computes, ``encoding.PRODUCTS``, or a width field), and a register per term
(``kacc``) keeps the product by adding the stride when the level's counter counts up and
clearing it when the counter restarts (the address generator's ``carry``/``at``/``all_at``):
equal to the product in every step, with an adder instead of a multiplier.  What is left of the
multipliers is one per unit, ``m2*f2``: a coordinate derived from several counters (``hh =
oh*stride + r - pad``, bwd_data's ``oh``, bwd_weight's first valid output) times a width field.
Combinational outputs, registered terms; no cycle of its own.  The per-operation choice of
strides and coordinates is :class:`~pymtl_fp.engine.AddrUnitOperandsRTL.AddrUnitOperandsRTL`.  A
unit's sum leaves in two parts, its product ``prod`` and the rest ``ksum`` (the sum is ``ksum +
prod``), for an address stage that registers the product before the last add
(:class:`~pymtl_fp.engine.EngineStepAddrRTL.EngineStepAddrRTL`).
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, connect, update, update_ff

from pymtl_fp.engine.addr_layout import AU_MAP, AU_OUT, AU_WGT, NAU, NPROD, NQ
from pymtl_fp.engine.AddrUnitOperandsRTL import AddrUnitOperandsRTL
from pymtl_fp.engine.EngineStridesRTL import STRIDES
from pymtl_fp.engine.msgs import cmd_type


class AddrUnitsRTL(Component):
    def construct(s):
        s.params = {}
        B32 = Bits32
        ZERO = B32(0)

        s.cmd = InPort(cmd_type())  # the command being executed
        for name in STRIDES:
            setattr(s, name, InPort(32))
        # the address generator's step: start a command, advance a step; which levels move
        s.start, s.advance, s.running, s.all_at = InPort(), InPort(), InPort(), InPort()
        # per accumulated level LEVELS[q]: its counter moves (carry) and is at its limit (at)
        s.carry = [InPort() for _ in range(NQ)]
        s.at = [InPort() for _ in range(NQ)]
        # coordinates derived from several counters, and level 3's counter
        s.hh, s.ww, s.r_f, s.s_f, s.r_d, s.s_d = (InPort(32) for _ in range(6))
        s.oh_d, s.ow_d, s.ohs, s.ows, s.u3 = (InPort(32) for _ in range(5))
        # the width a unit's derived coordinate m2 multiplies: MAP W, OUT WO, WGT S
        s.W, s.WO, s.S = InPort(32), InPort(32), InPort(32)
        # a batch-parallel fwd (bp), and whether its channel counter c is at the end of a tile
        # (c % P == P - 1: the weight word moves on to the next input channel tile)
        s.bp, s.cl_last = InPort(), InPort()
        s.ksum = [OutPort(32) for _ in range(NAU)]
        s.prod = [OutPort(32) for _ in range(NPROD)]  # m2 * width of MAP, OUT, WGT

        s.m2, s.lin = ([Wire(32) for _ in range(NAU)] for _ in range(2))
        # counter x stride terms: unit au, level LEVELS[q] at au*NQ + q
        s.kst = [Wire(32) for _ in range(NAU * NQ)]
        s.kacc = [Wire(32) for _ in range(NAU * NQ)]

        # the op chooses the strides of the terms kacc accumulates and the derived coordinate m2
        s.ops = AddrUnitOperandsRTL()
        for name in ("cmd", *STRIDES, "hh", "ww", "r_f", "s_f", "r_d", "s_d", "oh_d", "ow_d", "ohs", "ows", "u3",
                     "W", "WO", "S", "bp", "cl_last"):
            connect(getattr(s.ops, name), getattr(s, name))
        for j in range(NAU * NQ):
            s.kst[j] //= s.ops.kst[j]
        for au in range(NAU):
            s.m2[au] //= s.ops.m2[au]
            s.lin[au] //= s.ops.lin[au]

        @update_ff
        def up_term_accumulators():
            # kacc[au*NQ + q] == cnt[LEVELS[q]] * kst[au*NQ + q] at every step: 0 where the
            # level's counter restarts, + the stride where it counts up
            if s.reset | s.start:
                for j in range(NAU * NQ):
                    s.kacc[j] <<= ZERO
            elif s.advance & s.running:
                for au in range(NAU):
                    for q in range(NQ):
                        if s.all_at | (s.carry[q] & s.at[q]):
                            s.kacc[au * NQ + q] <<= ZERO
                        elif s.carry[q]:
                            s.kacc[au * NQ + q] <<= s.kacc[au * NQ + q] + s.kst[au * NQ + q]

        @update
        def up_address_sums():
            for au in range(NAU):
                s.ksum[au] @= (s.kacc[au * NQ] + s.kacc[au * NQ + 1] + s.kacc[au * NQ + 2]
                               + s.kacc[au * NQ + 3] + s.lin[au])
            s.prod[AU_MAP] @= s.m2[AU_MAP] * s.W
            s.prod[AU_OUT] @= s.m2[AU_OUT] * s.WO
            s.prod[AU_WGT] @= s.m2[AU_WGT] * s.S

    def line_trace(s):
        return "au[" + " ".join(f"{int(v)}" for v in s.ksum) + "|" + " ".join(f"{int(v)}" for v in s.prod) + "]"
