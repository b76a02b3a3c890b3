"""End-to-end tool-chain proof on a small parameterized RTL unit (signed MAC): the same random
sequences give the same results in PyMTL3's Python simulation and through Verilator, both equal
to Python integer arithmetic, and a VCD written by each level reads back with the same values."""

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymtl_fp.primitives.MacRTL import MacRTL
from pymtl_fp.sim import build_sim
from pymtl_fp.tb.vcd import read_vcd, values_at_edges
from pymtl_fp.verilate import module_name

CONFIGS = [dict(a_bits=8, b_bits=8, acc_bits=24), dict(a_bits=5, b_bits=11, acc_bits=40)]


def make_mac(level, params, vcd=None):
    return build_sim(MacRTL(**params), level, name=module_name("TestMacRTL", params), vcd=vcd)


def steps(params):
    a_lim, b_lim = 2 ** (params["a_bits"] - 1), 2 ** (params["b_bits"] - 1)
    step = st.tuples(st.booleans(), st.booleans(), st.integers(-a_lim, a_lim - 1),
                     st.integers(-b_lim, b_lim - 1))
    return st.lists(step, min_size=1, max_size=60)


def drive(m, params, seq):
    """Apply (en, clear, a, b) per cycle; return the accumulator after each cycle."""
    out = []
    for en, clear, a, b in seq:
        m.en @= en
        m.clear @= clear
        m.a @= a & ((1 << params["a_bits"]) - 1)
        m.b @= b & ((1 << params["b_bits"]) - 1)
        m.sim_tick()
        out.append(m.acc.int())
    return out


def oracle(params, seq):
    acc, out = 0, []
    lim = 1 << params["acc_bits"]
    for en, clear, a, b in seq:
        if en:
            acc = (0 if clear else acc) + a * b
        elif clear:
            acc = 0
        acc = (acc + lim // 2) % lim - lim // 2  # the accumulator wraps at acc_bits
        out.append(acc)
    return out


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: module_name("Mac", p))
@pytest.mark.parametrize("level", [pytest.param("rtl", marks=pytest.mark.rtl),
                                   pytest.param("verilator", marks=pytest.mark.verilator)])
def test_mac_matches_integer_math(level, params, cmdline_opts):
    if cmdline_opts["test_verilog"] and level == "rtl":
        level = "verilator"
    m = make_mac(level, params)

    @given(steps(params))
    def check(seq):
        m.sim_reset()
        assert drive(m, params, seq) == oracle(params, seq)

    check()


def test_rtl_and_verilator_agree_cycle_by_cycle(cmdline_opts):
    params = CONFIGS[0]
    rtl, vl = make_mac("rtl", params), make_mac("verilator", params)

    @given(steps(params))
    def check(seq):
        rtl.sim_reset()
        vl.sim_reset()
        assert drive(rtl, params, seq) == drive(vl, params, seq)

    check()


def test_bad_widths_are_rejected_before_simulation():
    with pytest.raises(ValueError, match="acc_bits"):
        MacRTL(a_bits=8, b_bits=8, acc_bits=12).elaborate()


@pytest.mark.parametrize("level", [pytest.param("rtl", marks=pytest.mark.rtl),
                                   pytest.param("verilator", marks=pytest.mark.verilator)])
def test_vcd_is_written_and_reads_back(level, tmp_path, cmdline_opts):
    params = dict(a_bits=6, b_bits=6, acc_bits=16)
    m = build_sim(MacRTL(**params), level, name=module_name("TestMacVcdRTL", params),
                  vcd=str(tmp_path / f"mac_{level}"))
    seq = [(1, i == 0, (i * 7) % 31 - 15, (i * 5) % 29 - 14) for i in range(20)]
    expected = drive(m, params, seq)
    for _ in range(2):  # flush the last values into the file
        m.sim_tick()
    del m  # let the Verilated model close its trace file
    import gc

    gc.collect()
    path = next(tmp_path.glob(f"mac_{level}*.vcd"))
    trace = read_vcd(path)
    seen = [v if v < 2 ** 15 else v - 2 ** 16 for v in values_at_edges(trace, "acc") if v is not None]
    # after reset, each rising edge samples the accumulator written by the previous cycle
    assert _contains_run(seen, expected[:-1]), (seen, expected)


@pytest.mark.verilator
def test_traced_build_after_an_untraced_one_of_the_same_unit_still_writes_a_vcd(tmp_path, cmdline_opts):
    # The untraced library is loaded first; a traced build of the same unit must not reuse it.
    params = dict(a_bits=7, b_bits=7, acc_bits=18)
    name = module_name("TestMacTwiceRTL", params)
    plain = build_sim(MacRTL(**params), "verilator", name=name)
    drive(plain, params, [(1, 0, 3, 4)])
    traced = build_sim(MacRTL(**params), "verilator", name=name, vcd=str(tmp_path / "twice"))
    drive(traced, params, [(1, 0, 3, 4)] * 3)
    del traced
    import gc

    gc.collect()
    assert list(tmp_path.glob("twice*.vcd"))


def _contains_run(haystack, needle):
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def test_simulations_leave_no_build_artifacts_in_the_working_directory(cmdline_opts):
    before = set(os.listdir(os.getcwd()))
    make_mac("verilator", CONFIGS[0])
    after = set(os.listdir(os.getcwd()))
    new = {f for f in after - before if f.startswith(("obj_dir", "lib")) or f.endswith((".v", ".so"))}
    assert not new
