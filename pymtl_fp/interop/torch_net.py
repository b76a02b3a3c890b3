"""PyTorch models in and out: ``nn.Sequential`` / ``nn.Module`` -> :class:`~pymtl_fp.net.Net` and
float64 parameters, trained parameters -> a ``state_dict``, and a PyTorch evaluation that rounds
as the hardware does.

What it models: the PyTorch side of :mod:`pymtl_fp.interop.chain`.  An ``nn.Sequential`` (nested
ones too) is read module by module; any other ``nn.Module`` is traced with ``torch.fx`` and must be
a plain chain (each step takes the previous step's output).  Mapped: ``Conv2d`` (``groups=1``,
``dilation=1``, zero padding, one stride and one padding for both axes, a bias), ``ReLU`` (right
after a ``Conv2d`` or ``Linear``: fused into it), ``MaxPool2d`` (square, stride = kernel, no
padding), ``Flatten`` (``start_dim=1``) and ``Linear`` (with a bias); in a traced module also
``F.relu``/``torch.relu``, ``torch.flatten(x, 1)``/``x.flatten(1)`` and ``F.max_pool2d(x, k)``.

The golden model's parameters are the modules' weights in float64 (``Linear.weight`` ``(K, F)``
reshaped to the fc layer's ``(K, C, H, W)``: ``Flatten`` orders features C, H, W).  Exported
parameters go back the same way; fixed-point raw integers are divided by ``2**frac`` of the
weight format (biases: of the bias format, ``act.frac + weight.frac``).

:func:`hardware_rounding` makes a float64 copy of an imported model compute what the hardware's
forward pass computes: every conv/linear output rounded half up to the activation format and
saturated (:func:`pymtl_fp.numerics.requantize` in ``nearest`` mode).  With inputs and weights on
their formats' grids every product and partial sum is a multiple of ``2**-(act.frac +
weight.frac)`` far below ``2**53`` of them, so float64 holds each exactly and the logits are
bit-equal to the golden model's, in whatever order PyTorch sums.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict

import numpy as np

from pymtl_fp.golden.train import FLOAT64
from pymtl_fp.interop.chain import SUPPORTED, InteropError, Layer, build, one_line
from pymtl_fp.net import Conv, Net, Pool


def _torch():
    try:
        import torch
    except ImportError:
        raise InteropError("PyTorch is not installed (pip install torch)") from None
    return torch


def _array(t) -> np.ndarray | None:
    return None if t is None else t.detach().cpu().to(dtype=_torch().float64).numpy().copy()


def _pair(v) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _conv(where: str, m) -> Layer:
    problems, pad = [], 0
    kernel = tuple(int(k) for k in m.kernel_size)
    stride = _pair(m.stride)
    if m.groups != 1:
        problems.append(f"groups={m.groups} (the engine runs groups=1)")
    if _pair(m.dilation) != (1, 1):
        problems.append(f"dilation={_pair(m.dilation)} (the engine runs dilation 1)")
    if m.padding_mode != "zeros":
        problems.append(f"padding_mode={m.padding_mode!r} (zero padding only)")
    if stride[0] != stride[1]:
        problems.append(f"stride={stride} (one stride for both axes)")
    if isinstance(m.padding, str):
        if m.padding == "same":
            if stride != (1, 1) or kernel[0] != kernel[1] or kernel[0] % 2 == 0:
                problems.append("padding='same' with this kernel and stride (give the padding as a number)")
            pad = (kernel[0] - 1) // 2
    elif _pair(m.padding)[0] != _pair(m.padding)[1]:
        problems.append(f"padding={_pair(m.padding)} (one padding for both axes)")
    else:
        pad = int(_pair(m.padding)[0])
    if m.bias is None:
        problems.append("bias=False (every conv and linear layer of pymtl-fp has a bias)")
    return Layer(where, type(m).__name__, "conv", problems, out=int(m.out_channels), in_=int(m.in_channels),
                 kernel=kernel, stride=int(stride[0]), pad=pad, weight=_array(m.weight), bias=_array(m.bias),
                 source=where)


def _pool(where: str, m) -> Layer:
    problems = []
    kernel = _pair(m.kernel_size)
    stride = kernel if m.stride is None or m.stride == [] else _pair(m.stride)
    if kernel[0] != kernel[1]:
        problems.append(f"kernel_size={kernel} (square windows only)")
    if stride != kernel:
        problems.append(f"stride={stride} with kernel_size={kernel} (stride = kernel only)")
    if _pair(m.padding) != (0, 0):
        problems.append(f"padding={m.padding} (no padding)")
    if _pair(m.dilation) != (1, 1):
        problems.append(f"dilation={m.dilation} (dilation 1 only)")
    if m.return_indices:
        problems.append("return_indices=True")
    return Layer(where, type(m).__name__, "pool", problems, k=int(kernel[0]))


def _module_layer(where: str, m) -> Layer:
    """The :class:`Layer` record of one leaf module at path ``where``."""
    nn = _torch().nn
    name = type(m).__name__
    if type(m) is nn.Conv2d:
        return _conv(where, m)
    if type(m) is nn.ReLU:
        return Layer(where, name, "relu")
    if type(m) is nn.MaxPool2d:
        return _pool(where, m)
    if type(m) is nn.Flatten:
        ok = m.start_dim == 1 and m.end_dim == -1
        return Layer(where, name, "flatten", [] if ok else [f"start_dim={m.start_dim}, end_dim={m.end_dim} "
                                                             "(start_dim=1, end_dim=-1 only)"])
    if type(m) is nn.Linear:
        problems = [] if m.bias is not None else ["bias=False (every conv and linear layer of pymtl-fp has a bias)"]
        return Layer(where, name, "fc", problems, out=int(m.out_features), in_=int(m.in_features),
                     weight=_array(m.weight), bias=_array(m.bias), source=where)
    return Layer(where, name, None)


def _sequential(model, prefix: str = "") -> list:
    nn = _torch().nn
    out = []
    for name, child in model.named_children():
        where = f"{prefix}{name}"
        out += _sequential(child, where + ".") if type(child) is nn.Sequential else [_module_layer(where, child)]
    return out


def _function_layer(node) -> Layer:
    """A ``call_function`` / ``call_method`` step of a traced module."""
    torch = _torch()
    F = torch.nn.functional
    target, args, kwargs = node.target, node.args[1:], dict(node.kwargs)
    label = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    if target in (F.relu, torch.relu, "relu") and not args and not kwargs.get("inplace"):
        return Layer(node.name, label, "relu")
    if target in (torch.flatten, "flatten"):
        start = args[0] if args else kwargs.get("start_dim", 0)
        end = args[1] if len(args) > 1 else kwargs.get("end_dim", -1)
        ok = start == 1 and end == -1
        return Layer(node.name, label, "flatten", [] if ok else [f"start_dim={start}, end_dim={end} (1, -1 only)"])
    if target is F.max_pool2d:
        names = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
        given = dict(zip(names, args), **kwargs)
        k = _pair(given.get("kernel_size"))
        stride = given.get("stride")
        problems = []
        if k[0] != k[1]:
            problems.append(f"kernel_size={k} (square windows only)")
        if stride not in (None, []) and _pair(stride) != k:
            problems.append(f"stride={stride} (stride = kernel only)")
        if _pair(given.get("padding", 0)) != (0, 0) or _pair(given.get("dilation", 1)) != (1, 1):
            problems.append("padding or dilation (none only)")
        if given.get("return_indices"):
            problems.append("return_indices=True")
        return Layer(node.name, label, "pool", problems, k=int(k[0]) if isinstance(k[0], int) else 0)
    return Layer(node.name, label, None)


def _traced(model) -> list:
    """The steps of a traced module, in order; refused unless they form one chain."""
    torch = _torch()
    try:
        gm = torch.fx.symbolic_trace(model)
    except Exception as exc:  # (any failure to trace: one line)
        raise InteropError(one_line(f"cannot trace {type(model).__name__} with torch.fx ({type(exc).__name__}: "
                                    f"{str(exc)[:200]}); give an nn.Sequential or a plain chain")) from None
    modules = dict(gm.named_modules())
    nodes = list(gm.graph.nodes)
    inputs = [n for n in nodes if n.op == "placeholder"]
    if len(inputs) != 1:
        raise InteropError(f"{type(model).__name__}.forward takes {len(inputs)} inputs; an image batch only")
    out, current, branches, seen = [], inputs[0], [], set()
    for node in nodes:
        if node.op == "placeholder":
            continue
        feeds = [a for a in node.all_input_nodes]
        if node.op == "output":
            if feeds != [current]:
                branches.append(f"the output ({', '.join(n.name for n in feeds)})")
            break
        if feeds != [current]:
            branches.append(f"{node.name} (takes {', '.join(n.name for n in feeds) or 'no input'})")
        if node.op == "call_module":
            layer = _module_layer(str(node.target), modules[node.target])
            if node.target in seen and layer.source is not None:
                layer.problems.append("called twice (its weights would be shared)")
            seen.add(node.target)
        elif node.op in ("call_function", "call_method"):
            layer = _function_layer(node)
        else:  # get_attr: a tensor of the module used directly
            layer = Layer(node.name, f"get_attr {node.target}", None)
        out.append(layer)
        current = node
    if branches:
        raise InteropError(one_line(f"{type(model).__name__} is not a plain chain of layers: "
                                    f"{', '.join(branches[:12])}"))
    return out


def torch_layers(model) -> list:
    """The :class:`~pymtl_fp.interop.chain.Layer` records of ``model`` in forward order."""
    torch = _torch()
    if not isinstance(model, torch.nn.Module):
        raise InteropError(f"expected a torch.nn.Module, got {type(model).__name__}")
    return _sequential(model) if type(model) is torch.nn.Sequential else _traced(model)


def _import(model, input_shape, name, formats, train) -> tuple:
    name = name or type(model).__name__.lower()
    return build(torch_layers(model), input_shape, name, formats, train, SUPPORTED["torch"])


def net_from_torch(model, input_shape, name: str | None = None, formats=None, train=None) -> Net:
    """The :class:`~pymtl_fp.net.Net` of a PyTorch model taking ``input_shape`` ``(C, H, W)``
    images.  ``name``: the net's name (default: the model's class name); ``formats``: a preset name,
    a ``Net`` or a ``{precision: Formats}`` dict (default: the zoo's ``lenet-digits`` formats and
    training settings, :func:`~pymtl_fp.interop.chain.resolve_formats`); ``train``: a
    :class:`~pymtl_fp.net.TrainDefaults`.  Layers that do not map are refused in one line
    (:class:`~pymtl_fp.interop.chain.InteropError`)."""
    return _import(model, input_shape, name, formats, train)[0]


def _matching(model, net: Net) -> tuple:
    """``(records, params)``: the conv/linear records of ``model`` as named in ``net`` and their
    float64 parameters (refused unless the model maps to ``net``'s layers)."""
    if not isinstance(net, Net):
        raise InteropError(f"expected a pymtl_fp.net.Net, got {type(net).__name__}")
    got, params, sources = _import(model, net.input_shape, net.name, net.formats, net.train)
    if got.layers != net.layers:
        raise InteropError(f"the model's layers ({', '.join(ly.name for ly in got.layers)}) are not net "
                           f"{net.name}'s ({', '.join(ly.name for ly in net.layers)})")
    return sources, params


def params_from_torch(model, net: Net) -> dict:
    """The golden model's float64 parameters ``{layer: {"w", "b"}}`` of ``model`` (the net it was
    imported as: :func:`net_from_torch`)."""
    return _matching(model, net)[1]


def torch_from_net(net: Net):
    """An ``nn.Sequential`` computing ``net``'s float forward pass: ``Conv2d``/``Linear`` named as the
    net's layers, a ``ReLU`` after each layer with ``relu`` (``<name>_relu``), ``MaxPool2d(k)`` named
    as the pool, and a ``Flatten`` (``flatten``) before the first fc layer.  Its weights are
    PyTorch's initial ones; load trained ones with :func:`state_dict_from_params`.  A residual net
    (``add``, ``global_avg_pool``) is no ``nn.Sequential``: refused in one line."""
    if net.residual:
        raise InteropError(f"{net.name} is a residual net: torch_from_net exports chains of conv, pool and fc "
                           "layers (an nn.Sequential)")
    nn = _torch().nn
    mods, shapes, flat = OrderedDict(), net.shapes(), False
    for layer, (c, h, w) in zip(net.layers, shapes):
        if isinstance(layer, Pool):
            mods[layer.name] = nn.MaxPool2d(layer.k)
            continue
        if isinstance(layer, Conv):
            mods[layer.name] = nn.Conv2d(c, layer.out_channels, layer.kernel, layer.stride, layer.pad)
        else:
            if not flat:
                key = "flatten"
                while key in mods or any(ly.name == key for ly in net.layers):
                    key += "_"
                mods[key] = nn.Flatten()
                flat = True
            mods[layer.name] = nn.Linear(c * h * w, layer.out_features)
        if layer.relu:
            mods[f"{layer.name}_relu"] = nn.ReLU()
    return nn.Sequential(mods)


def _real(net: Net, params: dict, precision: str) -> dict:
    """``params`` as real numbers: float64 as given, fixed-point raw integers over ``2**frac``."""
    if precision == FLOAT64:
        return {n: {"w": np.asarray(p["w"], np.float64), "b": np.asarray(p["b"], np.float64)} for n, p in params.items()}
    fmt = net.precision(precision)
    out = {}
    for n, p in params.items():
        w, b = np.asarray(p["w"]), np.asarray(p["b"])
        if not (np.issubdtype(w.dtype, np.integer) and np.issubdtype(b.dtype, np.integer)):
            raise InteropError(f"{n}: precision {precision} takes raw integers, got {w.dtype} and {b.dtype}")
        out[n] = {"w": w / 2.0**fmt.weight.frac, "b": b / 2.0**fmt.bias.frac}
    return out


def state_dict_from_params(model_or_net, params: dict, net: Net | None = None, precision: str = FLOAT64) -> dict:
    """A ``state_dict`` holding ``params`` that ``model.load_state_dict`` accepts.

    ``model_or_net``: the PyTorch model ``net`` was imported from (then ``net`` is required: it names
    the layers), or a ``Net`` (the keys are then those of :func:`torch_from_net`, the tensors float64).  ``params``: the
    golden model's ``{layer: {"w", "b"}}``; ``precision``: ``"float64"`` (real values) or the name of
    a fixed-point precision of ``net`` (raw integers, divided by ``2**frac``: weights of the weight
    format, biases of the bias format).  Tensors take the dtype of the model's parameters (float32
    holds 8- and 16-bit values exactly; a 32-bit bias may round: use ``model.double()`` for exact
    values); every other entry of the model's ``state_dict`` is kept."""
    torch = _torch()
    if isinstance(model_or_net, Net):
        net, model = model_or_net, torch_from_net(model_or_net).double()
    elif net is None:
        raise InteropError("give the Net the model was imported as (net=...)")
    else:
        model = model_or_net
    sources = _matching(model, net)[0]
    real = _real(net, params, precision)
    missing = [ly.name for ly in sources if ly.name not in real]
    if missing:
        raise InteropError(f"params lack layers {', '.join(missing)}")
    state = OrderedDict(model.state_dict())
    for ly in sources:
        for key, value in ((f"{ly.source}.weight", real[ly.name]["w"]), (f"{ly.source}.bias", real[ly.name]["b"])):
            old = state[key]
            if value.size != old.numel():
                raise InteropError(f"{ly.name}: {value.shape} values for {key} of shape {tuple(old.shape)}")
            state[key] = torch.tensor(value.reshape(tuple(old.shape)), dtype=old.dtype)
    return state


@contextlib.contextmanager
def hardware_rounding(model, net: Net, precision: str):
    """Within the block, every ``Conv2d`` and ``Linear`` of ``model`` (imported as ``net``) rounds its
    output as the hardware's forward pass does: to the activation format of ``precision``, half up,
    saturated (ReLU and max pooling after it commute with that rounding).  ``model`` must compute in
    float64 (``copy.deepcopy(model).double()``) and be fed images on the activation grid
    (:func:`pymtl_fp.data.quantize_images` / ``2**act.frac``): then its logits are the golden
    model's fixed-point logits over ``2**act.frac``, exactly (module docstring)."""
    torch = _torch()
    fmt = net.precision(precision).act
    scale = 2.0**fmt.frac
    modules = dict(model.named_modules())
    targets = [modules[ly.source] for ly in _matching(model, net)[0]]

    def rounding(module, inputs, output):
        if output.dtype != torch.float64:
            raise InteropError(f"hardware_rounding needs a float64 model (model.double()); got {output.dtype}")
        return torch.clamp(torch.floor(output * scale + 0.5), fmt.min, fmt.max) / scale

    handles = [m.register_forward_hook(rounding) for m in targets]
    try:
        yield model
    finally:
        for h in handles:
            h.remove()


__all__ = ["hardware_rounding", "net_from_torch", "params_from_torch", "state_dict_from_params", "torch_from_net",
           "torch_layers"]
