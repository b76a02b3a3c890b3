"""pymtl_fp.lint: translation to one self-contained Verilog file, ``verilator --lint-only -Wall``
with the shared PyMTL3 waiver table, and proof that the linter does fail on real problems."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pymtl3 import Component, InPort, OutPort, update

from pymtl_fp.lint import (
    PYMTL3_WAIVERS,
    LintError,
    lint,
    lint_component,
    parse_verilator_output,
    translate_verilog,
)
from pymtl_fp.primitives.MacRTL import MacRTL
from pymtl_fp.primitives.MaxSelectRTL import MaxSelectRTL
from pymtl_fp.primitives.RequantRTL import RequantRTL
from pymtl_fp.primitives.ShiftRTL import ShiftRTL
from pymtl_fp.primitives.SramRTL import SramRTL
from pymtl_fp.primitives.StochasticHashRTL import StochasticHashRTL
from pymtl_fp.verilate import module_name

pytestmark = pytest.mark.verilator  # every test here runs Verilator's linter (no C++ build)

#: the shared table minus the waivers for PyMTL3's constants and loop headers: our own primitives
#: need only DECLFILENAME and the unused clk/reset ports
STRICT = {k: v for k, v in PYMTL3_WAIVERS.items() if k == "DECLFILENAME" or k[0] == "UNUSEDSIGNAL"}

UNITS = [
    (StochasticHashRTL, {}),
    (RequantRTL, dict(acc_bits=24, out_bits=8)),
    (RequantRTL, dict(acc_bits=48, out_bits=16)),
    (RequantRTL, dict(acc_bits=8, out_bits=8)),
    (RequantRTL, dict(acc_bits=128, out_bits=2)),
    (SramRTL, dict(width=16, depth=64)),
    (SramRTL, dict(width=8, depth=20)),
    (SramRTL, dict(width=1, depth=1)),
    (SramRTL, dict(width=32, depth=4096)),
    (MaxSelectRTL, dict(bits=8, idx_bits=4)),
    (MaxSelectRTL, dict(bits=2, idx_bits=1)),
    (MacRTL, dict(a_bits=8, b_bits=8, acc_bits=24)),
    (ShiftRTL, dict(nbits=18, amt_bits=3, left=True)),
    (ShiftRTL, dict(nbits=18, amt_bits=3, left=False)),
]


def lint_unit(cls, params, out_dir, waivers=None):
    return lint_component(cls(**params), module_name(f"Lint{cls.__name__}", params), out_dir, waivers)


@pytest.mark.parametrize("cls,params", UNITS, ids=[module_name(c.__name__, p) for c, p in UNITS])
def test_every_primitive_lints_clean(cls, params, tmp_path):
    result = lint_unit(cls, params, tmp_path, STRICT)
    assert result.clean, result.report() + "\n" + result.output


@given(st.sampled_from(["requant", "sram", "maxsel"]), st.integers(2, 64), st.integers(1, 64))
def test_random_widths_lint_clean(tmp_path_factory, kind, x, y):
    if kind == "requant":
        cls, params = RequantRTL, dict(acc_bits=max(x, y + 1), out_bits=min(x, y + 1))
    elif kind == "sram":
        cls, params = SramRTL, dict(width=x, depth=y * 3)
    else:
        cls, params = MaxSelectRTL, dict(bits=x, idx_bits=(y - 1) % 32 + 1)
    result = lint_unit(cls, params, tmp_path_factory.mktemp("lint"), STRICT)
    assert result.clean, result.report()


def test_translation_is_one_self_contained_file(tmp_path):
    params = dict(acc_bits=24, out_bits=8)
    name = module_name("RequantRTL", params)
    path = translate_verilog(RequantRTL(**params), name, tmp_path)
    assert path == tmp_path / f"{name}.v"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    text = path.read_text()
    assert f"module {name}\n" in text  # the top, under its explicit name
    assert "module StochasticHashRTL" in text  # and its child, in the same file
    assert "__" not in name
    with pytest.raises(ValueError, match="bad Verilog module name"):
        translate_verilog(RequantRTL(**params), "Bad__name", tmp_path)


def test_waiver_table_has_reasons_and_report_lists_them(tmp_path):
    assert all(isinstance(r, str) and len(r) > 20 for r in PYMTL3_WAIVERS.values())
    result = lint_unit(StochasticHashRTL, {}, tmp_path)
    assert result.clean and result.waivers == PYMTL3_WAIVERS
    report = result.report()
    assert "clean" in report
    for reason in PYMTL3_WAIVERS.values():
        assert reason in report
    assert (tmp_path / "LintStochasticHashRTL_waivers.vlt").is_file()


# --- the linter can fail ------------------------------------------------------------------


class IndexTrap(Component):
    """``a[n - 1]`` with n = 8: PyMTL3 types the index as 4 bits, an 8-bit vector needs 3."""

    def construct(s, n=8):
        s.a = InPort(n)
        s.msb = OutPort()

        @update
        def up():
            s.msb @= s.a[n - 1]


class UnusedInput(Component):
    def construct(s):
        s.a = InPort(4)
        s.b = InPort(4)  # never read
        s.y = OutPort(4)

        @update
        def up():
            s.y @= s.a


class ConstSlice(Component):
    """``a[0:n]``: PyMTL3 folds the bound into a literal and leaves ``__const__n`` unused."""

    def construct(s):
        n = 4
        s.a = InPort(8)
        s.lo = OutPort(4)
        s.hi = OutPort(4)

        @update
        def up():
            s.lo @= s.a[0:n]
            s.hi @= s.a[4:8]  # literal bounds: no localparam


class Loops(Component):
    """``for`` loops in an update block: PyMTL3 writes minimally sized loop-header literals."""

    def construct(s, n=4):
        s.a = [InPort(8) for _ in range(n)]
        s.total = OutPort(8)
        s.odd = OutPort(8)

        @update
        def up():
            s.total @= 0
            for i in range(n):
                s.total @= s.total + s.a[i]
            s.odd @= 0
            for j in range(1, n, 2):
                s.odd @= s.odd ^ s.a[j]


def test_loop_headers_are_waived_only_by_the_shared_table(tmp_path):
    raw = lint_component(Loops(), "LintLoops", tmp_path, waivers=STRICT)
    assert raw.codes == {"WIDTHEXPAND"} and len(raw.warnings) == 3
    assert lint(raw.verilog_path, "LintLoops").clean


def test_width_mismatch_fails(tmp_path):
    result = lint_component(IndexTrap(), "LintIndexTrap", tmp_path)
    assert not result.clean
    assert result.codes == {"WIDTHTRUNC"}
    w = result.warnings[0]
    assert w.file.endswith("LintIndexTrap.v") and w.line > 0 and "index" in w.message
    assert "WIDTHTRUNC" in result.report()


def test_unused_signal_other_than_clk_reset_is_not_waived(tmp_path):
    result = lint_component(UnusedInput(), "LintUnusedInput", tmp_path)
    assert not result.clean
    assert [(w.code, w.message) for w in result.warnings] == [("UNUSEDSIGNAL", "Signal is not used: 'b'")]


def test_without_waivers_pymtl3_artifacts_fail_and_code_waivers_work(tmp_path):
    raw = lint_component(ConstSlice(), "LintConstSlice", tmp_path, waivers={})
    assert raw.codes == {"UNUSEDSIGNAL", "UNUSEDPARAM"}  # clk, reset and __const__n
    assert not raw.clean
    assert lint(raw.verilog_path, "LintConstSlice").clean  # the shared table waives all three
    by_code = lint(raw.verilog_path, "LintConstSlice",
                   {"UNUSEDSIGNAL": "test: whole rule off", "UNUSEDPARAM": "test: whole rule off"})
    assert by_code.clean and "-Wno-UNUSEDSIGNAL" in by_code.command
    assert "UNUSEDSIGNAL: test: whole rule off" in by_code.report()


def test_handwritten_verilog_errors_and_warnings(tmp_path):
    bad = tmp_path / "Narrow.v"
    bad.write_text("module Narrow (input logic [3:0] a, output logic [7:0] y);\n"
                   "  assign y = a;\nendmodule\n")
    result = lint(bad, "Narrow", waivers={})
    assert [(w.code, w.line) for w in result.warnings] == [("WIDTHEXPAND", 2)]
    broken = tmp_path / "Broken.v"
    broken.write_text("module Broken (input logic a, output logic y);\n  assign y = ;\nendmodule\n")
    result = lint(broken, "Broken", waivers={})
    assert not result.clean and result.returncode != 0
    assert any(w.severity == "Error" and w.line == 2 for w in result.warnings)


def test_bad_inputs_raise(tmp_path):
    with pytest.raises(LintError, match="no Verilog file"):
        lint(tmp_path / "missing.v", "missing")
    (tmp_path / "X.v").write_text("module X; endmodule\n")
    with pytest.raises(ValueError, match="needs a reason"):
        lint(tmp_path / "X.v", "X", {"WIDTH": ""})
    with pytest.raises(ValueError, match="bad waiver key"):
        lint(tmp_path / "X.v", "X", {"width": "lower case is not a code"})


@pytest.mark.parametrize("text,expected", [
    ("%Warning-WIDTHTRUNC: a/b.v:12:3: Operator ASSIGN expects 4 bits\n   12 | x\n%Error: Exiting due to 1 warning(s)\n",
     [("WIDTHTRUNC", "a/b.v", 12, 3, "Operator ASSIGN expects 4 bits", "Warning")]),
    ("%Error: t.v:2:14: syntax error, unexpected ';'\n",
     [("ERROR", "t.v", 2, 14, "syntax error, unexpected ';'", "Error")]),
    ("%Error-PINNOTFOUND: t.v:5:4: Pin not found: 'q'\n%Warning-UNUSEDSIGNAL: t.v:1:9: Signal is not used: 'clk'\n",
     [("PINNOTFOUND", "t.v", 5, 4, "Pin not found: 'q'", "Error"),
      ("UNUSEDSIGNAL", "t.v", 1, 9, "Signal is not used: 'clk'", "Warning")]),
    ("- V e r i l a t i o n   R e p o r t: whatever\n", []),
])
@pytest.mark.filterwarnings("ignore")
def test_parse_verilator_output(text, expected):
    got = [(w.code, w.file, w.line, w.column, w.message, w.severity) for w in parse_verilator_output(text)]
    assert got == expected


@pytest.mark.parametrize("lanes,wreg", [(1, False), (4, False), (1, True), (4, True)])
def test_router_scratch_fifo_lints_clean(lanes, wreg, tmp_path):
    """The scratch FIFO as one ring (E = 1) and as E banks of one write and three reads each, also
    with the banks' writes registered (``wreg``)."""
    from pymtl_fp.cluster.hw.lint import CLUSTER_WAIVERS
    from pymtl_fp.cluster.hw.RouterScratchRTL import RouterScratchRTL

    result = lint_component(RouterScratchRTL(32, 256, lanes, wreg, wreg), f"LintRouterScratchRTL_e{lanes}_w{int(wreg)}",
                            tmp_path, CLUSTER_WAIVERS)
    assert result.clean, result.report() + "\n" + result.output
