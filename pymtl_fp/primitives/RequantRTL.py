"""Requantizer (RTL, combinational): wide signed accumulator -> narrow fixed-point word.

Models, at register-transfer level and bit for bit, :func:`pymtl_fp.numerics.requantize`
followed by an optional ReLU -- the single rounding step applied when an accumulated result is
written back (DESIGN.md, "Numerics")::

    s = min(shift, 32)                       # the valid range is 0..32; larger is clamped
    nearest:    q = floor((acc + (2**(s-1) if s else 0)) / 2**s)     # round half up
    stochastic: q = floor((acc + r) / 2**s)  # r = top s bits of hash(seed, tensor_id, index)
    q = clamp(q, -2**(out_bits-1), 2**(out_bits-1) - 1)
    out = 0 if (relu and q < 0) else q

Elaboration parameters: ``acc_bits`` (accumulator width), ``out_bits`` (result width),
``2 <= out_bits <= acc_bits <= 128``.  Ports (all combinational):

* in: ``acc`` (acc_bits, signed), ``shift`` (6), ``stochastic`` (1: stochastic, 0: nearest),
  ``relu`` (1), ``seed`` (32), ``tensor_id`` (8), ``index`` (32);
* out: ``out`` (out_bits, signed).

The sum ``acc + r`` is formed on ``max(acc_bits, 33) + 1`` bits, so it never overflows
(``r < 2**32``); the floor division is an arithmetic right shift, done with one logical shifter as
``((x ^ m) >> s) ^ m`` where ``m`` is all ones for negative x;
saturation checks that the bits above the result's sign bit are a sign extension.  The random
offset comes from a :class:`StochasticHashRTL` child.  :func:`requant_ref` is the same function
on Python ints.
"""

import dataclasses

from pymtl3 import Bits1, Bits6, Component, InPort, OutPort, Wire, mk_bits, sext, trunc, update, zext

from pymtl_fp.primitives.StochasticHashRTL import StochasticHashRTL, hash32

MAX_SHIFT = 32


def requant_ref(acc: int, shift: int, out_bits: int, *, stochastic: bool = False, relu: bool = False,
                seed: int = 0, tensor_id: int = 0, index: int = 0) -> int:
    """The RTL's function on Python ints (``shift`` above 32 is clamped to 32, as in the RTL)."""
    s = min(shift, MAX_SHIFT)
    if s == 0:
        r = 0
    elif stochastic:
        r = hash32(seed, tensor_id, index) >> (32 - s)
    else:
        r = 1 << (s - 1)
    q = (acc + r) >> s  # Python >> on ints is floor division by 2**s
    lo, hi = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    q = max(lo, min(hi, q))
    return 0 if (relu and q < 0) else q


@dataclasses.dataclass(frozen=True)
class RequantConfig:
    """Elaboration parameters of a requantizer (the same methods as every unit's configuration)."""

    acc_bits: int = 32
    out_bits: int = 8

    def __post_init__(self):
        if not (isinstance(self.acc_bits, int) and isinstance(self.out_bits, int)
                and 2 <= self.out_bits <= self.acc_bits <= 128):
            raise ValueError(f"RequantConfig needs 2 <= out_bits <= acc_bits <= 128, got {self}")

    def params(self) -> dict:
        return dataclasses.asdict(self)

    def module_name(self) -> str:
        from pymtl_fp.verilate import module_name

        return module_name("RequantRTL", self.params())


PRESETS = {"small": RequantConfig(32, 8), "wide": RequantConfig(48, 16)}


def preset(name: str) -> RequantConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown requant preset {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name]


class RequantRTL(Component):
    def construct(s, acc_bits=32, out_bits=8):
        if not (2 <= out_bits <= acc_bits <= 128):
            raise ValueError(
                f"RequantRTL needs 2 <= out_bits <= acc_bits <= 128, got acc_bits={acc_bits}, "
                f"out_bits={out_bits}"
            )
        s.params = dict(acc_bits=acc_bits, out_bits=out_bits)
        W = max(acc_bits, 33) + 1  # acc + r cannot overflow: |acc| < 2**(acc_bits-1), r < 2**32
        T = mk_bits(W)
        TopT = mk_bits(W - out_bits + 1)  # bits out_bits-1 .. W-1 of the shifted sum
        Out = mk_bits(out_bits)
        TOP_ZERO = TopT(0)
        TOP_ONES = TopT(-1)
        OUT_MAX = Out((1 << (out_bits - 1)) - 1)
        OUT_MIN = Out(1 << (out_bits - 1))
        OUT_ZERO = Out(0)
        SH_MAX = Bits6(MAX_SHIFT)
        SH_MAX_W = T(MAX_SHIFT)
        ONE = T(1)
        ZERO = T(0)
        B1 = Bits1(1)
        # bit indices as named constants: PyMTL3 gives a constant the width of its value, which is
        # then exactly the index width Verilator expects (an inline `n - 1` would be one bit wider)
        OUT_SIGN = out_bits - 1
        SUM_SIGN = W - 1
        OUT_SIGN_T = T(out_bits - 1)  # (slices with named bounds leave unused localparams)

        s.acc = InPort(acc_bits)
        s.shift = InPort(6)
        s.stochastic = InPort()
        s.relu = InPort()
        s.seed = InPort(32)
        s.tensor_id = InPort(8)
        s.index = InPort(32)
        s.out = OutPort(out_bits)

        s.hash = StochasticHashRTL()
        s.hash.seed //= s.seed
        s.hash.tensor_id //= s.tensor_id
        s.hash.index //= s.index

        s.sh = Wire(6)  # min(shift, 32)
        s.shw = Wire(W)  # sh zero-extended (PyMTL3 shifts need equal widths)
        s.rnd = Wire(W)  # the rounding offset, 0 <= rnd < 2**32
        s.total = Wire(W)  # acc + rnd, exact
        s.smask = Wire(W)  # all ones when total is negative
        s.q = Wire(W)  # floor(total / 2**sh)
        s.top = Wire(W - out_bits + 1)
        s.sat = Wire(out_bits)  # q saturated to out_bits

        @update
        def up_shift():
            if s.shift > SH_MAX:
                s.sh @= SH_MAX
            else:
                s.sh @= s.shift
            s.shw @= zext(s.sh, T)

        @update
        def up_round():
            if s.sh == 0:
                s.rnd @= ZERO
            elif s.stochastic:
                s.rnd @= zext(s.hash.out, T) >> (SH_MAX_W - s.shw)
            else:
                s.rnd @= ONE << (s.shw - ONE)

        @update
        def up_sum():
            s.total @= sext(s.acc, T) + s.rnd
            # arithmetic shift with one logical shifter: x >>> s == ~(~x >> s) for negative x
            s.smask @= sext(s.total[SUM_SIGN], T)
            s.q @= ((s.total ^ s.smask) >> s.shw) ^ s.smask

        @update
        def up_sat():
            s.top @= trunc(s.q >> OUT_SIGN_T, TopT)
            if (s.top == TOP_ZERO) | (s.top == TOP_ONES):
                s.sat @= trunc(s.q, Out)
            elif s.q[SUM_SIGN]:
                s.sat @= OUT_MIN
            else:
                s.sat @= OUT_MAX

        @update
        def up_relu():
            if s.relu & (s.sat[OUT_SIGN] == B1):
                s.out @= OUT_ZERO
            else:
                s.out @= s.sat

    def line_trace(s):
        mode = "sto" if s.stochastic else "nea"
        return (f"{int(s.acc.int()):>14}>>{int(s.shift):<2}{mode}{'+relu' if s.relu else '     '}"
                f" -> {int(s.out.int()):>6}")
