"""Every operator given an int path (:mod:`pymtl_fp.bits_int_paths`) answers as PyMTL3's own
``Bits`` operator does -- value, width, the object an assignment returns, and the error -- on random
widths and operands: in-range and out-of-range integers, negative ones, ``bool`` and ``Bits`` of the
same and of another width."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymtl3 import mk_bits

from pymtl_fp import bits_int_paths


def _outcome(fn, n, value, other, attr=None):
    x = mk_bits(n)(value)
    if attr == "_next":
        x._next = 0
    try:
        r = fn(x, other)
    except Exception as e:  # (the error itself is what is compared)
        return ("raises", type(e).__name__, str(e))
    if attr:
        return ("assigns", r is x, repr(getattr(x, attr)), x._uint)
    return ("returns", type(r).__name__, r._nbits, repr(r._uint))


@st.composite
def operands(draw):
    n = draw(st.integers(1, 70))
    value = draw(st.integers(0, 2**n - 1))
    other = draw(st.one_of(
        st.integers(0, 2**n - 1),
        st.integers(-(2**n), 2 ** (n + 1)),
        st.sampled_from([0, 1, n, n - 1, n + 1, 2**n - 1, 2**n, -1]),
        st.booleans(),
        st.integers(1, 70).flatmap(lambda m: st.integers(0, 2**m - 1).map(lambda v: mk_bits(m)(v))),
        st.integers(0, 2**n - 1).map(lambda v: mk_bits(n)(v)),
    ))
    return n, value, other


@pytest.fixture(scope="module")
def both():
    """(PyMTL3's operators, the int paths) by name."""
    bits_int_paths.install()
    from pymtl3.datatypes.PythonBits import Bits

    return dict(bits_int_paths._ORIGINALS), {name: vars(Bits)[name] for name in bits_int_paths._ORIGINALS}


def test_every_listed_operator_is_replaced(both):
    own, fast = both
    assert set(own) == set(bits_int_paths.BINARY) | set(bits_int_paths.ASSIGN)
    assert all(own[name] is not fast[name] for name in own)


@settings(max_examples=300)
@given(operands())
def test_binary_operators_answer_as_pymtl3s(both, case):
    own, fast = both
    n, value, other = case
    for name in bits_int_paths.BINARY:
        assert _outcome(fast[name], n, value, other) == _outcome(own[name], n, value, other), (name, n, value, other)


@settings(max_examples=300)
@given(operands())
def test_assignments_answer_as_pymtl3s(both, case):
    own, fast = both
    n, value, other = case
    for name, attr in bits_int_paths.ASSIGN.items():
        got = _outcome(fast[name], n, value, other, attr)
        assert got == _outcome(own[name], n, value, other, attr), (name, n, value, other)
