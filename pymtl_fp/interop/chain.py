"""A framework's chain of layers -> a :class:`pymtl_fp.net.Net` and its float64 parameters.

What it models: the framework-neutral half of an import.  The PyTorch and ONNX readers
(:mod:`~pymtl_fp.interop.torch_net`, :mod:`~pymtl_fp.interop.onnx_net`) turn a model into a list of
:class:`Layer` records (what the user calls the layer, its type in the framework's words, its kind
and settings, its weights); :func:`build` checks the chain and assembles the net:

* ``conv`` / ``fc`` become :class:`~pymtl_fp.net.Conv` / :class:`~pymtl_fp.net.Fc` (always with a
  bias: the engine adds one to every output);
* a ``relu`` right after a conv or fc layer is fused into it (``relu = true``); a ReLU anywhere
  else (first, after a pool, after another ReLU) has no place in the hardware's layers;
* ``pool`` is a k x k max pool of stride k;
* ``flatten`` turns the ``(C, H, W)`` maps into features; an fc layer needs it before it (unless
  it follows another fc layer), a conv or pool after it is refused.

Every problem is collected and reported at once, as one line (:class:`InteropError`): layers of
an unsupported type (``unsupported layers: 1 (BatchNorm2d), 4 (AvgPool2d): pymtl-fp runs ...``),
supported types with a setting the hardware lacks (``0 (Conv2d): groups=2``), layers in a place the
chain cannot hold them, and weights that do not fit the shapes.

Formats and training defaults: a net needs number formats to run in fixed point.  By default an
import copies those of the zoo net :data:`DEFAULT_LIKE` (16- and 8-bit, chosen for 8x8 and 28x28
digits with activations in [0, 1)) and its ``[train]`` settings; another preset's name, a ``Net``
or a ``{precision: Formats}`` dict may be given instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from pymtl_fp.net import Conv, Fc, Formats, Net, NetError, Pool, TrainDefaults, load_net

#: the zoo net whose formats and training settings an import copies by default
DEFAULT_LIKE = "lenet-digits"
#: what an import maps, in PyTorch's and ONNX's words
SUPPORTED = {
    "torch": "Conv2d, ReLU, MaxPool2d (stride = kernel), Flatten, Linear",
    "onnx": "Conv, Relu, MaxPool (stride = kernel), Flatten or Reshape to (N, -1), Gemm, MatMul + Add",
}
#: at most this many layers are named in one error line (then "... and N more")
MAX_NAMED = 12
KINDS = ("conv", "relu", "pool", "flatten", "fc")


class InteropError(NetError):
    """A model that cannot be imported: one line naming every layer at fault."""


@dataclass
class Layer:
    """One layer of a framework's model, as the readers see it.

    ``where``: how the user names it (module path, ONNX node name); ``type``: its type in the
    framework's words; ``kind``: one of :data:`KINDS`, or ``None`` (a type pymtl-fp does not run);
    ``problems``: settings of a supported type the hardware lacks.  Conv: ``out``, ``in_``,
    ``kernel`` (R, S), ``stride``, ``pad``, ``weight`` (K, C, R, S); fc: ``out``, ``in_``, ``weight``
    (K, F); both ``bias`` (K,) or ``None``; pool: ``k``.  ``name``: the net layer name to use (a conv,
    fc or pool layer; default ``where``; made unique and valid by :func:`build`); ``source``: the reader's handle (the
    module path a ``state_dict`` key starts with)."""

    where: str
    type: str
    kind: str | None
    problems: list = field(default_factory=list)
    name: str = ""
    out: int = 0
    in_: int = 0
    kernel: tuple = (1, 1)
    stride: int = 1
    pad: int = 0
    k: int = 0
    weight: np.ndarray | None = None
    bias: np.ndarray | None = None
    source: object = None


def _label(layer: Layer) -> str:
    return f"{layer.where} ({layer.type})"


def _listing(items: list) -> str:
    shown = items[:MAX_NAMED]
    more = f", ... and {len(items) - len(shown)} more" if len(items) > len(shown) else ""
    return ", ".join(shown) + more


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of white space made single spaces."""
    return " ".join(str(text).split())


def layer_name(text: str, prefix: str) -> str:
    """A valid net layer name from a module path or node name: characters other than letters,
    digits, ``_`` and ``-`` become ``_``; a name that is empty or starts with a digit gets
    ``prefix`` in front (``features.0`` -> ``features_0``, ``3`` -> ``conv3``)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")
    if not name or not name[0].isalpha():
        name = prefix + name
    return name[:64]


def resolve_formats(formats, train) -> tuple:
    """``(formats dict, TrainDefaults)`` from ``formats`` (None: :data:`DEFAULT_LIKE`; a preset
    name or a Net: its formats without per-layer shifts, and its ``[train]`` settings unless
    ``train`` is given; a ``{precision: Formats}`` dict) and ``train``."""
    if formats is None:
        formats = DEFAULT_LIKE
    if isinstance(formats, (str, Net)):
        like = load_net(formats)
        fmts = {k: replace(v, shifts={}) for k, v in like.formats.items()}
        return fmts, like.train if train is None else train
    if not isinstance(formats, dict) or not all(isinstance(v, Formats) for v in formats.values()):
        raise InteropError("formats must be a preset name, a Net or a {precision: Formats} dict")
    return dict(formats), TrainDefaults() if train is None else train


def build(layers: list, input_shape, name: str, formats=None, train=None, runs: str = SUPPORTED["torch"]):
    """Check a chain of :class:`Layer` records and assemble it: ``(net, params, param_layers)``
    with ``params`` the golden model's float64 ``{layer: {"w", "b"}}`` and ``param_layers`` the
    records of the conv/fc layers in the net's order (one-line :class:`InteropError` on any
    problem; see the module docstring)."""
    unknown = [_label(ly) for ly in layers if ly.kind is None]
    problems = [f"{_label(ly)}: {', '.join(ly.problems)}" for ly in layers if ly.kind is not None and ly.problems]
    misplaced, net_layers, sources, dims, prev, taken = [], [], [], 4, None, set()
    for ly in layers:
        if ly.kind is None:  # (reported above; the chain is checked as if it were not there)
            continue
        if ly.kind == "relu":
            if prev in ("conv", "fc") and not net_layers[-1].relu:
                net_layers[-1] = replace(net_layers[-1], relu=True)
            else:
                misplaced.append(f"{_label(ly)}: a ReLU must directly follow a conv or linear layer "
                                 "(the hardware applies it to that layer's output)")
        elif ly.kind in ("conv", "pool") and dims == 2:
            misplaced.append(f"{_label(ly)}: on flattened features (a conv or pool takes (C, H, W) maps)")
        elif ly.kind == "fc" and dims == 4:
            misplaced.append(f"{_label(ly)}: on (C, H, W) maps (put a Flatten before it)")
        elif ly.kind == "flatten":
            dims = 2
        else:
            base = layer_name(ly.name or ly.where, ly.kind)
            unique, n = base, 1
            while unique in taken:
                n += 1
                unique = f"{base}_{n}"
            taken.add(unique)
            ly.name = unique
            if ly.kind == "pool":
                net_layers.append(Pool(k=ly.k, name=unique))
            else:
                net_layers.append(Conv(unique, ly.out, ly.kernel, ly.stride, ly.pad) if ly.kind == "conv"
                                  else Fc(unique, ly.out))
                sources.append(ly)
            if ly.kind == "fc":
                dims = 2
        prev = ly.kind
    parts = []
    if unknown:
        parts.append(f"unsupported layers: {_listing(unknown)}: pymtl-fp runs {runs}")
    if problems:
        parts.append(f"unsupported settings: {_listing(problems)}")
    if misplaced:
        parts.append(f"layers out of place: {_listing(misplaced)}")
    if parts:
        raise InteropError(one_line("; ".join(parts)))
    if not sources:
        raise InteropError(f"no conv or linear layer: pymtl-fp runs {runs}")
    fmts, train = resolve_formats(formats, train)
    try:
        shape = tuple(input_shape) if isinstance(input_shape, (list, tuple)) else input_shape
        net = Net(name=layer_name(str(name), "net"), input_shape=shape, layers=tuple(net_layers),
                  formats=fmts, train=train)
    except NetError as exc:
        raise InteropError(one_line(exc)) from None
    return net, _params(net, sources), sources


def _params(net: Net, sources: list) -> dict:
    """The float64 parameters of the records ``sources`` (the net's conv/fc layers, in order),
    checked against the shapes the net gives each layer's input."""
    shapes = dict(zip((ly.name for ly in net.layers), net.shapes()))
    params, wrong = {}, []
    for ly in sources:
        w_shape = net.conv_geometry(net.layer(ly.name))["w_shape"]
        c, h, w = shapes[ly.name]
        if ly.kind == "conv" and ly.in_ != c:
            wrong.append(f"{_label(ly)}: {ly.in_} input channels, its input has {c}")
        elif ly.kind == "fc" and ly.in_ != c * h * w:
            wrong.append(f"{_label(ly)}: {ly.in_} input features, its input has {c * h * w} ({c}x{h}x{w})")
        elif np.size(ly.weight) != np.prod(w_shape) or np.shape(ly.bias) != w_shape[:1]:
            wrong.append(f"{_label(ly)}: weights {np.shape(ly.weight)} and bias {np.shape(ly.bias)} "
                         f"do not fit {w_shape}")
        else:
            w = np.asarray(ly.weight, dtype=np.float64).reshape(w_shape)
            b = np.asarray(ly.bias, dtype=np.float64)
            if not (np.isfinite(w).all() and np.isfinite(b).all()):
                wrong.append(f"{_label(ly)}: weights that are not finite")
            params[ly.name] = {"w": w, "b": b}
    if wrong:
        raise InteropError(one_line(f"weights that do not fit the net (input {net.input_shape}): {_listing(wrong)}"))
    return params
