"""The order of a node's image passes in one training step (the pipeline schedule)."""

from __future__ import annotations

from pymtl_fp.cluster.config import ClusterError

SCHEDULES = ("1f1b", "gpipe")


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
    the batch in one ``bwd_weight``), so both orders compute exactly the same values."""
    if schedule not in SCHEDULES:
        raise ClusterError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if schedule == "gpipe":
        return [("fwd", b) for b in range(batch)] + [("bwd", b) for b in range(batch)]
    warm = min(batch, n - j + 1)
    order = [("fwd", b) for b in range(warm)]
    for b in range(batch):
        order.append(("bwd", b))
        if b + warm < batch:
            order.append(("fwd", b + warm))
    return order
