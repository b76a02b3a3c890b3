"""Row bands of a convolution (golden model): what an engine command over a band of rows computes,
and how a whole-map convolution splits into bands whose results are bit-identical to the whole map's.

FPDeep's fine-grained pipeline runs a layer on a band of rows as soon as the rows it needs have
arrived.  A *row-band* command sees a window of rows of its input-side map and computes a band of
rows of its result:

* the rows are padded by ``pt`` zero rows above the window (``pt = pad`` for a whole map, less for
  a band inside the map, whose rows above are real ones in the window), and rows past the window's
  end are zero; the columns are padded by ``pad`` as in a whole map.  Input row ``i`` of the window
  meets output row ``o`` through kernel row ``r`` when ``i = o*stride + r - pt``.
* fwd: ``ho`` output rows from an ``h``-row window (``ho`` is the band's, not ``(h + 2*pad - R) /
  stride + 1``).  bwd_data: ``dx`` over the ``h`` rows of the window from ``ho`` rows of ``dy``.
  bwd_weight: the ``dw`` and ``db`` sums over the band's ``ho`` rows of ``dy`` (a whole map's sums are
  the sums of its bands' exact accumulators, so a band's are used un-rounded, ``raw``).
* stochastic rounding indexes an element by its flat index in the *whole* result map: rows of the
  band count in a map of ``hi`` rows (the whole map's), and the band's first row ``y0`` is the
  seed's offset, ``slice_seed(seed, y0 * W)`` (:func:`pymtl_fp.numerics.slice_seed`).

:func:`fwd_window` and :func:`bwd_data_window` say which rows a band needs and its ``pt``;
:func:`bands` splits ``rows`` into bands of ``height``.  The engine's command fields of the same
names (``pt``, ``hi``, :mod:`pymtl_fp.engine.encoding`) carry them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymtl_fp.golden.conv import conv_bwd_data_acc, conv_bwd_weight_acc, conv_fwd_acc
from pymtl_fp.numerics import check_bits, check_mode, check_shift, requantize


@dataclass(frozen=True)
class Window:
    """A band's rows: result rows ``[o0, o1)`` from operand rows ``[i0, i1)``, ``pt`` zero rows
    above operand row ``i0``."""

    o0: int
    o1: int
    i0: int
    i1: int
    pt: int


def bands(rows: int, height: int) -> list:
    """``[(lo, hi)]``: ``rows`` split into bands of ``height`` rows (the last may be shorter)."""
    if rows < 1 or height < 1:
        raise ValueError(f"bands: rows and height must be >= 1, got {rows} and {height}")
    return [(lo, min(rows, lo + height)) for lo in range(0, rows, height)]


def fwd_window(H: int, R: int, stride: int, pad: int, y0: int, y1: int) -> Window:
    """The input rows that output rows ``[y0, y1)`` of a conv over ``H`` rows need (also the ``x``
    rows of bwd_weight over those ``dy`` rows)."""
    lo, hi = y0 * stride - pad, (y1 - 1) * stride - pad + R
    i0, i1 = max(0, lo), min(H, hi)
    return Window(y0, y1, i0, max(i0, i1), i0 - lo)


def bwd_data_window(H: int, Ho: int, R: int, stride: int, pad: int, x0: int, x1: int) -> Window:
    """The ``dy`` rows (of ``Ho``) that ``dx`` rows ``[x0, x1)`` gather: result rows ``[x0, x1)``,
    operand rows ``[y0, y1)``; ``pt = pad + x0 - y0*stride`` (>= 0: ``y0`` is at most ``(x0 +
    pad) / stride``, so with a kernel narrower than the stride one unused ``dy`` row may come in)."""
    y0 = max(0, min(-(-(x0 + pad - R + 1) // stride), (x0 + pad) // stride))
    y1 = min(Ho, (x1 - 1 + pad) // stride + 1)
    return Window(x0, x1, y0, max(y0, y1), pad + x0 - y0 * stride)


def _rows(x: np.ndarray, pt: int, rows: int, pad: int) -> np.ndarray:
    """``x`` with ``pt`` zero rows above, zero rows below up to ``rows`` in all (or cut to
    ``rows``), and ``pad`` zero columns on each side."""
    below = max(0, rows - pt - x.shape[2])
    xp = np.pad(x, ((0, 0), (0, 0), (pt, below), (pad, pad)))
    return xp[:, :, :rows]


def band_index(shape, hi: int) -> np.ndarray:
    """Flat index of each element of a band of shape (N, C, h, W) in a map of ``hi`` rows whose
    rows start at the band's first (the seed carries the band's offset)."""
    n, c, h, w = shape
    nn, cc, yy, xx = np.meshgrid(np.arange(n), np.arange(c), np.arange(h), np.arange(w), indexing="ij")
    return ((nn * c + cc) * int(hi) + yy) * w + xx


def _check_band(pt: int, R: int, what: str) -> None:
    if not 0 <= pt < R:
        raise ValueError(f"{what}: pt={pt} must be in 0..{R - 1} (fewer zero rows than the kernel has)")


def band_fwd_acc(x, w, b, *, stride=1, pad=0, pt, ho):
    """Exact accumulators (N, K, ho, Wo) of ``ho`` output rows from the window ``x``."""
    x, w = np.asarray(x, dtype=np.int64), np.asarray(w, dtype=np.int64)
    _check_band(pt, w.shape[2], "fwd band")
    return conv_fwd_acc(_rows(x, pt, (ho - 1) * stride + w.shape[2], pad), w, b, stride=stride, pad=0)


def band_bwd_data_acc(dy, w, x_shape, *, stride=1, pad=0, pt):
    """Exact accumulators of ``dx`` over the window of shape ``x_shape`` from the ``dy`` rows."""
    dy, w = np.asarray(dy, dtype=np.int64), np.asarray(w, dtype=np.int64)
    n, c, h, wd = (int(v) for v in x_shape)
    R = w.shape[2]
    _check_band(pt, R, "bwd_data band")
    ho = dy.shape[2]
    if ho == 0:  # no dy row reaches the window (a bottom band past a strided kernel's reach)
        return np.zeros((n, c, h, wd), dtype=np.int64)
    rows = max(pt + h, (ho - 1) * stride + R)
    ho_v = (rows - R) // stride + 1  # dy rows of the virtual map (the extra ones zero)
    dyv = np.pad(dy, ((0, 0), (0, 0), (0, ho_v - ho), (0, 0)))
    dxv = conv_bwd_data_acc(dyv, w, (n, c, rows, wd + 2 * pad), stride=stride, pad=0)
    return dxv[:, :, pt:pt + h, pad:pad + wd]


def band_bwd_weight_acc(x, dy, w_shape, *, stride=1, pad=0, pt):
    """Exact ``(dw, db)`` sums over the band's ``dy`` rows with the window ``x``."""
    x, dy = np.asarray(x, dtype=np.int64), np.asarray(dy, dtype=np.int64)
    R = int(w_shape[2])
    _check_band(pt, R, "bwd_weight band")
    xv = _rows(x, pt, (dy.shape[2] - 1) * stride + R, pad)
    return conv_bwd_weight_acc(xv, dy, w_shape, stride=stride, pad=0)


def conv_fwd_band(x, w, b, *, stride=1, pad=0, pt, ho, hi, shift, relu=False, out_bits, mode="nearest",
                  seed=0, tensor_id=0):
    """A fwd row band's ``y`` (N, K, ho, Wo), rounded as rows of a ``hi``-row map (see the module)."""
    shift, out_bits, mode = check_shift(shift), check_bits(out_bits, "out_bits"), check_mode(mode)
    acc = band_fwd_acc(x, w, b, stride=stride, pad=pad, pt=pt, ho=ho)
    y = requantize(acc, shift, out_bits, mode, seed=seed, tensor_id=tensor_id, index=band_index(acc.shape, hi))
    return np.maximum(y, 0) if relu else y


def conv_bwd_data_band(dy, w, x, *, stride=1, pad=0, pt, hi, shift, relu=False, out_bits, mode="nearest",
                       seed=0, tensor_id=0):
    """A bwd_data row band's ``dx`` over the window ``x`` (its ReLU mask), rounded as rows of a
    ``hi``-row map."""
    shift, out_bits, mode = check_shift(shift), check_bits(out_bits, "out_bits"), check_mode(mode)
    x = np.asarray(x, dtype=np.int64)
    acc = band_bwd_data_acc(dy, w, x.shape, stride=stride, pad=pad, pt=pt)
    dx = requantize(acc, shift, out_bits, mode, seed=seed, tensor_id=tensor_id, index=band_index(acc.shape, hi))
    return np.where(x > 0, dx, 0) if relu else dx


def conv_bwd_weight_band(x, dy, w_shape, *, stride=1, pad=0, pt, shift, bias_shift, out_bits, mode="nearest",
                         seed=0, tensor_id=0, bias_tensor_id=None):
    """A bwd_weight row band's ``dw`` and ``db``, each rounded (a band's own sums; a whole map's
    are the sums of its bands' :func:`band_bwd_weight_acc`)."""
    shift, out_bits, mode = check_shift(shift), check_bits(out_bits, "out_bits"), check_mode(mode)
    bias_shift = check_shift(bias_shift, "bias_shift")
    if bias_tensor_id is None:
        bias_tensor_id = tensor_id + 1
    acc_w, acc_b = band_bwd_weight_acc(x, dy, w_shape, stride=stride, pad=pad, pt=pt)
    dw = requantize(acc_w, shift, out_bits, mode, seed=seed, tensor_id=tensor_id)
    db = requantize(acc_b, bias_shift, out_bits, mode, seed=seed, tensor_id=bias_tensor_id)
    return dw, db
