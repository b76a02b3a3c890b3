"""The node program ISA and the router/DMA: binary encoding, scalar-unit semantics, and RouterCL ==
RouterRTL (PyMTL3 and Verilator) at every port in every cycle on random programs with random
stalls."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp import golden
from pymtl_fp.cluster import isa
from pymtl_fp.cluster.hw.router_config import BOOT_EDGES, RouterConfig, RouterConfigError
from pymtl_fp.cluster.hw.RouterCL import bias_update
from pymtl_fp.engine import encoding, msgs
from pymtl_fp.tb.hypothesis_profiles import examples
from pymtl_fp.tb.router_harness import random_program, run_router

CFG = RouterConfig(prog_depth=128, table_depth=64, scratch_depth=256, out_depth=16)


# ---- the ISA -----------------------------------------------------------------------------------



@st.composite
def instrs(draw):
    kind = draw(st.sampled_from(sorted(isa.KIND_NAMES)))
    cmd = {name: draw(st.integers(0, 15 if name in encoding.FACTORS else (1 << w) - 1)) for name, w in msgs.CMD_FIELDS
           if name not in encoding.PRODUCTS and draw(st.booleans())}
    head = {name: draw(st.integers(0, (1 << w) - 1)) for name, w in isa.HEADER_FIELDS if name != "kind"}
    cmd = encoding.products(cmd)  # an engine command carries its products (isa.eng fills them in)
    return isa.Instr(kind, {k: v for k, v in cmd.items() if v}, **head)


@given(instrs())
@settings(max_examples=examples(100))
def test_encode_decode_round_trip(ins):
    word = isa.encode(ins)
    assert 0 <= word < (1 << isa.INSTR_BITS)
    assert isa.decode(word) == ins and isa.decode(word).cmd == ins.cmd


def test_an_engine_command_gets_its_products_and_a_wrong_one_is_refused():
    ins = isa.eng(op=msgs.OP_FWD, n=2, ct=3, h=4, w=5)
    assert ins.cmd["sz_x"] == 2 * 3 * 4 * 5 and ins.cmd["cthw"] == 3 * 4 * 5 and ins.cmd["hw"] == 20
    # an Instr built without them gets them when encoded (what the RTL router hands the engine)
    bare = isa.Instr(isa.ENG, dict(op=msgs.OP_FWD, n=2, ct=3, h=4, w=5))
    assert isa.decode(isa.encode(bare)).cmd == {k: v for k, v in ins.cmd.items() if v}  # (decode keeps non-zero fields)
    with pytest.raises(isa.IsaError, match=r"hw=21 must be h\*w = 20"):
        isa.eng(op=msgs.OP_FWD, h=4, w=5, hw=21)
    with pytest.raises(isa.IsaError, match=r"sz_w=1 must be kt\*ct\*r\*s = 0"):
        isa.encode(isa.Instr(isa.ENG, {"sz_w": 1}))


def test_binary_layout_matches_the_pymtl3_struct():
    """The packing of :func:`isa.encode` is the bitstruct's: fields read back from the struct."""
    from pymtl3 import mk_bits

    ins = isa.eng(op=msgs.OP_FWD, seed=0xDEADBEEF, a0=7, d0=0x1234).with_(mark=5, done=9, lend=1, lcount=3,
                                                                        ltarget=11, seedstep=1)
    s = isa.instr_type().from_bits(mk_bits(isa.INSTR_BITS)(isa.encode(ins)))
    assert (int(s.kind), int(s.mark), int(s.done), int(s.lcount), int(s.ltarget)) == (isa.ENG, 5, 9, 3, 11)
    assert (int(s.cmd.op), int(s.cmd.seed), int(s.cmd.a0), int(s.cmd.d0)) == (msgs.OP_FWD, 0xDEADBEEF, 7, 0x1234)
    rows = isa.field_table()
    assert rows[0] == ("kind", isa.INSTR_BITS - 1, isa.INSTR_BITS - 4) and rows[-1][2] == 0
    assert sum(hi - lo + 1 for _, hi, lo in rows) == isa.INSTR_BITS


def test_out_of_range_fields_are_refused():
    with pytest.raises(isa.IsaError, match="count"):
        isa.move(isa.SRC_FWD_IN, isa.DST_BWD_OUT, 1 << 24)
    with pytest.raises(isa.IsaError, match="mark"):
        isa.encode(isa.Instr(isa.NOP, mark=256))
    with pytest.raises(isa.IsaError, match="one link input"):
        isa.move(isa.SRC_SCRATCH, isa.DST_BWD_OUT, 3)


@given(st.lists(st.one_of(st.just(-1), st.integers(0, 600)), max_size=700))
@settings(max_examples=examples(50))
def test_gather_runs_reproduce_the_index_list(indices):
    values = list(range(1000, 1601))
    table = [isa.run_word(*r) for r in isa.runs(indices)]
    want = [0 if i < 0 else values[i] for i in indices]
    assert isa.apply_gather(values, table) == want
    assert isa.gather_cycles(table) == len(indices) + 2


@given(st.integers(1, 12), st.integers(-7, 7), st.booleans(), st.integers(0, 2**32 - 1), st.integers(0, 255),
       st.integers(0, 2**31))
@settings(max_examples=examples(40))
def test_bias_unit_is_the_golden_sgd_update(n, shift, stoch, seed, tid, vseed):
    rng = np.random.default_rng(vseed)
    k = int(rng.integers(0, n + 1))
    b = rng.integers(-2**20, 2**20, size=n)
    db = rng.integers(-2**28, 2**28, size=n)
    ins = isa.bias(n, k, shift, int(stoch), seed, tid, 22)  # a negative shift travels in bshift
    got = bias_update(list(b), list(db), k, ins.field("shift"), int(stoch), seed, tid, 22, ins.field("bshift"))
    want = golden.sgd_update(b[:k], db[:k], lr_shift=shift, bits=22, mode="stochastic" if stoch else "nearest",
                             seed=seed, tensor_id=tid)
    assert got == [int(v) for v in want] + [0] * (n - k)


def test_router_config_is_validated():
    with pytest.raises(RouterConfigError, match="prog_depth"):
        RouterConfig(prog_depth=1 << 20)
    for bad in (3, 0, 32, True):
        with pytest.raises(RouterConfigError, match="stream_lanes"):
            RouterConfig(stream_lanes=bad)
    with pytest.raises(RouterConfigError, match="two beats"):
        RouterConfig(scratch_depth=4, stream_lanes=4)
    with pytest.raises(RouterConfigError, match="out_depth=4 must hold two beats"):
        RouterConfig(out_depth=4, stream_lanes=4)
    # an output buffer holds out_depth elements whatever the beat: out_depth / E beats
    assert [RouterConfig(out_depth=64, stream_lanes=e).out_beats for e in (1, 2, 4)] == [64, 32, 16]
    assert RouterConfig(stream_lanes=4).module_name() != RouterConfig().module_name()
    assert RouterConfig().module_name().startswith("RouterRTL_") and "__" not in RouterConfig().module_name()
    # pipelined units: a bool, in the name only when set; a node's router has them with its engine's
    # pipelined requantizer, and BIAS / REQUANT then take unit_latency cycles more
    with pytest.raises(RouterConfigError, match="pipelined_units must be a bool"):
        RouterConfig(pipelined_units=1)
    assert "pipelined_units" not in RouterConfig().params()
    assert RouterConfig(pipelined_units=True).module_name() != RouterConfig().module_name()
    from pymtl_fp.cluster.hw.node import router_config_for
    from pymtl_fp.engine.config import PRESETS

    plain = PRESETS["small"].replace(pipelined_requant=False)
    assert not router_config_for(plain).pipelined_units
    piped = router_config_for(PRESETS["small"])  # (the presets pipeline their requantizer)
    assert piped.pipelined_units and piped.unit_latency == 17 and RouterConfig().unit_latency == 0
    # the pipelined sequencer: by the same rule, in the name only when set
    assert piped.pipelined_seq and not router_config_for(plain).pipelined_seq
    with pytest.raises(RouterConfigError, match="pipelined_seq must be a bool"):
        RouterConfig(pipelined_seq=1)
    assert "pipelined_seq" not in RouterConfig().params() and "pipelined_seq" in piped.params()
    assert piped.module_name() != piped.replace(pipelined_seq=False).module_name()
    with pytest.raises(RouterConfigError, match="residual must be a bool"):
        RouterConfig(residual=1)
    assert "residual" not in RouterConfig().params() and not piped.residual  # a chain's node has no residual unit
    assert RouterConfig(residual=True).module_name() != RouterConfig().module_name()

    ins = isa.bias(5, 5, 2, 0, 0, 0, 8)
    assert isa.unit_cycles(ins, [], piped.unit_latency) == isa.unit_cycles(ins, []) + 17 == 5 + 2 + 17


def test_a_router_without_the_residual_unit_refuses_its_kinds_at_cl():
    prog = [isa.store(isa.DST_SCRATCH, count=4, target=0), isa.add(2, 8), isa.Instr(isa.HALT)]
    with pytest.raises(RuntimeError, match="ADD on a router built without the residual unit"):
        run_router("cl", CFG, prog, [])


# ---- CL == RTL -----------------------------------------------------------------------------------

#: the router test's structures: (pipelined_units, pipelined_seq, residual) by test id; the random programs
#: draw the residual unit's kinds where the router has it
STRUCTURES = {"units": (False, False, False), "pipelined_units": (True, False, True),
              "pipelined_seq": (True, True, False)}


def _compare(level, seed, n, stall, lanes=1, structure="units", idle_edges=BOOT_EDGES):
    units, seq, res = STRUCTURES[structure]
    cfg = CFG.replace(stream_lanes=lanes, pipelined_units=units, pipelined_seq=seq, residual=res)
    prog, table = random_program(random.Random(seed), n, scratch_depth=cfg.scratch_depth, residual=res)
    a = run_router("cl", cfg, prog, table, seed=seed, stall=stall, idle_edges=idle_edges)
    b = run_router(level, cfg, prog, table, seed=seed, stall=stall, idle_edges=idle_edges)
    for ra, rb in zip(a["trace"], b["trace"]):
        assert ra == rb, f"cycle {ra[0]}: cl {ra} vs {level} {rb}"
    assert len(a["trace"]) == len(b["trace"])
    assert a["sent"] == b["sent"] and a["loaded"] == b["loaded"] and a["commands"] == b["commands"]
    return a


@pytest.mark.parametrize("structure", list(STRUCTURES))
@pytest.mark.parametrize("level", [pytest.param("rtl", marks=pytest.mark.slow), "verilator"])
@given(seed=st.integers(0, 2**20), n=st.integers(6, 45), stall=st.sampled_from([0.0, 0.3, 0.6]),
       lanes=st.sampled_from([1, 1, 2, 4]))
@settings(max_examples=examples(12), deadline=None)
def test_router_cl_equals_rtl_every_cycle(level, structure, seed, n, stall, lanes):
    """Every port and status output, every cycle; with 1, 2 or 4 elements per beat (moves whose
    counts are not multiples of the beat end in a partial beat); with the scalar units as they are,
    pipelined (``RouterConfig.pipelined_units``: BIAS and REQUANT ``unit_latency`` cycles longer; with
    the residual unit, ``RouterConfig.residual``), and pipelined with the sequencer's instruction register
    (``pipelined_seq``, a node's router with its engine's pipelines); the Verilator builds of the pipelined
    ones at one element a beat."""
    if structure != "units" and level == "verilator":
        lanes = 1
    _compare(level, seed, n, stall, lanes, structure)


@pytest.mark.parametrize("idle_edges", [0, 1])
@pytest.mark.parametrize("seed", [0, 1])
def test_pipelined_sequencer_reads_its_first_instructions_after_a_short_reset(idle_edges, seed):
    """With fewer than ``BOOT_EDGES`` reset edges after the last program write, the pipelined
    sequencer spends the missing edges after reset offering nothing (CL == RTL every cycle), then
    runs the program: the engine gets the same commands as after a full reset."""
    prog, table = random_program(random.Random(seed), 12, scratch_depth=CFG.scratch_depth)
    late = max(0, BOOT_EDGES - idle_edges - len(table))  # (the table's writes come after the program's)
    assert late > 0, "the case must start late"
    a = _compare("rtl", seed, 12, 0.0, 1, "pipelined_seq", idle_edges=idle_edges)
    full = run_router("cl", CFG.replace(pipelined_units=True, pipelined_seq=True), prog, table, seed=seed)
    for row in a["trace"][:late]:
        assert [p[0] for p in row[1:3]] + [p[0] for p in row[7:10]] == [0] * 5  # cmd, din, outputs: not valid
        assert [p[1] for p in row[4:7]] == [0, 0, 0]  # inputs: not ready
    assert a["trace"][late][1][0] == int(prog[0].kind in (isa.ENG, isa.LOAD, isa.STORE))
    assert [c[1:] for c in a["commands"]] == [c[1:] for c in full["commands"]] and a["sent"] == full["sent"]


@given(seed=st.integers(0, 2**20), n=st.integers(6, 45), stall=st.sampled_from([0.0, 0.3]))
@settings(max_examples=examples(6), deadline=None)
def test_instruction_register_takes_no_cycle(seed, n, stall):
    """The pipelined sequencer's RTL (its instruction register and prefetch) runs every program cycle for
    cycle as the RTL without it: every port and status output, every cycle."""
    cfg = CFG.replace(pipelined_units=True)
    prog, table = random_program(random.Random(seed), n, scratch_depth=cfg.scratch_depth)
    a = run_router("rtl", cfg, prog, table, seed=seed, stall=stall)
    b = run_router("rtl", cfg.replace(pipelined_seq=True), prog, table, seed=seed, stall=stall)
    assert a["trace"] == b["trace"] and a["halted"] == b["halted"]


def test_random_programs_exercise_every_kind():
    """The property above draws what it claims: every instruction kind, loops, marks and done
    marks, scratch traffic, and the engine sees the seeds advance with the loop iteration."""
    kinds = set()
    for seed in range(40):
        prog, _table = random_program(random.Random(seed), 40, scratch_depth=CFG.scratch_depth, residual=True)
        kinds |= {i.kind for i in prog}
    assert kinds == set(isa.KIND_NAMES)
    prog = [isa.eng(op=msgs.OP_FWD, seed=100).with_(seedstep=1, mark=1),
            isa.eng(op=msgs.OP_FWD, seed=200).with_(lend=1, lcount=3, ltarget=0, done=1),
            isa.Instr(isa.HALT)]
    a = run_router("cl", CFG, prog, [], seed=1)
    assert [c[3] for c in a["commands"]] == [100, 200, 101, 200, 102, 200]
