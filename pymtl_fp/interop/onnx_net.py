"""ONNX files in: a chain of ``Conv``, ``Relu``, ``MaxPool``, ``Flatten``/``Reshape``, ``Gemm`` (or
``MatMul`` + ``Add``) nodes -> :class:`~pymtl_fp.net.Net` and float64 parameters.

What it models: the ONNX side of :mod:`pymtl_fp.interop.chain`, read with the ``onnx`` package.
The graph must be a chain (each node takes the previous node's output, plus initializers or
``Constant`` outputs); weights are initializers.  Mapped: ``Conv`` (``group=1``, ``dilations`` 1,
symmetric ``pads`` equal on both axes, one stride, a bias), ``Relu`` (right after a conv or fc:
fused), ``MaxPool`` (square ``kernel_shape``, ``strides`` = kernel, no ``pads``), ``Flatten``
(``axis=1``), ``Reshape`` to two dimensions ``(N, -1)`` (a flatten), ``Gemm`` (``alpha = beta = 1``,
``transA = 0``; ``transB`` 0 or 1) and ``MatMul`` by an initializer followed by an ``Add`` of one
(``(F, K)`` weights: the transpose of PyTorch's).  ``Identity`` nodes are passed through.  Every
other op is refused in one line naming each node (name and op type).

Layer names: a conv or fc layer is named after its weight initializer without ``.weight``
(PyTorch's exporter names them ``<module path>.weight``), a pool after its node's scope
(``/features/features.2/MaxPool`` -> ``features.2``), so a model exported by ``torch.onnx.export``
imports as the same net as the model itself (:func:`pymtl_fp.interop.torch_net.net_from_torch`).

Limits: a file of at most :data:`MAX_ONNX_BYTES`; weights inside the file (external data is
refused: it would read other files); the input shape from the graph's input ``(N, C, H, W)`` unless
given.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from pymtl_fp.interop.chain import SUPPORTED, InteropError, Layer, build, one_line
from pymtl_fp.net import Net

#: largest ONNX file read (the largest net of the studies, VGG-16, is about 550 MB in float32)
MAX_ONNX_BYTES = 1 << 30


def _onnx():
    try:
        import onnx
    except ImportError:
        raise InteropError("reading ONNX files needs the onnx package (pip install onnx)") from None
    return onnx


def load_model(path):
    """The ``onnx.ModelProto`` of ``path``, checked (one-line :class:`InteropError` naming the file
    when it is missing, too large, not an ONNX model, or keeps its weights in other files)."""
    onnx = _onnx()
    path = Path(path)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise InteropError(f"{path}: not a file")
    except OSError as exc:
        raise InteropError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if size > MAX_ONNX_BYTES:
        raise InteropError(f"{path}: {size} bytes; an ONNX file of at most {MAX_ONNX_BYTES} bytes is read")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # (protobuf decode errors of every kind: one line)
        raise InteropError(one_line(f"{path}: not an ONNX model ({type(exc).__name__}: {str(exc)[:200]})")) from None
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        raise InteropError(f"{path}: weights kept in external data files; save the model with its weights inside")
    if not model.graph.node:
        raise InteropError(f"{path}: not an ONNX model (no graph nodes)")
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # (the checker's errors of every kind: one line)
        raise InteropError(one_line(f"{path}: not a valid ONNX model ({type(exc).__name__}: {str(exc)[:300]})")) \
            from None
    return model


def _attrs(node) -> dict:
    onnx = _onnx()
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _scope(node_name: str) -> str:
    """``features.2`` of ``/features/features.2/MaxPool`` (else the node name)."""
    m = re.match(r"^/(?:.*/)?([^/]+)/[^/]+$", node_name)
    return m.group(1) if m else node_name


def _weight_name(init_name: str, node_name: str) -> str:
    return init_name[: -len(".weight")] if init_name.endswith(".weight") else _scope(node_name)


def _pads(attrs: dict, kernel: tuple, problems: list) -> int:
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if auto == "VALID":
        return 0
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        if kernel[0] != kernel[1] or kernel[0] % 2 == 0 or any(s != 1 for s in attrs.get("strides", [1, 1])):
            problems.append(f"auto_pad={auto} with this kernel and stride")
        return (kernel[0] - 1) // 2
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    if len(set(pads)) > 1:
        problems.append(f"pads={pads} (the same padding on every side)")
    return int(pads[0]) if pads else 0


def _conv(node, where, attrs, consts) -> Layer:
    problems = []
    if len(node.input) < 2 or node.input[1] not in consts:
        return Layer(where, node.op_type, "conv", ["weights not an initializer"])
    w = consts[node.input[1]]
    b = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if w.ndim != 4:
        problems.append(f"{w.ndim}-D weights (a 2-D convolution only)")
        return Layer(where, node.op_type, "conv", problems)
    kernel = tuple(int(k) for k in attrs.get("kernel_shape", w.shape[2:]))
    if attrs.get("group", 1) != 1:
        problems.append(f"group={attrs['group']} (the engine runs group=1)")
    if any(d != 1 for d in attrs.get("dilations", [1, 1])):
        problems.append(f"dilations={list(attrs['dilations'])} (dilation 1 only)")
    strides = list(attrs.get("strides", [1, 1]))
    if len(set(strides)) > 1:
        problems.append(f"strides={strides} (one stride for both axes)")
    pad = _pads(attrs, kernel, problems)
    if b is None:
        problems.append("no bias (every conv and linear layer of pymtl-fp has a bias)")
    return Layer(where, node.op_type, "conv", problems, name=_weight_name(node.input[1], node.name),
                 out=int(w.shape[0]), in_=int(w.shape[1]), kernel=kernel, stride=int(strides[0]), pad=pad,
                 weight=w, bias=b)


def _pool(node, where, attrs) -> Layer:
    problems = []
    kernel = list(attrs.get("kernel_shape", []))
    strides = list(attrs.get("strides", [1] * len(kernel)))
    if len(kernel) != 2 or kernel[0] != kernel[1]:
        problems.append(f"kernel_shape={kernel} (square 2-D windows only)")
    if strides != kernel:
        problems.append(f"strides={strides} with kernel_shape={kernel} (stride = kernel only)")
    if any(attrs.get("pads", [0])) or any(d != 1 for d in attrs.get("dilations", [1])):
        problems.append("pads or dilations (none only)")
    if len([o for o in node.output if o]) > 1:
        problems.append("an indices output")
    return Layer(where, node.op_type, "pool", problems, name=_scope(node.name), k=int(kernel[0]) if kernel else 0)


def _fc(node, where, w, b, problems, init_name) -> Layer:
    if w.ndim != 2:
        return Layer(where, node.op_type, "fc", problems + [f"{w.ndim}-D weights"])
    return Layer(where, node.op_type, "fc", problems, name=_weight_name(init_name, node.name), out=int(w.shape[0]),
                 in_=int(w.shape[1]), weight=w, bias=None if b is None else np.asarray(b).reshape(-1))


def _gemm(node, where, attrs, consts) -> Layer:
    problems = []
    if len(node.input) < 2 or node.input[1] not in consts:
        return Layer(where, node.op_type, "fc", ["weights not an initializer"])
    w = consts[node.input[1]]
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 or attrs.get("transA", 0):
        problems.append("alpha, beta or transA not 1, 1, 0")
    if not attrs.get("transB", 0):
        w = w.T
    b = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if b is None:
        problems.append("no bias (every conv and linear layer of pymtl-fp has a bias)")
    return _fc(node, where, w, b, problems, node.input[1])


def _flatten_shape(shape) -> bool:
    shape = [int(v) for v in np.asarray(shape).reshape(-1)]
    return len(shape) == 2 and (shape[1] == -1 or shape[0] in (0, -1))


def onnx_layers(model) -> list:
    """The :class:`~pymtl_fp.interop.chain.Layer` records of an ``onnx.ModelProto``, in order."""
    onnx = _onnx()
    graph = model.graph
    consts = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in consts]
    if len(inputs) != 1:
        raise InteropError(f"the graph has {len(inputs)} inputs ({', '.join(inputs)}); an image batch only")
    layers, current, branches = [], inputs[0], []
    for i, node in enumerate(graph.node):
        where = node.name or f"node {i}"
        attrs = _attrs(node)
        if node.op_type == "Constant":
            value = attrs.get("value")
            if value is not None and len(node.output) == 1:
                consts[node.output[0]] = onnx.numpy_helper.to_array(value)
                continue
        feeds = [x for x in node.input if x and x not in consts]
        pending = layers[-1] if layers and layers[-1].type == "MatMul" and layers[-1].bias is None else None
        if node.op_type == "Add" and pending is not None and feeds == [current] and len(node.input) == 2:
            pending.bias = np.asarray(consts[next(x for x in node.input if x in consts)]).reshape(-1)
            pending.type = "MatMul + Add"
            current = node.output[0]
            continue
        if feeds != [current]:
            branches.append(f"{where} ({node.op_type}) takes {', '.join(feeds) or 'no input'}")
        op = node.op_type
        if op == "Conv":
            layer = _conv(node, where, attrs, consts)
        elif op == "Relu":
            layer = Layer(where, op, "relu")
        elif op == "MaxPool":
            layer = _pool(node, where, attrs)
        elif op == "Flatten":
            layer = Layer(where, op, "flatten", [] if attrs.get("axis", 1) == 1 else [f"axis={attrs['axis']} (1 only)"])
        elif op == "Reshape":
            ok = len(node.input) > 1 and node.input[1] in consts and _flatten_shape(consts[node.input[1]])
            layer = Layer(where, op, "flatten", [] if ok else ["a shape other than (N, -1)"])
        elif op == "Gemm":
            layer = _gemm(node, where, attrs, consts)
        elif op == "MatMul" and len(node.input) == 2 and node.input[1] in consts:
            layer = _fc(node, where, consts[node.input[1]].T, None, [], node.input[1])
        elif op == "Identity":
            current = node.output[0]
            continue
        else:
            layer = Layer(where, op, None)
        layers.append(layer)
        current = node.output[0] if node.output else current
    for ly in layers:
        if ly.type == "MatMul" and ly.bias is None:
            ly.problems.append("no Add of a bias after it (every conv and linear layer of pymtl-fp has a bias)")
    outputs = [o.name for o in graph.output]
    if outputs != [current]:
        branches.append(f"the graph's outputs ({', '.join(outputs)}) are not the last node's")
    if branches:
        raise InteropError(one_line(f"not a plain chain of layers: {'; '.join(branches[:12])}"))
    return layers


def _input_shape(model, input_shape):
    if input_shape is not None:
        return tuple(input_shape)
    consts = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in consts:
            continue
        dims = value.type.tensor_type.shape.dim
        shape = [d.dim_value if d.HasField("dim_value") else None for d in dims]
        if len(shape) == 4 and all(shape[1:]):
            return tuple(shape[1:])
        raise InteropError(f"the graph's input {value.name} has shape {shape}, not (N, C, H, W) with C, H, W "
                           "known; give the input shape")
    raise InteropError("the graph has no input")


def _import(path, input_shape, name, formats, train) -> tuple:
    model = load_model(path)
    name = name or Path(path).stem
    return build(onnx_layers(model), _input_shape(model, input_shape), name, formats, train, SUPPORTED["onnx"])


def net_from_onnx(path, input_shape=None, name: str | None = None, formats=None, train=None) -> Net:
    """The :class:`~pymtl_fp.net.Net` of the ONNX file ``path``.  ``input_shape`` ``(C, H, W)``:
    default the graph input's; ``name``: default the file's stem;
    ``formats``, ``train``: as :func:`pymtl_fp.interop.torch_net.net_from_torch`.  Nodes that do not
    map are refused in one line (:class:`~pymtl_fp.interop.chain.InteropError`)."""
    return _import(path, input_shape, name, formats, train)[0]


def params_from_onnx(path, net: Net) -> dict:
    """The golden model's float64 parameters held in the ONNX file ``path`` imported as ``net``."""
    got, params, _ = _import(path, net.input_shape, net.name, net.formats, net.train)
    if got.layers != net.layers:
        raise InteropError(f"{path}: its layers ({', '.join(ly.name for ly in got.layers)}) are not net "
                           f"{net.name}'s ({', '.join(ly.name for ly in net.layers)})")
    return params
