"""The layer types of a network description (:mod:`pymtl_fp.net`): ``Conv``, ``Pool``, ``Fc`` and the
residual ``Add`` and ``GlobalAvgPool``, each validated when it is built (one-line errors naming
the layer), with the limits of a description.

What it models: one layer's parameters as a net file gives them (``type = "conv"`` ...); the shapes
and everything that depends on the other layers (an add's ``from``, its branches' shapes) are the
:class:`~pymtl_fp.net.Net`'s business.
"""

from __future__ import annotations

from dataclasses import dataclass

from pymtl_fp.golden.geometry import check_stride_pad
from pymtl_fp.numerics import _is_int


class NetError(ValueError):
    """A malformed or inconsistent network description."""


#: limits of a description, checked when it is built (before any array is allocated): wider than
#: any network the studies use (VGG-16: 4096 features, 102.8 M weights in fc6, 3.2 M activations
#: per image), far below what would exhaust the machine's memory or the hardware's address fields
MAX_CHANNELS = 16384
MAX_SIDE = 4096
MAX_LAYER_WEIGHTS = 2**27
MAX_ACTIVATION = 2**26
def _int(value, what: str, lo: int = 1, hi: int | None = None) -> int:
    if not _is_int(value):
        raise NetError(f"{what} must be an integer, got {value!r}")
    if value < lo:
        raise NetError(f"{what} must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise NetError(f"{what} must be at most {hi}, got {value}")
    return int(value)


def _name(value, what: str) -> str:
    if not isinstance(value, str) or not value or not value.replace("_", "").replace("-", "").isalnum():
        raise NetError(f"{what} must be a non-empty name of letters, digits, '_' or '-', got {value!r}")
    return value


#: largest ``lr_log2_offset`` magnitude: a layer's learning rate within 2**-8..2**8 of the net's
MAX_LR_LOG2_OFFSET = 8


def _lr_log2_offset(layer) -> None:
    v = layer.lr_log2_offset
    if not _is_int(v) or not -MAX_LR_LOG2_OFFSET <= v <= MAX_LR_LOG2_OFFSET:
        raise NetError(f"{layer.name}: lr_log2_offset must be an integer in -{MAX_LR_LOG2_OFFSET}..{MAX_LR_LOG2_OFFSET}, "
                       f"got {v!r}")
    object.__setattr__(layer, "lr_log2_offset", int(v))


def _weight_options(layer) -> None:
    """Validate the options of a layer with weights (``init_scale``, ``lr_log2_offset``)."""
    _init_scale(layer)
    _lr_log2_offset(layer)


def _init_scale(layer) -> None:
    v = layer.init_scale
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 16.0:
        raise NetError(f"{layer.name}: init_scale must be a number in 0..16, got {v!r}")
    object.__setattr__(layer, "init_scale", float(v))


@dataclass(frozen=True)
class Conv:
    """Convolution (+ bias, + optional ReLU): ``out_channels`` filters of ``kernel`` (R, S)."""

    name: str
    out_channels: int
    kernel: int | tuple
    stride: int = 1
    pad: int = 0
    relu: bool = False
    init_scale: float = 1.0
    lr_log2_offset: int = 0

    def __post_init__(self):
        _name(self.name, "conv name")
        _weight_options(self)
        _int(self.out_channels, f"{self.name}: out_channels", hi=MAX_CHANNELS)
        kernel = (self.kernel, self.kernel) if _is_int(self.kernel) else tuple(self.kernel)
        if len(kernel) != 2:
            raise NetError(f"{self.name}: kernel must be an int or [R, S], got {self.kernel!r}")
        kernel = tuple(_int(k, f"{self.name}: kernel size", hi=MAX_SIDE) for k in kernel)
        object.__setattr__(self, "kernel", kernel)
        try:
            check_stride_pad(self.stride, self.pad, kernel)
        except (TypeError, ValueError) as exc:
            raise NetError(f"{self.name}: {exc}") from None
        if not isinstance(self.relu, bool):
            raise NetError(f"{self.name}: relu must be true or false, got {self.relu!r}")


@dataclass(frozen=True)
class Pool:
    """Max pool with ``k x k`` windows and stride ``k``."""

    k: int = 2
    name: str = ""

    def __post_init__(self):
        _int(self.k, "pool k", hi=MAX_SIDE)
        if self.name:
            _name(self.name, "pool name")


@dataclass(frozen=True)
class Fc:
    """Fully connected (+ bias, + optional ReLU): a conv whose kernel covers the whole input."""

    name: str
    out_features: int
    relu: bool = False
    init_scale: float = 1.0
    lr_log2_offset: int = 0

    def __post_init__(self):
        _name(self.name, "fc name")
        _weight_options(self)
        _int(self.out_features, f"{self.name}: out_features", hi=MAX_CHANNELS)
        if not isinstance(self.relu, bool):
            raise NetError(f"{self.name}: relu must be true or false, got {self.relu!r}")


@dataclass(frozen=True)
class Add:
    """Residual add: the previous layer's output (the *main* branch) plus the output of the earlier
    layer ``source`` (the *skip*; ``from = "name"`` in a net file), then an optional ReLU.  With
    ``project`` the skip first goes through a 1x1 conv of stride ``stride`` (its own weights and
    bias, as many filters as the main branch has channels: a layer with weights, named after the
    add); without it the two shapes must be equal (an identity skip)."""

    name: str
    source: str
    project: bool = False
    stride: int = 1
    relu: bool = False
    init_scale: float = 1.0
    lr_log2_offset: int = 0

    def __post_init__(self):
        _name(self.name, "add name")
        _name(self.source, f"{self.name}: from")
        for flag in ("project", "relu"):
            if not isinstance(getattr(self, flag), bool):
                raise NetError(f"{self.name}: {flag} must be true or false, got {getattr(self, flag)!r}")
        _int(self.stride, f"{self.name}: stride", hi=MAX_SIDE)
        if self.stride != 1 and not self.project:
            raise NetError(f"{self.name}: stride {self.stride} needs project = true (an identity skip has stride 1)")
        _weight_options(self)
        if self.lr_log2_offset and not self.project:
            raise NetError(f"{self.name}: lr_log2_offset needs project = true (an identity add has no weights to learn)")

    @property
    def kernel(self) -> tuple:
        return (1, 1)

    @property
    def pad(self) -> int:
        return 0


@dataclass(frozen=True)
class GlobalAvgPool:
    """Global average pool: ``(C, H, W)`` to ``(C, 1, 1)``, the mean of each channel's map
    (:mod:`pymtl_fp.golden.residual` defines its rounding)."""

    name: str = ""

    def __post_init__(self):
        if self.name:
            _name(self.name, "global_avg_pool name")


#: most elements a global average pool averages (its reciprocal's 16 significant bits and its
#: shift, at most :data:`~pymtl_fp.numerics.MAX_SHIFT`, stay exact)
MAX_GAP_AREA = 2**16

LAYER_TYPES = {"conv": Conv, "pool": Pool, "fc": Fc, "add": Add, "global_avg_pool": GlobalAvgPool}
#: the net-file key of a field whose Python name differs
FILE_KEYS = {"source": "from"}
PY_KEYS = {v: k for k, v in FILE_KEYS.items()}
LAYER_CLASSES = tuple(LAYER_TYPES.values())
