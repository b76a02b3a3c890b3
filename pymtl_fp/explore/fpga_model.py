"""One FPGA of a cluster as the design-space tools see it: ``E`` identical ``P x P`` engines.

The engine is the one :mod:`pymtl_fp.engine` builds and :mod:`pymtl_fp.timing` times (closed
forms checked cycle-exactly against the RTL; ``P <= 32``, :data:`P_MAX`).  An FPGA holds ``E``
copies working on disjoint output-channel shares of each layer: a share of ``k`` output
channels is dealt out as ``ceil(k / E)`` channels per engine, and the layer takes the cycles of
the largest share, :func:`pymtl_fp.timing.explore_layer_cycles` with ``k = ceil(k / E)``
(engines left without channels idle).  Pooling layers split the same way.

The engine has no residual-addition operation; an ``add`` layer (ResNets) is costed as one
element per cycle per engine column lane (``E * P`` lanes) forward and nothing backward (the
gradient fans out unchanged) -- an assumption, not an RTL-validated figure.

:func:`engines_for` is the one place that turns a DSP budget into ``(P, E)``:
``E * P^2 <= lanes`` with ``lanes`` = usable DSPs x MACs per DSP
(:meth:`pymtl_fp.explore.devices.Device.lane_budget`), ``P = 32`` unless the budget is smaller
(then the largest ``P`` with ``P^2 <= lanes``, ``E = 1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from pymtl_fp import timing

#: the engine's largest array side (pymtl_fp.engine.config)
P_MAX = 32


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


def engine_share(k: int, E: int) -> int:
    """Output channels of the busiest engine when ``k`` channels are dealt to ``E`` engines."""
    return -(-int(k) // int(E))


def layer_cycles(layer, arr: EngineArray, needs_dx: bool = True, k: int | None = None,
                 ho: int | None = None, batch: int = 1) -> dict:
    """FP, BP and WG cycles per image of (a share of) one layer on the FPGA's engines:
    ``{"fp":, "bp":, "wg":}``.  ``k`` / ``ho``: the share's output channels / rows (default:
    the whole layer); ``batch``: images per engine command."""
    kk = layer.K if k is None else int(k)
    if kk <= 0 or (ho is not None and int(ho) <= 0):
        return {"fp": 0, "bp": 0, "wg": 0}
    if layer.kind == "add":
        frac = kk / layer.K * (1.0 if ho is None else int(ho) / layer.Ho)
        return {"fp": -(-round(layer.out_elems * frac) // (arr.E * arr.P)), "bp": 0, "wg": 0}
    return timing.explore_layer_cycles(layer, arr.P, needs_dx, engine_share(kk, arr.E), ho,
                                       batch)


def total_cycles(layer, arr: EngineArray, needs_dx=True, k=None, ho=None, batch=1) -> int:
    return sum(layer_cycles(layer, arr, needs_dx, k, ho, batch).values())


@cache
def _conv(P: int, op: str, shape: timing.ConvShape) -> int:
    return timing.conv_cycles(P, op, shape)


def tiled_layer_cycles(layer, arr: EngineArray, tk: int, tc: int, tb: int, batch_parallel: bool = False) -> dict:
    """FP, BP and WG cycles of ``tb`` images of a conv / fc layer processed in ``tk x tc``
    channel tiles (DarkFPGA-style tiling, :mod:`.design`): each tile is one command per
    engine with the tile's ``tk`` output channels dealt to the ``E`` engines, so tiles
    smaller than the array waste lanes.  For an fc layer ``tc`` counts input channels of its
    ``C x H x W`` input.  ``{"fp":, "bp":, "wg":, "fp_batch":}``; a grouped conv runs group by
    group.  With ``batch_parallel`` the forward pass runs batch-parallel (the engine's ``bp``
    mode: the ``tb`` images on the array's columns) where that takes fewer cycles
    (``fp_batch``: it does)."""
    if layer.kind not in ("conv", "fc"):
        raise ValueError(f"layer {layer.name!r} ({layer.kind}) is not tiled; use layer_cycles")
    if min(tk, tc, tb) < 1:
        raise ValueError(f"tiles must be >= 1, not tk={tk}, tc={tc}, tb={tb}")
    if layer.kind == "fc":
        g, kg, cg = 1, layer.K, layer.in_elems
        tc = tc * layer.in_shape[1] * layer.in_shape[2]
        geo = {"h": 1, "w": 1, "r": 1, "s": 1, "stride": 1, "pad": 0}
    else:
        g, kg, cg = layer.groups, layer.K // layer.groups, layer.C // layer.groups
        geo = {"h": layer.in_shape[1], "w": layer.in_shape[2], "r": layer.R, "s": layer.S,
                   "stride": layer.stride, "pad": layer.pad}
    tk, tc = min(int(tk), kg), min(int(tc), cg)
    kparts = [(tk, kg // tk)] + ([(kg % tk, 1)] if kg % tk else [])
    cparts = [(tc, cg // tc)] + ([(cg % tc, 1)] if cg % tc else [])
    def cycles(op, bp=False):
        return g * sum(nk * nc * _conv(arr.P, op, timing.ConvShape(n=int(tb), c=c, k=engine_share(k, arr.E),
                                                                     bp=bp, **geo))
                       for k, nk in kparts for c, nc in cparts)

    out = {key: cycles(op) for key, op in (("fp", "fwd"), ("bp", "bwd_data"), ("wg", "bwd_weight"))}
    fp_bp = cycles("fwd", True) if batch_parallel else None
    out["fp_batch"] = fp_bp is not None and fp_bp < out["fp"]
    if out["fp_batch"]:
        out["fp"] = fp_bp
    return out
