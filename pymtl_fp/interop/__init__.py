"""Bring your own network: import a PyTorch model or an ONNX file as a :class:`pymtl_fp.net.Net`
with its weights, and export trained weights back to a PyTorch ``state_dict``.

What it models: the mapping between a framework's chain of layers (``Conv2d``, ``ReLU``,
``MaxPool2d``, ``Flatten``, ``Linear`` in PyTorch; ``Conv``, ``Relu``, ``MaxPool``,
``Flatten``/``Reshape``, ``Gemm``/``MatMul`` + ``Add`` in ONNX) and the sequential CNN the golden
model and the cluster train (:mod:`pymtl_fp.net`: conv/fc layers with the ReLU fused in, k x k max
pools of stride k).  Weights map one to one: a conv's KCRS tensor is PyTorch's ``Conv2d.weight``,
an fc layer's ``(K, C, H, W)`` tensor is ``Linear.weight`` reshaped (PyTorch's ``Flatten`` orders
the features C, H, W as the golden model does).  Anything else is refused in one line naming every
layer that does not map.

* :mod:`pymtl_fp.interop.chain` -- the framework-neutral part: a list of layers -> a ``Net``;
* :mod:`pymtl_fp.interop.torch_net` -- PyTorch (needs ``torch``);
* :mod:`pymtl_fp.interop.onnx_net` -- ONNX files (needs ``onnx``).

The framework modules import their framework when called, so ``import pymtl_fp.interop`` needs
neither.
"""

from pymtl_fp.interop.chain import DEFAULT_LIKE, SUPPORTED, InteropError

__all__ = ["DEFAULT_LIKE", "SUPPORTED", "InteropError"]
