"""The training study: train a net on the digits split in float64 and fixed point, epoch by epoch.

:func:`fit` runs mini-batch SGD with :func:`~pymtl_fp.golden.train.train_step` (or its float64
counterpart; or per-image SGD / continuous propagation, :mod:`pymtl_fp.golden.per_image`) and
records, per epoch, the mean training loss and the test accuracy.  Every
precision starts from the same He-normal float weights (quantized for fixed point) and sees the
same shuffled batches (``seed``; translated by :func:`~pymtl_fp.data.augment_batch` when the run's
``translate`` is above 0); the last partial batch of an epoch is dropped so every step has
the same shape.  Step ``t`` of the run uses stochastic-rounding seed ``seed + t``.
"""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass, field

import numpy as np

from pymtl_fp.data import Split, augment_batch, check_translate, quantize_images
from pymtl_fp.golden.per_image import train_step_per_image
from pymtl_fp.golden.train import (
    FLOAT64,
    TrainConfig,
    init_params_float64,
    predict,
    quantize_params,
    train_step,
    train_step_float64,
)
from pymtl_fp.net import Net

#: how the study updates the weights (mini-batch SGD, per-image SGD, continuous propagation)
SCHEDULES = ("minibatch", "sgd", "cp")


@dataclass
class History:
    precision: str
    train_loss: list = field(default_factory=list)      # mean loss of each epoch's steps
    test_accuracy: list = field(default_factory=list)   # after each epoch, in [0, 1]
    steps: int = 0
    seconds: float = 0.0

    @property
    def final_accuracy(self) -> float:
        return self.test_accuracy[-1] if self.test_accuracy else float("nan")


def accuracy(net: Net, params: dict, images, labels, precision: str) -> float:
    logits = predict(net, params, images, precision)
    return float(np.mean(np.argmax(logits, axis=1) == np.asarray(labels)))


def _single_threaded_blas():
    """The float64 run multiplies tiny matrices: BLAS threads only add overhead (4x here)."""
    try:
        from threadpoolctl import threadpool_limits  # a scikit-learn dependency
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(1)


def fit(net: Net, split: Split, precision: str, *, epochs: int, batch: int, lr_log2: int,
        momentum: int | None = None, lr_halve_every: int | None = None, seed: int = 0,
        max_steps: int | None = None, schedule: str = "minibatch", fwd_versions: dict | None = None,
        translate: int = 0) -> tuple:
    """Train from scratch; returns ``(params, History)``.

    ``schedule``: ``minibatch`` (one update per step), ``sgd`` (an update after each image, no
    staleness) or ``cp`` (an update after each image, the forward passes seeing the updates
    ``fwd_versions`` gives: :func:`~pymtl_fp.golden.per_image.train_step_per_image`); the per-image
    schedules are fixed point only.

    The learning rate is ``2**-lr_log2``, halved every ``lr_halve_every`` epochs if given (i.e.
        ``lr_log2 + epoch // lr_halve_every``).  ``translate`` > 0 translates every training image by up to
    ``translate`` pixels, as :func:`~pymtl_fp.data.augment_batch` draws it for the epoch (seeded
    augmentation).  ``max_steps`` caps the run (for tests).
    """
    if batch < 1 or batch > len(split.y_train):
        raise ValueError(f"batch must be in 1..{len(split.y_train)}, got {batch}")
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    check_translate(translate)
    params = init_params_float64(net, seed)
    if precision == FLOAT64:
        x_train, x_test, step_fn = split.x_train, split.x_test, train_step_float64
    else:
        act = net.precision(precision).act
        params = quantize_params(net, params, precision)
        x_train, x_test = quantize_images(split.x_train, act), quantize_images(split.x_test, act)
        step_fn = train_step
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if schedule != "minibatch":
        if precision == FLOAT64:
            raise ValueError(f"the {schedule} schedule is defined in fixed point (train_step_per_image)")
        if schedule == "cp" and fwd_versions is None:
            raise ValueError("the cp schedule needs fwd_versions (the pipeline's staleness)")
        step_fn = functools.partial(train_step_per_image, fwd_versions=fwd_versions if schedule == "cp" else None)
    if precision != FLOAT64:  # every epoch's update shifts in range (NetError otherwise), before any step
        for epoch in range(epochs):
            net.shifts(precision, lr_log2 + (epoch // lr_halve_every if lr_halve_every else 0))
    with _single_threaded_blas():
        return _fit(net, split, precision, params, x_train, x_test, step_fn, epochs=epochs,
                    batch=batch, lr_log2=lr_log2, momentum=momentum,
                    lr_halve_every=lr_halve_every, seed=seed, max_steps=max_steps, translate=translate)


def _fit(net, split, precision, params, x_train, x_test, step_fn, *, epochs, batch, lr_log2,
         momentum, lr_halve_every, seed, max_steps, translate):
    rng = np.random.default_rng(seed)
    history, start, step = History(precision), time.perf_counter(), 0
    steps_per_epoch = len(split.y_train) // batch
    for epoch in range(epochs):
        lr_now = lr_log2 + (epoch // lr_halve_every if lr_halve_every else 0)
        order = rng.permutation(len(split.y_train))
        losses = []
        for b in range(steps_per_epoch):
            if max_steps is not None and step >= max_steps:
                break
            idx = order[b * batch : (b + 1) * batch]
            cfg = TrainConfig(precision, lr_log2=lr_now, momentum=momentum, seed=seed, step=step)
            images = augment_batch(x_train[idx], idx, seed, epoch, len(split.y_train), translate)
            params, loss = step_fn(net, params, images, split.y_train[idx], cfg)
            losses.append(loss)
            step += 1
        if losses:
            history.train_loss.append(float(np.mean(losses)))
            history.test_accuracy.append(accuracy(net, params, x_test, split.y_test, precision))
    history.steps, history.seconds = step, time.perf_counter() - start
    return params, history
