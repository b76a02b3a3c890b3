"""One FPGA of a cluster as the design-space tools see it: ``E`` identical ``P x P`` engines.

The engine is the one :mod:`pymtl_fp.engine` builds (``P <= 32``, :data:`P_MAX`, the engine's
``MAX_ARRAY_SIDE``).  An FPGA holds ``E`` copies working on disjoint output-channel shares of each
layer; what a layer costs on them (:func:`layer_cycles`, :func:`tiled_layer_cycles`,
:func:`engine_share`) is the cost model's, :mod:`pymtl_fp.cost.layer`, built on the engine's closed
forms checked cycle-exactly against the RTL, and is named here for the design-space tools.

:func:`engines_for` is the one place that turns a DSP budget into ``(P, E)``:
``E * P^2 <= lanes`` with ``lanes`` = usable DSPs x MACs per DSP
(:meth:`pymtl_fp.explore.devices.Device.lane_budget`), ``P = 32`` unless the budget is smaller
(then the largest ``P`` with ``P^2 <= lanes``, ``E = 1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pymtl_fp.cost.layer import engine_share, layer_cycles, tiled_layer_cycles, total_cycles
from pymtl_fp.engine.config import MAX_ARRAY_SIDE as P_MAX

__all__ = ["P_MAX", "EngineArray", "engine_share", "engines_for", "layer_cycles", "tiled_layer_cycles",
           "total_cycles"]


class DeviceError(ValueError):
    """An unknown or malformed device description, or a part that holds no engine."""


@dataclass(frozen=True)
class EngineArray:
    """``E`` engines of ``P x P`` MAC lanes on one FPGA."""

    P: int
    E: int = 1

    def __post_init__(self):
        if not (isinstance(self.P, int) and isinstance(self.E, int)) or not 1 <= self.P <= P_MAX \
                or self.E < 1:
            raise ValueError(f"engine array needs 1 <= P <= {P_MAX} and E >= 1, "
                             f"not P={self.P!r}, E={self.E!r}")

    @property
    def lanes(self) -> int:
        return self.E * self.P * self.P

    def __str__(self) -> str:
        return f"{self.E}x{self.P}"

    @classmethod
    def of_engine(cls, ecfg, E: int = 1) -> EngineArray:
        """``E`` copies of an engine build (:class:`~pymtl_fp.engine.config.EngineConfig`: its ``P``)."""
        return cls(ecfg.P, E)

    @classmethod
    def parse(cls, text: str) -> EngineArray:
        """``"ExP"``: ``E`` engines of ``P x P`` (e.g. ``6x32``)."""
        try:
            e, p = text.lower().split("x")
            return cls(int(p), int(e))
        except ValueError as exc:
            raise ValueError(f"engine array must look like ENGINESxP with P <= {P_MAX} "
                             f"(e.g. 6x32), not {text!r} ({exc})") from None


def engines_for(lanes: int, p_max: int = P_MAX) -> EngineArray:
    """The engines a budget of ``lanes`` MAC lanes holds (see the module docstring)."""
    if lanes < 1:
        raise ValueError(f"lane budget must be >= 1, not {lanes!r}")
    P = min(p_max, math.isqrt(int(lanes)))
    return EngineArray(P, int(lanes) // (P * P))
