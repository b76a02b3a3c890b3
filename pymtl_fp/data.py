"""The real-data workload: scikit-learn's bundled 8x8 handwritten digits (no download).

1797 grey-scale images, pixel values 0..16, 10 classes.  :func:`load_digits_split` returns a
fixed, stratified train/test split (``test_fraction`` of each class held out, chosen by ``seed``)
with images as float64 ``(N, 1, 8, 8)`` arrays scaled to ``[0, 1]`` (pixel / 16) and labels as
``int64``.  :func:`quantize_images` turns them into raw integers of an activation format (with
``frac >= 4`` the scaling is exact: pixel / 16 is a multiple of ``2**-4``).
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


def load_digits_split(seed: int = 0, test_fraction: float = 0.2) -> Split:
    """The digits data set, split into train and test sets in a fixed, stratified way."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    digits = load_digits()
    images = (digits.images / PIXEL_MAX).reshape(-1, 1, 8, 8).astype(np.float64)
    labels = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        images, labels, test_size=test_fraction, random_state=seed, stratify=labels
    )
    return Split(x_tr, y_tr, x_te, y_te)


def quantize_images(images: np.ndarray, fmt: QFormat) -> np.ndarray:
    """Float images -> raw integers of the activation format ``fmt`` (round half up, saturate)."""
    return fmt.quantize(images)
