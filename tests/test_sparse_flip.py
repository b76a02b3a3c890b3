"""The sparse clock edge (:mod:`pymtl_fp.sparse_flip`) leaves every signal of a simulated RTL model
as PyMTL3's own edge does, at every cycle, and really flips sparsely."""

import numpy as np
import pytest
from pymtl3 import DefaultPassGroup

from pymtl_fp import sparse_flip
from pymtl_fp.engine import program
from pymtl_fp.engine.cases import validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.engine.EngineRTL import EngineRTL
from pymtl_fp.tb.engine_harness import drive, random_case

CFG = preset("tiny")


def _model(sparse: bool):
    was = sparse_flip._ORIGINAL is not None
    (sparse_flip.install if sparse else sparse_flip.uninstall)()
    try:
        m = EngineRTL(CFG)
        m.elaborate()
        m.apply(DefaultPassGroup())
    finally:
        (sparse_flip.install if was else sparse_flip.uninstall)()
    return m


def _recorded(m):
    """``m`` with a ``sim_tick`` that appends every signal's value to ``m.states`` after the edge."""
    objects = [entry[-1] for entry in m._sim.signal_object_mapping.values()]
    m.states = []
    tick = m.sim_tick

    def recording_tick():
        tick()
        m.states.append(tuple(int(o.to_bits()) if hasattr(o, "to_bits") else int(o) for o in objects))

    m.sim_tick = recording_tick
    return m


def _double_buffered(m):
    return [entry[-1] for sig, entry in m._sim.signal_object_mapping.items() if sig._dsl.needs_double_buffer]


@pytest.mark.rtl
@pytest.mark.parametrize("op", ["fwd", "bwd_weight"])
def test_every_signal_at_every_cycle_equals_pymtl3s_own_edge(op):
    case = validate_case(CFG, op, random_case(CFG, op, np.random.default_rng(3), c=2, k=2, h=4, w=4))
    prog = program.build(CFG, op, case)
    runs = []
    for sparse in (False, True):
        m = _recorded(_model(sparse))
        out, timing = drive(m, CFG, prog, stall=(0.3, 0.3, 0.3), seed=5)
        runs.append((m, np.asarray(out), timing))
    (ref, ref_out, ref_t), (got, got_out, got_t) = runs
    assert len(got.states) == len(ref.states) > 100
    first = next((i for i, (a, b) in enumerate(zip(ref.states, got.states)) if a != b), None)
    assert first is None, f"signals differ from PyMTL3's edge at cycle {first}"
    assert np.array_equal(got_out, ref_out) and got_t == ref_t
    # ... and the sparse model really records its writes instead of flipping every signal
    written = [o for o in _double_buffered(got) if type(o).__name__.startswith("Written")]
    assert len(written) > 0.9 * len(_double_buffered(got))
    assert not any(type(o).__name__.startswith("Written") for o in _double_buffered(ref))
