"""The NumPy golden model: bit-exact integer versions of every engine operation.

Every hardware level (FL, CL, RTL, Verilator) must reproduce these results bit for bit.  The
numerics (formats, rounding, the stochastic-rounding generator) live in
:mod:`pymtl_fp.numerics`; :mod:`pymtl_fp.golden.reference` holds the float64 counterparts and
:mod:`pymtl_fp.golden.train` composes the operations into a training step.
"""

from pymtl_fp.golden.conv import (
    conv_bwd_data,
    conv_bwd_data_acc,
    conv_bwd_weight,
    conv_bwd_weight_acc,
    conv_fwd,
    conv_fwd_acc,
    fc_bwd_data,
    fc_bwd_weight,
    fc_fwd,
)
from pymtl_fp.golden.loss import softmax_xent_grad
from pymtl_fp.golden.pool import pool_bwd, pool_fwd
from pymtl_fp.golden.sgd import sgd_update

__all__ = [
    "conv_bwd_data",
    "conv_bwd_data_acc",
    "conv_bwd_weight",
    "conv_bwd_weight_acc",
    "conv_fwd",
    "conv_fwd_acc",
    "fc_bwd_data",
    "fc_bwd_weight",
    "fc_fwd",
    "pool_bwd",
    "pool_fwd",
    "sgd_update",
    "softmax_xent_grad",
]
