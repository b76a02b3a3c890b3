"""Fuzz target ``requant``: the requantizer RTL against the golden model, bit for bit.

A case is one requantizer build (``acc_bits``, ``out_bits``, drawn first and small first) and a
list of input vectors (accumulator, shift, rounding mode, ReLU, stochastic seed/tensor/index),
biased to rounding ties, saturation edges and extreme accumulators.  The property: for every
vector, :class:`~pymtl_fp.primitives.RequantRTL.RequantRTL` (``rtl``: PyMTL3 simulation,
``verilator``: translated and Verilated) or its Python twin ``requant_ref`` (``fl``) equals
:func:`pymtl_fp.numerics.requantize` followed by ReLU.

Mutation ``round-half-down``: the nearest-rounding constant ``2**(s-1)`` becomes ``2**(s-1) - 1``
in a copy of the RTL -- ties round down instead of up.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from pymtl_fp import numerics
from pymtl_fp.levels import LEVELS
from pymtl_fp.primitives import RequantRTL as requant_mod
from pymtl_fp.tb.fuzz.mutate import Mutation
from pymtl_fp.tb.fuzz.targets import FuzzTarget

M32 = 2**32 - 1
#: Verilator builds are seconds each: the verilator level draws from these configurations only
VERILATOR_CONFIGS = [(24, 8), (32, 8), (48, 16)]


def golden(v, out_bits):
    y = numerics.requantize(np.array([v["acc"]]), min(v["shift"], 32), out_bits,
                            "stochastic" if v["stochastic"] else "nearest", seed=v["seed"],
                            tensor_id=v["tensor_id"], index=np.array([v["index"]]))
    if v["relu"]:
        y = numerics.relu(y)
    return int(y[0])


@st.composite
def vector(draw, acc_bits, out_bits):
    lo, hi = -(2 ** (acc_bits - 1)), 2 ** (acc_bits - 1) - 1
    shift = draw(st.integers(0, 32))
    half = 2 ** (shift - 1) if shift else 0
    kind = draw(st.sampled_from(["tie", "any", "extreme", "edge"]))
    if kind == "any":
        acc = draw(st.integers(lo, hi))
    elif kind == "extreme":
        acc = draw(st.sampled_from([0, 1, -1, lo, lo + 1, hi, hi - 1]))
    elif kind == "tie":
        acc = draw(st.integers(-(2**out_bits), 2**out_bits)) * 2**shift + half + draw(st.sampled_from([0, -1, 1]))
    else:
        q = draw(st.sampled_from([2 ** (out_bits - 1) - 1, 2 ** (out_bits - 1), -(2 ** (out_bits - 1)),
                                  -(2 ** (out_bits - 1)) - 1]))
        acc = q * 2**shift + draw(st.sampled_from([0, -1, 1, half, max(0, 2**shift - 1)]))
    acc = min(max(acc, lo), hi)
    return dict(acc=acc, shift=shift, stochastic=draw(st.booleans()), relu=draw(st.booleans()),
                seed=draw(st.one_of(st.just(0), st.integers(0, M32))), tensor_id=draw(st.integers(0, 255)),
                index=draw(st.one_of(st.just(0), st.integers(0, M32))))


@st.composite
def case_strategy(draw, level):
    if level == "verilator":
        acc_bits, out_bits = draw(st.sampled_from(VERILATOR_CONFIGS))
    else:  # small first: shrinks to the narrowest build that still fails
        out_bits = draw(st.integers(2, 16))
        acc_bits = draw(st.integers(out_bits, 62))
    vectors = draw(st.lists(vector(acc_bits, out_bits), min_size=1, max_size=24))
    return dict(acc_bits=acc_bits, out_bits=out_bits, vectors=vectors)


def strategy(level):
    return case_strategy(level)


def _sim(ctx, level, acc_bits, out_bits):
    key = ("requant", level, acc_bits, out_bits, ctx.tag)
    if key not in ctx.cache:
        from pymtl_fp.sim import build_sim
        from pymtl_fp.verilate import module_name

        cls = requant_mod.RequantRTL  # looked up now: a mutation may have redirected it
        params = dict(acc_bits=acc_bits, out_bits=out_bits)
        ctx.cache[key] = build_sim(cls(**params), level, params=params,
                                   name=module_name("RequantRTL" + ctx.tag, params))
    return ctx.cache[key]


def check(case, level, ctx):
    acc_bits, out_bits = case["acc_bits"], case["out_bits"]
    m = None if level == "fl" else _sim(ctx, level, acc_bits, out_bits)
    for i, v in enumerate(case["vectors"]):
        want = golden(v, out_bits)
        if m is None:
            got = requant_mod.requant_ref(v["acc"], v["shift"], out_bits, stochastic=v["stochastic"],
                                          relu=v["relu"], seed=v["seed"], tensor_id=v["tensor_id"],
                                          index=v["index"])
        else:
            m.acc @= v["acc"] & (2**acc_bits - 1)
            m.shift @= v["shift"]
            m.stochastic @= int(v["stochastic"])
            m.relu @= int(v["relu"])
            m.seed @= v["seed"]
            m.tensor_id @= v["tensor_id"]
            m.index @= v["index"]
            m.sim_eval_combinational()
            got = int(m.out.int())
        assert got == want, (f"vector {i} {v}: RequantRTL(acc_bits={acc_bits}, out_bits={out_bits}) "
                             f"gave {got}, golden model {want}")


def limits(case):
    """A replayed requant case: widths as the strategy draws them, each vector's fields in range."""
    from pymtl_fp.tb.fuzz import case_limits as cl

    out_bits = cl.integer(case, "out_bits", 2, 16)
    acc_bits = cl.integer(case, "acc_bits", out_bits, 62)
    for i, v in enumerate(cl.items(case, "vectors")):
        where = f"vectors[{i}]"
        cl.integer(v, "acc", -(2 ** (acc_bits - 1)), 2 ** (acc_bits - 1) - 1, where)
        cl.integer(v, "shift", 0, 32, where)
        cl.flag(v, "stochastic", where)
        cl.flag(v, "relu", where)
        cl.integer(v, "seed", 0, M32, where)
        cl.integer(v, "tensor_id", 0, 255, where)
        cl.integer(v, "index", 0, M32, where)


def coverage(case):
    modes = sorted({("sto" if v["stochastic"] else "near") + ("+relu" if v["relu"] else "") for v in case["vectors"]})
    return f"acc{case['acc_bits']}/out{case['out_bits']}:{','.join(modes)}"


MUTATIONS = {
    "round-half-down": Mutation(
        name="round-half-down",
        description="nearest rounding adds 2**(s-1) - 1 instead of 2**(s-1): ties round down",
        module="pymtl_fp.primitives.RequantRTL",
        replacements=(("s.rnd @= ONE << (s.shw - ONE)", "s.rnd @= (ONE << (s.shw - ONE)) - ONE"),),
        patch=(("pymtl_fp.primitives.RequantRTL", "RequantRTL", "RequantRTL"),),
    ),
}

TARGET = FuzzTarget(
    name="requant",
    description="requantizer RTL (rounding, saturation, ReLU) vs numerics.requantize",
    levels=tuple(lv for lv in LEVELS if lv != "cl"),  # no CL twin: combinational
    strategy=strategy,
    check=check,
    coverage=coverage,
    mutations=MUTATIONS,
    case_keys=("acc_bits", "out_bits", "vectors"),
    limits=limits,
)
