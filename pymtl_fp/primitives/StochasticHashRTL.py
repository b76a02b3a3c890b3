"""Counter-based pseudo-random hash for stochastic rounding (RTL, combinational).

Models, at register-transfer level, the hash behind :func:`pymtl_fp.numerics.stochastic_offset`:
a pure function of ``(seed, tensor_id, index)``, so every level (FL/CL/RTL) and every tiling
draws the same random bits for the same tensor element.  All arithmetic is modulo ``2**32``::

    h  = seed * 0x9E3779B1 + tensor_id * 0x632BE5AB + index
    h ^= h >> 16;  h *= 0x85EBCA6B        # murmur3 fmix32 finalizer
    h ^= h >> 13;  h *= 0xC2B2AE35
    h ^= h >> 16
    out = h

Ports: ``seed`` (32), ``tensor_id`` (8), ``index`` (32) in; ``out`` (32) out.  No parameters, no
state (``clk``/``reset`` exist only because every PyMTL3 component has them).  In an FPGA flow
the four constant multiplies map to DSP slices or LUT adders; register around it if timing needs.

:func:`hash32` is the same function on Python ints (a reference for tests and tools).
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, update, zext

GOLDEN_SEED = 0x9E3779B1
GOLDEN_TENSOR = 0x632BE5AB
FMIX_C1 = 0x85EBCA6B
FMIX_C2 = 0xC2B2AE35
MASK32 = 0xFFFFFFFF


def hash32(seed: int, tensor_id: int, index: int) -> int:
    """The hash on Python ints (inputs reduced to their port widths)."""
    h = ((seed & MASK32) * GOLDEN_SEED + (tensor_id & 0xFF) * GOLDEN_TENSOR + (index & MASK32)) & MASK32
    h ^= h >> 16
    h = (h * FMIX_C1) & MASK32
    h ^= h >> 13
    h = (h * FMIX_C2) & MASK32
    h ^= h >> 16
    return h


class StochasticHashRTL(Component):
    def construct(s):
        s.params = {}
        s.seed = InPort(32)
        s.tensor_id = InPort(8)
        s.index = InPort(32)
        s.out = OutPort(32)

        K_SEED = Bits32(GOLDEN_SEED)
        K_TENSOR = Bits32(GOLDEN_TENSOR)
        K_C1 = Bits32(FMIX_C1)
        K_C2 = Bits32(FMIX_C2)

        s.h0 = Wire(32)  # mixed input
        s.h1 = Wire(32)  # after h ^= h >> 16; h *= C1
        s.h2 = Wire(32)  # after h ^= h >> 13; h *= C2

        @update
        def up_hash():
            s.h0 @= s.seed * K_SEED + zext(s.tensor_id, 32) * K_TENSOR + s.index
            s.h1 @= (s.h0 ^ (s.h0 >> 16)) * K_C1
            s.h2 @= (s.h1 ^ (s.h1 >> 13)) * K_C2
            s.out @= s.h2 ^ (s.h2 >> 16)

    def line_trace(s):
        return f"hash(seed={s.seed}, t={s.tensor_id}, i={s.index})={s.out}"
