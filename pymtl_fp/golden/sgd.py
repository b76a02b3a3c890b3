"""Bit-exact SGD weight update (the engine's ``update`` operation), with optional momentum.

Plain SGD, integer only::

    step  = requantize(dw, lr_shift, 64, mode)       if lr_shift >= 0
          = dw * 2**(-lr_shift)                      if lr_shift < 0   (exact left shift)
    w_new = saturate(w - step, bits)

``lr_shift`` converts gradient raw units into weight raw units *and* applies the learning rate
(the network description derives it, :meth:`pymtl_fp.net.Net.shifts`).  With momentum
``m`` (momentum factor ``mu = 1 - 2**-m``), the velocity ``v`` is kept in gradient units::

    v_new = saturate(v - requantize(v, m, 64, mode) + dw, velocity_bits)   # v = mu*v + dw
    w_new = saturate(w - step(v_new), bits)

Stochastic rounding uses ``tensor_id`` for the step and ``velocity_tensor_id`` (default
``tensor_id + 1``) for the velocity decay; element indices are flat C-order indices of ``w``.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.numerics import (
    MAX_SHIFT,
    _is_int,
    as_int_array,
    check_acc,
    check_bits,
    check_in_bits,
    check_mode,
    check_shift,
    max_abs,
    requantize,
    saturate,
)


def _step(dw, lr_shift, mode, seed, tensor_id):
    if lr_shift >= 0:
        return requantize(dw, lr_shift, 64, mode, seed=seed, tensor_id=tensor_id)
    if max_abs(dw) << -lr_shift >= 2**62:
        raise ValueError(f"dw << {-lr_shift} would overflow the 62-bit update range")
    return dw << np.int64(-lr_shift)


def sgd_update(w, dw, *, lr_shift, bits, momentum=None, velocity=None, velocity_bits=None,
               mode="nearest", seed=0, tensor_id=0, velocity_tensor_id=None):
    """Return ``w_new`` (plain SGD) or ``(w_new, v_new)`` (when ``momentum`` is given)."""
    w = as_int_array(w, "w")
    dw = as_int_array(dw, "dw")
    if w.shape != dw.shape:
        raise ValueError(f"w shape {w.shape} differs from dw shape {dw.shape}")
    if not _is_int(lr_shift):
        raise TypeError(f"lr_shift must be an integer, got {lr_shift!r}")
    if not -MAX_SHIFT <= lr_shift <= MAX_SHIFT:
        raise ValueError(f"lr_shift must be in -{MAX_SHIFT}..{MAX_SHIFT}, got {lr_shift}")
    bits = check_bits(bits)
    if bits > 62:
        raise ValueError(f"sgd_update supports weights of at most 62 bits, got {bits}")
    check_mode(mode)
    check_in_bits(w, bits, "w")
    check_acc(dw, "dw")
    if momentum is None:
        if velocity is not None:
            raise ValueError("velocity given without momentum")
        return saturate(w - _step(dw, lr_shift, mode, seed, tensor_id), bits)
    m = check_shift(momentum, "momentum")
    if m == 0:
        raise ValueError("momentum shift must be >= 1 (mu = 1 - 2**-momentum)")
    if velocity_bits is None:
        raise ValueError("velocity_bits is required with momentum")
    velocity_bits = check_bits(velocity_bits, "velocity_bits")
    if velocity_bits > 62:
        raise ValueError(f"velocity_bits must be at most 62, got {velocity_bits}")
    v = np.zeros_like(w) if velocity is None else as_int_array(velocity, "velocity")
    if v.shape != w.shape:
        raise ValueError(f"velocity shape {v.shape} differs from w shape {w.shape}")
    check_in_bits(v, velocity_bits, "velocity")
    if velocity_tensor_id is None:
        velocity_tensor_id = tensor_id + 1
    decay = requantize(v, m, 64, mode, seed=seed, tensor_id=velocity_tensor_id)
    v_new = saturate(v - decay + dw, velocity_bits)
    return saturate(w - _step(v_new, lr_shift, mode, seed, tensor_id), bits), v_new
