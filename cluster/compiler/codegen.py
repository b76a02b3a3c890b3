"""Per-node code generation: one node program (:mod:`pymtl_fp.cluster.isa`) from a partition, as
passes over the node's :class:`~pymtl_fp.cluster.compiler.plan.NodePlan`.

The passes: the forward pass of an image (:class:`~pymtl_fp.cluster.compiler.forward.Forward` in whole
layers, :class:`~pymtl_fp.cluster.compiler.bands.ForwardBands` in row bands), its backward pass
(:class:`~pymtl_fp.cluster.compiler.backward.Backward`,
:class:`~pymtl_fp.cluster.compiler.bands_backward.BackwardBands`), the placement of LOADs beside earlier
compute (:func:`~pymtl_fp.cluster.compiler.hoist.beside_weight_gradients`), the weight phase and the
weights' way in and out (:class:`~pymtl_fp.cluster.compiler.weight_phase.WeightPhase`), collectives and
per-image weight-gradient sums (:class:`~pymtl_fp.cluster.compiler.collectives.Collectives`), layers whose
weights a neighbour keeps (:class:`~pymtl_fp.cluster.compiler.remote_weights.RemoteWeights`).  A pass
reads and writes the plan only; the driver (:func:`~pymtl_fp.cluster.compiler.compile.compile_cluster`)
runs them in the schedule's order.  :data:`FORWARD` and :data:`BACKWARD` name the dataflows a pass
runs in; the plan's options (:meth:`~pymtl_fp.cluster.compiler.plan.Options.forward_flow`) choose one.

Pipelining (layer level, per image within a mini-batch): each node runs, per step, the forward
pass of each image (receive the input, run its layers, send the output on) and its backward pass
(receive the output gradient, run its layers backwards, send the input gradient on), in the order
of the ``schedule`` (:func:`~pymtl_fp.cluster.compiler.schedule.step_order`), then the weight gradients over
the whole batch and the updates.  Node ``i`` works on image ``b`` while node ``i+1`` works on
image ``b-1``.

A layer writes its result where the next layer on the node reads it (command field ``dsel``): a
forward result into the next item's input in X, a data gradient into the previous item's output
gradient in D.

Bit-exactness with :func:`pymtl_fp.golden.train.train_step`:

* weight gradients (``wgrad``, :data:`~pymtl_fp.cluster.compiler.schedule.WGRAD`): ``batch``: every node
  keeps each conv/fc layer input ``x`` and output gradient ``dy`` of every image of the batch on
  chip (X and D) and runs ``bwd_weight`` once over the batch (command field ``n = B``), so the sum
  over the batch is requantized once, as in the golden model; ``image``: after each image's
  backward pass (behind the next forward pass, which the next node waits for) a raw ``bwd_weight``
  (``n = 1``, ``acc`` from the second image on) adds the image's exact sums to B, and at the
  step's end the router's ``REQUANT`` rounds them once with the batch command's seeds (as a
  replica's all-reduce does, with one member), so a node keeps only the images in flight
  (:func:`~pymtl_fp.cluster.compiler.schedule.images_in_flight`) and one image's ``dy`` (two with overlap);
  ``auto``: per image for the layers where the timing model finds it no dearer (within
  :data:`~pymtl_fp.cluster.compiler.schedule.AUTO_SLACK`), over the batch for the rest
  (:attr:`~pymtl_fp.cluster.compiler.plan.Keep.per_image`);
* stochastic rounding of slices: :func:`~pymtl_fp.cluster.compiler.dma.slice_seed`; ``bwd_weight`` has one
  seed for ``dw`` and ``db``, so a piece at ``k0 > 0`` runs a second, small ``bwd_weight`` (``1x1``
  kernel, one input channel) for ``db`` with its own seed;
* the loss gradient is the host's (golden ``softmax_xent_grad`` per image, :mod:`pymtl_fp.cluster.hw.host`);
* biases: the router's scalar unit (``BIAS``) applies the golden ``sgd_update`` to ``b`` and
  ``db`` STOREd to its scratch FIFO, and ``b`` is LOADed back.

Nodes with different array sides: a tensor is re-laid out on the receiving side
(:meth:`~pymtl_fp.cluster.compiler.emit.Emitter.load_from`); a split layer's cut ``k0`` is a multiple
of both holders' ``P`` (:func:`pymtl_fp.cluster.compiler.partition.grid_unit`), so both pieces are whole
tiles in both layouts.
"""


from __future__ import annotations

from pymtl_fp.cluster.compiler import hoist
from pymtl_fp.cluster.compiler.backward import Backward
from pymtl_fp.cluster.compiler.bands import ForwardBands
from pymtl_fp.cluster.compiler.bands_backward import BackwardBands
from pymtl_fp.cluster.compiler.forward import Forward

#: the dataflows of a forward pass: a pass class whose ``run(b, seed, received)`` emits image
#: ``b``'s forward pass (``received``: its input is already LOADed)
FORWARD = {"layers": Forward, "bands": ForwardBands}
#: the dataflows of a backward pass: a pass class whose ``run(b, seed)`` emits image ``b``'s
#: backward pass
BACKWARD = {"layers": Backward, "bands": BackwardBands}


def forward(plan, b, seed, received=False):
    """Image ``b``'s forward pass in the dataflow the plan's options choose."""
    FORWARD[plan.opts.forward_flow(plan.node.j, b)](plan).run(b, seed, received)


def receive(plan, b):
    """LOAD image ``b``'s forward input (its first piece, in row bands) ahead of its forward pass
    (:meth:`~pymtl_fp.cluster.compiler.forward.Forward.receive`)."""
    Forward(plan).receive(b)


def backward(plan, b, seed, then=None, early=None):
    """Image ``b``'s backward pass in the dataflow the plan's options choose; ``then()`` (e.g. the
    next forward pass's :func:`receive`) beside its last compute command, and LOADs moved beside
    the weight gradients before it (``early``: :func:`~pymtl_fp.cluster.compiler.hoist.beside_weight_gradients`)."""
    start = len(plan.emit.ops)
    BACKWARD[plan.opts.backward_flow()](plan).run(b, seed)
    if then is not None:
        hoist.beside_weight_gradients(plan, start, then, early)
