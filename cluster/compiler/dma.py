"""What the compiler asks of the router/DMA beyond moving elements: rounding seeds of slices and
the relayout of tensors between array sides (gather tables for the GATHER unit).

**Stochastic rounding of slices.**  The golden model indexes elements within the *whole* tensor
(all images, all channels); a per-image or per-channel-piece command rounds a contiguous slice at
offset ``off``.  Since ``h = seed*M1 + tensor_id*M2 + index (mod 2**32)`` with ``M1`` odd, the slice
is rounded exactly like the golden model by the seed ``seed + off * M1^-1 (mod 2**32)``
(:func:`slice_seed`).  It is linear in the step seed (``seed + step``), so a command of the step
loop carries ``slice_seed(seed0, off)`` and the sequencer adds the loop iteration (``seedstep``).

**Relayout.**  Every tensor travels in its producer's buffer layout (channels padded to a multiple
of ``P_a``, ``P_a`` lanes per activation word, ``P_a*P_a`` per weight word); a receiver with array
side ``P_b`` gathers it into its own layout: :func:`relayout_indices` says, for each element of the
``P_b`` layout, which element of the ``P_a`` layout it is (or -1: zero padding), and
:func:`~pymtl_fp.cluster.isa.runs` turns that list into the run-length gather table the GATHER unit
executes.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.engine.msgs import pack_act, pack_weight, tiles, unpack_act, unpack_weight
from pymtl_fp.numerics import slice_seed

__all__ = ["elems", "relayout", "relayout_indices", "slice_seed"]


def elems(kind: str, shape, P: int) -> int:
    """Elements of a tensor in the layout of array side ``P`` (padding included)."""
    if kind == "act":
        n, c, h, w = shape
        return n * tiles(c, P) * h * w * P
    k, c, r, s = shape
    return tiles(k, P) * tiles(c, P) * r * s * P * P


def relayout_indices(kind: str, shape, pa: int, pb: int) -> np.ndarray:
    """For each element of the tensor in ``pb``'s layout, its position in ``pa``'s layout (-1:
    padding, a zero)."""
    ids = np.arange(1, elems(kind, shape, pa) + 1, dtype=np.int64)
    if kind == "act":
        t = unpack_act(ids.reshape(-1, pa), shape, pa)
        out = pack_act(t, pb)
    else:
        t = unpack_weight(ids.reshape(-1, pa * pa), shape, pa)
        out = pack_weight(t, pb)
    return out.reshape(-1) - 1


def relayout(values, kind: str, shape, pa: int, pb: int) -> list:
    """The relayout itself (a reference for tests): ``values`` in ``pa``'s layout -> ``pb``'s."""
    v = np.asarray(values, dtype=np.int64)
    if kind == "act":
        return [int(x) for x in pack_act(unpack_act(v.reshape(-1, pa), shape, pa), pb).reshape(-1)]
    return [int(x) for x in pack_weight(unpack_weight(v.reshape(-1, pa * pa), shape, pa), pb).reshape(-1)]
