"""Training with a weight update after every image: plain SGD and pipelined SGD / continuous
propagation (CATERPILLAR, Li & Pedram ASAP'17), bit-exact in fixed point.

What it models: the same cluster work as :func:`~pymtl_fp.golden.train.train_step` (forward, the
host's loss gradient, backward, SGD), but each layer is updated as soon as its backward pass for
an image is done, so later images see partially updated weights.  In a pipeline the forward pass
of image ``b`` runs before the backward passes of some earlier images have updated the layer
(*staleness*); which update each forward pass sees is the schedule's business
(:func:`pymtl_fp.cluster.compiler.schedule.fwd_versions`), given here as ``fwd_versions``:

* ``fwd_versions[layer][b]`` = how many of this step's updates of ``layer`` (images ``0..``) the
  forward pass of image ``b`` sees, ``0 <= v <= b``; ``None``: ``v = b`` for every layer (no
  staleness: plain SGD, one image at a time).
* The backward pass of image ``b`` (``bwd_data`` through the layer) uses the layer after the updates
  of images ``0..b-1``: a node runs its backward passes in image order and applies each update
  right after it.  The weight gradient of image ``b`` pairs its forward input ``x`` (computed with
  the stale weights) with its output gradient, as the hardware does.

Bits (what the cluster must reproduce):

* the loss gradient of image ``b`` is row ``b`` of the batch's golden loss gradient
  (:func:`~pymtl_fp.golden.loss.row_loss_grad`: divided by the batch size ``B``, so ``B`` per-image
  updates move the weights as far as one mini-batch update at the same ``lr``);
* forward and ``bwd_data`` round image ``b`` as slice ``b`` of the whole batch's tensors (seed
  :func:`~pymtl_fp.numerics.slice_seed` of the step seed at the slice's offset), as the mini-batch step;
* the weight gradient, bias gradient and update of layer ``p`` for image ``b`` round with
  :func:`image_seed` = the step seed shifted by ``b * numel(w_p)``: as if image ``b``'s gradient were
  slice ``b`` of a ``(B,) + w.shape`` tensor.  With ``B = 1`` and no staleness this is exactly
  :func:`~pymtl_fp.golden.train.train_step` of one image (a test checks it).
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.golden.loss import batch_loss, row_loss_grad
from pymtl_fp.golden.train import (
    FLOAT64,
    TrainConfig,
    _check_batch,
    _check_params,
    backward,
    forward,
    sgd_layer,
    step_seed,
)
from pymtl_fp.net import Net
from pymtl_fp.numerics import slice_seed


def image_seed(seed: int, b: int, numel: int) -> int:
    """The rounding seed of image ``b``'s weight gradient and update of a layer of ``numel``
    weights, in the step of seed ``seed`` (linear in ``seed``, as the step loop needs)."""
    return slice_seed(seed, b * numel)


def check_versions(net: Net, fwd_versions, batch: int) -> dict:
    """``fwd_versions`` as ``{layer name: [v_0 .. v_{B-1}]}`` (``None``: ``v_b = b``), refused with a
    one-line error unless ``0 <= v_b <= b`` for every conv/fc layer."""
    names = [layer.name for layer in net.param_layers()]
    if fwd_versions is None:
        return {name: list(range(batch)) for name in names}
    out = {}
    for name in names:
        vs = fwd_versions.get(name)
        if vs is None or len(vs) != batch:
            raise ValueError(f"fwd_versions must give {batch} update counts for layer {name!r}")
        if any(not 0 <= int(v) <= b for b, v in enumerate(vs)):
            raise ValueError(f"fwd_versions[{name!r}] = {list(vs)}: image b can see 0..b updates")
        out[name] = [int(v) for v in vs]
    return out


def train_step_per_image(net: Net, params: dict, images, labels, cfg: TrainConfig, fwd_versions=None):
    """One step of ``B`` images, the weights updated after each image (see the module doc):
    returns ``(new_params, loss)`` (loss: the batch's mean loss on the logits each image got, as the
    host reports it)."""
    if cfg.precision == FLOAT64:
        raise ValueError("train_step_per_image is fixed point; float64 runs use train_step_float64")
    _check_params(net, params)
    _check_batch(net, images, labels)
    images, labels = np.asarray(images), np.asarray(labels)
    batch = len(images)
    vers = check_versions(net, fwd_versions, batch)
    fmt = net.precision(cfg.precision)
    seed = step_seed(cfg.seed, cfg.step)
    relu_last = net.rectified(len(net.layers))
    shapes = net.shapes()
    hist = {name: [prm] for name, prm in params.items()}  # version v = after v updates this step
    rows = []
    numel = {layer.name: int(np.prod(net.conv_geometry(layer)["w_shape"])) for layer in net.param_layers()}
    for b in range(batch):
        # image b's tensors round as slice b of the batch's (an output of layer i: shapes[i + 1])
        stale = {name: h[vers[name][b]] for name, h in hist.items()}
        acts = forward(net, stale, images[b:b + 1], cfg.precision, mode=cfg.fwd_mode,
                       seed=lambda i, b=b: slice_seed(seed, b * int(np.prod(shapes[i + 1]))))
        logits = acts[-1][0] if isinstance(acts[-1], tuple) else acts[-1]
        row = logits.reshape(-1)
        g = row_loss_grad(row, labels[b], batch, fmt, relu_last).reshape(logits.shape)
        rows.append(row)
        current = {name: h[-1] for name, h in hist.items()}
        wseed = {name: image_seed(seed, b, n) for name, n in numel.items()}
        grads = backward(net, current, acts, g, cfg, lambda i, layer, w=wseed: w[layer.name],
                         lambda i, layer, b=b: slice_seed(seed, b * int(np.prod(shapes[i]))))
        for p, layer in enumerate(net.param_layers()):
            hist[layer.name].append(sgd_layer(net, p, current[layer.name], grads[layer.name], cfg, wseed[layer.name]))
    return {name: h[-1] for name, h in hist.items()}, batch_loss(np.stack(rows), labels, fmt)
