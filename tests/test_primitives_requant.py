"""RequantRTL: rounding (nearest / stochastic), saturation and ReLU of a wide accumulator, at RTL
(random widths) and through Verilator (two fixed configs), against an independent pure-Python
oracle and the golden model (:func:`pymtl_fp.numerics.requantize`, then ReLU), bit for bit."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp import numerics
from pymtl_fp.primitives.RequantPipeRTL import LATENCY as PIPE_LATENCY
from pymtl_fp.primitives.RequantPipeRTL import RequantPipeRTL
from pymtl_fp.primitives.RequantRTL import RequantRTL, requant_ref
from pymtl_fp.sim import build_sim
from pymtl_fp.tb.hypothesis_profiles import examples
from pymtl_fp.verilate import module_name

M32 = 2**32 - 1
VERILATOR_CONFIGS = [dict(acc_bits=24, out_bits=8), dict(acc_bits=48, out_bits=16)]


def fmix(seed, tensor_id, index):
    x = (seed * 0x9E3779B1 + tensor_id * 0x632BE5AB + index) % 2**32
    x = ((x ^ (x >> 16)) * 0x85EBCA6B) % 2**32
    x = ((x ^ (x >> 13)) * 0xC2B2AE35) % 2**32
    return x ^ (x >> 16)


def oracle(acc, shift, out_bits, stochastic, relu, seed, tensor_id, index):
    """The formulas of the spec on Python ints (floor division, explicit clamps)."""
    s = min(shift, 32)  # the RTL clamps shifts above the valid range 0..32
    if s == 0:
        r = 0
    elif stochastic:
        r = fmix(seed, tensor_id, index) // 2 ** (32 - s)  # the top s bits of the hash
    else:
        r = 2 ** (s - 1)
    q = (acc + r) // 2**s
    q = min(max(q, -(2 ** (out_bits - 1))), 2 ** (out_bits - 1) - 1)
    return 0 if relu and q < 0 else q


def golden(acc, shift, out_bits, stochastic, relu, seed, tensor_id, index):
    y = numerics.requantize(np.array([acc]), shift, out_bits, "stochastic" if stochastic else "nearest",
                            seed=seed, tensor_id=tensor_id, index=np.array([index]))
    if relu:
        y = numerics.relu(y)
    return int(y[0])


@st.composite
def cases(draw, acc_bits, out_bits, max_shift=32):
    """One input vector; acc biased to the extremes, to exact rounding ties and to the edges of
    saturation for the drawn shift."""
    lo, hi = -(2 ** (acc_bits - 1)), 2 ** (acc_bits - 1) - 1
    shift = draw(st.one_of(st.sampled_from([0, 1, 2, 31, 32]), st.integers(0, max_shift)))
    s = min(shift, 32)
    half = 2 ** (s - 1) if s else 0
    kind = draw(st.sampled_from(["any", "extreme", "tie", "edge"]))
    if kind == "any":
        acc = draw(st.integers(lo, hi))
    elif kind == "extreme":
        acc = draw(st.sampled_from([lo, lo + 1, hi, hi - 1, 0, -1, 1]))
    elif kind == "tie":  # q*2**s + half (+-1): round half up vs down
        acc = draw(st.integers(-(2**out_bits), 2**out_bits)) * 2**s + half + draw(st.sampled_from([-1, 0, 1]))
    else:  # around the saturation limits
        q = draw(st.sampled_from([-(2 ** (out_bits - 1)) - 1, -(2 ** (out_bits - 1)),
                                  2 ** (out_bits - 1) - 1, 2 ** (out_bits - 1)]))
        acc = q * 2**s + draw(st.sampled_from([-1, 0, 1, half, 2**s - 1]))
    acc = min(max(acc, lo), hi)
    return (acc, shift, draw(st.booleans()), draw(st.booleans()),
            draw(st.one_of(st.sampled_from([0, M32]), st.integers(0, M32))), draw(st.integers(0, 255)),
            draw(st.one_of(st.sampled_from([0, M32]), st.integers(0, M32))))


def evaluate(m, acc_bits, acc, shift, stochastic, relu, seed, tensor_id, index):
    m.acc @= acc & (2**acc_bits - 1)
    m.shift @= shift
    m.stochastic @= stochastic
    m.relu @= relu
    m.seed @= seed
    m.tensor_id @= tensor_id
    m.index @= index
    m.sim_eval_combinational()
    return int(m.out.int())


def check_cases(m, acc_bits, out_bits, vectors):
    for acc, shift, sto, relu, seed, tid, idx in vectors:
        got = evaluate(m, acc_bits, acc, shift, sto, relu, seed, tid, idx)
        want = oracle(acc, shift, out_bits, sto, relu, seed, tid, idx)
        assert got == want, dict(acc=acc, shift=shift, stochastic=sto, relu=relu, seed=seed,
                                 tensor_id=tid, index=idx, got=got, want=want)
        if shift <= numerics.MAX_SHIFT:
            assert got == golden(acc, shift, out_bits, sto, relu, seed, tid, idx)


def test_oracle_hand_examples():
    #         acc, shift, bits, sto,  relu
    assert oracle(5, 1, 8, False, False, 0, 0, 0) == 3  # 2.5 -> 3 (half up)
    assert oracle(-5, 1, 8, False, False, 0, 0, 0) == -2  # -2.5 -> -2 (half up)
    assert oracle(-6, 2, 8, False, False, 0, 0, 0) == -1  # -1.5 -> -1
    assert oracle(1000, 0, 8, False, False, 0, 0, 0) == 127  # saturate high
    assert oracle(-1000, 0, 8, False, False, 0, 0, 0) == -128  # saturate low
    assert oracle(-1000, 0, 8, False, True, 0, 0, 0) == 0  # relu after saturation
    assert oracle(7, 3, 8, True, False, 0, 0, 1) == (7 + (0x514E28B7 >> 29)) // 8 == 1
    assert oracle(2**40, 40, 8, False, False, 0, 0, 0) == oracle(2**40, 32, 8, False, False, 0, 0, 0) == 127


@given(st.integers(2, 16).flatmap(lambda o: st.tuples(st.just(o), st.integers(o, 48)))
       .flatmap(lambda w: st.tuples(st.just(w), st.lists(cases(w[1], w[0]), min_size=1, max_size=30))))
def test_reference_function_equals_oracle_and_golden(arg):
    (out_bits, _acc_bits), vectors = arg
    for acc, shift, sto, relu, seed, tid, idx in vectors:
        want = oracle(acc, shift, out_bits, sto, relu, seed, tid, idx)
        assert requant_ref(acc, shift, out_bits, stochastic=sto, relu=relu, seed=seed, tensor_id=tid,
                           index=idx) == want
        assert golden(acc, shift, out_bits, sto, relu, seed, tid, idx) == want


@pytest.mark.rtl
@given(st.data())
def test_rtl_random_widths(data):
    out_bits = data.draw(st.integers(2, 16), "out_bits")
    acc_bits = data.draw(st.one_of(st.sampled_from([out_bits, 32, 33, 34, 48]),
                                   st.integers(out_bits, 48)).filter(lambda a: a >= out_bits), "acc_bits")
    m = build_sim(RequantRTL(acc_bits=acc_bits, out_bits=out_bits), "rtl")
    vectors = data.draw(st.lists(cases(acc_bits, out_bits, max_shift=63), min_size=1, max_size=40), "cases")
    check_cases(m, acc_bits, out_bits, vectors)


@pytest.fixture(scope="module", params=[
    pytest.param((level, p), marks=getattr(pytest.mark, level), id=f"{level}-{module_name('Requant', p)}")
    for level in ("rtl", "verilator") for p in VERILATOR_CONFIGS])
def requant_sim(request):
    level, params = request.param
    m = build_sim(RequantRTL(**params), level, name=module_name("RequantRTL", params))
    return m, params


def test_fixed_configs_match_oracle_and_golden(requant_sim):
    m, p = requant_sim

    @given(st.lists(cases(p["acc_bits"], p["out_bits"], max_shift=63), min_size=1, max_size=50))
    def check(vectors):
        check_cases(m, p["acc_bits"], p["out_bits"], vectors)

    check()


def test_fixed_configs_exhaustive_small_region(requant_sim):
    """Every shift 0..32, both modes, relu on/off, for accumulators around zero and the extremes."""
    m, p = requant_sim
    a = p["acc_bits"]
    accs = [-(2 ** (a - 1)), -(2 ** (a - 1)) + 1, 2 ** (a - 1) - 1, 2 ** (a - 1) - 2] + list(range(-9, 10))
    vectors = [(acc, s, sto, relu, 12345, 7, i) for i, acc in enumerate(accs) for s in range(33)
               for sto in (False, True) for relu in (False, True)]
    check_cases(m, a, p["out_bits"], vectors)


def test_stochastic_rounding_is_unbiased_on_average(requant_sim):
    """Sanity of the mode itself: over many indices, E[round(acc / 2**s)] ~ acc / 2**s."""
    m, p = requant_sim
    acc, s = 37, 4  # 37/16 = 2.3125: rounds to 2 or 3
    outs = [evaluate(m, p["acc_bits"], acc, s, True, False, 99, 3, i) for i in range(examples(400))]
    assert set(outs) == {2, 3}
    assert abs(np.mean(outs) - acc / 2**s) < 0.08


@pytest.mark.rtl
def test_line_trace_and_bad_parameters():
    m = build_sim(RequantRTL(acc_bits=24, out_bits=8), "rtl")
    evaluate(m, 24, -1000, 2, False, True, 0, 0, 0)
    assert "-1000" in m.line_trace() and "relu" in m.line_trace()
    # PyMTL3 runs construct() when the component is elaborated
    with pytest.raises(ValueError, match="out_bits <= acc_bits"):
        RequantRTL(acc_bits=8, out_bits=9).elaborate()
    with pytest.raises(ValueError):
        RequantRTL(acc_bits=200, out_bits=8).elaborate()


def stream_pipelined(m, acc_bits, vectors) -> list:
    """One vector a cycle into a RequantPipeRTL; its outputs, LATENCY cycles later each."""
    outs = []
    for t in range(len(vectors) + PIPE_LATENCY):
        if t < len(vectors):
            acc, shift, sto, relu, seed, tid, idx = vectors[t]
            m.acc @= acc & (2**acc_bits - 1)
            m.shift @= shift
            m.stochastic @= sto
            m.relu @= relu
            m.seed @= seed
            m.tensor_id @= tid
            m.index @= idx
        m.sim_eval_combinational()
        if t >= PIPE_LATENCY:
            outs.append(int(m.out.int()))
        m.sim_tick()
    return outs


@pytest.mark.parametrize("level", [pytest.param("rtl", marks=pytest.mark.rtl),
                                   pytest.param("verilator", marks=pytest.mark.verilator)])
@given(data=st.data())
@settings(max_examples=examples(6), deadline=None)
def test_pipelined_requantizer_equals_the_oracle_a_vector_a_cycle(level, data):
    """RequantPipeRTL, a new vector every cycle (random widths at RTL, 48 -> 16 bits through
    Verilator): each output, LATENCY cycles after its inputs, is the oracle's -- so the stages keep
    every element's operands together."""
    if level == "rtl":
        out_bits = data.draw(st.integers(2, 16), "out_bits")
        acc_bits = data.draw(st.integers(max(out_bits, 2), 48), "acc_bits")
    else:
        acc_bits, out_bits = 48, 16
    m = build_sim(RequantPipeRTL(acc_bits, out_bits), level,
                  name=module_name("RequantPipeRTL", dict(acc_bits=acc_bits, out_bits=out_bits)))
    m.sim_reset()
    vectors = data.draw(st.lists(cases(acc_bits, out_bits, max_shift=63), min_size=1, max_size=40), "cases")
    got = stream_pipelined(m, acc_bits, vectors)
    for v, g in zip(vectors, got):
        assert g == oracle(v[0], v[1], out_bits, *v[2:]), dict(vector=v, got=g)
