"""Data-parallel training, bit-exact with one node: ``G`` replicas, each with its share of the
mini-batch, their weight gradients all-reduced before one update (the cluster's
``--parallel data|hybrid``, :mod:`pymtl_fp.cluster.compiler.replicas`).

What it models: each replica runs the forward and backward passes of its images and keeps the
**exact** weight- and bias-gradient accumulators of its share (the engine's ``bwd_weight`` with
``raw = 1``); the replicas add them (integer sums: the order of the additions cannot matter) and
round the total once, as one node rounds the sum over the whole batch.  So:

* image ``b`` of replica ``g`` (its share starts at image ``b0``) rounds as image ``b0 + b`` of the
  whole batch (seed :func:`~pymtl_fp.numerics.slice_seed` of the step seed at its offset);
* its loss gradient is row ``b0 + b`` of the batch's (:func:`~pymtl_fp.golden.loss.row_loss_grad`,
  divided by the whole batch size);
* ``dw = requantize(sum of the replicas' accumulators)`` with the step seed and the layer's tensor
  id, then the usual SGD update.

With these rules :func:`train_step_data_parallel` equals :func:`~pymtl_fp.golden.train.train_step`
for every split of the batch (``tests/test_golden_data_parallel.py`` proves it on random splits, and
shows that rounding each replica's share before the sum would not).
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.golden.loss import batch_loss, row_loss_grad
from pymtl_fp.golden.train import (
    FLOAT64,
    TrainConfig,
    _check_batch,
    _check_params,
    backward,
    forward,
    sgd_layer,
    step_seed,
    tensor_id,
)
from pymtl_fp.net import Net
from pymtl_fp.numerics import requantize, slice_seed


def check_shares(shares, batch: int) -> list:
    """``shares`` as a list of positive image counts adding up to ``batch`` (else ``ValueError``)."""
    out = [int(v) for v in shares]
    if not out or any(v < 1 for v in out) or sum(out) != batch:
        raise ValueError(f"shares {list(shares)} must be positive image counts adding up to the batch ({batch})")
    return out


def replica_partials(net: Net, params: dict, images, labels, cfg: TrainConfig, b0: int, batch: int):
    """One replica's work on ``images`` (images ``b0 ..`` of a batch of ``batch``): its logits
    ``(S, K)`` and its exact partial sums ``{layer: (dw_acc, db_acc)}``."""
    fmt = net.precision(cfg.precision)
    seed = step_seed(cfg.seed, cfg.step)
    shapes = net.shapes()
    acts = forward(net, params, images, cfg.precision, mode=cfg.fwd_mode,
                   seed=lambda i: slice_seed(seed, b0 * int(np.prod(shapes[i + 1]))))
    logits = acts[-1][0] if isinstance(acts[-1], tuple) else acts[-1]
    rows = logits.reshape(len(images), -1)
    relu_last = net.rectified(len(net.layers))
    g = np.stack([row_loss_grad(row, lab, batch, fmt, relu_last) for row, lab in zip(rows, labels)])
    partials = backward(net, params, acts, g.reshape(logits.shape), cfg, None,
                        lambda i, layer: slice_seed(seed, b0 * int(np.prod(shapes[i]))), raw=True)
    return rows, partials


def reduce_and_round(net: Net, partials: list, cfg: TrainConfig) -> dict:
    """The replicas' partial sums added and rounded once: ``{layer: (dw, db)}`` in the weight-
    gradient format, as one node's ``bwd_weight`` over the whole batch writes them."""
    fmt = net.precision(cfg.precision)
    shifts = net.shifts(cfg.precision, cfg.lr_log2)
    seed = step_seed(cfg.seed, cfg.step)
    out = {}
    for p, layer in enumerate(net.param_layers()):
        sh = shifts[layer.name]
        dw = sum(part[layer.name][0] for part in partials)
        db = sum(part[layer.name][1] for part in partials)
        out[layer.name] = (
            requantize(dw, sh.wgrad, fmt.wgrad.bits, cfg.grad_mode, seed=seed, tensor_id=tensor_id(p, "DW")),
            requantize(db, sh.bgrad, fmt.wgrad.bits, cfg.grad_mode, seed=seed, tensor_id=tensor_id(p, "DB")))
    return out


def train_step_data_parallel(net: Net, params: dict, images, labels, cfg: TrainConfig, shares):
    """One step of the batch split over replicas (``shares[g]`` images each, in batch order):
    returns ``(new_params, loss)``, equal to :func:`~pymtl_fp.golden.train.train_step`'s."""
    if cfg.precision == FLOAT64:
        raise ValueError("train_step_data_parallel is fixed point; float64 runs use train_step_float64")
    _check_params(net, params)
    _check_batch(net, images, labels)
    images, labels = np.asarray(images), np.asarray(labels)
    batch = len(images)
    shares = check_shares(shares, batch)
    fmt = net.precision(cfg.precision)
    rows, partials, b0 = [], [], 0
    for share in shares:
        r, part = replica_partials(net, params, images[b0:b0 + share], labels[b0:b0 + share], cfg, b0, batch)
        rows.append(r)
        partials.append(part)
        b0 += share
    grads = reduce_and_round(net, partials, cfg)
    seed = step_seed(cfg.seed, cfg.step)
    new = {layer.name: sgd_layer(net, p, params[layer.name], grads[layer.name], cfg, seed)
           for p, layer in enumerate(net.param_layers())}
    return new, batch_loss(np.concatenate(rows), labels, fmt)
