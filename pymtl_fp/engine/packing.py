"""Tap packing: a conv layer with few input channels run as a ``1 x 1`` conv whose input lanes
carry kernel taps (compiler level; the engine is unchanged and needs no rebuild).

The engine's array multiplies ``P`` input lanes (channels) by ``P`` output lanes per cycle.  A
layer with ``C < P`` input channels -- the first layer of every CNN: 1 channel for digits, 3 for
RGB -- leaves ``P - C`` input lanes idle on every step (VGG-16 conv1_1 on a 16 x 16 array: 18.7 %
of the MACs useful).  Packed, input lane ``j`` of output position ``(ho, wo)`` carries channel
``c`` at tap ``(r, s)``, ``j = (c*R + r)*S + s``: the packed input ``xp`` has ``C*R*S`` channels
on the ``Ho x Wo`` output map (zeros where the tap falls on padding), the packed weights are
``w.reshape(K, C*R*S, 1, 1)``, and the layer is the engine's ordinary ``fwd`` / ``bwd_weight``
on them (:func:`pymtl_fp.timing.tap_packed_shape`): ``ceil(C*R*S/P)`` channel tiles per output
position instead of ``R*S`` taps of ``ceil(C/P)`` tiles.

Bit-exact with the unpacked layer, in both rounding modes: accumulators are exact integers, so
summing the same products in another order gives the same sums; the stochastic-rounding index of
an element is its flat index (:func:`pymtl_fp.numerics.requantize`), and the flat index of
``dw[k, c, r, s]`` in ``(K, C, R, S)`` equals that of ``dw[k, (c*R + r)*S + s]`` in
``(K, C*R*S, 1, 1)`` (``y`` keeps its shape).  ``update`` is elementwise, so packed weights are
updated in the packed layout and unpacked only when they leave the engine.

What it costs and where it applies: the packed input holds every input element up to ``R*S /
stride^2`` times (the host or the previous stage writes it: it is made off the engine), so the
stream and buffer words of the input grow by that factor.  Only a layer whose input comes from
off the engine can be packed, and such a layer needs no ``bwd_data`` (nothing upstream to train):
``bwd_data`` of a packed layer is refused (it would need a col2im sum on the engine).
:func:`pymtl_fp.timing.tap_packing_pays` says whether packing shortens a layer's training work.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.golden.geometry import conv_out_size

#: operations a tap-packed layer runs (no bwd_data: see the module docstring)
PACKED_OPS = ("fwd", "bwd_weight")


def pack_input(x, r: int, s: int, stride: int = 1, pad: int = 0) -> np.ndarray:
    """``(N, C, H, W)`` -> ``(N, C*R*S, Ho, Wo)``: channel ``(c*R + i)*S + j`` holds input
    channel ``c`` at tap ``(i, j)`` of every output position (0 on padding)."""
    x = np.asarray(x, dtype=np.int64)
    n, c, h, w = x.shape
    ho = conv_out_size(h, r, stride, pad, "input height")
    wo = conv_out_size(w, s, stride, pad, "input width")
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
    out = np.empty((n, c, r, s, ho, wo), dtype=np.int64)
    for i in range(r):
        for j in range(s):
            out[:, :, i, j] = xp[:, :, i:i + stride * (ho - 1) + 1:stride, j:j + stride * (wo - 1) + 1:stride]
    return out.reshape(n, c * r * s, ho, wo)


def pack_weight(w) -> np.ndarray:
    """``(K, C, R, S)`` -> ``(K, C*R*S, 1, 1)`` (the same elements in the same flat order)."""
    w = np.asarray(w, dtype=np.int64)
    return w.reshape(w.shape[0], -1, 1, 1)


def unpack_weight(wp, w_shape) -> np.ndarray:
    """The inverse of :func:`pack_weight`."""
    return np.asarray(wp, dtype=np.int64).reshape(tuple(int(v) for v in w_shape))


def pack_case(op: str, case: dict) -> dict:
    """An engine case of ``op`` (``fwd`` or ``bwd_weight``) on the tap-packed layer: the same
    results (after :func:`unpack_results`) as ``case`` on the layer itself."""
    if op not in PACKED_OPS:
        raise ValueError(f"tap packing runs {' and '.join(PACKED_OPS)} only, not {op!r} "
                         f"(a packed layer is a first layer: it needs no bwd_data)")
    packed = dict(case)
    w_shape = tuple(int(v) for v in (case["w"].shape if op == "fwd" else case["w_shape"]))
    _k, _c, r, s = w_shape
    packed["x"] = pack_input(case["x"], r, s, int(case["stride"]), int(case["pad"]))
    packed.update(stride=1, pad=0)
    if op == "fwd":
        packed["w"] = pack_weight(case["w"])
    else:
        packed["w_shape"] = np.array([w_shape[0], w_shape[1] * r * s, 1, 1])
    return packed


def unpack_results(op: str, results: dict, case: dict) -> dict:
    """Results of :func:`pack_case`'s case in the shapes of the layer itself."""
    out = dict(results)
    if op == "bwd_weight":
        out["dw"] = unpack_weight(results["dw"], case["w_shape"])
    return out
