"""Double-buffered streams of operations (pymtl_fp.engine.pipelined): every operation's results
equal the golden model's at every timed level with random stalls, CL == RTL (Verilator) cycle for
cycle, and overlap shortens the program without changing a bit -- also where a buffer's two slots
overlap (transfers split at the shared words) and where it has room for one slot only (the next
operation's LOADs must then wait)."""

import numpy as np
import pytest

from pymtl_fp.engine import msgs, pipelined, program
from pymtl_fp.engine.cases import CaseError, golden_op, validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.tb import engine_harness as eh


def _stream(cfg, op, m, rng, same_weights, **dims):
    cases = [eh.random_case(cfg, op, rng, mode="stochastic", **dims) for _ in range(m)]
    if same_weights:
        for key in pipelined.WEIGHT_BUFFERS[op].values():
            for cs in cases[1:]:
                cs[key] = cases[0][key]
    cases = [validate_case(cfg, op, cs) for cs in cases]
    return cases, pipelined.build(cfg, [(op, cs) for cs in cases], same_weights=same_weights)


CASES = [  # (config, op, stream length, same weights, layer)
    ("small", "fwd", 3, True, dict(n=1, c=8, k=8, h=6, w=6, r=3, s=3)),
    ("small-e4", "bwd_weight", 3, False, dict(n=1, c=8, k=5, h=6, w=6, r=3, s=3)),  # 4 elements a beat
    ("small", "bwd_data", 3, True, dict(n=1, c=5, k=8, h=6, w=5, r=3, s=3)),
    ("small", "bwd_weight", 3, False, dict(n=2, c=8, k=8, h=5, w=5, r=3, s=3)),  # G slots share 8 words
    ("tiny", "fwd", 4, False, dict(n=1, c=3, k=4, h=12, w=10, r=3, s=3)),  # X and O slots share words
    ("tiny", "fwd", 3, False, dict(n=1, c=3, k=4, h=16, w=8, r=3, s=3)),  # X full: one slot
]


@pytest.mark.parametrize("cfg_name,op,m,same,dims", CASES)
def test_stream_bit_exact_and_cl_equals_rtl(cfg_name, op, m, same, dims):
    cfg = preset(cfg_name.split("-")[0])
    if cfg_name.endswith("-e4"):
        cfg = cfg.replace(stream_lanes=4)
    cases, st = _stream(cfg, op, m, np.random.default_rng(m), same, **dims)
    wants = [golden_op(cfg, op, cs) for cs in cases]
    cycles = {}
    for level in ("cl", "verilator"):
        for stall in ((0.0, 0.0, 0.0), (0.3, 0.3, 0.3)):
            out, t = eh.drive(eh.get_model(level, cfg), cfg, st.prog, stall=stall, seed=5)
            for res, want in zip(st.unpack(out), wants):
                for key, val in want.items():
                    assert np.array_equal(res[key], val), (level, stall, key)
            cycles[level, stall[0]] = t["total_cycles"]
    assert cycles["cl", 0.0] == cycles["verilator", 0.0] and cycles["cl", 0.3] == cycles["verilator", 0.3]
    serial = sum(program.op_timing(cfg, op, cs)["total_cycles"] for cs in cases)
    assert cycles["cl", 0.0] < serial


def test_overlap_hides_loads_and_stores_on_the_vgg_like_layer():
    cfg = preset("small")
    cases, st = _stream(cfg, "fwd", 8, np.random.default_rng(0), True, n=1, c=8, k=8, h=8, w=8, r=3, s=3)
    _, t = eh.drive(eh.get_model("cl", cfg), cfg, st.prog)
    compute = program.op_timing(cfg, "fwd", cases[0])["compute_cycles"]
    first = program.build(cfg, "fwd", cases[0])
    # the stream takes its compute commands, the first operation's LOADs and the last one's
    # STORE, and (within a few handshake cycles per operation) nothing else
    whole = program.program_cycles(cfg.P, first)
    loads = whole["total_cycles"] - whole["cycles"]
    last_store = whole["cycles"] - compute
    assert t["total_cycles"] <= 8 * compute + loads + last_store + 8 * 2


def test_overlapping_slots_wait_only_for_the_shared_words():
    """A 36-word gradient in a 64-word G: the slots share words [28, 36), the STOREs give those
    up first, and the next ``bwd_weight`` waits for 8 words (32 beats at E = 4), not 36."""
    cfg = preset("small").replace(stream_lanes=4)
    m = 8
    cases, st = _stream(cfg, "bwd_weight", m, np.random.default_rng(0), False, n=1, c=8, k=8, h=8, w=8, r=3, s=3)
    g_stores = [(f["addr"], f["count"]) for f in map(msgs.cmd_fields, st.prog.cmds)
                if f["op"] == msgs.OP_STORE and f["target"] == msgs.BUF_G]
    assert g_stores[:4] == [(28, 8 * 16), (0, 28 * 16), (28, 8 * 16), (36, 28 * 16)]
    out, t = eh.drive(eh.get_model("cl", cfg), cfg, st.prog)
    for res, cs in zip(st.unpack(out), cases):
        want = golden_op(cfg, "bwd_weight", cs)
        assert all(np.array_equal(res[key], val) for key, val in want.items())
    one = program.op_timing(cfg, "bwd_weight", cases[0])  # at E = 4
    compute = one["compute_cycles"]
    loads, last_store = one["total_cycles"] - one["cycles"], one["cycles"] - compute
    shared_beats = 8 * 16 // 4
    assert t["total_cycles"] <= m * compute + loads + last_store + m * (shared_beats + 16)


def test_bad_streams_are_refused():
    cfg = preset("small")
    rng = np.random.default_rng(1)
    with pytest.raises(CaseError, match="at least one"):
        pipelined.build(cfg, [])
    a, b = (validate_case(cfg, "fwd", eh.random_case(cfg, "fwd", rng, c=4, k=4)) for _ in range(2))
    with pytest.raises(CaseError, match="differ"):
        pipelined.build(cfg, [("fwd", a), ("fwd", b)], same_weights=True)
