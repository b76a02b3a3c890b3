"""Softmax cross-entropy loss and its fixed-point gradient (the host's end of the pipeline).

This is not hardware: the cluster's host model calls exactly this function on the integer
logits it receives, so its result is bit-identical at every level by construction.  Definition:

1. ``z = logits / 2**logit_frac`` (float64; exact while ``|logits| < 2**53``);
2. ``p = softmax(z)`` per row, computed as ``exp(z - max(z)) / sum(exp(z - max(z)))``;
3. ``loss = mean_n(logsumexp(z_n) - z_n[label_n])`` (a Python float, for reporting only);
4. ``g = (p - onehot(labels)) * 2**loss_scale_log2 / N`` (``/ N`` only if ``batch_mean``);
5. ``dlogits = grad_format.quantize(g)``: ``floor(g * 2**frac + 0.5)`` (round half up), then
   saturate to the gradient format;
6. if ``logit_bits`` is given (the logits' format width), ``dlogits`` is zeroed where a logit sits
   at the top of its format and ``dlogits < 0``, or at the bottom and ``dlogits > 0``: the
   derivative of the forward saturation, one-sided (a descent step would push such a logit
   further out of range, which cannot change the loss).  Without it, saturated logits keep
   pulling the weights and low-precision training can run away.

``loss_scale_log2`` is classic loss scaling: it lifts small gradients into the range of a narrow
gradient format; the weight-update shift undoes it (see :mod:`pymtl_fp.net`).
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.golden import reference
from pymtl_fp.numerics import QFormat, _is_int, as_int_array, check_in_bits, int_range


def check_labels(labels, n: int, classes: int) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu":
        raise TypeError(f"labels must be integers, got dtype {labels.dtype}")
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {labels.shape}")
    if n and (int(labels.min()) < 0 or int(labels.max()) >= classes):
        raise ValueError(f"labels must be in 0..{classes - 1}")
    return labels.astype(np.int64)


def softmax_xent_grad(logits, labels, *, logit_frac, grad_format, batch_mean=True, loss_scale_log2=0,
                      logit_bits=None):
    """Return ``(loss: float, dlogits: np.int64 array of logits' shape)``; see the module docstring.

    ``logits``: raw integers, shape (N, K) or (N, K, 1, 1); ``labels``: (N,) in ``0..K-1``;
    ``logit_frac``: fractional bits of the logits; ``grad_format``: :class:`QFormat` of dlogits.
    """
    logits = as_int_array(logits, "logits")
    if logits.ndim == 4 and logits.shape[2:] == (1, 1):
        flat = logits.reshape(logits.shape[:2])
    elif logits.ndim == 2:
        flat = logits
    else:
        raise ValueError(f"logits must be (N, K) or (N, K, 1, 1), got shape {logits.shape}")
    n, classes = flat.shape
    if n == 0 or classes == 0:
        raise ValueError(f"logits must be non-empty, got shape {logits.shape}")
    labels = check_labels(labels, n, classes)
    if not isinstance(grad_format, QFormat):
        raise TypeError(f"grad_format must be a QFormat, got {grad_format!r}")
    if not _is_int(logit_frac) or not 0 <= logit_frac <= 62:
        raise ValueError(f"logit_frac must be an integer in 0..62, got {logit_frac!r}")
    if not _is_int(loss_scale_log2) or not -62 <= loss_scale_log2 <= 62:
        raise ValueError(f"loss_scale_log2 must be an integer in -62..62, got {loss_scale_log2!r}")
    z = flat.astype(np.float64) * 2.0**-logit_frac
    loss, g = reference.softmax_xent(z, labels, batch_mean=batch_mean)
    dlogits = grad_format.quantize(g * 2.0**loss_scale_log2)
    if logit_bits is not None:
        lo, hi = int_range(logit_bits)
        check_in_bits(flat, logit_bits, "logits")
        pushed_out = ((flat == hi) & (dlogits < 0)) | ((flat == lo) & (dlogits > 0))
        dlogits = np.where(pushed_out, 0, dlogits)
    return loss, dlogits.reshape(logits.shape)


def row_loss_grad(logits_row, label, batch: int, fmt, relu_last: bool = False) -> np.ndarray:
    """The loss gradient of one image exactly as row ``i`` of :func:`softmax_xent_grad` over a
    batch of ``batch`` images (each row depends only on its own logits and the batch size), in the
    formats of ``fmt`` (a net's precision); ``relu_last`` masks where the logits are ``<= 0``.
    What the host answers each image's logits with, before the rest of its batch has arrived."""
    row = np.asarray(logits_row, dtype=np.int64).reshape(-1)
    rep = np.repeat(row[None], batch, axis=0)
    _, g = softmax_xent_grad(rep, np.full(batch, int(label)), logit_frac=fmt.act.frac, grad_format=fmt.grad,
                             loss_scale_log2=fmt.loss_scale_log2, logit_bits=fmt.act.bits)
    g = g[0]
    return np.where(row > 0, g, 0) if relu_last else g


def batch_loss(logit_rows, labels, fmt) -> float:
    """The batch's mean loss (for reporting) on its logit rows ``(B, K)``, as the host reports it
    once every row is in."""
    loss, _ = softmax_xent_grad(np.asarray(logit_rows), labels, logit_frac=fmt.act.frac, grad_format=fmt.grad,
                                loss_scale_log2=fmt.loss_scale_log2, logit_bits=fmt.act.bits)
    return loss
