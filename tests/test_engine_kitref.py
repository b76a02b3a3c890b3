"""The engine kit's command reference defines the arithmetic: a golden model written from the
reference's formulas alone (tests/data/kit_model.py, NumPy only, every formula it implements quoted
from the generated T.md) equals the Verilated engine on random cases of every operation, in both
rounding modes (with row bands, a batch-parallel fwd and un-rounded bwd_weight sums in B), and the
reference's closed-form cycles equal the engine's occupancy."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from pymtl_fp.engine import ipkit, msgs, program
from pymtl_fp.engine.cases import validate_case
from pymtl_fp.engine.config import PRESETS
from pymtl_fp.tb.engine_harness import drive, get_model, random_case

_spec = importlib.util.spec_from_file_location("kit_model", Path(__file__).parent / "data" / "kit_model.py")
km = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(km)

CFG = PRESETS["tiny"]


def _reference() -> str:
    return ipkit.reference(CFG.module_name(), CFG)


def _widths(text: str) -> dict:
    """The configuration as the reference states it (its table), and the PIPE of its cycle section."""
    cfg = {k: int(v) for k, v in re.findall(r"^\| ([A-Z_]+) \| (\d+) \|$", text, re.M)}
    cfg["PIPE"] = int(re.search(r"`PIPE = (\d+)`", text).group(1))
    return cfg


def test_the_model_quotes_the_reference_and_its_hash_vectors():
    text = _reference()
    missing = [q for q in km.QUOTES + km.TIMING_QUOTES if q not in text]
    assert not missing, missing
    vectors = re.findall(r"`\((\d+), (\d+), (\d+)\) -> (0x[0-9A-F]+|0)`", text)
    assert len(vectors) == 4
    for seed, tensor, idx, want in vectors:
        assert km.H(int(seed), int(tensor), int(idx)) == int(want, 16)
    # the struct comments are whole sentences, not cut at a colon
    pkg = ipkit.sv_package(CFG.module_name(), CFG)
    assert "relu;  // [" in pkg and "fwd: apply ReLU to y; bwd_data: mask dx where x <= 0" in pkg


def _model(op, case, f, cfg):
    if op == "fwd":
        return {"y": km.fwd(case["x"], case["w"], case["b"], f, cfg)}
    if op == "bwd_data":
        return {"dx": km.bwd_data(case["dy"], case["w"], case["x"], f, cfg)}
    if op == "bwd_weight":
        dw, db = km.bwd_weight(case["x"], case["dy"], f, cfg, case.get("acc_dw"), case.get("acc_db"))
        return {"dw": dw, "db": db}
    if op == "pool_fwd":
        y, am = km.pool_fwd(case["x"], f)
        return {"y": y, "argmax": am}
    if op == "pool_bwd":
        return {"dx": km.pool_bwd(case["dy"], case["argmax"], f)}
    return {"w": km.update(case["w"], case["dw"], f, cfg)}


def _cases(rng):
    """Random cases of every operation in both rounding modes; strides 1 and 2, padding 0 and 1, and
    a fwd and a bwd_data row band (pt < pad, hi > the band's rows)."""
    out = []
    for mode in ("nearest", "stochastic"):
        for op in ("fwd", "bwd_data", "bwd_weight", "pool_fwd", "pool_bwd", "update"):
            stride, pad = int(rng.integers(1, 3)), int(rng.integers(0, 2))
            dims = dict(n=int(rng.integers(1, 3)), c=int(rng.integers(1, 4)), k=int(rng.integers(1, 4)),
                        h=4 if op.startswith("pool") else 5, w=4 if op.startswith("pool") else 5,
                        r=int(rng.integers(1, 4)) if op != "update" else 3, s=3)
            pad = min(pad, dims["r"] - 1, dims["s"] - 1)
            out.append((op, random_case(CFG, op, rng, stride=stride, pad=pad, mode=mode, **dims)))
        band = random_case(CFG, "fwd", rng, n=1, c=3, k=2, h=4, w=5, r=3, s=3, pad=1, mode=mode)
        out.append(("fwd", dict(band, pt=0, ho=3, hi=7)))  # output rows 0..2 of a 7-row map, window from row 0
        band = random_case(CFG, "bwd_data", rng, n=1, c=2, k=3, h=5, w=5, r=3, s=3, pad=1, mode=mode)
        out.append(("bwd_data", dict(band, pt=2, hi=9, dy=band["dy"][:, :, :4])))
    # a batch-parallel fwd (same values, batch-innermost maps) and un-rounded bwd_weight sums in B,
    # alone and added to the sums already there
    out.append(("fwd", dict(random_case(CFG, "fwd", rng, n=3, c=2, k=3, h=4, w=4, r=3, s=3, pad=1,
                                        mode="stochastic"), bp=1)))
    raw = random_case(CFG, "bwd_weight", rng, n=2, c=1, k=2, h=4, w=4, r=2, s=2, pad=1)
    out.append(("bwd_weight", dict(raw, raw=1)))
    out.append(("bwd_weight", dict(raw, raw=1, acc=1, acc_dw=rng.integers(-2**31, 2**31, size=(2, 1, 2, 2)),
                                   acc_db=rng.integers(-2**31, 2**31, size=2))))
    return out


@pytest.mark.verilator
def test_a_model_from_the_reference_alone_equals_the_verilated_engine():
    text = _reference()
    cfg = _widths(text)
    assert cfg["P"] == CFG.P and cfg["WB_LATENCY"] == CFG.wb_latency > 0 and cfg["CMD_LATENCY"] == 1
    model = get_model("verilator", CFG)
    rng = np.random.default_rng(50)
    checked = []
    for op, raw_case in _cases(rng):
        case = validate_case(CFG, op, raw_case)
        prog = program.build(CFG, op, case)
        f = msgs.cmd_fields(prog.cmds[prog.compute_index])  # the command the engine gets
        elements, timing = drive(model, CFG, prog)
        got = prog.unpack(elements)
        want = _model(op, case, f, cfg)
        for name, value in want.items():
            np.testing.assert_array_equal(got[name], value, err_msg=f"{op} {case['mode']} {name} {f}")
        if not f["bp"]:
            # (measured from the handshake of a command offered to an idle engine: the reference's
            # forms count from its acceptance, CMD_LATENCY later)
            assert timing["compute_cycles"] == km.compute_cycles(op, f, cfg) + cfg["CMD_LATENCY"], (op, f)
        checked.append((op, f["stoch"]))
    assert {(op, s) for op, s in checked} == {(op, s) for op in msgs.OPS for s in (0, 1)}
