"""Shape-level layer records and networks for the design-space tools.

A :class:`Network` is a list of :class:`Layer` records in topological order.  Each layer names
the tensors it reads (``inputs``: other layers' names, or ``"input"`` for the network input) and
produces one tensor named after itself.  Four kinds exist:

``conv``  K x (C/groups) x R x S kernel, stride, padding, optional groups (AlexNet) and ReLU;
``fc``    fully connected: a conv whose kernel covers its whole (flattened) input;
``pool``  max or average pooling (window, stride, padding; a global average pool is a window
          covering the whole map);
``add``   element-wise sum of two equally shaped tensors (a residual connection).

Batch normalization and ReLU are folded into the layer that precedes them: they cost no
multiply-accumulates and do not change shapes (published MAC totals do not count them either).

MAC counts per image (one multiply-accumulate = 2 operations):

* ``fp``  forward:            K * Ho * Wo * (C/groups) * R * S
* ``bp``  input gradient:     the same count, or 0 when the layer's input needs no gradient
                              (the network input)
* ``wg``  weight gradient:    the same count (dW[k,c,r,s] summed over every output position)

These are the standard counts: backward = 2 x forward for every layer but the first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pymtl_fp.cost.engine import valid_pairs
from pymtl_fp.golden.geometry import conv_out_size

KINDS = ("conv", "fc", "pool", "add")
MAC_KINDS = ("conv", "fc")


class NetworkError(ValueError):
    """A network description that cannot be right (bad shapes, unknown inputs, cycles)."""


@dataclass(frozen=True)
class Layer:
    """One layer; shapes are (channels, height, width) per image."""

    name: str
    kind: str
    inputs: tuple
    in_shape: tuple
    out_shape: tuple
    kernel: tuple = (1, 1)
    stride: int = 1
    pad: int = 0
    groups: int = 1
    relu: bool = False
    bias: bool = True
    pool_op: str = "max"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise NetworkError(f"layer {self.name!r}: unknown kind {self.kind!r} (one of {KINDS})")
        for shape in (self.in_shape, self.out_shape):
            if len(shape) != 3 or any(int(d) < 1 for d in shape):
                raise NetworkError(f"layer {self.name!r}: bad shape {shape}")
        if self.kind in MAC_KINDS and (self.in_shape[0] % self.groups or
                                       self.out_shape[0] % self.groups):
            raise NetworkError(f"layer {self.name!r}: channels not divisible by groups")

    # -- shapes -----------------------------------------------------------------------------
    @property
    def C(self) -> int:
        return self.in_shape[0]

    @property
    def K(self) -> int:
        return self.out_shape[0]

    @property
    def Ho(self) -> int:
        return self.out_shape[1]

    @property
    def Wo(self) -> int:
        return self.out_shape[2]

    @property
    def R(self) -> int:
        return self.kernel[0]

    @property
    def S(self) -> int:
        return self.kernel[1]

    @property
    def in_elems(self) -> int:
        return math.prod(self.in_shape)

    @property
    def out_elems(self) -> int:
        return math.prod(self.out_shape)

    @property
    def has_macs(self) -> bool:
        return self.kind in MAC_KINDS

    @property
    def reduction(self) -> int:
        """Length of one output's dot product (C/groups * R * S; flattened input for fc)."""
        if self.kind == "fc":
            return self.in_elems
        if self.kind == "conv":
            return (self.C // self.groups) * self.R * self.S
        return 0

    @property
    def params(self) -> int:
        """Weights (biases not counted: they are not in the published weight totals' MACs)."""
        return self.K * self.reduction if self.has_macs else 0

    @property
    def fp_macs(self) -> int:
        if not self.has_macs:
            return 0
        return self.K * self.Ho * self.Wo * self.reduction

    @property
    def useful_fp_macs(self) -> int:
        """:attr:`fp_macs` less the taps that fall on the zero padding: the work an engine does
        (it skips them; :func:`pymtl_fp.cost.engine.useful_macs`).  ``fp_macs`` is the count the
        published totals use."""
        if self.kind != "conv":
            return self.fp_macs
        return (self.K * (self.C // self.groups) * valid_pairs(self.in_shape[1], self.Ho, self.R, self.stride, self.pad)
                * valid_pairs(self.in_shape[2], self.Wo, self.S, self.stride, self.pad))

    def elementwise_ops(self) -> int:
        """Non-MAC work per image in the forward pass: comparisons (pool) or additions (add)."""
        if self.kind == "pool":
            return self.out_elems * self.R * self.S
        if self.kind == "add":
            return self.out_elems * (len(self.inputs) - 1)
        return 0


@dataclass
class Network:
    """A named list of layers in topological order, plus published reference figures."""

    name: str
    input_shape: tuple
    layers: list
    description: str = ""
    #: published figures: key -> (value, "citation"); keys: fp_macs, params
    published: dict = field(default_factory=dict)

    def __post_init__(self):
        seen = {"input": tuple(self.input_shape)}
        for layer in self.layers:
            if layer.name in seen:
                raise NetworkError(f"{self.name}: duplicate layer name {layer.name!r}")
            if not layer.inputs:
                raise NetworkError(f"{self.name}: layer {layer.name!r} has no inputs")
            for src in layer.inputs:
                if src not in seen:
                    raise NetworkError(f"{self.name}: layer {layer.name!r} reads {src!r}, "
                                       "which is not produced before it")
            first = seen[layer.inputs[0]]
            if tuple(first) != tuple(layer.in_shape):
                raise NetworkError(f"{self.name}: layer {layer.name!r} expects {layer.in_shape} "
                                   f"but {layer.inputs[0]!r} gives {first}")
            if layer.kind == "add":
                for src in layer.inputs:
                    if tuple(seen[src]) != tuple(layer.out_shape):
                        raise NetworkError(f"{self.name}: add {layer.name!r}: {src!r} is "
                                           f"{seen[src]}, not {layer.out_shape}")
            seen[layer.name] = tuple(layer.out_shape)

    @classmethod
    def from_net(cls, net, description: str | None = None) -> Network:
        """The shape-level view of a :class:`pymtl_fp.net.Net` (the simulated hardware's nets: a
        sequence of ``Conv`` / ``Pool`` / ``Fc``, and the residual ``Add`` / ``GlobalAvgPool``), so
        that the design-space tools and the cluster simulation run on one description: a conv keeps
        its kernel, stride, padding and ReLU, a max pool of ``k`` is a ``k x k`` window of stride
        ``k``, an fc layer keeps its ReLU, a global average pool is an ``avg`` pool over the whole
        map; an add reads the previous layer and its ``from`` layer, and an add with a projection
        becomes the projection's 1x1 conv, named ``<add>_proj``, and the add.  What a ``Net`` has
        beyond shapes (number formats, training defaults) is not part of the view."""
        from pymtl_fp.net import Add, GlobalAvgPool

        b = NetBuilder(net.name, tuple(net.input_shape))
        for i, layer in enumerate(net.layers):
            name = getattr(layer, "name", "") or f"layer{i}"
            if isinstance(layer, Add):
                main, short = b.cur, layer.source
                if layer.project:
                    short = b.conv(f"{name}_proj", b.shape(main)[0], 1, layer.stride, relu=False, src=short)
                b.add(name, main, short, relu=layer.relu)
            elif isinstance(layer, GlobalAvgPool):
                b.global_pool(name)
            elif hasattr(layer, "out_channels"):
                b.conv(name, layer.out_channels, tuple(layer.kernel), layer.stride, layer.pad,
                       relu=bool(layer.relu))
            elif hasattr(layer, "out_features"):
                b.fc(name, layer.out_features, relu=bool(layer.relu))
            elif hasattr(layer, "k"):
                b.pool(name, layer.k, layer.k)
            else:
                raise NetworkError(f"{net.name}: layer {name!r} is not a conv, pool or fc")
        return b.build(f"{net.name} (from pymtl_fp.net)" if description is None else description)

    # -- look-ups ---------------------------------------------------------------------------
    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def shape_of(self, tensor: str) -> tuple:
        return tuple(self.input_shape) if tensor == "input" else self.layer(tensor).out_shape

    def consumers(self, tensor: str) -> list:
        return [ly.name for ly in self.layers if tensor in ly.inputs]

    @property
    def mac_layers(self) -> list:
        return [ly for ly in self.layers if ly.has_macs]

    # -- operation counts -------------------------------------------------------------------
    def layer_macs(self, layer: Layer, useful: bool = False) -> dict:
        """FP / BP / WG multiply-accumulates per image for one layer (``useful``: without the
        padding's taps, :attr:`Layer.useful_fp_macs`)."""
        fp = layer.useful_fp_macs if useful else layer.fp_macs
        needs_dx = any(src != "input" for src in layer.inputs)
        return {"fp": fp, "bp": fp if needs_dx else 0, "wg": fp}

    def macs(self, useful: bool = False) -> dict:
        """FP / BP / WG multiply-accumulates per image (``useful``: see :meth:`layer_macs`) and their sum, ``train``."""
        tot = {"fp": 0, "bp": 0, "wg": 0}
        for layer in self.layers:
            for k, v in self.layer_macs(layer, useful).items():
                tot[k] += v
        tot["train"] = tot["fp"] + tot["bp"] + tot["wg"]
        return tot

    @property
    def params(self) -> int:
        return sum(ly.params for ly in self.layers)

    def train_ops(self) -> int:
        """Operations (2 per MAC) of one training step per image: FP + BP + WG."""
        return 2 * self.macs()["train"]

    def per_layer_table(self) -> list:
        rows = []
        for ly in self.layers:
            m = self.layer_macs(ly)
            rows.append({"layer": ly.name, "kind": ly.kind,
                         "in": "x".join(map(str, ly.in_shape)),
                         "out": "x".join(map(str, ly.out_shape)),
                         "params": ly.params, "fp_macs": m["fp"], "bp_macs": m["bp"],
                         "wg_macs": m["wg"], "eltwise_ops": ly.elementwise_ops()})
        return rows


def conv_out(size: int, kernel: int, stride: int, pad: int, ceil_mode: bool = False) -> int:
    """Output length of a convolution or pooling window along one axis: the golden model's rule
    (:func:`pymtl_fp.golden.geometry.conv_out_size`); ``ceil_mode``: a last, partial window counts
    too (Caffe's pooling in AlexNet and the ResNets)."""
    try:
        out = conv_out_size(size, kernel, stride, pad)
    except ValueError:
        raise NetworkError(f"window {kernel} larger than padded input {size}+2*{pad}") from None
    return out + int(ceil_mode and (size + 2 * pad - kernel) % stride != 0)


class NetBuilder:
    """Small helper that tracks the current tensor while a network is written down."""

    def __init__(self, name: str, input_shape: tuple):
        self.name = name
        self.input_shape = tuple(input_shape)
        self.layers: list = []
        self.cur = "input"

    def shape(self, tensor: str | None = None) -> tuple:
        tensor = self.cur if tensor is None else tensor
        if tensor == "input":
            return self.input_shape
        for ly in self.layers:
            if ly.name == tensor:
                return ly.out_shape
        raise NetworkError(f"{self.name}: no tensor {tensor!r}")

    def _add(self, layer: Layer) -> str:
        self.layers.append(layer)
        self.cur = layer.name
        return layer.name

    def conv(self, name, k, kernel, stride=1, pad=0, groups=1, relu=True, src=None, bias=True):
        src = self.cur if src is None else src
        c, h, w = self.shape(src)
        r, s = (kernel, kernel) if isinstance(kernel, int) else kernel
        out = (k, conv_out(h, r, stride, pad), conv_out(w, s, stride, pad))
        return self._add(Layer(name, "conv", (src,), (c, h, w), out, (r, s), stride, pad,
                               groups, relu, bias))

    def fc(self, name, k, relu=True, src=None):
        src = self.cur if src is None else src
        return self._add(Layer(name, "fc", (src,), self.shape(src), (k, 1, 1), relu=relu))

    def pool(self, name, kernel, stride, pad=0, op="max", ceil_mode=False, src=None):
        src = self.cur if src is None else src
        c, h, w = self.shape(src)
        out = (c, conv_out(h, kernel, stride, pad, ceil_mode),
               conv_out(w, kernel, stride, pad, ceil_mode))
        return self._add(Layer(name, "pool", (src,), (c, h, w), out, (kernel, kernel), stride,
                               pad, pool_op=op))

    def global_pool(self, name, src=None):
        src = self.cur if src is None else src
        c, h, w = self.shape(src)
        return self._add(Layer(name, "pool", (src,), (c, h, w), (c, 1, 1), (h, w), 1, 0,
                               pool_op="avg"))

    def add(self, name, a, b, relu=True):
        if self.shape(a) != self.shape(b):
            raise NetworkError(f"{self.name}: add {name!r}: {a!r} is {self.shape(a)} but "
                               f"{b!r} is {self.shape(b)}")
        return self._add(Layer(name, "add", (a, b), self.shape(a), self.shape(a), relu=relu))

    def build(self, description="", published=None) -> Network:
        return Network(self.name, self.input_shape, list(self.layers), description,
                       dict(published or {}))
