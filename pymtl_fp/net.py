"""Network descriptions: layers, shapes, MAC counts, number formats and per-layer shifts.

What it models: a CNN as a *sequence* of layers (``Conv`` / ``Pool`` / ``Fc``, ReLU fused into the
layer that precedes it) as the golden model, the hardware cluster and the design-space tools all
see it, plus residual networks: an ``Add`` layer adds to the previous layer's output the output
of an *earlier* layer it names (``from = "name"``; optionally through a 1x1 strided projection
conv with its own weights), and ``GlobalAvgPool`` averages each channel's map.  The list stays
sequential (each layer reads the previous one's output; only an add reads a second, earlier
tensor), so cutting the list into a chain of pieces stays what it is; the skip is the one tensor
that may cross a cut.  The cluster runs adds (identity or projected) and global average pools
(:mod:`pymtl_fp.cluster.compiler.residual`); ``--schedule cp`` of a residual net runs on the golden
engine only (:func:`check_chain`).  A description is a TOML or JSON file
(see ``pymtl_fp/nets/*.toml``; presets are loaded by name with :func:`load_net`; :func:`save_net`
writes one).

Shapes: activations are ``(C, H, W)`` per sample; a conv maps ``(C, H, W)`` to
``(K, Ho, Wo)`` (:mod:`pymtl_fp.golden.geometry`); ``Pool(k)`` is a ``k x k`` max pool of stride
``k``; ``Fc(K)`` is a conv whose kernel covers its whole input (output ``(K, 1, 1)``); an add keeps
its main branch's shape (the skip, after its projection, must have the same: a one-line error
naming the add otherwise); a global average pool gives ``(C, 1, 1)``.

MACs per sample (:meth:`Net.macs`): ``fp = K*C*R*S*Ho*Wo`` for every layer with weights (conv,
fc, an add's projection: ``K*C_skip*Ho*Wo``); ``wg`` the same; ``bp`` the same, except 0 when the
layer's input needs no gradient (no layer with weights before it).  Pools and adds do no MACs.
Layer options: ``init_scale`` (conv, fc, add) multiplies the He-normal initial weights (0: the
layer starts at zero, as Fixup starts each residual branch's last conv); ``lr_log2_offset`` (conv,
fc, add; an integer, default 0) gives the layer the learning rate ``2**-(lr_log2 +
lr_log2_offset)``, following the net's schedule (Caffe's per-layer ``lr_mult``, in powers of two:
the layer's update shifts grow by the offset).

Number formats (:class:`Formats`, one set per precision name such as ``"16"`` or ``"8"``):
``act`` (activations, logits), ``weight``, ``grad`` (activation gradients dy/dx and dlogits),
``wgrad`` (weight and bias gradients dw/db; default ``grad``), ``bias_bits`` (biases are kept in
accumulator units, ``frac = act.frac + weight.frac``) and ``loss_scale_log2`` (the loss
gradient is multiplied by ``2**loss_scale_log2``).  With ``a, w, g, v`` the ``frac`` of act,
weight, grad, wgrad and a learning rate ``2**-lr_log2``, every conv/fc layer's shifts are
derived so that each tensor lands in its format (:class:`LayerShifts`)::

    fwd      = w                 # acc frac a+w -> a
    bwd_data = w                 # acc frac g+w -> g
    wgrad    = a + g - v         # acc frac a+g -> v
    bgrad    = g - v             # acc frac g   -> v
    update_w = lr_log2 + loss_scale_log2 + v - w        # dw (frac v) -> weight units, times lr
    update_b = lr_log2 + loss_scale_log2 + v - (a + w)  # db -> bias units (may be < 0: left shift)

Any of them can be given explicitly per layer (``[formats.<name>.shifts.<layer>]`` in TOML);
an explicit shift rescales that one tensor, which is then the user's responsibility.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from pymtl_fp.data import MAX_TRANSLATE
from pymtl_fp.documents import DocumentError, read_document
from pymtl_fp.golden.geometry import conv_out_size, pool_out_size
from pymtl_fp.net_layers import (  # the layer types are part of this module's interface
    FILE_KEYS,
    LAYER_CLASSES,
    LAYER_TYPES,
    MAX_ACTIVATION,
    MAX_CHANNELS,
    MAX_GAP_AREA,
    MAX_LAYER_WEIGHTS,
    MAX_SIDE,
    PY_KEYS,
    Add,
    Conv,
    Fc,
    GlobalAvgPool,
    NetError,
    Pool,
    _int,
    _name,
)
from pymtl_fp.numerics import MAX_SHIFT, QFormat, _is_int, check_bits

NETS_DIR = Path(__file__).with_name("nets")


#: most layers of a net (ResNet-152 has 155 with its pools): every pass walks the layers, the
#: partition studies try cuts between them, and the golden trainer recurses over them
MAX_LAYERS = 1024
#: most epochs a training run may ask for (lenet-digits converges in 10)
MAX_EPOCHS = 1000
#: each ``[train]`` setting's range (the CLI's options share them)
TRAIN_RANGES = {"epochs": (1, MAX_EPOCHS), "batch": (1, 65536), "lr_log2": (0, 16), "momentum": (1, 16),
                "lr_halve_every": (1, MAX_EPOCHS), "seed": (0, 2**32 - 1), "translate": (0, MAX_TRANSLATE)}


SHIFT_NAMES = ("fwd", "bwd_data", "wgrad", "bgrad", "update_w", "update_b")

#: layer options a net file leaves out (and :meth:`Net.to_dict` omits) when they are at their default
DEFAULTED_OPTIONS = ("init_scale", "lr_log2_offset")


@dataclass(frozen=True)
class LayerShifts:
    """The right shifts of one conv/fc layer (``update_*`` may be negative: exact left shift)."""

    fwd: int
    bwd_data: int
    wgrad: int
    bgrad: int
    update_w: int
    update_b: int


@dataclass(frozen=True)
class Formats:
    """Number formats of one precision (see the module docstring for the shift derivation)."""

    act: QFormat
    weight: QFormat
    grad: QFormat
    wgrad: QFormat | None = None  # default: grad
    bias_bits: int = 32
    loss_scale_log2: int = 0
    shifts: dict = field(default_factory=dict, hash=False)  # {layer: {shift name: value}}

    def __post_init__(self):
        for f in ("act", "weight", "grad"):
            if not isinstance(getattr(self, f), QFormat):
                raise NetError(f"format {f} must be a QFormat, got {getattr(self, f)!r}")
        if self.wgrad is None:
            object.__setattr__(self, "wgrad", self.grad)
        try:
            check_bits(self.bias_bits, "bias_bits")
        except (TypeError, ValueError) as exc:
            raise NetError(str(exc)) from None
        if self.act.frac + self.weight.frac >= self.bias_bits:
            raise NetError("bias_bits must exceed act.frac + weight.frac (biases are in accumulator units)")
        if not _is_int(self.loss_scale_log2) or abs(self.loss_scale_log2) > 30:
            raise NetError(f"loss_scale_log2 must be an integer in -30..30, got {self.loss_scale_log2!r}")
        for layer, table in self.shifts.items():
            for key, value in table.items():
                if key not in SHIFT_NAMES:
                    raise NetError(f"unknown shift {key!r} for layer {layer!r}; known: {SHIFT_NAMES}")
                lo = -MAX_SHIFT if key.startswith("update") else 0
                if not _is_int(value) or not lo <= value <= MAX_SHIFT:
                    raise NetError(f"shift {layer}.{key} must be an integer in {lo}..{MAX_SHIFT}, got {value!r}")

    @property
    def bias(self) -> QFormat:
        return QFormat(self.bias_bits, self.act.frac + self.weight.frac)

    def derived_shifts(self, lr_log2: int) -> LayerShifts:
        a, w, g, v = self.act.frac, self.weight.frac, self.grad.frac, self.wgrad.frac
        ls = self.loss_scale_log2
        return LayerShifts(fwd=w, bwd_data=w, wgrad=a + g - v, bgrad=g - v,
                           update_w=lr_log2 + ls + v - w, update_b=lr_log2 + ls + v - a - w)


@dataclass(frozen=True)
class TrainDefaults:
    """Training hyper-parameters a preset recommends (the CLI's defaults)."""

    epochs: int = 10
    batch: int = 32
    lr_log2: int = 3          # learning rate 2**-lr_log2
    lr_halve_every: int | None = None  # halve the learning rate every this many epochs (None: never)
    momentum: int | None = None  # momentum shift m (mu = 1 - 2**-m), or None for plain SGD
    seed: int = 0
    translate: int = 0  # translate each training image by up to this many pixels (pymtl_fp.data.augment_batch)


@dataclass(frozen=True)
class LayerMacs:
    name: str
    fp: int
    bp: int
    wg: int


@dataclass(frozen=True)
class Net:
    """A sequential CNN with its formats.  ``shapes()[i]`` is the input of ``layers[i]``."""

    name: str
    input_shape: tuple
    layers: tuple
    formats: dict = field(default_factory=dict, hash=False)
    train: TrainDefaults = TrainDefaults()

    def __post_init__(self):
        _name(self.name, "net name")
        shape = self.input_shape
        if not isinstance(shape, (list, tuple)) or len(shape) != 3:
            raise NetError(f"input_shape must be [C, H, W], got {self.input_shape!r}")
        object.__setattr__(self, "input_shape", tuple(_int(v, f"input_shape {name}", hi=hi) for v, name, hi in
                                                      zip(shape, "CHW", (MAX_CHANNELS, MAX_SIDE, MAX_SIDE))))
        if not self.layers:
            raise NetError("a net needs at least one layer")
        if len(self.layers) > MAX_LAYERS:
            raise NetError(f"{len(self.layers)} layers; a net has at most {MAX_LAYERS}")
        named, seen = [], set()
        for i, layer in enumerate(self.layers):
            if not isinstance(layer, LAYER_CLASSES):
                raise NetError(f"layer {i} is not a Conv, Pool, Fc, Add or GlobalAvgPool: {layer!r}")
            if isinstance(layer, (Pool, GlobalAvgPool)) and not layer.name:
                layer = replace(layer, name=f"{'pool' if isinstance(layer, Pool) else 'gap'}{i}")
            if layer.name in seen:
                raise NetError(f"duplicate layer name {layer.name!r}")
            if isinstance(layer, Add) and layer.source not in seen:
                later = any(other.name == layer.source for other in self.layers[i:])
                raise NetError(f"{layer.name}: from {layer.source!r} names "
                               + ("itself" if layer.source == layer.name else "a later layer" if later
                                  else "no layer of the net")
                               + "; an add adds the output of an earlier layer")
            seen.add(layer.name)
            named.append(layer)
        object.__setattr__(self, "layers", tuple(named))
        shapes = self.shapes()  # (validates the geometry)
        for layer, (c, h, w) in zip(self.layers, shapes[1:]):
            if c * h * w > MAX_ACTIVATION:
                raise NetError(f"{layer.name}: output {c}x{h}x{w} has {c * h * w} values per image; "
                               f"at most {MAX_ACTIVATION}")
        for layer in self.param_layers():
            n = math.prod(self.conv_geometry(layer)["w_shape"])
            if n > MAX_LAYER_WEIGHTS:
                raise NetError(f"{layer.name}: {n} weights; at most {MAX_LAYER_WEIGHTS} per layer")
        for pname, fmt in self.formats.items():
            if not isinstance(fmt, Formats):
                raise NetError(f"formats[{pname!r}] must be a Formats")
            unknown = set(fmt.shifts) - {layer.name for layer in self.param_layers()}
            if unknown:
                raise NetError(f"formats[{pname!r}] gives shifts for unknown layers {sorted(unknown)}")
        if not self.param_layers():
            raise NetError("a net needs at least one conv or fc layer")

    # ---- geometry -------------------------------------------------------------------------
    def shapes(self) -> list:
        """``[input_shape, output of layer 0, output of layer 1, ...]`` as (C, H, W) tuples
        (computed once: a net is immutable; the compiler asks for them tens of thousands of times)."""
        cached = self.__dict__.get("_shapes")
        if cached is not None:
            return list(cached)
        shapes = [self.input_shape]
        for layer in self.layers:
            c, h, w = shapes[-1]
            try:
                if isinstance(layer, Conv):
                    (r, s), st, p = layer.kernel, layer.stride, layer.pad
                    out = (layer.out_channels, conv_out_size(h, r, st, p, "input height"),
                           conv_out_size(w, s, st, p, "input width"))
                elif isinstance(layer, Pool):
                    out = (c, pool_out_size(h, layer.k, "input height"),
                           pool_out_size(w, layer.k, "input width"))
                elif isinstance(layer, Add):
                    out = (c, h, w)
                    _check_skip(layer, shapes, self.layers)
                elif isinstance(layer, GlobalAvgPool):
                    if h * w > MAX_GAP_AREA:
                        raise ValueError(f"averages {h * w} elements per channel; at most {MAX_GAP_AREA}")
                    out = (c, 1, 1)
                else:
                    out = (layer.out_features, 1, 1)
            except ValueError as exc:
                raise NetError(f"{layer.name} (input {c}x{h}x{w}): {exc}") from None
            shapes.append(out)
        object.__setattr__(self, "_shapes", tuple(shapes))
        return shapes

    def param_layers(self) -> list:
        """The layers with weights: conv, fc, and an add's 1x1 projection (named after the add)."""
        return [layer for layer in self.layers if _has_weights(layer)]

    @property
    def residual(self) -> bool:
        """Whether the net has a skip connection or a global average pool (layers the golden engine
        runs and the cluster's chain does not yet)."""
        return any(isinstance(layer, (Add, GlobalAvgPool)) for layer in self.layers)

    def _index(self, layer) -> int:
        """``self.layers.index(layer)``, from a name -> position table made once."""
        table = self.__dict__.get("_positions")
        if table is None:
            table = {ly.name: i for i, ly in enumerate(self.layers)}
            object.__setattr__(self, "_positions", table)
        i = table.get(getattr(layer, "name", None))
        if i is None or self.layers[i] != layer:
            raise ValueError(f"{layer!r} is not a layer of {self.name}")
        return i

    def source_index(self, layer) -> int:
        """The index, in :meth:`shapes`, of the tensor an add's skip reads: its source's output."""
        return 1 + self._index(self.layer(layer.source))

    def rectified(self, t: int) -> bool:
        """Whether tensor ``t`` of :meth:`shapes` (the input of ``layers[t]``; ``t = len(layers)``:
        the logits) comes out of a ReLU: its producer has ``relu``, or is a max pool of a tensor that
        does (a max pool keeps the sign; a global average pool is linear: its output is not)."""
        while t > 0:
            layer = self.layers[t - 1]
            if not isinstance(layer, Pool):
                return bool(getattr(layer, "relu", False))
            t -= 1
        return False

    def needs_grad(self, t: int) -> bool:
        """Whether tensor ``t`` needs a gradient: some layer before it has weights (the input and
        the pools that only follow it need none)."""
        first = next(i for i, layer in enumerate(self.layers) if _has_weights(layer))
        return t > first

    def layer(self, name: str):
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise NetError(f"no layer named {name!r} in {self.name}")

    def conv_geometry(self, layer) -> dict:
        """``{"w_shape": (K, C, R, S), "stride": .., "pad": ..}`` of a conv or fc layer."""
        idx = self._index(layer)
        c, h, w = self.shapes()[idx]
        if isinstance(layer, Add) and layer.project:
            c_src = self.shapes()[self.source_index(layer)][0]
            return {"w_shape": (c, c_src, 1, 1), "stride": layer.stride, "pad": 0}
        if isinstance(layer, Conv):
            return {"w_shape": (layer.out_channels, c) + layer.kernel, "stride": layer.stride,
                    "pad": layer.pad}
        if isinstance(layer, Fc):
            return {"w_shape": (layer.out_features, c, h, w), "stride": 1, "pad": 0}
        raise NetError(f"{layer.name} has no weights")

    @property
    def classes(self) -> int:
        return math.prod(self.shapes()[-1])

    def macs(self) -> list:
        """Per layer with weights (:meth:`param_layers`), the MACs of one sample for FP, BP (data
        gradient: 0 when its input needs none, :meth:`needs_grad`) and WG.  A projection's MACs are
        those of its 1x1 conv over the skip; adds and pools do no MACs."""
        out, shapes = [], self.shapes()
        for i, layer in enumerate(self.layers):
            if not _has_weights(layer):
                continue
            k, c, r, s = self.conv_geometry(layer)["w_shape"]
            _, ho, wo = shapes[i + 1]
            n = k * c * r * s * ho * wo
            src = self.source_index(layer) if isinstance(layer, Add) else i
            out.append(LayerMacs(layer.name, fp=n, bp=n if self.needs_grad(src) else 0, wg=n))
        return out

    # ---- numerics -------------------------------------------------------------------------
    def precision(self, name: str) -> Formats:
        if name not in self.formats:
            raise NetError(f"net {self.name} has no precision {name!r}; it has {sorted(self.formats)}")
        return self.formats[name]

    def shifts(self, precision: str, lr_log2: int | None = None) -> dict:
        """``{layer name: LayerShifts}`` for a precision (derived, then explicit overrides)."""
        fmt = self.precision(precision)
        lr_log2 = self.train.lr_log2 if lr_log2 is None else lr_log2
        result = {}
        for layer in self.param_layers():
            base = asdict(fmt.derived_shifts(lr_log2 + layer.lr_log2_offset))
            values = dict(base, **fmt.shifts.get(layer.name, {}))
            for key, value in values.items():
                lo = -MAX_SHIFT if key.startswith("update") else 0
                if not lo <= value <= MAX_SHIFT:
                    raise NetError(
                        f"{self.name}/{precision}: derived shift {layer.name}.{key} = {value} is "
                        f"outside {lo}..{MAX_SHIFT}; adjust the formats or give it explicitly"
                    )
            result[layer.name] = LayerShifts(**values)
        return result

    def to_dict(self) -> dict:
        """A JSON-able description that :func:`net_from_dict` turns back into an equal Net."""
        layers, types = [], {cls: kind for kind, cls in LAYER_TYPES.items()}
        for layer in self.layers:
            d = {"type": types[type(layer)]}
            d.update({FILE_KEYS.get(f.name, f.name): getattr(layer, f.name) for f in fields(layer)
                      if not (f.name in DEFAULTED_OPTIONS and getattr(layer, f.name) == f.default)})
            if isinstance(layer, Conv):
                d["kernel"] = list(layer.kernel)
            layers.append(d)
        formats = {}
        for pname, fmt in self.formats.items():
            formats[pname] = {
                "act": [fmt.act.bits, fmt.act.frac], "weight": [fmt.weight.bits, fmt.weight.frac],
                "grad": [fmt.grad.bits, fmt.grad.frac], "wgrad": [fmt.wgrad.bits, fmt.wgrad.frac],
                "bias_bits": fmt.bias_bits, "loss_scale_log2": fmt.loss_scale_log2,
                "shifts": {k: dict(v) for k, v in fmt.shifts.items()},
            }
        train = {k: v for k, v in asdict(self.train).items() if v is not None and not (k == "translate" and v == 0)}
        return {"name": self.name, "input_shape": list(self.input_shape), "layers": layers,
                "formats": formats, "train": train}


# ---- loading ------------------------------------------------------------------------------

def _has_weights(layer) -> bool:
    return isinstance(layer, (Conv, Fc)) or (isinstance(layer, Add) and layer.project)


def _check_skip(add: Add, shapes: list, layers: tuple) -> None:
    """``ValueError`` unless the skip of ``add`` (after its projection) has the main branch's shape."""
    main = shapes[-1]
    src = shapes[1 + [ly.name for ly in layers].index(add.source)]
    skip = src
    if add.project:
        skip = (main[0], conv_out_size(src[1], 1, add.stride, 0, "skip height"),
                conv_out_size(src[2], 1, add.stride, 0, "skip width"))
    if skip != main:
        how = (f"its 1x1 projection of stride {add.stride} gives {'x'.join(map(str, skip))}" if add.project
               else "give project = true (and its stride) for a 1x1 projection")
        raise ValueError(f"the residual branches' shapes disagree: the main branch is "
                         f"{'x'.join(map(str, main))}, the skip from {add.source!r} is "
                         f"{'x'.join(map(str, src))}; {how}")


def _qformat(value, what: str) -> QFormat:
    if isinstance(value, dict):
        value = [value.get("bits"), value.get("frac")]
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise NetError(f"{what} must be [bits, frac] or {{bits=.., frac=..}}, got {value!r}")
    try:
        return QFormat(*value)
    except (TypeError, ValueError) as exc:
        raise NetError(f"{what}: {exc}") from None


def _take(table: dict, allowed: set, what: str) -> dict:
    extra = set(table) - allowed
    if extra:
        raise NetError(f"{what}: unknown keys {sorted(extra)}; allowed: {sorted(allowed)}")
    return table


def _formats_from_dict(name: str, d: dict) -> Formats:
    what = f"formats.{name}"
    if not isinstance(d, dict):
        raise NetError(f"{what} must be a table")
    _take(d, {"act", "weight", "grad", "wgrad", "bias_bits", "loss_scale_log2", "shifts"}, what)
    for key in ("act", "weight", "grad"):
        if key not in d:
            raise NetError(f"{what}: missing {key!r}")
    kwargs = {k: _qformat(d[k], f"{what}.{k}") for k in ("act", "weight", "grad", "wgrad") if k in d}
    for k in ("bias_bits", "loss_scale_log2"):
        if k in d:
            kwargs[k] = d[k]
    shifts = d.get("shifts", {})
    if not isinstance(shifts, dict) or not all(isinstance(v, dict) for v in shifts.values()):
        raise NetError(f"{what}.shifts must map layer names to tables of shifts")
    return Formats(shifts={k: dict(v) for k, v in shifts.items()}, **kwargs)


def net_from_dict(d: dict) -> Net:
    """Build a :class:`Net` from a parsed TOML/JSON document (``NetError`` on any problem)."""
    if not isinstance(d, dict):
        raise NetError("a net description must be a table/object")
    _take(d, {"name", "input_shape", "layers", "formats", "train"}, "net")
    for key in ("name", "input_shape", "layers"):
        if key not in d:
            raise NetError(f"net description: missing {key!r}")
    if not isinstance(d["layers"], list):
        raise NetError("layers must be a list of tables")
    if len(d["layers"]) > MAX_LAYERS:
        raise NetError(f"{len(d['layers'])} layers; a net has at most {MAX_LAYERS}")
    layers = []
    for i, entry in enumerate(d["layers"]):
        if not isinstance(entry, dict) or "type" not in entry:
            raise NetError(f"layer {i}: needs a 'type' (one of {sorted(LAYER_TYPES)})")
        entry = dict(entry)
        kind = entry.pop("type")
        if kind not in LAYER_TYPES:
            raise NetError(f"layer {i}: unknown type {kind!r}; known: {sorted(LAYER_TYPES)}")
        cls = LAYER_TYPES[kind]
        _take(entry, {FILE_KEYS.get(f.name, f.name) for f in fields(cls)}, f"layer {i} ({kind})")
        entry = {PY_KEYS.get(k, k): v for k, v in entry.items()}
        try:
            layers.append(cls(**entry))
        except TypeError as exc:
            raise NetError(f"layer {i} ({kind}): {exc}") from None
    formats = d.get("formats", {})
    if not isinstance(formats, dict):
        raise NetError("formats must be a table of precisions")
    train = d.get("train", {})
    if not isinstance(train, dict):
        raise NetError("train must be a table")
    _take(train, {f.name for f in fields(TrainDefaults)}, "train")
    for key, value in train.items():
        lo, hi = TRAIN_RANGES[key]
        if not _is_int(value) or not lo <= value <= hi:
            raise NetError(f"train.{key} must be an integer in {lo}..{hi}, got {value!r}")
    return Net(name=d["name"], input_shape=d["input_shape"], layers=tuple(layers),
               formats={str(k): _formats_from_dict(str(k), v) for k, v in formats.items()},
               train=TrainDefaults(**train))


#: why a residual net cannot run where chains only run (the end of :func:`check_chain`'s message)
CHAIN_ONLY = "this runs chains of conv, pool and fc layers"


def check_chain(net: Net, why: str = CHAIN_ONLY) -> None:
    """``NetError`` (one line) if ``net`` has residual layers, for what runs chains only (``--schedule
    cp``'s staleness); the cluster's own check of a residual net's mapping is
    :func:`pymtl_fp.cluster.compiler.residual.check_residual`."""
    if net.residual:
        kinds = sorted({type(layer).__name__ for layer in net.layers if isinstance(layer, (Add, GlobalAvgPool))})
        raise NetError(f"{net.name} is a residual net ({', '.join(kinds)} layers): residual nets run on the "
                       f"golden engine only (--engine golden): {why}")


def save_net(net: Net, path) -> Path:
    """Write ``net`` as a description :func:`load_net` reads back into an equal Net: TOML for a
    ``.toml`` path (written with ``tomli-w``), JSON for a ``.json`` path.  Returns the path."""
    path = Path(path)
    doc = net.to_dict()
    if path.suffix.lower() == ".toml":
        import tomli_w

        text = tomli_w.dumps(doc)
    elif path.suffix.lower() == ".json":
        import json

        text = json.dumps(doc, indent=2) + "\n"
    else:
        raise NetError(f"{path}: a net file ends in .toml or .json")
    path.write_text(text)
    return path


def presets() -> list:
    """Names of the bundled network descriptions."""
    return sorted(p.stem for p in NETS_DIR.glob("*.toml"))


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system, ...: no such file either
        return False


def load_net(path_or_preset) -> Net:
    """Load a net from a preset name (``presets()``), a ``.toml`` file or a ``.json`` file."""
    if isinstance(path_or_preset, Net):
        return path_or_preset
    text = str(path_or_preset)
    path = Path(text)
    if text in presets():
        path = NETS_DIR / f"{text}.toml"
    elif not _is_file(path):
        raise NetError(f"no preset or file named {text[:200]!r}; presets: {', '.join(presets())}")
    try:
        doc = read_document(path)
    except DocumentError as exc:
        raise NetError(str(exc)) from None
    return net_from_dict(doc)
