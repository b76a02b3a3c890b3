"""The marks a node program reports: mark ids (the ``mark`` field of an instruction) with their
report labels, and the ``done`` ids of image passes."""

from __future__ import annotations

#: mark ids (the ``mark`` field) and their report labels; the k-th occurrence of a step-body
#: mark belongs to step k
MARK_STEP, MARK_BWD, MARK_WG, MARK_END = 1, 2, 3, 4
MARK_LABELS = {MARK_STEP: "step", MARK_BWD: "bwd", MARK_WG: "wg", MARK_END: "end"}


def done_id(kind: str, b: int) -> int:
    """The ``done`` field of image ``b``'s forward / backward pass completion."""
    return 1 + 2 * b + (kind == "bwd")


def done_label(did: int) -> tuple:
    return ("bwd" if (did - 1) % 2 else "fwd", (did - 1) // 2)
