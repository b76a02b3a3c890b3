"""Transfer time on a link, for the two kinds of link the project models.

* A simulated link (:class:`~pymtl_fp.link.config.LinkConfig`) moves one message of ``E``
  elements per beat at ``throughput_msgs`` messages per cycle (its credits, flits and latency
  decide that rate): ``elements / (E * throughput_msgs)`` cycles (:func:`transfer_cycles`; the
  cluster report's link bounds).
* A physical link of the design-space tools (:class:`~pymtl_fp.explore.links.Link`) moves
  payload bits at a bandwidth in bits per second: ``bits / bits_per_s`` seconds, none on an
  unlimited link (:func:`transfer_seconds`).  Latency only adds to a pipeline's fill time, so it
  is not part of the transfer time.

Serial transceivers lose bandwidth to their line code: :data:`LINE_64B66B` (payload bits, line
bits), :func:`payload_fraction`.
"""

from __future__ import annotations

import math

import numpy as np

#: 64b/66b line code (Aurora 64B/66B, 10GBASE-R): (payload bits, line bits)
LINE_64B66B = (64, 66)


def payload_fraction(encoding: tuple = LINE_64B66B) -> float:
    """The share of a line's bits that carry payload under ``encoding`` (payload bits, line bits)."""
    return encoding[0] / encoding[1]


def transfer_seconds(bits, bits_per_s: float):
    """Seconds to move ``bits`` (scalar or array) at ``bits_per_s`` (0 on an unlimited link)."""
    if math.isinf(bits_per_s):
        return np.zeros(np.shape(bits)) if np.ndim(bits) else 0.0
    return bits / bits_per_s


def transfer_cycles(elements, lanes: int, msgs_per_cycle: float) -> float:
    """Cycles to move ``elements`` in messages of ``lanes`` elements at ``msgs_per_cycle``."""
    return elements / (lanes * msgs_per_cycle)
