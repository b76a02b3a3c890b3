"""The order of a node's image passes in one training step (the pipeline schedule), and when its
weights change: once per step (``1f1b``, ``gpipe``: mini-batch SGD) or after each image's backward
pass (``cp``: pipelined SGD / continuous propagation; ``sgd``: plain SGD, one image in the cluster at
a time; both :mod:`pymtl_fp.golden.per_image`)."""

from __future__ import annotations

from pymtl_fp.cluster.config import ClusterError

SCHEDULES = ("1f1b", "gpipe", "cp", "sgd")
#: schedules that update the weights after every image (the rest once per step)
PER_IMAGE = ("cp", "sgd")
#: when a mini-batch schedule computes the weight gradients: over the whole batch after the last
#: backward pass (one ``bwd_weight`` with ``n = B``: every image's inputs and output gradients kept),
#: or per image after its backward pass (behind the next forward pass), summed un-rounded in B and
#: rounded once at the step's end (the router's ``REQUANT``: the same bits), so an image's tensors are
#: freed with its weight gradients; ``auto``: per image for the layers where one image's
#: ``bwd_weight`` costs at most :data:`AUTO_SLACK` more engine cycles than its share of the batch's
#: (conv layers), over the batch for the rest (a 1x1 output, fc: all drain, a few words an image)
WGRAD = ("batch", "image", "auto")
#: ``auto``'s bound on a per-image ``bwd_weight``'s cycles against its share of the batch's
AUTO_SLACK = 1.05


def step_order(schedule: str, j: int, n: int, batch: int) -> list:
    """Node ``j``'s order of image passes in one step: ``[("fwd" | "bwd", image)]``.

    ``gpipe``: the forward passes of images ``0..B-1``, then their backward passes (node ``j``
    works on image ``b`` while node ``j+1`` works on image ``b-1``, in each phase).
    ``1f1b`` (as PipeDream): ``n - j + 1`` forward passes, then one backward and one forward pass
    alternately, then the remaining backward passes; with the pipeline full every node works on
    the forward pass of one image and the backward pass of an earlier one, so a node's cycles per
    image are its forward plus its backward work, not the slowest node's in each phase.  (One
    image more in flight than the minimum ``n - j``: node N-1 runs the next image's forward pass
    while the host turns its logits into the loss gradient.)  The compiler also emits the LOADs
    of the next forward pass's input right after the backward pass's last compute command
    (:meth:`_Node.backward`), so they run beside it.  The
    weights change only in the update at the end of the step (the weight gradients are summed over
    the batch in one ``bwd_weight``), so both orders compute exactly the same values.  ``cp`` runs
    1F1B's order and updates the node's layers right after each backward pass, so the order decides
    the values (:func:`fwd_versions`); ``sgd`` runs one image at a time through the whole cluster
    (forward, backward, update), so every forward pass sees every earlier update."""
    if schedule not in SCHEDULES:
        raise ClusterError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if schedule == "cp":  # 1F1B's order; the updates follow each backward pass
        schedule = "1f1b"
    if schedule == "sgd":  # no pipelining: each image's forward and backward pass, then the next
        return [(kind, b) for b in range(batch) for kind in ("fwd", "bwd")]
    if schedule == "gpipe":
        return [("fwd", b) for b in range(batch)] + [("bwd", b) for b in range(batch)]
    warm = min(batch, n - j + 1)
    order = [("fwd", b) for b in range(warm)]
    for b in range(batch):
        order.append(("bwd", b))
        if b + warm < batch:
            order.append(("fwd", b + warm))
    return order



def fill_passes(schedule: str, j: int, n: int, batch: int) -> frozenset:
    """The images whose forward pass node ``j`` runs while the pipeline fills: those before its
    first backward pass of the step (1F1B's ``n - j + 1`` warm-up passes; every image under GPipe);
    under ``sgd`` every image (each one passes through an empty cluster).  Row bands pay there
    (:mod:`pymtl_fp.cluster.compiler.bands`): the next node starts as the rows come, and nothing else is
    waiting.  With the pipeline full a node alternates a forward and a backward pass, and a forward
    pass in bands, started early, would wait mid-pass for its upstream node's rows instead of
    running the backward pass."""
    order = step_order(schedule, j, n, batch)
    if schedule == "sgd":
        return frozenset(b for kind, b in order if kind == "fwd")
    first_bwd = next((i for i, (kind, _) in enumerate(order) if kind == "bwd"), len(order))
    return frozenset(b for _, b in order[:first_bwd])

def split_allowed(schedule: str, split: bool) -> bool:
    """May the partition split a layer between two nodes?  Not under a per-image schedule (each
    layer's update on one node: :func:`layer_versions`)."""
    return split and schedule not in PER_IMAGE


def fwd_versions(schedule: str, j: int, n: int, batch: int) -> list:
    """Under a per-image schedule, how many of this step's updates of node ``j``'s layers the
    forward pass of each image sees: the backward passes before it in :func:`step_order` (each
    followed by its update).  Under 1F1B that is ``max(0, b - (n - j))``: node ``j`` works
    ``n - j`` images ahead of its updates (its pipeline depth to the host and back)."""
    order = step_order(schedule, j, n, batch)
    out, done = [0] * batch, 0
    for kind, b in order:
        if kind == "bwd":
            done += 1
        else:
            out[b] = done
    return out


def layer_versions(net, part, schedule: str) -> dict:
    """``{layer name: fwd_versions of the node holding it}`` for
    :func:`~pymtl_fp.golden.per_image.train_step_per_image`; refused if a layer is split over two
    nodes (its pieces would be updated at different times: a per-image schedule cuts at layer
    boundaries)."""
    holder = {}
    for j, items in enumerate(part.nodes):
        for it in items:
            if it.pool:
                continue
            name = net.layers[it.layer].name
            if name in holder:
                raise ClusterError(f"--schedule {schedule} needs whole layers on each node: {name} is split "
                                   f"over nodes {holder[name]} and {j} (cut at layer boundaries: --no-split)")
            holder[name] = j
    return {name: fwd_versions(schedule, j, part.n, part.batch) for name, j in holder.items()}


def images_in_flight(schedule: str, j: int, n: int, batch: int, early_receive: bool = True,
                     late_wgrad: bool = False) -> int:
    """The most images whose forward pass node ``j`` has begun and whose backward pass (with its
    weight gradients) it has not finished, in :func:`step_order`: the slots a node needs for what an
    image keeps until its backward pass (its layers' inputs, the pools' argmaxes) when nothing waits
    for the batch's end.  ``early_receive``: the next forward pass's input is LOADed during the
    backward pass before it (as :func:`~pymtl_fp.cluster.compiler.codegen.backward` emits it, except
    under ``sgd``), so it takes a slot one pass early.  ``late_wgrad``: an image's weight gradients
    run after the forward pass that follows its backward pass (``--wgrad image``), so it keeps its
    slot until then."""
    order = step_order(schedule, j, n, batch)
    live, peak, due = 0, 0, 0
    for i, (kind, _) in enumerate(order):
        next_fwd = i + 1 < len(order) and order[i + 1][0] == "fwd"
        if kind == "fwd":
            live += 1
            peak = max(peak, live)
            live -= due
            due = 0
        else:
            early = early_receive and schedule != "sgd" and next_fwd
            peak = max(peak, live + early)
            if late_wgrad and next_fwd:
                due = 1
            else:
                live -= 1
    return peak
