"""One training step of a CNN (a chain of layers, residual adds included), in bit-exact fixed point
and in float64.

What it models: the whole cluster's work for one mini-batch — forward through every layer,
softmax cross-entropy at the host, backward (data and weight gradients), SGD update — composed
from the golden operations, so the cluster simulation can be checked against it bit for bit.

Parameters are ``{layer name: {"w": KCRS array, "b": (K,) array}}`` (plus ``"vw"``/``"vb"``
velocities with momentum); integers in the formats of ``net.formats[precision]`` (biases in
accumulator units), or float64 real values for the float run.

Conventions the hardware must follow:

* **ReLU masks.** A conv/fc layer with ``relu`` applies ReLU to its output.  Its derivative is
  applied by the *next* conv/fc layer's ``conv_bwd_data(..., relu=True)``, masking where that
  layer's forward input ``x <= 0``.  Max pools in between do not change the mask: a pooled value
  is ``<= 0`` exactly when the element it routes its gradient to is.  If the last conv/fc layer has
  a ReLU, dlogits are masked where the logits are ``<= 0``.  The first conv/fc layer computes no
  data gradient.  Generally (:meth:`~pymtl_fp.net.Net.rectified`): every reader of a tensor that
  comes out of a ReLU masks the gradient it sends back to it -- a conv's ``bwd_data``, an add's
  two branches, a global average pool's backward.
* **Residual adds** (:mod:`pymtl_fp.golden.residual`): an add's output gradient goes to both
  branches; a tensor read by two layers (a skip's source) gets the exact sum of their gradients,
  saturated once.  An add's projection is a layer with weights (the ``p``-th of
  :meth:`~pymtl_fp.net.Net.param_layers`) whose data gradient goes to the skip's source.
* **Stochastic-rounding streams.** Step ``t`` rounds with seed ``(cfg.seed + t) mod 2**32``.
  The ``p``-th conv/fc layer (0-based) uses ``tensor_id = 8*p + role`` with role
  ``FWD=0, DX=1, DW=2, DB=3, UPDATE_W=4, UPDATE_B=5, VELOCITY_W=6, VELOCITY_B=7``
  (so at most 32 conv/fc layers).  Element indices are flat C-order indices of the full tensor.
  The ``g``-th global average pool uses ``255 - 2*g`` (forward) and ``254 - 2*g`` (backward)
  (:func:`gap_tensor_id`).
* **Rounding modes** (``TrainConfig``): forward ``nearest``, gradients and updates
  ``stochastic`` by default.
* **Momentum** ``m`` (``mu = 1 - 2**-m``): velocities (weights and biases alike) are kept in
  gradient units with ``wgrad.bits + m`` bits (headroom for the ``1/(1-mu)`` growth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymtl_fp.golden import reference
from pymtl_fp.golden.conv import conv_bwd_data, conv_bwd_weight, conv_bwd_weight_acc, conv_fwd
from pymtl_fp.golden.loss import softmax_xent_grad
from pymtl_fp.golden.pool import pool_bwd, pool_fwd
from pymtl_fp.golden.residual import add_fwd, fork_sum, gap_bwd, gap_fwd
from pymtl_fp.golden.sgd import sgd_update
from pymtl_fp.net import Add, GlobalAvgPool, Net, Pool
from pymtl_fp.numerics import check_mode

ROLES = {"FWD": 0, "DX": 1, "DW": 2, "DB": 3, "UPDATE_W": 4, "UPDATE_B": 5,
         "VELOCITY_W": 6, "VELOCITY_B": 7}
MAX_PARAM_LAYERS = 256 // len(ROLES)
FLOAT64 = "float64"


def tensor_id(param_index: int, role: str) -> int:
    """The stochastic-rounding tensor id of role ``role`` in the ``param_index``-th conv/fc layer."""
    if not 0 <= param_index < MAX_PARAM_LAYERS:
        raise ValueError(f"at most {MAX_PARAM_LAYERS} conv/fc layers have tensor ids")
    return len(ROLES) * param_index + ROLES[role]


def gap_tensor_id(net: Net, layer, role: str) -> int:
    """The stochastic-rounding tensor id of a global average pool's forward (``role="FWD"``) or
    backward (``"DX"``): the ``g``-th pool of the net uses ``255 - 2*g`` and ``254 - 2*g``."""
    g = [ly.name for ly in net.layers if isinstance(ly, GlobalAvgPool)].index(layer.name)
    tid = 255 - 2 * g - (role == "DX")
    if tid < len(ROLES) * len(net.param_layers()):
        raise ValueError(f"{net.name}: too many layers with weights and average pools for the 256 tensor ids")
    return tid


def step_seed(seed: int, step: int) -> int:
    return (seed + step) % 2**32


@dataclass(frozen=True)
class TrainConfig:
    """How to run one step: precision (a name of ``net.formats`` or ``"float64"``) and rounding."""

    precision: str
    lr_log2: int = 3
    momentum: int | None = None
    seed: int = 0
    step: int = 0
    fwd_mode: str = "nearest"
    grad_mode: str = "stochastic"
    update_mode: str = "stochastic"

    def __post_init__(self):
        for mode in (self.fwd_mode, self.grad_mode, self.update_mode):
            check_mode(mode)
        if self.momentum is not None and not 1 <= self.momentum <= 16:
            raise ValueError(f"momentum shift must be in 1..16, got {self.momentum}")

    @property
    def lr(self) -> float:
        return 2.0**-self.lr_log2


# ---- parameters -----------------------------------------------------------------------------

def init_params_float64(net: Net, seed: int = 0) -> dict:
    """He-normal weights (std ``sqrt(2 / fan_in)``, times the layer's ``init_scale``), zero biases,
    drawn in layer order."""
    rng = np.random.default_rng(seed)
    params = {}
    for layer in net.param_layers():
        k, c, r, s = net.conv_geometry(layer)["w_shape"]
        w = rng.normal(0.0, np.sqrt(2.0 / (c * r * s)), size=(k, c, r, s)) * layer.init_scale
        params[layer.name] = {"w": w, "b": np.zeros(k)}
    return params


def quantize_params(net: Net, params: dict, precision: str) -> dict:
    """Float parameters -> raw integers of the precision's weight and bias formats."""
    fmt = net.precision(precision)
    return {name: {"w": fmt.weight.quantize(p["w"]), "b": fmt.bias.quantize(p["b"])}
            for name, p in params.items()}


def _check_params(net: Net, params: dict) -> None:
    for layer in net.param_layers():
        if layer.name not in params:
            raise ValueError(f"params lack layer {layer.name!r}")
        w_shape = net.conv_geometry(layer)["w_shape"]
        got = np.shape(params[layer.name]["w"]), np.shape(params[layer.name]["b"])
        if got != (w_shape, w_shape[:1]):
            raise ValueError(f"{layer.name}: params have shapes {got}, expected {(w_shape, w_shape[:1])}")


def _check_batch(net: Net, images, labels) -> None:
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[1:] != net.input_shape:
        raise ValueError(f"images must be (N,) + {net.input_shape}, got {images.shape}")
    if np.shape(labels) != images.shape[:1]:
        raise ValueError(f"labels must have shape ({images.shape[0]},), got {np.shape(labels)}")


# ---- fixed point -----------------------------------------------------------------------------

def forward(net: Net, params: dict, images, precision: str, *, mode="nearest", seed=0) -> list:
    """Integer forward pass; returns ``[input, output of layer 0, ...]`` (pools: ``(y, argmax)``).
    ``seed``: the rounding seed of every layer, or ``seed(i)`` the one of ``net.layers[i]``."""
    fmt = net.precision(precision)
    shifts = net.shifts(precision)
    acts, p = [np.asarray(images)], 0
    for i, layer in enumerate(net.layers):
        x = acts[-1][0] if isinstance(acts[-1], tuple) else acts[-1]
        layer_seed = seed(i) if callable(seed) else seed
        if isinstance(layer, Pool):
            acts.append(pool_fwd(x, k=layer.k))
            continue
        if isinstance(layer, GlobalAvgPool):
            acts.append(gap_fwd(x, out_bits=fmt.act.bits, mode=mode, seed=layer_seed,
                                tensor_id=gap_tensor_id(net, layer, "FWD")))
            continue
        if isinstance(layer, Add) and not layer.project:
            acts.append(add_fwd(x, _value(acts[net.source_index(layer)]), bits=fmt.act.bits, relu=layer.relu,
                                name=layer.name))
            continue
        geo = net.conv_geometry(layer)
        prm = params[layer.name]
        conv_in = _value(acts[net.source_index(layer)]) if isinstance(layer, Add) else x
        y = conv_fwd(
            conv_in, prm["w"], prm["b"], stride=geo["stride"], pad=geo["pad"],
            shift=shifts[layer.name].fwd, relu=layer.relu and not isinstance(layer, Add), out_bits=fmt.act.bits,
            mode=mode, seed=layer_seed, tensor_id=tensor_id(p, "FWD"), x_bits=fmt.act.bits,
            w_bits=fmt.weight.bits, b_bits=fmt.bias_bits)
        if isinstance(layer, Add):  # the projected skip, added to the main branch
            y = add_fwd(x, y, bits=fmt.act.bits, relu=layer.relu, name=layer.name)
        acts.append(y)
        p += 1
    return acts


def _value(a):
    return a[0] if isinstance(a, tuple) else a


def predict(net: Net, params: dict, images, precision: str) -> np.ndarray:
    """Integer logits (N, classes) of a batch (forward rounding ``nearest``)."""
    if precision == FLOAT64:
        return predict_float64(net, params, images)
    out = _value(forward(net, params, images, precision)[-1])
    return out.reshape(out.shape[0], -1)


def gradients(net: Net, params: dict, images, labels, cfg: TrainConfig):
    """Integer forward + backward: returns ``(loss, {layer: (dw, db)})`` (dw, db in wgrad format)."""
    _check_params(net, params)
    _check_batch(net, images, labels)
    fmt = net.precision(cfg.precision)
    seed = step_seed(cfg.seed, cfg.step)
    acts = forward(net, params, images, cfg.precision, mode=cfg.fwd_mode, seed=seed)
    logits = _value(acts[-1])
    loss, g = softmax_xent_grad(logits, labels, logit_frac=fmt.act.frac, grad_format=fmt.grad,
                                loss_scale_log2=fmt.loss_scale_log2, logit_bits=fmt.act.bits)
    if net.rectified(len(net.layers)):
        g = np.where(logits > 0, g, 0)
    return loss, backward(net, params, acts, g, cfg, lambda i, layer: seed, lambda i, layer: seed)


def backward(net: Net, params: dict, acts: list, g, cfg: TrainConfig, dw_seed, dx_seed, raw: bool = False) -> dict:
    """The backward pass from the loss gradient ``g`` over the forward activations ``acts``:
    ``{layer: (dw, db)}``.  ``dw_seed(i, layer)`` / ``dx_seed(t, layer)``: the rounding seeds of
    layer ``i``'s weight gradients and of the data gradient it sends to tensor ``t`` (``t = i``,
    or an add's skip source; the step seed for a mini-batch).  ``raw``: ``dw`` and ``db`` are the
    exact accumulators, not rounded (``dw_seed`` unused): a replica's partial sums.

    A tensor read by two layers (the source of a skip) sums the two gradients it receives
    (:func:`~pymtl_fp.golden.residual.fork_sum`); each reader masks its gradient by the ReLU
    derivative of the tensor's producer (:meth:`~pymtl_fp.net.Net.rectified`)."""
    fmt = net.precision(cfg.precision)
    shifts = net.shifts(cfg.precision, cfg.lr_log2)
    index = {layer.name: p for p, layer in enumerate(net.param_layers())}
    pending = {len(net.layers): [g]}
    grads = {}

    def send(t, contribution):
        if net.needs_grad(t):
            pending.setdefault(t, []).append(contribution)

    def mask(t, grad):
        return np.where(_value(acts[t]) > 0, grad, 0) if net.rectified(t) else grad

    def data_grad(layer, grad, t):
        """``bwd_data`` of ``layer``'s conv (its input: tensor ``t``), sent to tensor ``t``."""
        if net.needs_grad(t):
            geo, p = net.conv_geometry(layer), index[layer.name]
            send(t, conv_bwd_data(
                grad, params[layer.name]["w"], _value(acts[t]), stride=geo["stride"], pad=geo["pad"],
                shift=shifts[layer.name].bwd_data, relu=net.rectified(t), out_bits=fmt.grad.bits,
                mode=cfg.grad_mode, seed=dx_seed(t, layer), tensor_id=tensor_id(p, "DX"),
                dy_bits=fmt.grad.bits, w_bits=fmt.weight.bits))

    for i in reversed(range(len(net.layers))):
        if not net.needs_grad(i + 1):
            break
        layer, parts = net.layers[i], pending.pop(i + 1)
        g = parts[0] if len(parts) == 1 else fork_sum(parts, bits=fmt.grad.bits)
        if isinstance(layer, Pool):
            send(i, pool_bwd(g, acts[i + 1][1], k=layer.k))
            continue
        if isinstance(layer, GlobalAvgPool):
            if net.needs_grad(i):
                send(i, gap_bwd(g, _value(acts[i]), out_bits=fmt.grad.bits, relu=net.rectified(i),
                                mode=cfg.grad_mode, seed=dx_seed(i, layer),
                                tensor_id=gap_tensor_id(net, layer, "DX")))
            continue
        t = i
        if isinstance(layer, Add):  # the gradient goes to both branches unchanged
            send(i, mask(i, g))
            t = net.source_index(layer)
            if not layer.project:
                send(t, mask(t, g))
                continue
        geo, sh, p = net.conv_geometry(layer), shifts[layer.name], index[layer.name]
        x = _value(acts[t])
        if raw:
            grads[layer.name] = conv_bwd_weight_acc(x, g, geo["w_shape"], stride=geo["stride"], pad=geo["pad"],
                                                    x_bits=fmt.act.bits, dy_bits=fmt.grad.bits)
        else:
            grads[layer.name] = conv_bwd_weight(
                x, g, geo["w_shape"], stride=geo["stride"], pad=geo["pad"], shift=sh.wgrad,
                bias_shift=sh.bgrad, out_bits=fmt.wgrad.bits, mode=cfg.grad_mode, seed=dw_seed(i, layer),
                tensor_id=tensor_id(p, "DW"), bias_tensor_id=tensor_id(p, "DB"),
                x_bits=fmt.act.bits, dy_bits=fmt.grad.bits)
        data_grad(layer, g, t)
    return grads


def sgd_layer(net: Net, p: int, prm: dict, grads: tuple, cfg: TrainConfig, seed: int) -> dict:
    """The SGD update of the ``p``-th conv/fc layer's parameters ``prm`` by its ``(dw, db)``,
    rounding with ``seed`` (and momentum velocities, if ``cfg.momentum``)."""
    fmt = net.precision(cfg.precision)
    layer = net.param_layers()[p]
    sh = net.shifts(cfg.precision, cfg.lr_log2)[layer.name]
    dw, db = grads
    common = {"mode": cfg.update_mode, "seed": seed, "momentum": cfg.momentum}
    if cfg.momentum is not None:
        common["velocity_bits"] = fmt.wgrad.bits + cfg.momentum
    w = sgd_update(prm["w"], dw, lr_shift=sh.update_w, bits=fmt.weight.bits,
                   tensor_id=tensor_id(p, "UPDATE_W"), velocity=prm.get("vw"),
                   velocity_tensor_id=tensor_id(p, "VELOCITY_W"), **common)
    b = sgd_update(prm["b"], db, lr_shift=sh.update_b, bits=fmt.bias_bits,
                   tensor_id=tensor_id(p, "UPDATE_B"), velocity=prm.get("vb"),
                   velocity_tensor_id=tensor_id(p, "VELOCITY_B"), **common)
    if cfg.momentum is None:
        return {"w": w, "b": b}
    return {"w": w[0], "b": b[0], "vw": w[1], "vb": b[1]}


def train_step(net: Net, params: dict, images, labels, cfg: TrainConfig):
    """One bit-exact SGD step on a batch of raw-integer images: returns ``(new_params, loss)``."""
    if cfg.precision == FLOAT64:
        raise ValueError("train_step is the fixed-point step; use train_step_float64 for float64")
    seed = step_seed(cfg.seed, cfg.step)
    loss, grads = gradients(net, params, images, labels, cfg)
    new = {layer.name: sgd_layer(net, p, params[layer.name], grads[layer.name], cfg, seed)
           for p, layer in enumerate(net.param_layers())}
    return new, loss


# ---- float64 ---------------------------------------------------------------------------------

def forward_float64(net: Net, params: dict, images) -> list:
    acts = [np.asarray(images, dtype=np.float64)]
    for layer in net.layers:
        x = _value(acts[-1])
        if isinstance(layer, Pool):
            acts.append(reference.pool_fwd(x, k=layer.k))
            continue
        if isinstance(layer, GlobalAvgPool):
            acts.append(reference.gap_fwd(x))
            continue
        skip = _value(acts[net.source_index(layer)]) if isinstance(layer, Add) else None
        if isinstance(layer, Add) and not layer.project:
            acts.append(reference.add_fwd(x, skip, relu=layer.relu))
            continue
        geo, prm = net.conv_geometry(layer), params[layer.name]
        if isinstance(layer, Add):
            proj = reference.conv_fwd(skip, prm["w"], prm["b"], stride=geo["stride"], pad=0)
            acts.append(reference.add_fwd(x, proj, relu=layer.relu))
            continue
        acts.append(reference.conv_fwd(x, prm["w"], prm["b"], stride=geo["stride"], pad=geo["pad"],
                                       relu=layer.relu))
    return acts


def predict_float64(net: Net, params: dict, images) -> np.ndarray:
    out = _value(forward_float64(net, params, images)[-1])
    return out.reshape(out.shape[0], -1)


def gradients_float64(net: Net, params: dict, images, labels):
    """Float64 forward + backward of the mean loss: ``(loss, {layer: (dw, db)})`` (the same walk as
    :func:`backward`: a fork's gradients summed, each reader applying its input's ReLU mask)."""
    _check_params(net, params)
    _check_batch(net, images, labels)
    acts = forward_float64(net, params, images)
    logits = _value(acts[-1])
    loss, g = reference.softmax_xent(logits.reshape(logits.shape[0], -1), labels)
    g = g.reshape(logits.shape)
    if net.rectified(len(net.layers)):
        g = np.where(logits > 0, g, 0.0)
    pending, grads = {len(net.layers): [g]}, {}

    def send(t, grad, masked=True):
        if net.needs_grad(t):
            if masked and net.rectified(t):
                grad = np.where(_value(acts[t]) > 0, grad, 0.0)
            pending.setdefault(t, []).append(grad)

    for i in reversed(range(len(net.layers))):
        if not net.needs_grad(i + 1):
            break
        layer = net.layers[i]
        parts = pending.pop(i + 1)
        g = parts[0] if len(parts) == 1 else sum(parts)
        if isinstance(layer, Pool):
            send(i, reference.pool_bwd(g, acts[i + 1][1], k=layer.k), masked=False)
            continue
        if isinstance(layer, GlobalAvgPool):
            send(i, reference.gap_bwd(g, _value(acts[i]).shape))
            continue
        t = i
        if isinstance(layer, Add):
            send(i, g)
            t = net.source_index(layer)
            if not layer.project:
                send(t, g)
                continue
        geo, x = net.conv_geometry(layer), _value(acts[t])
        grads[layer.name] = reference.conv_bwd_weight(x, g, geo["w_shape"], stride=geo["stride"], pad=geo["pad"])
        if net.needs_grad(t):
            send(t, reference.conv_bwd_data(g, params[layer.name]["w"], x, stride=geo["stride"], pad=geo["pad"]))
    return loss, grads


def train_step_float64(net: Net, params: dict, images, labels, cfg: TrainConfig):
    """The float64 counterpart of :func:`train_step` (same lr, same momentum, no rounding)."""
    loss, grads = gradients_float64(net, params, images, labels)
    mu = None if cfg.momentum is None else 1.0 - 2.0**-cfg.momentum
    offsets = {layer.name: layer.lr_log2_offset for layer in net.param_layers()}
    new = {}
    for name, prm in params.items():
        dw, db = grads[name]
        lr = cfg.lr * 2.0**-offsets[name]
        if mu is None:
            new[name] = {"w": reference.sgd_update(prm["w"], dw, lr=lr),
                         "b": reference.sgd_update(prm["b"], db, lr=lr)}
        else:
            w, vw = reference.sgd_update(prm["w"], dw, lr=lr, momentum=mu, velocity=prm.get("vw"))
            b, vb = reference.sgd_update(prm["b"], db, lr=lr, momentum=mu, velocity=prm.get("vb"))
            new[name] = {"w": w, "b": b, "vw": vw, "vb": vb}
    return new, loss
