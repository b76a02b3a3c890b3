"""StochasticHashRTL: the counter-based hash of stochastic rounding, at RTL and through Verilator,
against hand-checkable vectors, an independent pure-Python oracle and the golden model
(:func:`pymtl_fp.numerics.stochastic_offset`)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymtl_fp import numerics
from pymtl_fp.primitives.StochasticHashRTL import StochasticHashRTL, hash32
from pymtl_fp.sim import build_sim
from pymtl_fp.verilate import module_name

M32 = 2**32 - 1


def oracle(seed, tensor_id, index):
    """Written independently of the RTL module: murmur3 fmix32 of the mixed input."""
    x = (seed * 2654435761 + tensor_id * 1663821227 + index) % 2**32
    for shift, mult in ((16, 2246822507), (13, 3266489909)):
        x = ((x ^ (x >> shift)) * mult) % 2**32
    return x ^ (x >> 16)


# (seed, tensor_id, index) -> hash; the first three are checkable by hand from fmix32 tables
# (fmix32(0) = 0, fmix32(1), fmix32(0x9E3779B1)), the fourth is fmix32(0x632BE5AB + 5)
VECTORS = [
    ((0, 0, 0), 0x00000000),
    ((0, 0, 1), 0x514E28B7),
    ((1, 0, 0), 0x11FD02EB),
    ((0, 1, 5), 0xB62258D3),
]

u32 = st.one_of(st.sampled_from([0, 1, 2, M32 - 1, M32, 2**31, 2**31 - 1]), st.integers(0, M32))
u8 = st.one_of(st.sampled_from([0, 1, 254, 255]), st.integers(0, 255))


@pytest.mark.parametrize("args,expected", VECTORS)
def test_vectors(args, expected):
    assert oracle(*args) == expected
    assert hash32(*args) == expected
    assert int(numerics.stochastic_offset(args[0], args[1], args[2], 32)) == expected


def test_golden_top_bits_vector():
    # numerics' documented vector: (0, 1, 5, shift=4) -> 0xB, the top 4 bits of 0xB62258D3
    assert int(numerics.stochastic_offset(0, 1, 5, 4)) == 0xB == oracle(0, 1, 5) >> 28


@given(u32, u8, u32, st.integers(0, 32))
def test_python_reference_equals_golden(seed, tensor_id, index, shift):
    h = oracle(seed, tensor_id, index)
    assert hash32(seed, tensor_id, index) == h
    assert int(numerics.stochastic_offset(seed, tensor_id, index, shift)) == (h >> (32 - shift) if shift else 0)


def _evaluate(m, seed, tensor_id, index):
    m.seed @= seed
    m.tensor_id @= tensor_id
    m.index @= index
    m.sim_eval_combinational()
    return int(m.out)


@pytest.fixture(scope="module", params=[pytest.param("rtl", marks=pytest.mark.rtl),
                                        pytest.param("verilator", marks=pytest.mark.verilator)])
def hash_sim(request):
    return build_sim(StochasticHashRTL(), request.param, name=module_name("StochasticHashRTL", {}))


def test_rtl_vectors(hash_sim):
    for args, expected in VECTORS:
        assert _evaluate(hash_sim, *args) == expected, args


def test_rtl_matches_oracle(hash_sim):
    @given(st.lists(st.tuples(u32, u8, u32), min_size=1, max_size=40))
    def check(cases):
        for seed, tensor_id, index in cases:
            got = _evaluate(hash_sim, seed, tensor_id, index)
            assert got == oracle(seed, tensor_id, index), (seed, tensor_id, index)
            assert got == int(numerics.stochastic_offset(seed, tensor_id, index, 32))

    check()


@pytest.mark.rtl
def test_line_trace():
    m = build_sim(StochasticHashRTL(), "rtl")
    _evaluate(m, 0, 0, 1)
    assert "514e28b7" in m.line_trace().lower()
