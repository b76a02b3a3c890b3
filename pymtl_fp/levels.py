"""The simulation levels, defined once for every unit (engine, link, router, node, cluster).

* ``fl`` -- functional: the golden model computes a whole command once its data has arrived;
* ``cl`` -- cycle level: the same values, released at the cycle the timing model predicts;
* ``rtl`` -- the synthesizable PyMTL3 model, simulated by PyMTL3 in Python;
* ``verilator`` -- the same RTL translated to Verilog and simulated by Verilator.

Each unit keeps one registry from level to class (``pymtl_fp.engine.registry.ENGINE_LEVELS``,
``pymtl_fp.link.LINK_LEVELS``, ``pymtl_fp.cluster.hw.node.NODE_LEVELS``); ``verilator`` is the ``rtl``
class translated and imported, so registries list ``fl``, ``cl`` and ``rtl``.
"""

from __future__ import annotations

LEVELS = ("fl", "cl", "rtl", "verilator")
#: levels with a cycle model (FL releases results whenever its data is complete)
TIMED_LEVELS = ("cl", "rtl", "verilator")
#: levels whose components PyMTL3 simulates in Python
PYTHON_LEVELS = ("fl", "cl", "rtl")
#: levels built from the RTL
RTL_LEVELS = ("rtl", "verilator")


def check_level(level: str, allowed=LEVELS, what: str = "level") -> str:
    """``level`` if it is one of ``allowed``, else a ``ValueError`` naming the choices."""
    if level not in allowed:
        raise ValueError(f"unknown {what} {level!r}; choose one of {', '.join(allowed)}")
    return level


def python_level(level: str) -> str:
    """The PyMTL3 class level that implements ``level`` (``verilator`` -> ``rtl``)."""
    return "rtl" if level == "verilator" else level
