"""DelayLineRTL: every lane ``stages`` cycles late; with ``reset`` every register clears on reset,
without it only the last one of two or more (the registers before it hold and move on; a single
register does not clear); at RTL (random shapes and traffic) and through Verilator (fixed shapes)
against a register-by-register Python model."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymtl_fp.primitives.DelayLineRTL import DelayLineRTL
from pymtl_fp.sim import build_sim
from pymtl_fp.verilate import module_name

VERILATOR_CONFIGS = [dict(nbits=8, stages=13, lanes=8, reset=False), dict(nbits=1, stages=3, lanes=1, reset=True),
                     dict(nbits=32, stages=2, lanes=3, reset=False), dict(nbits=5, stages=4, lanes=2, reset=True),
                     dict(nbits=16, stages=1, lanes=1, reset=False)]


class DelayModel:
    """``stages`` registers of ``lanes`` values each, register 0 loaded from the inputs; all of
    them start at 0 (as PyMTL3's and Verilator's models do)."""

    def __init__(self, stages, lanes, reset):
        self.regs = [[0] * lanes for _ in range(stages)]
        self.reset = reset

    def out(self):
        return list(self.regs[-1])

    def tick(self, reset, ins):
        n = len(self.regs)
        new = [list(ins)] + [list(r) for r in self.regs[:-1]]
        for k in range(n):
            # (a line of one stage without reset has no reset at all)
            if reset and (self.reset or (k == n - 1 and n > 1)):
                new[k] = [0] * len(ins)
        self.regs = new


def traffic(nbits, lanes, n=40):
    cycle = st.tuples(st.integers(0, 12).map(lambda v: v == 0), st.lists(st.integers(0, 2**nbits - 1),
                                                                            min_size=lanes, max_size=lanes))
    return st.lists(cycle, min_size=1, max_size=n)


def run(m, p, seq):
    """Zeros through every register (a simulator is reused across examples, and the registers
    without reset keep what they held), then ``seq`` cycle by cycle."""
    for i in range(p["lanes"]):
        m.in_[i] @= 0
    for _ in range(p["stages"]):
        m.sim_tick()
    m.sim_reset()
    model = DelayModel(p["stages"], p["lanes"], p["reset"])
    for reset, ins in seq:
        m.reset @= reset
        for i, v in enumerate(ins):
            m.in_[i] @= v
        m.sim_eval_combinational()
        assert [int(o) for o in m.out] == model.out()
        m.sim_tick()
        model.tick(reset, ins)
    m.reset @= 0
    m.sim_eval_combinational()
    assert [int(o) for o in m.out] == model.out()


@pytest.fixture(scope="module", params=[
    pytest.param(p, marks=pytest.mark.verilator, id=module_name("DelayLine", p)) for p in VERILATOR_CONFIGS])
def verilated_line(request):
    p = request.param
    return build_sim(DelayLineRTL(**p), "verilator", name=module_name("DelayLineRTL", p)), p


def test_verilated_lines_follow_the_model(verilated_line):
    m, p = verilated_line

    @given(traffic(p["nbits"], p["lanes"]))
    def check(seq):
        run(m, p, seq)

    check()


@pytest.mark.rtl
@given(st.integers(1, 12), st.integers(1, 7), st.integers(1, 4), st.booleans(), st.data())
def test_rtl_random_shapes(nbits, stages, lanes, reset, data):
    p = dict(nbits=nbits, stages=stages, lanes=lanes, reset=reset)
    m = build_sim(DelayLineRTL(**p), "rtl")
    run(m, p, data.draw(traffic(nbits, lanes)))


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="nbits, stages, lanes >= 1"):
        DelayLineRTL(8, 0, 1).elaborate()
