"""A row band *in place* (:mod:`pymtl_fp.engine.band_program`): the band's command reads its window
and writes its rows inside whole maps of several channel tiles and images, kept in planes
(:data:`pymtl_fp.engine.encoding.PLANES`: the map strides ``hw``, ``cthw``, ``howo``, ... count the
whole map's rows, the command walks the band's).  No field and no RTL logic is new: the strides
were already command fields.

* every operation on a map (fwd, bwd_data, bwd_weight, pool_fwd, pool_bwd), random shapes with 1-3
  channel tiles and 1-2 images on the 2x2 engine, one band anywhere in the map: the whole result
  maps hold the whole-map result's rows where the band is and their old words everywhere else, at
  FL, CL, PyMTL3 RTL and Verilator, with random stalls;
* CL takes the RTL's cycles, which are the dense band's (the strides cost nothing);
* the hazard spans: a command's range runs from its map's first word to past its last, gaps
  between planes included, so a LOAD into another row of a plane it reads waits;
* the C header's ``..._products_in_planes`` fills the same products as the Python packer.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pymtl_fp.engine import band_program, encoding, msgs
from pymtl_fp.engine.cases import golden_op, validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.tb.engine_harness import drive, get_model
from pymtl_fp.tb.engine_strategies import STALLS, band_case, band_cases
from pymtl_fp.tb.hypothesis_profiles import examples

CFG = preset("tiny")
_SUPPRESS = list(settings().suppress_health_check) + [HealthCheck.differing_executors]


@st.composite
def pool_cases(draw, op):
    """``(whole case, band case (None), rows, stall, stall_seed)`` of a 2x2 pool on a random map."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 4))
    ho, wo = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if op == "pool_fwd":
        case = dict(x=rng.integers(-128, 128, (n, c, 2 * ho, 2 * wo)), k=2)
    else:
        case = dict(dy=rng.integers(-128, 128, (n, c, ho, wo)), argmax=rng.integers(0, 4, (n, c, ho, wo)), k=2)
    lo = draw(st.integers(0, ho - 1))
    hi = draw(st.integers(lo + 1, ho))
    return case, None, (lo, hi), tuple(draw(STALLS) for _ in range(3)), draw(st.integers(0, 1000))


def cases(op):
    if op in encoding.POOL:
        return pool_cases(op)
    return band_cases(CFG, op, max_hw=6, max_ch=6)  # up to 3 channel tiles on the 2x2 engine


def run_in_place(level, op, drawn):
    whole, bc, (lo, hi), stall, stall_seed = drawn
    whole = validate_case(CFG, op, whole)
    prog = band_program.build(CFG, op, whole, lo, hi)
    model = get_model(level, CFG)
    elements, timing = drive(model, CFG, prog, stall=stall, seed=stall_seed)
    got = prog.unpack(elements)
    band_result = golden_op(CFG, op, validate_case(CFG, op, bc)) if bc is not None else None
    want = band_program.expected(CFG, op, whole, lo, hi, golden_op(CFG, op, whole), band_result)
    assert set(got) == set(want)
    for key, val in want.items():
        assert np.array_equal(got[key], val), (level, op, key, lo, hi)
    return timing


OPS = ["fwd", "bwd_data", "bwd_weight", "pool_fwd", "pool_bwd"]


class InPlaceSuite:
    level = "fl"

    @settings(max_examples=examples(10), deadline=None, suppress_health_check=_SUPPRESS)
    @given(data=st.data(), op=st.sampled_from(OPS))
    def test_a_band_in_place_is_the_whole_maps_rows(self, data, op):
        run_in_place(self.level, op, data.draw(cases(op)))


class TestInPlaceFL(InPlaceSuite):
    level = "fl"


class TestInPlaceCL(InPlaceSuite):
    level = "cl"


@pytest.mark.rtl
@pytest.mark.slow
class TestInPlaceRTL(InPlaceSuite):
    level = "rtl"


@pytest.mark.verilator
class TestInPlaceVerilator(InPlaceSuite):
    level = "verilator"


@pytest.mark.rtl
@settings(max_examples=examples(6), deadline=None)
@given(data=st.data(), op=st.sampled_from(OPS))
def test_cl_takes_the_rtls_cycles_in_place(data, op):
    drawn = data.draw(cases(op))
    rtl, cl = run_in_place("rtl", op, drawn), run_in_place("cl", op, drawn)
    assert (cl["cycles"], cl["compute_cycles"]) == (rtl["cycles"], rtl["compute_cycles"])


def test_a_mutant_engine_reading_dense_maps_fails():
    """The FL engine reading a band's window as dense words (the strides ignored) gives other rows:
    the in-place check can fail."""
    rng = np.random.default_rng(5)
    case = validate_case(CFG, "fwd", dict(x=rng.integers(-99, 99, (1, 4, 6, 3)), w=rng.integers(-99, 99, (3, 4, 3, 3)),
                                          b=np.zeros(3, np.int64), stride=1, pad=1, shift=6, relu=0,
                                          mode="nearest", seed=1, tensor_id=2))
    bc, rows = band_case("fwd", case, 2, 4)
    drawn = (case, bc, rows, (0.0, 0.0, 0.0), 0)
    run_in_place("fl", "fwd", drawn)
    model = get_model("fl", CFG)
    strides = model._strides
    model._strides = lambda f, side: {"x": (f["h"] * f["w"], f["ct"] * f["h"] * f["w"])}.get(side, strides(f, side))
    try:
        with pytest.raises(AssertionError):
            run_in_place("fl", "fwd", drawn)
    finally:
        model._strides = strides


def test_the_spans_cover_the_planes_and_a_plane_must_hold_the_rows():
    f = dict(op=msgs.OP_FWD, n=2, c=5, k=3, ct=3, kt=2, h=3, w=4, ho=2, wo=4, r=3, s=3, a0=100, a1=0, a2=0, d0=7, d1=0,
             hp=8, hop=6)
    ranges = {(b, w): (lo, hi) for b, lo, hi, w in msgs.access_ranges(f, CFG)}
    # x: image 1, tile 2, rows 0..2 of its plane end the range: (1*3 + 2)*8*4 + 3*4 words from a0
    assert ranges[(msgs.BUF_X, False)] == (100, 100 + (5 * 8 + 3) * 4)
    assert ranges[(msgs.BUF_O, True)] == (7, 7 + (3 * 6 + 2) * 4)
    dense = {(b, w): (lo, hi) for b, lo, hi, w in msgs.access_ranges(dict(f, hp=0, hop=0), CFG)}
    assert dense[(msgs.BUF_X, False)] == (100, 100 + 2 * 3 * 3 * 4)
    # a LOAD into a row of tile 0's plane below the window conflicts with the command reading it
    load = msgs.access_ranges(dict(op=msgs.OP_LOAD, target=msgs.BUF_X, addr=100 + 5 * 4, count=4 * CFG.P), CFG)
    assert msgs.ranges_conflict(msgs.access_ranges(f, CFG), load)
    past = msgs.access_ranges(dict(op=msgs.OP_LOAD, target=msgs.BUF_X, addr=100 + (5 * 8 + 3) * 4, count=CFG.P), CFG)
    assert not msgs.ranges_conflict(msgs.access_ranges(f, CFG), past)
    with pytest.raises(ValueError, match="layout hp=2: a plane must hold the command's h=3 rows"):
        encoding.products(dict(f, hp=2))
    with pytest.raises(ValueError, match=r"hw=13 must be h\*w = 32 with plane rows 8, 6"):
        encoding.products(dict(f, hw=13))
    # a command's own strides say its planes: decoding and re-encoding keeps them
    cmd = msgs.cmd_fields(msgs.make_cmd(**{k: v for k, v in f.items()}))
    assert (cmd["hw"], cmd["cthw"], cmd["howo"], cmd["kthowo"]) == (32, 96, 24, 48)
    assert encoding.products(cmd) == cmd


@settings(max_examples=examples(20), deadline=None)
@given(data=st.data())
def test_dense_products_are_unchanged(data):
    """Without plane rows (or with ``hp = h``, ``hop = ho``) every product is its factors' product."""
    f = {x: data.draw(st.integers(0, 9)) for x in ("n", "c", "k", "ct", "kt", "h", "w", "ho", "wo", "r", "s", "hi")}
    dense = encoding.products(f)
    assert encoding.products(dict(f, hp=f["h"], hop=f["ho"])) == dense
    assert dense["sz_x"] == f["n"] * f["ct"] * f["h"] * f["w"]
    assert dense["cthowo"] == f["ct"] * f["ho"] * f["wo"]
    assume(f["w"] and f["h"])
    planes = encoding.products(dict(f, hp=f["h"] + 1))
    assert planes["hw"] == (f["h"] + 1) * f["w"] and planes["howo"] == dense["howo"]


def test_the_c_header_fills_plane_strides_as_the_python_packer(tmp_path):
    """``<top>_cmd_products_in_planes(c, hp, hop)`` in the generated C header, compiled with the
    system C compiler, packs the same words as :func:`encoding.pack` with ``hp`` / ``hop``."""
    import subprocess

    from pymtl_fp.engine import ipkit

    top = CFG.module_name()
    (tmp_path / f"{top}.h").write_text(ipkit.c_header(top, CFG))
    rng = np.random.default_rng(9)
    cases = []
    for _ in range(12):
        f = {x: int(rng.integers(1, 9)) for x in ("n", "c", "k", "ct", "kt", "h", "w", "ho", "wo", "r", "s", "hi")}
        cases.append((f, f["h"] + int(rng.integers(0, 5)), f["ho"] + int(rng.integers(0, 5))))
    body = "\n".join(
        "  { %s_cmd_t c; memset(&c, 0, sizeof c); %s %s_cmd_products_in_planes(&c, %du, %du); "
        "if (%s_cmd_pack(&c, w)) return 1; dump(w); }"
        % (top, " ".join(f"c.{k} = {v}u;" for k, v in f.items()), top, hp, hop, top) for f, hp, hop in cases)
    (tmp_path / "t.c").write_text(f"""#include <stdio.h>
#include <string.h>
#include "{top}.h"
static void dump(const uint32_t *w) {{ for (int i = 0; i < {top}_CMD_WORDS; ++i) printf("%u ", w[i]); printf("\\n"); }}
int main(void) {{
  uint32_t w[{top}_CMD_WORDS];
{body}
  return 0;
}}
""")
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-o", "t", "t.c"], cwd=tmp_path, check=True)
    out = subprocess.run(["./t"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout.splitlines()
    want = [encoding.words32(encoding.pack(**f, hp=hp, hop=hop)) for f, hp, hop in cases]
    assert [list(map(int, line.split())) for line in out] == want
    assert any(encoding.pack(**f, hp=hp, hop=hop) != encoding.pack(**f) for f, hp, hop in cases)
