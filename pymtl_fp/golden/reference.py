"""Float64 reference of the golden model's operations: same shapes, no rounding, no saturation.

Used as the oracle of the property tests (on integer-valued inputs float64 is exact while every
partial sum stays below ``2**53``), for finite-difference checks, and for the float64 baseline of
the training study.  The algorithms deliberately differ from the integer ones: forward and
weight gradients use a sliding-window view and ``tensordot``; the data gradient is computed as a
stride-dilated, fully padded correlation with the flipped, transposed kernel.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from pymtl_fp.golden.pool import max_pool_windows, route_to_argmax


def _windows(x, kernel, stride, pad):
    """(N, C, H, W) -> (N, C, Ho, Wo, R, S) windows of the zero-padded input."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    return sliding_window_view(xp, kernel, axis=(2, 3))[:, :, ::stride, ::stride]


def conv_fwd(x, w, b=None, *, stride=1, pad=0, relu=False):
    """``conv(x, w) + b`` (then ReLU), shapes as :func:`pymtl_fp.golden.conv_fwd`."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    win = _windows(x, w.shape[2:], stride, pad)
    y = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)
    if b is not None:
        y = y + np.asarray(b, dtype=np.float64)[None, :, None, None]
    return np.maximum(y, 0.0) if relu else y


def conv_bwd_data(dy, w, x, *, stride=1, pad=0, relu=False):
    """Gradient w.r.t. the conv input ``x`` (N, C, H, W); zeroed where ``x <= 0`` if ``relu``."""
    dy = np.asarray(dy, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    x = np.asarray(x)
    n, _, h, wd = x.shape
    k, _, r, s = w.shape
    ho, wo = dy.shape[2:]
    dilated = np.zeros((n, k, (ho - 1) * stride + 1, (wo - 1) * stride + 1))
    dilated[:, :, ::stride, ::stride] = dy
    w_flip = w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)  # (C, K, R, S)
    full = np.pad(dilated, ((0, 0), (0, 0), (r - 1, r - 1), (s - 1, s - 1)))
    dxp = conv_fwd(full, w_flip)  # gradient w.r.t. the padded input, minus unused tail rows
    tail_h, tail_w = h + 2 * pad - dxp.shape[2], wd + 2 * pad - dxp.shape[3]
    dxp = np.pad(dxp, ((0, 0), (0, 0), (0, tail_h), (0, tail_w)))
    dx = dxp[:, :, pad : pad + h, pad : pad + wd]
    return np.where(x > 0, dx, 0.0) if relu else dx


def conv_bwd_weight(x, dy, w_shape, *, stride=1, pad=0):
    """``(dw, db)``: gradients w.r.t. the weights (KCRS) and the bias (K,)."""
    x = np.asarray(x, dtype=np.float64)
    dy = np.asarray(dy, dtype=np.float64)
    win = _windows(x, tuple(w_shape[2:]), stride, pad)
    dw = np.tensordot(dy, win, axes=([0, 2, 3], [0, 2, 3]))  # (K, C, R, S)
    return dw, dy.sum(axis=(0, 2, 3))


def pool_fwd(x, *, k=2):
    """Max pool ``(y, argmax)`` on real values, same tie rule as the integer model."""
    return max_pool_windows(np.asarray(x, dtype=np.float64), k)


def pool_bwd(dy, argmax, *, k=2):
    return route_to_argmax(np.asarray(dy, dtype=np.float64), np.asarray(argmax), k)


def softmax_xent(z, labels, *, batch_mean=True):
    """``(loss, dz)`` of the mean (or summed, ``batch_mean=False``) softmax cross-entropy.

    ``loss`` is always the batch mean; ``dz = (softmax(z) - onehot) / N`` (or without ``/ N``).
    """
    z = np.asarray(z, dtype=np.float64)
    labels = np.asarray(labels)
    n = z.shape[0]
    shifted = z - z.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    p = e / total
    rows = np.arange(n)
    loss = float(np.mean(np.log(total[:, 0]) - shifted[rows, labels]))
    g = p.copy()
    g[rows, labels] -= 1.0
    return loss, (g / n if batch_mean else g)


def sgd_update(w, dw, *, lr, momentum=None, velocity=None):
    """``w - lr * dw``; with ``momentum`` mu: ``v = mu * v + dw; w - lr * v`` -> ``(w, v)``."""
    w = np.asarray(w, dtype=np.float64)
    dw = np.asarray(dw, dtype=np.float64)
    if momentum is None:
        return w - lr * dw
    v = momentum * (np.zeros_like(w) if velocity is None else velocity) + dw
    return w - lr * v, v


def add_fwd(main, skip, *, relu=False):
    """The residual add ``main + skip`` (then ReLU)."""
    y = np.asarray(main, dtype=np.float64) + np.asarray(skip, dtype=np.float64)
    return np.maximum(y, 0.0) if relu else y


def gap_fwd(x):
    """Global average pool: the mean of each channel's map, (N, C, 1, 1)."""
    return np.asarray(x, dtype=np.float64).mean(axis=(2, 3), keepdims=True)


def gap_bwd(dy, x_shape):
    """The global average pool's input gradient: ``dy / (H*W)`` on every element of the map."""
    h, w = x_shape[2:]
    return np.broadcast_to(np.asarray(dy, dtype=np.float64) / (h * w), tuple(x_shape)).copy()
