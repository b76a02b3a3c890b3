"""Estimated memory of a training run, checked before any data is loaded.

A net within every per-layer limit of :mod:`pymtl_fp.net` can still need more memory than a
machine has (a 1 024 x 1 024 input makes the data set alone 14 GiB of float64 images), so the
commands compare this estimate with the memory available before they start.  The estimate counts
the large NumPy arrays, each at 8 bytes a value (float64 or int64):

* the data set at the net's input size, float and quantized (``images`` of them);
* one mini-batch's activations and gradients (three arrays per layer output) and the widest conv
  layer's unfolded input (im2col);
* the weights with their gradients, momentum and float copies (four arrays each);
* the simulated cluster's node buffers (:class:`~pymtl_fp.engine.EngineFL.EngineFL` keeps X, D, O
  of ``act_depth x P``, W and G of ``weight_depth x P*P``, B of ``bias_depth x P`` per node).

It is a lower bound of the real peak (Python objects and temporaries come on top), so a refusal
is certain to be right and a run it lets through may still need somewhat more.
"""

from __future__ import annotations

import math

from pymtl_fp.net import Conv, Fc, Net

#: bytes of one value (float64 or int64)
VALUE_BYTES = 8
#: images of each bundled data set (training and test together)
DATASET_IMAGES = {"digits": 1797, "mnist": 5000}


def data_bytes(net: Net, dataset: str) -> int:
    """The data set at the net's input size: float images and their quantized copies."""
    return 2 * DATASET_IMAGES.get(dataset, max(DATASET_IMAGES.values())) * math.prod(net.input_shape) * VALUE_BYTES


def _weights(layer, in_shape) -> int:
    c, h, w = in_shape
    if isinstance(layer, Conv):
        return layer.out_channels * c * math.prod(layer.kernel)
    return layer.out_features * c * h * w if isinstance(layer, Fc) else 0


def batch_bytes(net: Net, batch: int) -> int:
    """One mini-batch through the net: three arrays per layer output (values, pre-activations,
    gradients) and the largest conv layer's unfolded input."""
    shapes = net.shapes()
    values = sum(math.prod(s) for s in shapes)
    unfolded = max((_weights(layer, i) // layer.out_channels * o[1] * o[2]
                    for layer, i, o in zip(net.layers, shapes, shapes[1:]) if isinstance(layer, Conv)), default=0)
    return batch * (3 * values + unfolded) * VALUE_BYTES


def weight_bytes(net: Net) -> int:
    """The weights with their gradients, momentum and a float copy."""
    return 4 * sum(_weights(layer, i) for layer, i in zip(net.layers, net.shapes())) * VALUE_BYTES


def node_buffer_bytes(engines) -> int:
    """The simulated nodes' buffers (one :class:`~pymtl_fp.engine.config.EngineConfig` per node)."""
    return sum((3 * e.act_depth * e.P + 2 * e.weight_depth * e.P * e.P + e.bias_depth * e.P) * VALUE_BYTES
               for e in engines)


def training_bytes(net: Net, dataset: str, batch: int, engines=()) -> int:
    """The estimate (module docstring) of training ``net`` on ``dataset`` in mini-batches of
    ``batch`` images, on a simulated cluster of ``engines`` (none: the golden model alone)."""
    return data_bytes(net, dataset) + batch_bytes(net, batch) + weight_bytes(net) + node_buffer_bytes(engines)
