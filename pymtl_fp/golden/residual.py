"""Bit-exact residual operations: the elementwise add, the gradient sum at a fork, and the global
average pool with its backward.

What it models: the arithmetic a residual network adds to the conv/pool/fc datapath, defined bit for
bit on raw fixed-point integers (``np.int64``) in the terms of :mod:`pymtl_fp.numerics`, so that a
hardware unit (an engine operation, the router's scalar unit) can implement exactly these results.

**Add (forward).**  Both operands are activations: the main branch's output and the skip (the
source layer's output, or its 1x1 projection, a conv whose forward rounds into the activation
format like every conv).  A precision has one activation format, so the two operands always have
the same ``frac``: the alignment is the identity, the sum is exact, and it is only saturated::

    y = saturate(main + skip, act.bits)            # then ReLU (max(y, 0)) if the add has one

No rounding happens.  (:func:`add_fwd` takes the two formats and refuses operands whose ``frac``
differ, with a one-line error naming the layer: the net description cannot produce them.)

**Add (backward) and the fork.**  The gradient of an add's output goes, unchanged, to both branches
(the main branch's last layer and the skip; through the projection's ``bwd_data`` when there is
one).  A tensor read by two layers (a *fork*: the source of a skip, read by the next layer and by
the add) receives one gradient contribution from each reader, every contribution already rounded
and saturated to the gradient format by the operation that produced it (same ``frac``).  The
gradient of the fork's tensor is their exact integer sum, saturated once::

    g = saturate(sum of the contributions, grad.bits)          # no rounding; order-free

Each contribution is masked by the ReLU derivative of the fork's producer (where its forward
output ``x <= 0``) by the layer that produced it -- the same mask for all of them, so masking the
sum is the same.

**Global average pool.**  Over an ``H x W`` map of ``A = H*W`` elements, division by ``A`` is a
multiplication by a fixed-point reciprocal and one requantization::

    F = 16 + ceil(log2(A))            # the reciprocal's shift (A <= 2**16 keeps F <= 32)
    M = floor(2**F / A + 1/2)         # the reciprocal, rounded half up (M = 2**(F - log2 A) if A is a power of two)
    y[n, c] = requantize(M * sum_{h,w} x[n, c, h, w], F, act.bits, mode)

For a power-of-two area this is exactly a right shift of the sum by ``log2(A)`` (``M``'s low bits
are zero): the hardware may implement that case as a shift.  ``mode`` is the forward rounding
(``nearest`` by default: half up); stochastic rounding indexes ``y`` by its flat C-order index.

**Global average pool (backward).**  Every element of a channel's map receives the channel's
gradient divided by ``A``, with the same reciprocal::

    dx[n, c, h, w] = requantize(M * dy[n, c], F, grad.bits, mode)       # masked where x <= 0 if relu

``mode`` is the gradient rounding (the training's gradient mode, ``stochastic`` by default; indexed by the flat C-order index
of ``dx``, so the elements of one map round independently: unbiased, where half up would lose
every gradient smaller than ``A/2`` units); ``relu``: the pool's input comes out of a ReLU, whose
derivative is applied here (a mean does not keep the sign of its elements).

Tensor ids of the stochastic rounding: a global average pool has no weights, so no conv/fc
layer's ids; the ``g``-th one of a net (0-based) uses ``255 - 2*g`` (forward) and ``254 - 2*g``
(backward), counted down from the top of the id space (:func:`pymtl_fp.golden.train.gap_tensor_id`).
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.numerics import (
    ACC_LIMIT,
    MAX_SHIFT,
    QFormat,
    as_int_array,
    check_bits,
    check_in_bits,
    check_mode,
    max_abs,
    requantize,
    saturate,
)

#: significant bits of the average pool's reciprocal beyond the area's own
RECIPROCAL_BITS = 16


def gap_reciprocal(area: int) -> tuple:
    """``(M, F)``: the global average pool's reciprocal of ``area`` and its shift (module doc)."""
    if not isinstance(area, (int, np.integer)) or area < 1:
        raise ValueError(f"average pool area must be a positive integer, got {area!r}")
    f = RECIPROCAL_BITS + (int(area) - 1).bit_length()
    if f > MAX_SHIFT:
        raise ValueError(f"average pool area {area} too large: at most {2**(MAX_SHIFT - RECIPROCAL_BITS)}")
    return (2 * 2**f + area) // (2 * area), f  # floor(2**F / A + 1/2)


def _check_product(bound: int, m: int, what: str) -> None:
    """``ValueError`` unless ``bound * m`` (a bound on the accumulator) stays below ``ACC_LIMIT``."""
    if bound * m >= ACC_LIMIT:
        raise ValueError(f"{what} accumulator could reach {bound * m} >= 2**62: operands too wide")


def _array4(a, what: str) -> np.ndarray:
    arr = as_int_array(a, what)
    if arr.ndim != 4:
        raise ValueError(f"{what} must be 4-D (N, C, H, W), got shape {arr.shape}")
    return arr


def add_fwd(main, skip, *, bits, relu=False, main_format: QFormat | None = None,
            skip_format: QFormat | None = None, name: str = "add"):
    """``saturate(main + skip, bits)`` (then ReLU): the residual add of two activation tensors of one
    shape.  Given, ``main_format`` and ``skip_format`` must have the same ``frac`` (the operands
    are aligned) and check that the operands lie in them."""
    main, skip = as_int_array(main, f"{name}: main"), as_int_array(skip, f"{name}: skip")
    if main.shape != skip.shape:
        raise ValueError(f"{name}: the residual branches' shapes disagree: main {main.shape}, skip {skip.shape}")
    if main_format is not None and skip_format is not None:
        if main_format.frac != skip_format.frac:
            raise ValueError(f"{name}: the add's operands have different formats ({main_format} and "
                             f"{skip_format}); both branches must end in the activation format")
        check_in_bits(main, main_format.bits, f"{name}: main")
        check_in_bits(skip, skip_format.bits, f"{name}: skip")
    y = saturate(main + skip, check_bits(bits))
    return np.maximum(y, 0) if relu else y


def fork_sum(contributions, *, bits):
    """The gradient of a tensor read by several layers: the exact sum of their contributions (each
    already in the gradient format), saturated once to ``bits``."""
    contributions = [as_int_array(c, "gradient contribution") for c in contributions]
    if not contributions:
        raise ValueError("a fork needs at least one gradient contribution")
    shape = contributions[0].shape
    if any(c.shape != shape for c in contributions):
        raise ValueError(f"gradient contributions of different shapes: {[c.shape for c in contributions]}")
    return saturate(np.sum(contributions, axis=0), check_bits(bits))


def gap_fwd(x, *, out_bits, mode="nearest", seed=0, tensor_id=0):
    """Global average pool of ``x`` (N, C, H, W): (N, C, 1, 1), rounded as the module doc defines."""
    x = _array4(x, "x")
    m, f = gap_reciprocal(x.shape[2] * x.shape[3])
    _check_product(max_abs(x) * x.shape[2] * x.shape[3], m, "average pool")
    acc = x.sum(axis=(2, 3), keepdims=True) * np.int64(m)
    return requantize(acc, f, check_bits(out_bits, "out_bits"), check_mode(mode), seed=seed, tensor_id=tensor_id)


def gap_bwd(dy, x, *, out_bits, relu=False, mode="nearest", seed=0, tensor_id=0):
    """The global average pool's input gradient: ``dy`` (N, C, 1, 1) spread over ``x``'s (N, C, H, W)
    shape, divided by the area as the module doc defines; zeroed where ``x <= 0`` if ``relu``."""
    x = _array4(x, "x")
    dy = _array4(dy, "dy")
    n, c, h, w = x.shape
    if dy.shape != (n, c, 1, 1):
        raise ValueError(f"dy shape {dy.shape} does not match the pool's output shape {(n, c, 1, 1)}")
    m, f = gap_reciprocal(h * w)
    _check_product(max_abs(dy), m, "average pool backward")
    acc = np.broadcast_to(dy * np.int64(m), x.shape)
    dx = requantize(acc, f, check_bits(out_bits, "out_bits"), check_mode(mode), seed=seed, tensor_id=tensor_id)
    return np.where(x > 0, dx, 0) if relu else dx
