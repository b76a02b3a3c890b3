"""Pipelined requantizer (RTL): :class:`~pymtl_fp.primitives.RequantRTL.RequantRTL`'s function,
bit for bit, with its result :data:`LATENCY` cycles after its inputs, for a 200 MHz clock.

Same ports and parameters as ``RequantRTL``; a new input is taken every cycle (no valid bit: the
user delays its own control by ``LATENCY``).  The combinational requantizer is one 22 ns path
(Yosys ``sta``, 7-series, pre-route): the stochastic hash's chained 32-bit products, then the
rounding add, the shift and the clamp.  Here every 32 x 32 product modulo ``2**32`` is split into
three 16 x 16 products that each fit one DSP48 (``x*K = xl*Kl + ((xl*Kh + xh*Kl) mod 2**16) <<
16``), registered, and summed in the next stage (where Yosys puts the registers into the DSPs'
A/M/P registers), and the rounding into add, shift and clamp stages::

    stage 1  inputs registered (shift clamped to 32)
    stage 2  seed * 0x9E3779B1 and tensor_id * 0x632BE5AB as partial products
    stage 3  their sums; + index
    stage 4  h0 = the sum, x0 = h0 ^ (h0 >> 16)
    stage 5  x0 * 0x85EBCA6B as partial products
    stage 6  h1 = their sum
    stage 7  x1 = h1 ^ (h1 >> 13)
    stage 8  x1 * 0xC2B2AE35 as partial products
    stage 9  h2 = their sum
    stage 10 the rounding offset (top ``shift`` bits of h2 ^ (h2 >> 16), or the nearest half)
    stage 11 acc + offset
    stage 12 floor division by 2**shift
    stage 13 clamp to ``out_bits`` and ReLU  -> ``out``

``acc``, ``shift``, ``stochastic`` and ``relu`` travel beside the hash in registers.
"""

from pymtl3 import (
    Bits1,
    Bits6,
    Bits16,
    Component,
    InPort,
    OutPort,
    Wire,
    concat,
    mk_bits,
    sext,
    update,
    update_ff,
    zext,
)

from pymtl_fp.cost.latency import PIPELINE_LATENCY
from pymtl_fp.primitives.RequantRTL import MAX_SHIFT
from pymtl_fp.primitives.SaturateRTL import SaturateRTL
from pymtl_fp.primitives.StochasticHashRTL import FMIX_C1, FMIX_C2, GOLDEN_SEED, GOLDEN_TENSOR

#: cycles from the inputs to ``out`` (the cost model's number)
LATENCY = PIPELINE_LATENCY["requant"]


class RequantPipeRTL(Component):
    def construct(s, acc_bits=32, out_bits=8):
        if not (2 <= out_bits <= acc_bits <= 128):
            raise ValueError(f"RequantPipeRTL needs 2 <= out_bits <= acc_bits <= 128, got "
                             f"acc_bits={acc_bits}, out_bits={out_bits}")
        s.params = dict(acc_bits=acc_bits, out_bits=out_bits)
        W = max(acc_bits, 33) + 1  # acc + offset cannot overflow (as RequantRTL)
        T, Out = mk_bits(W), mk_bits(out_bits)
        OUT_ZERO = Out(0)
        SH_MAX, SH_MAX_W, ONE, ZERO = Bits6(MAX_SHIFT), T(MAX_SHIFT), T(1), T(0)
        B1 = Bits1(1)
        OUT_SIGN, SUM_SIGN = out_bits - 1, W - 1
        Z16 = Bits16(0)
        # 16-bit halves of the hash's constants (a constant keeps the width of its Bits type)
        KS_L, KS_H = Bits16(GOLDEN_SEED & 0xFFFF), Bits16(GOLDEN_SEED >> 16)
        KT_L, KT_H = Bits16(GOLDEN_TENSOR & 0xFFFF), Bits16(GOLDEN_TENSOR >> 16)
        K1_L, K1_H = Bits16(FMIX_C1 & 0xFFFF), Bits16(FMIX_C1 >> 16)
        K2_L, K2_H = Bits16(FMIX_C2 & 0xFFFF), Bits16(FMIX_C2 >> 16)

        s.acc = InPort(acc_bits)
        s.shift = InPort(6)
        s.stochastic = InPort()
        s.relu = InPort()
        s.seed = InPort(32)
        s.tensor_id = InPort(8)
        s.index = InPort(32)
        s.out = OutPort(out_bits)

        # beside the hash: element_p[k] is the copy in stage k + 1, kept as long as it is needed
        s.acc_p = [Wire(acc_bits) for _ in range(10)]
        s.sh_p = [Wire(6) for _ in range(11)]
        s.sto_p = [Wire() for _ in range(9)]
        s.relu_p = [Wire() for _ in range(12)]
        # the hash
        s.seed1, s.index1 = Wire(32), Wire(32)
        s.tid1 = Wire(16)
        s.sa, s.ta = Wire(32), Wire(32)  # low x low products
        s.sb, s.sc, s.tb = Wire(16), Wire(16), Wire(16)  # cross products (mod 2**16)
        s.index2 = Wire(32)
        s.su, s.tv = Wire(32), Wire(32)  # seed * K_SEED, tensor_id * K_TENSOR + index
        s.h0 = Wire(32)
        s.x0 = Wire(32)
        s.a1, s.b1, s.c1 = Wire(32), Wire(16), Wire(16)
        s.h1, s.x1 = Wire(32), Wire(32)
        s.a2, s.b2, s.c2 = Wire(32), Wire(16), Wire(16)
        s.h2, s.hf = Wire(32), Wire(32)
        # the rounding
        s.rnd = Wire(W)
        s.acc10 = Wire(acc_bits)  # acc in stage 10 (a plain wire: PyMTL3 mistranslates sext of a list element)
        s.total = Wire(W)
        s.smask = Wire(W)
        s.q = Wire(W)
        s.clamp = SaturateRTL(W, out_bits)
        s.clamp.in_ //= s.q

        @update_ff
        def up_stage1():
            s.acc_p[0] <<= s.acc
            if s.shift > SH_MAX:
                s.sh_p[0] <<= SH_MAX
            else:
                s.sh_p[0] <<= s.shift
            s.sto_p[0] <<= s.stochastic
            s.relu_p[0] <<= s.relu
            s.seed1 <<= s.seed
            s.tid1 <<= zext(s.tensor_id, 16)
            s.index1 <<= s.index
            # stages 2 .. : acc, shift and mode bits move along
            for k in range(1, 10):
                s.acc_p[k] <<= s.acc_p[k - 1]
            for k in range(1, 11):
                s.sh_p[k] <<= s.sh_p[k - 1]
            for k in range(1, 9):
                s.sto_p[k] <<= s.sto_p[k - 1]
            for k in range(1, 12):
                s.relu_p[k] <<= s.relu_p[k - 1]

        @update_ff
        def up_hash_ff():
            # stage 2: partial products of seed * K_SEED and tensor_id * K_TENSOR
            s.sa <<= zext(s.seed1[0:16], 32) * zext(KS_L, 32)
            s.sb <<= s.seed1[0:16] * KS_H
            s.sc <<= s.seed1[16:32] * KS_L
            s.ta <<= zext(s.tid1, 32) * zext(KT_L, 32)
            s.tb <<= s.tid1 * KT_H
            s.index2 <<= s.index1
            # stage 3: the two terms
            s.su <<= s.sa + concat(s.sb + s.sc, Z16)
            s.tv <<= s.ta + concat(s.tb, Z16) + s.index2
            # stage 4: mix
            s.x0 <<= s.h0 ^ (s.h0 >> 16)
            # stage 5: x0 * C1
            s.a1 <<= zext(s.x0[0:16], 32) * zext(K1_L, 32)
            s.b1 <<= s.x0[0:16] * K1_H
            s.c1 <<= s.x0[16:32] * K1_L
            # stage 6, 7
            s.h1 <<= s.a1 + concat(s.b1 + s.c1, Z16)
            s.x1 <<= s.h1 ^ (s.h1 >> 13)
            # stage 8: x1 * C2
            s.a2 <<= zext(s.x1[0:16], 32) * zext(K2_L, 32)
            s.b2 <<= s.x1[0:16] * K2_H
            s.c2 <<= s.x1[16:32] * K2_L
            # stage 9
            s.h2 <<= s.a2 + concat(s.b2 + s.c2, Z16)

        @update
        def up_mix():
            s.h0 @= s.su + s.tv
            s.acc10 @= s.acc_p[9]
            s.hf @= s.h2 ^ (s.h2 >> 16)

        @update_ff
        def up_round_ff():
            # stage 10: the offset (shift and mode of the element in stage 9)
            if s.sh_p[8] == Bits6(0):
                s.rnd <<= ZERO
            elif s.sto_p[8]:
                s.rnd <<= zext(s.hf, T) >> (SH_MAX_W - zext(s.sh_p[8], T))
            else:
                s.rnd <<= ONE << (zext(s.sh_p[8], T) - ONE)
            # stage 11: the exact sum
            s.total <<= sext(s.acc10, T) + s.rnd
            # stage 12: floor division (one logical shifter, as RequantRTL)
            s.q <<= ((s.total ^ s.smask) >> zext(s.sh_p[10], T)) ^ s.smask
            # stage 13: clamp and ReLU
            if s.relu_p[11] & (s.clamp.out[OUT_SIGN] == B1):
                s.out <<= OUT_ZERO
            else:
                s.out <<= s.clamp.out

        @update
        def up_sign_mask():
            s.smask @= sext(s.total[SUM_SIGN], T)

    def line_trace(s):
        return f"rqpipe {int(s.acc.int())}>>{int(s.shift)} -> {int(s.out.int())}"
