"""Cycles of one training operation of one layer on one FPGA's MAC array.

This is the *only* place the design-space tools turn a layer into cycles; when the shared
closed-form timing model (:mod:`pymtl_fp.timing`) exists, :func:`layer_cycles` should call it
instead (keep the signature: everything else in :mod:`pymtl_fp.explore` goes through here).

The engine is one array of ``rows x cols`` MAC lanes holding a ``rows``-output-channel by
``cols``-reduction tile of the weights (weight stationary), and it serves all three operations
with the same tiling:

* **FP**  ``y[k] = sum_c w[k,c] x[c]``: each row reduces along its columns;
* **BP**  ``dx[c] = sum_k w[k,c] dy[k]``: the same tile, each column reduces along the rows;
* **WG**  ``dw[k,c] += dy[k] x[c]``: the same tile, an outer product per output position.

So every operation of a conv layer with ``k`` output channels (of K) and ``ho`` output rows
(of Ho), per image and per group, costs

* ``strict``: ``ceil(k/rows) * ceil(C/cols) * R*S * ho*Wo``  (input channels on the columns);
* ``fold``:   ``ceil(k/rows) * ceil(C*R*S/cols) * ho*Wo``    (the kernel window folded onto
  the columns as well, from the line buffer -- what makes a 3-channel first layer efficient);

and the utilization model ``"fold"`` lets the address generator take the cheaper of the two per
layer (``"strict"`` forbids folding).  A fully connected layer is a conv whose kernel covers its
whole input (``C*R*S`` = input features, one output position).  Each operation adds
``rows + cols`` cycles of array fill/drain.  BP is skipped for a layer whose input is the
network input.

Non-MAC layers run on the array's column lanes (``cols`` elements per cycle): max/avg pooling
costs ``window`` cycles per ``cols`` outputs forward and one per ``cols`` inputs backward; a
residual addition costs one cycle per ``cols`` outputs forward and nothing backward (the
gradient fans out unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("fold", "strict")
OPS = ("fp", "bp", "wg")


@dataclass(frozen=True)
class ArrayShape:
    """A ``rows x cols`` MAC array (rows: output channels; cols: reduction lanes)."""

    rows: int
    cols: int

    def __post_init__(self):
        if int(self.rows) < 1 or int(self.cols) < 1:
            raise ValueError(f"array shape must be positive, not {self.rows}x{self.cols}")

    @property
    def lanes(self) -> int:
        return self.rows * self.cols

    def __str__(self) -> str:
        return f"{self.rows}x{self.cols}"

    @classmethod
    def parse(cls, text: str) -> ArrayShape:
        try:
            r, c = text.lower().split("x")
            return cls(int(r), int(c))
        except ValueError:
            raise ValueError(f"array shape must look like ROWSxCOLS (e.g. 16x192), "
                             f"not {text!r}") from None


def _cdiv(a, b):
    return -(-a // b)


def mac_op_cycles(layer, array: ArrayShape, k: int | None = None, ho: int | None = None,
                  mode: str = "fold") -> int:
    """Cycles of ONE of FP / BP / WG for ``k`` output channels and ``ho`` output rows."""
    if mode not in MODES:
        raise ValueError(f"utilization model must be one of {MODES}, not {mode!r}")
    K = layer.K
    k = K if k is None else int(k)
    if k <= 0:
        return 0
    if layer.kind == "fc":
        red_c, rs, positions = layer.in_elems, 1, 1
        tiles = _cdiv(k, array.rows)
    else:
        g = layer.groups
        red_c, rs = layer.C // g, layer.R * layer.S
        ho = layer.Ho if ho is None else int(ho)
        if ho <= 0:
            return 0
        positions = ho * layer.Wo
        per_group = K // g
        if k > per_group:   # whole groups, then the rest of one more group
            tiles = (k // per_group) * _cdiv(per_group, array.rows) + \
                _cdiv(k % per_group, array.rows)
        else:
            tiles = _cdiv(k, array.rows)
    strict = _cdiv(red_c, array.cols) * rs
    folded = _cdiv(red_c * rs, array.cols)
    inner = strict if mode == "strict" else min(strict, folded)
    return tiles * inner * positions + array.rows + array.cols


def tiled_mac_cycles(layer, array: ArrayShape, tk, tc, mode: str = "fold"):
    """Cycles of one of FP/BP/WG of a whole MAC layer processed in ``tk x tc`` channel tiles
    (arrays allowed): each tile is its own pass over the array, so small tiles waste lanes.
    With ``tk = K`` and ``tc = C`` this is :func:`mac_op_cycles` without the fill."""
    import numpy as np
    if mode not in MODES:
        raise ValueError(f"utilization model must be one of {MODES}, not {mode!r}")
    g = 1 if layer.kind == "fc" else layer.groups
    K, C = layer.K // g, (layer.in_elems if layer.kind == "fc" else layer.C // g)
    rs = 1 if layer.kind == "fc" else layer.R * layer.S
    positions = 1 if layer.kind == "fc" else layer.Ho * layer.Wo
    tc = np.asarray(tc)
    if layer.kind == "fc":      # tc counts input channels; each brings H x W features
        tc = tc * layer.in_shape[1] * layer.in_shape[2]
    tk = np.minimum(np.asarray(tk), K)
    tc = np.minimum(tc, C)
    k_part = (K // tk) * np.ceil(tk / array.rows) + np.ceil((K % tk) / array.rows)
    full_c, rest_c = C // tc, C % tc
    strict = (full_c * np.ceil(tc / array.cols) + np.ceil(rest_c / array.cols)) * rs
    folded = full_c * np.ceil(tc * rs / array.cols) + np.ceil(rest_c * rs / array.cols)
    inner = strict if mode == "strict" else np.minimum(strict, folded)
    return g * k_part * inner * positions


def eltwise_cycles(layer, array: ArrayShape, fraction: float = 1.0) -> dict:
    """FP/BP/WG cycles of a pooling or addition layer (its share ``fraction``)."""
    if fraction <= 0:
        return {"fp": 0, "bp": 0, "wg": 0}
    if layer.kind == "pool":
        fp = _cdiv(round(layer.out_elems * fraction) * layer.R * layer.S, array.cols)
        bp = _cdiv(round(layer.in_elems * fraction), array.cols)
        return {"fp": fp, "bp": bp, "wg": 0}
    if layer.kind == "add":
        return {"fp": _cdiv(round(layer.out_elems * fraction), array.cols), "bp": 0,
                "wg": 0}
    raise ValueError(f"layer {layer.name!r} ({layer.kind}) has MACs; use mac_op_cycles")


def layer_cycles(layer, array: ArrayShape, needs_dx: bool = True, k: int | None = None,
                 ho: int | None = None, mode: str = "fold") -> dict:
    """FP, BP and WG cycles per image of (a share of) one layer: ``{"fp":, "bp":, "wg":}``.

    ``k`` / ``ho``: the share's output channels / output rows (default: the whole layer).
    """
    if layer.has_macs:
        c = mac_op_cycles(layer, array, k, ho, mode)
        return {"fp": c, "bp": c if needs_dx else 0, "wg": c}
    frac = 1.0
    if k is not None:
        frac *= k / layer.K
    if ho is not None:
        frac *= ho / layer.Ho
    return eltwise_cycles(layer, array, frac)


def total_cycles(layer, array, needs_dx=True, k=None, ho=None, mode="fold") -> int:
    return sum(layer_cycles(layer, array, needs_dx, k, ho, mode).values())
