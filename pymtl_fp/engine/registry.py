"""The engine's registry: level -> class (``verilator`` is ``EngineRTL`` translated and imported).

One lookup for every user (the test harness, the fuzz target, the node): adding a level means one
entry here."""

from __future__ import annotations

from pymtl_fp.engine.EngineCL import EngineCL
from pymtl_fp.engine.EngineFL import EngineFL
from pymtl_fp.engine.EngineRTL import EngineRTL
from pymtl_fp.levels import LEVELS, check_level, python_level

ENGINE_LEVELS = {"fl": EngineFL, "cl": EngineCL, "rtl": EngineRTL}


def engine_class(level: str):
    """The PyMTL3 class of the engine at ``level``."""
    return ENGINE_LEVELS[python_level(check_level(level, LEVELS, "engine level"))]
