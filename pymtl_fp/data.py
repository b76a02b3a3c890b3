"""The real-data workload: scikit-learn's bundled 8x8 handwritten digits (no download).

1797 grey-scale images, pixel values 0..16, 10 classes.  :func:`load_digits_split` returns a
fixed, stratified train/test split (``test_fraction`` of each class held out, chosen by ``seed``)
with images as float64 ``(N, 1, 8, 8)`` arrays scaled to ``[0, 1]`` (pixel / 16) and labels as
``int64``.  ``size`` (a multiple of 8) enlarges every image by pixel replication (each pixel a
``size/8`` square: the same values, so the same classes, on maps a net with larger inputs takes);
:func:`digits_for` gives the split at a net's input size, or says why the net cannot take it.
:func:`quantize_images` turns them into raw integers of an activation format (with ``frac >= 4``
the scaling is exact: pixel / 16 is a multiple of ``2**-4``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymtl_fp.numerics import QFormat

PIXEL_MAX = 16.0


@dataclass(frozen=True)
class Split:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def load_digits_split(seed: int = 0, test_fraction: float = 0.2, size: int = 8) -> Split:
    """The digits data set, split into train and test sets in a fixed, stratified way, the images
    ``size`` x ``size`` (a multiple of 8: each pixel replicated into a ``size/8`` square)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    digits = load_digits()
    if size < 8 or size % 8:
        raise ValueError(f"digits images are 8x8 pixels, enlarged by whole factors: size {size} is not a multiple of 8")
    f = size // 8
    images = (digits.images / PIXEL_MAX).reshape(-1, 1, 8, 8).astype(np.float64)
    images = images.repeat(f, axis=2).repeat(f, axis=3)
    labels = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        images, labels, test_size=test_fraction, random_state=seed, stratify=labels
    )
    return Split(x_tr, y_tr, x_te, y_te)


def digits_size(net) -> int:
    """The image side a net takes the digits at (its input ``(1, S, S)``, ``S`` a multiple of 8, to
    10 classes), or a one-line ``ValueError`` saying why it cannot."""
    c, h, w = net.input_shape
    if c != 1 or h != w or h < 8 or h % 8 or net.classes != 10:
        raise ValueError(f"net {net.name} takes {net.input_shape} -> {net.classes} classes; the digits need "
                         f"(1, S, S) -> 10, S a multiple of 8 (8x8 images, enlarged by pixel replication)")
    return h


def digits_for(net, seed: int = 0) -> Split:
    """The digits split (:func:`load_digits_split`) at ``net``'s input size (:func:`digits_size`)."""
    return load_digits_split(seed=seed, size=digits_size(net))


def quantize_images(images: np.ndarray, fmt: QFormat) -> np.ndarray:
    """Float images -> raw integers of the activation format ``fmt`` (round half up, saturate)."""
    return fmt.quantize(images)
