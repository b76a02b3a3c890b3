"""ShiftRTL: a shift by a variable amount as multiplexer stages, left and right, at RTL (PyMTL3)
and through Verilator, equal to Python's shifts truncated to the width, for every amount."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymtl_fp.primitives.ShiftRTL import ShiftRTL
from pymtl_fp.sim import build_sim
from pymtl_fp.verilate import module_name

NBITS, AMT = 18, 3


@pytest.fixture(scope="module", params=[pytest.param(("rtl", left), marks=pytest.mark.rtl)
                                        for left in (True, False)]
                + [pytest.param(("verilator", left), marks=pytest.mark.verilator) for left in (True, False)],
                ids=["rtl-left", "rtl-right", "verilator-left", "verilator-right"])
def shifter(request):
    level, left = request.param
    cfg = dict(nbits=NBITS, amt_bits=AMT, left=left)
    return build_sim(ShiftRTL(**cfg), level, name=module_name("ShiftRTL", cfg)), left


def test_every_amount_equals_pythons_shift(shifter):
    m, left = shifter
    mask = (1 << NBITS) - 1

    @given(st.lists(st.one_of(st.sampled_from([0, 1, mask, 1 << (NBITS - 1), 0x2AAAA]), st.integers(0, mask)),
                    min_size=1, max_size=12))
    def check(values):
        for v in values:
            for amt in range(1 << AMT):
                m.in_ @= v
                m.amt @= amt
                m.sim_eval_combinational()
                assert int(m.out) == ((v << amt) & mask if left else v >> amt), (v, amt)

    check()


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="1 <= amt_bits <= 6"):
        ShiftRTL(nbits=8, amt_bits=0).elaborate()
