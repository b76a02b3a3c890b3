"""A used RTL model returned to its power-on state is a new model: every signal and memory word by
name, and the results and cycles of the next operation (the fuzz campaigns' RTL models rely on it)."""

import numpy as np
import pytest
from pymtl3 import DefaultPassGroup

from pymtl_fp.engine import program
from pymtl_fp.engine.cases import validate_case
from pymtl_fp.engine.config import preset
from pymtl_fp.engine.EngineRTL import EngineRTL
from pymtl_fp.power_on import PowerOnState
from pymtl_fp.tb.engine_harness import drive, random_case

CFG = preset("tiny")


def _new():
    m = EngineRTL(CFG)
    m.elaborate()
    m.apply(DefaultPassGroup())
    return m


def _values(m) -> dict:
    """Every signal's value by its name, as integers (BitStructs as their bits)."""
    return {repr(sig): int(entry[-1].to_bits()) if hasattr(entry[-1], "to_bits") else int(entry[-1])
            for sig, entry in m._sim.signal_object_mapping.items()}


def _run(m, op, seed):
    case = validate_case(CFG, op, random_case(CFG, op, np.random.default_rng(seed), c=2, k=2, h=4, w=4))
    prog = program.build(CFG, op, case)
    return drive(m, CFG, prog, stall=(0.3, 0.3, 0.3), seed=seed)


@pytest.mark.rtl
def test_restored_model_equals_a_new_one_signal_by_signal_and_in_its_next_run():
    used = _new()
    power = PowerOnState(used)
    fresh_values = _values(_new())
    assert _values(used) == fresh_values
    _run(used, "fwd", 1)
    assert _values(used) != fresh_values  # the run left state behind (buffers, counters)
    power.restore()
    assert _values(used) == fresh_values
    out_used, t_used = _run(used, "bwd_data", 2)
    out_new, t_new = _run(_new(), "bwd_data", 2)
    assert np.array_equal(np.asarray(out_used), np.asarray(out_new)) and t_used == t_new


def test_a_model_without_a_simulator_is_refused():
    m = EngineRTL(CFG)
    m.elaborate()
    with pytest.raises(ValueError, match="no simulator"):
        PowerOnState(m)
