"""Bit-exact max pooling with argmax routing (the engine's ``pool_fwd`` / ``pool_bwd``).

Windows are ``k x k`` with stride ``k`` (non-overlapping); ``H`` and ``W`` must be divisible by
``k``.  ``argmax`` holds, per output element, the position of the maximum inside its window in
row-major order (``0 .. k*k-1``, i.e. ``dr * k + dc``); ties go to the first maximum in that
order.  The backward pass sends each gradient to that position and zero elsewhere.  No rounding
is involved, so these functions work on any integer (or, in the float reference, real) values.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.golden.geometry import check_positive_int, pool_out_size
from pymtl_fp.numerics import as_int_array


def _windows(x: np.ndarray, k: int) -> np.ndarray:
    """(N, C, H, W) -> (N, C, H/k, W/k, k*k), window elements in row-major order."""
    n, c, h, w = x.shape
    ho, wo = pool_out_size(h, k, "height"), pool_out_size(w, k, "width")
    return x.reshape(n, c, ho, k, wo, k).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, ho, wo, k * k)


def max_pool_windows(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Max and first-argmax over each window, for integer or float arrays (no checks)."""
    win = _windows(x, k)
    argmax = np.argmax(win, axis=-1)  # first occurrence of the maximum
    y = np.take_along_axis(win, argmax[..., None], axis=-1)[..., 0]
    return y, argmax.astype(np.int64)


def route_to_argmax(dy: np.ndarray, argmax: np.ndarray, k: int) -> np.ndarray:
    """Scatter each ``dy`` element to its window's ``argmax`` position (no checks)."""
    n, c, ho, wo = dy.shape
    win = np.zeros((n, c, ho, wo, k * k), dtype=dy.dtype)
    np.put_along_axis(win, argmax[..., None], dy[..., None], axis=-1)
    return win.reshape(n, c, ho, wo, k, k).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)


def _check_k(k) -> int:
    return check_positive_int(k, "pool size k")


def pool_fwd(x, *, k=2):
    """Max pool: returns ``(y, argmax)``, both (N, C, H/k, W/k) ``np.int64``."""
    x = as_int_array(x, "x")
    if x.ndim != 4:
        raise ValueError(f"x must be 4-D (N, C, H, W), got shape {x.shape}")
    return max_pool_windows(x, _check_k(k))


def pool_bwd(dy, argmax, *, k=2):
    """Route ``dy`` (N, C, Ho, Wo) to the argmax positions: returns dx (N, C, Ho*k, Wo*k)."""
    k = _check_k(k)
    dy = as_int_array(dy, "dy")
    argmax = as_int_array(argmax, "argmax")
    if dy.ndim != 4:
        raise ValueError(f"dy must be 4-D (N, C, Ho, Wo), got shape {dy.shape}")
    if argmax.shape != dy.shape:
        raise ValueError(f"argmax shape {argmax.shape} differs from dy shape {dy.shape}")
    if argmax.size and (int(argmax.min()) < 0 or int(argmax.max()) >= k * k):
        raise ValueError(f"argmax values must be in 0..{k * k - 1} for k={k}")
    return route_to_argmax(dy, argmax, k)
