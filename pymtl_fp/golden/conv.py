"""Bit-exact integer convolution: forward, backward-data and backward-weight (and FC wrappers).

What it models: the engine's one MAC array running its three conv loop nests.  Activations are
NCHW, weights KCRS, all raw fixed-point integers (``np.int64``).  Products are summed exactly
(``*_acc`` functions return those accumulators: formed in float64 -- BLAS -- where a bound on every
partial sum shows float64 holds them all exactly, in int64 otherwise); the result is rounded once by
:func:`pymtl_fp.numerics.requantize`.  Stochastic rounding indexes each element by its flat
C-order position in the whole result tensor (``dx`` has ``x``'s shape, ``dw`` KCRS, ``db`` K).

ReLU convention (used consistently by :func:`pymtl_fp.golden.train.train_step`): ``conv_fwd``
applies ReLU to its own output; ``conv_bwd_data(..., relu=True)`` applies the derivative of the
ReLU that produced this layer's *input*: ``dx`` is zeroed where the forward input ``x <= 0``
(``x = relu(a)`` is ``<= 0`` exactly where ``a <= 0``, so passing the activation or the
pre-activation gives the same mask; ReLU'(0) is taken as 0).

A fully connected layer is a conv whose kernel covers its whole input (stride 1, no padding):
``fc_fwd``/``fc_bwd_data``/``fc_bwd_weight`` take ``(N, F)`` or ``(N, C, H, W)`` inputs and
``(K, F)`` or ``(K, C, H, W)`` weights and call the conv functions.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.golden.geometry import check_stride_pad, conv_out_size
from pymtl_fp.numerics import (
    ACC_LIMIT,
    as_int_array,
    check_bits,
    check_in_bits,
    check_mode,
    check_shift,
    max_abs,
    requantize,
)


def _array4(a, what: str) -> np.ndarray:
    arr = as_int_array(a, what)
    if arr.ndim != 4:
        raise ValueError(f"{what} must be 4-D, got shape {arr.shape}")
    return arr


def _geometry(x_shape, w_shape, stride, pad):
    """Validate a conv problem; return ``(stride, pad, Ho, Wo)``."""
    c, h, wd = x_shape[1:]
    cw, r, s = w_shape[1:]
    if c != cw:
        raise ValueError(f"input has {c} channels but the weights expect {cw} (w shape {tuple(w_shape)})")
    if min(x_shape) < 1 or min(w_shape) < 1:
        raise ValueError(f"empty conv operand: x {tuple(x_shape)}, w {tuple(w_shape)}")
    stride, pad = check_stride_pad(stride, pad, (r, s))
    ho = conv_out_size(h, r, stride, pad, "input height")
    wo = conv_out_size(wd, s, stride, pad, "input width")
    return stride, pad, ho, wo


#: below this bound on every partial sum, float64 holds every integer exactly (53-bit significand)
FLOAT_EXACT = 2**53


def _sum_dtype(bound: int, what: str):
    """The dtype the sums are formed in: ``float64`` (BLAS products, several times faster than
    integer ``einsum``) when ``bound`` -- a bound on the magnitude of every partial sum, in any
    order -- is below :data:`FLOAT_EXACT`, so that every partial sum is an integer float64 holds
    exactly; ``int64`` up to ``2**62``; beyond, an error."""
    if bound >= ACC_LIMIT:
        raise ValueError(
            f"{what} accumulator could reach {bound} >= 2**62: operand values too large for "
            "exact int64 accumulation"
        )
    return np.float64 if bound < FLOAT_EXACT else np.int64


def _einsum(spec, a, b):
    return np.einsum(spec, a, b, optimize=a.dtype == np.float64)


def _window(xp, r, s, stride, ho, wo):
    """The strided view of padded input seen by kernel tap ``(r, s)``: shape (N, C, Ho, Wo)."""
    return xp[:, :, r : r + stride * (ho - 1) + 1 : stride, s : s + stride * (wo - 1) + 1 : stride]


def _pad(x, pad):
    return np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x


def conv_fwd_acc(x, w, b=None, *, stride=1, pad=0, x_bits=None, w_bits=None, b_bits=None):
    """Exact accumulators ``conv(x, w) + b`` of shape (N, K, Ho, Wo) (no rounding)."""
    x = _array4(x, "x")
    w = _array4(w, "w")
    stride, pad, ho, wo = _geometry(x.shape, w.shape, stride, pad)
    k, c, r, s = w.shape
    if b is None:
        b = np.zeros(k, dtype=np.int64)
    b = as_int_array(b, "b")
    if b.shape != (k,):
        raise ValueError(f"bias must have shape ({k},), got {b.shape}")
    check_in_bits(x, x_bits, "x")
    check_in_bits(w, w_bits, "w")
    check_in_bits(b, b_bits, "b")
    dt = _sum_dtype(c * r * s * max_abs(x) * max_abs(w) + max_abs(b), "forward")
    xp, w = _pad(x, pad).astype(dt), w.astype(dt)
    acc = np.zeros((x.shape[0], k, ho, wo), dtype=dt)
    for i in range(r):
        for j in range(s):
            acc += _einsum("nchw,kc->nkhw", _window(xp, i, j, stride, ho, wo), w[:, :, i, j])
    return acc.astype(np.int64) + b[None, :, None, None]


def conv_fwd(x, w, b, *, stride=1, pad=0, shift, relu=False, out_bits, mode="nearest", seed=0,
             tensor_id=0, x_bits=None, w_bits=None, b_bits=None):
    """``y = requantize(conv(x, w) + b, shift)``, then ReLU if ``relu``.

    ``x`` (N, C, H, W), ``w`` (K, C, R, S), ``b`` (K,) in accumulator units (``frac`` of x plus
    ``frac`` of w); zero padding ``pad`` on every side.  Returns (N, K, Ho, Wo) ``np.int64`` with
    ``Ho = (H + 2*pad - R)//stride + 1``.  ``x_bits``/``w_bits``/``b_bits``, when given, check
    that the operands lie in their formats.
    """
    shift, out_bits, mode = check_shift(shift), check_bits(out_bits, "out_bits"), check_mode(mode)
    acc = conv_fwd_acc(x, w, b, stride=stride, pad=pad, x_bits=x_bits, w_bits=w_bits, b_bits=b_bits)
    y = requantize(acc, shift, out_bits, mode, seed=seed, tensor_id=tensor_id)
    return np.maximum(y, 0) if relu else y


def conv_bwd_data_acc(dy, w, x_shape, *, stride=1, pad=0, dy_bits=None, w_bits=None):
    """Exact accumulators of the transposed conv: ``dx[n,c,h,w] = sum dy[n,k,ho,wo] * w[k,c,r,s]``
    over ``h = ho*stride + r - pad``, ``w = wo*stride + s - pad``; shape ``x_shape``."""
    dy = _array4(dy, "dy")
    w = _array4(w, "w")
    x_shape = tuple(int(v) for v in x_shape)
    if len(x_shape) != 4:
        raise ValueError(f"x shape must be 4-D, got {x_shape}")
    stride, pad, ho, wo = _geometry(x_shape, w.shape, stride, pad)
    n, c, h, wd = x_shape
    k, _, r, s = w.shape
    if dy.shape != (n, k, ho, wo):
        raise ValueError(f"dy shape {dy.shape} does not match the forward output shape {(n, k, ho, wo)}")
    check_in_bits(dy, dy_bits, "dy")
    check_in_bits(w, w_bits, "w")
    dt = _sum_dtype(k * r * s * max_abs(dy) * max_abs(w), "backward-data")
    dy, w = dy.astype(dt), w.astype(dt)
    dxp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), dtype=dt)
    for i in range(r):
        for j in range(s):
            _window(dxp, i, j, stride, ho, wo)[...] += _einsum("nkhw,kc->nchw", dy, w[:, :, i, j])
    return dxp[:, :, pad : pad + h, pad : pad + wd].astype(np.int64)


def conv_bwd_data(dy, w, x, *, stride=1, pad=0, shift, relu=False, out_bits, mode="nearest", seed=0,
                  tensor_id=0, dy_bits=None, w_bits=None):
    """``dx = requantize(transposed_conv(dy, w), shift)`` with ``x``'s shape (N, C, H, W).

    If ``relu``: ``dx`` is then zeroed where ``x <= 0``, ``x`` being this layer's forward input
    (the output of the ReLU that produced it — or its pre-activation, same mask).  This fuses the
    ReLU derivative of the *previous* layer into this layer's backward pass.
    """
    shift, out_bits, mode = check_shift(shift), check_bits(out_bits, "out_bits"), check_mode(mode)
    x = _array4(x, "x")
    acc = conv_bwd_data_acc(dy, w, x.shape, stride=stride, pad=pad, dy_bits=dy_bits, w_bits=w_bits)
    dx = requantize(acc, shift, out_bits, mode, seed=seed, tensor_id=tensor_id)
    return np.where(x > 0, dx, 0) if relu else dx


def conv_bwd_weight_acc(x, dy, w_shape, *, stride=1, pad=0, x_bits=None, dy_bits=None):
    """Exact accumulators ``(dw, db)``: ``dw[k,c,r,s] = sum_{n,ho,wo} x_pad[n,c,ho*stride+r,
    wo*stride+s] * dy[n,k,ho,wo]`` (KCRS) and ``db[k] = sum_{n,ho,wo} dy[n,k,ho,wo]``."""
    x = _array4(x, "x")
    dy = _array4(dy, "dy")
    w_shape = tuple(int(v) for v in w_shape)
    if len(w_shape) != 4:
        raise ValueError(f"w_shape must be (K, C, R, S), got {w_shape}")
    stride, pad, ho, wo = _geometry(x.shape, w_shape, stride, pad)
    k, _, r, s = w_shape
    n = x.shape[0]
    if dy.shape != (n, k, ho, wo):
        raise ValueError(f"dy shape {dy.shape} does not match the forward output shape {(n, k, ho, wo)}")
    check_in_bits(x, x_bits, "x")
    check_in_bits(dy, dy_bits, "dy")
    dt = _sum_dtype(n * ho * wo * max_abs(x) * max_abs(dy), "backward-weight")
    xp, dyt = _pad(x, pad).astype(dt), dy.astype(dt)
    dw = np.zeros(w_shape, dtype=dt)
    for i in range(r):
        for j in range(s):
            dw[:, :, i, j] = _einsum("nchw,nkhw->kc", _window(xp, i, j, stride, ho, wo), dyt)
    return dw.astype(np.int64), dy.sum(axis=(0, 2, 3))


def conv_bwd_weight(x, dy, w_shape, *, stride=1, pad=0, shift, bias_shift, out_bits, mode="nearest",
                    seed=0, tensor_id=0, bias_tensor_id=None, x_bits=None, dy_bits=None):
    """``dw = requantize(sum_{n,positions} x * dy, shift)`` (KCRS) and
    ``db = requantize(sum_{n,ho,wo} dy, bias_shift)`` (K,), both to ``out_bits``.

    Stochastic rounding uses ``tensor_id`` for ``dw`` and ``bias_tensor_id`` (default
    ``tensor_id + 1``) for ``db``.
    """
    shift, out_bits, mode = check_shift(shift), check_bits(out_bits, "out_bits"), check_mode(mode)
    bias_shift = check_shift(bias_shift, "bias_shift")
    if bias_tensor_id is None:
        bias_tensor_id = tensor_id + 1
    acc_w, acc_b = conv_bwd_weight_acc(x, dy, w_shape, stride=stride, pad=pad, x_bits=x_bits,
                                       dy_bits=dy_bits)
    dw = requantize(acc_w, shift, out_bits, mode, seed=seed, tensor_id=tensor_id)
    db = requantize(acc_b, bias_shift, out_bits, mode, seed=seed, tensor_id=bias_tensor_id)
    return dw, db


# ---- fully connected layers: a conv whose kernel covers the whole input ----------------------

def _fc_operands(x, w):
    x = as_int_array(x, "x")
    w = as_int_array(w, "w")
    if x.ndim == 2:
        x = x.reshape(x.shape[0], x.shape[1], 1, 1)
    if w.ndim == 2:
        w = w.reshape(w.shape[0], w.shape[1], 1, 1)
    if x.ndim != 4 or w.ndim != 4:
        raise ValueError(f"fc operands must be 2-D or 4-D, got x {x.shape}, w {w.shape}")
    if x.shape[1:] != w.shape[1:]:
        if x.shape[1] * x.shape[2] * x.shape[3] == w.shape[1] * w.shape[2] * w.shape[3]:
            x = x.reshape((x.shape[0],) + w.shape[1:])
        else:
            raise ValueError(f"fc input {x.shape[1:]} does not match the weights {w.shape[1:]}")
    return x, w


def fc_fwd(x, w, b, *, shift, relu=False, out_bits, **kwargs):
    """Fully connected forward: ``conv_fwd`` with the kernel covering the input; returns (N, K)."""
    x4, w4 = _fc_operands(x, w)
    y = conv_fwd(x4, w4, b, shift=shift, relu=relu, out_bits=out_bits, **kwargs)
    return y.reshape(y.shape[0], y.shape[1])


def fc_bwd_data(dy, w, x, *, shift, relu=False, out_bits, **kwargs):
    """Fully connected backward-data; ``dy`` (N, K); returns ``dx`` with ``x``'s shape."""
    x_arr = as_int_array(x, "x")
    x4, w4 = _fc_operands(x_arr, w)
    dy4 = as_int_array(dy, "dy").reshape(-1, w4.shape[0], 1, 1)
    dx = conv_bwd_data(dy4, w4, x4, shift=shift, relu=relu, out_bits=out_bits, **kwargs)
    return dx.reshape(x_arr.shape)


def fc_bwd_weight(x, dy, w_shape, *, shift, bias_shift, out_bits, **kwargs):
    """Fully connected backward-weight; returns ``(dw, db)`` with ``dw`` of shape ``w_shape``."""
    w_shape = tuple(w_shape)
    x4, w4 = _fc_operands(x, np.zeros(w_shape, dtype=np.int64))
    dy4 = as_int_array(dy, "dy").reshape(-1, w4.shape[0], 1, 1)
    dw, db = conv_bwd_weight(x4, dy4, w4.shape, shift=shift, bias_shift=bias_shift,
                             out_bits=out_bits, **kwargs)
    return dw.reshape(w_shape), db
