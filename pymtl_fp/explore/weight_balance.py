"""FPDeep's weight balancing at paper scale: weights kept by other FPGAs of the chain, streamed in.

Analytic model (no simulation), the paper-scale counterpart of the simulated cluster's
``train --weight-home`` (:mod:`pymtl_fp.cluster.compiler.weights_home`, one neighbour per layer, whole
layers).  Here an FPGA whose on-chip storage exceeds its RAM may give any amount of its weights
(and their gradient accumulators: the ``weights`` term of :meth:`.Chain.storage`) to FPGAs with
room, any number of hops away along the chain; the FPGAs between relay the stream.

**Flows.**  A placement is the net storage ``f[j]`` (bits) moved across each cut ``j`` (between
FPGA ``j`` and ``j + 1``; positive: rightward).  FPGA ``i`` then holds
``load[i] - f[i] + f[i - 1]``, and its net export ``f[i] - f[i - 1]`` is at most its movable
weights.  An FPGA that exports keeps ``staging`` bits more: two chunks its engines read while
the next streams in and one chunk of gradient sums, as the cluster's two staging slots of W and
its G slot.

**Choice** (two linear programs, :func:`scipy.optimize.linprog`): first the smallest largest
per-FPGA storage as a share ``t`` of its FPGA's RAM any placement reaches (with one RAM size,
the smallest largest storage); then, with every FPGA at most ``max(1, t)`` times its RAM, the
placement moving the fewest bit-hops ``sum |f[j]|`` (every hop of a weight is a link it crosses
each time it is used).  Where everything fits without moving, nothing moves.  The scaling sweep
uses it on identical FPGAs, ``explore partition --memory-limit`` on FPGAs of different sizes
(:mod:`~pymtl_fp.explore.balanced_partition`).

**Link cost** per image (mini-batch ``B``, weights of ``wb`` bits, their storage ``wb + ab`` bits
with the ``ab``-bit accumulator): a weight kept ``h`` hops from its user crosses ``h`` links
towards the user twice per mini-batch (forward, and backward for the data gradient) and its
gradient sum once back, so a cut carrying ``|f|`` bits of storage carries ``2 wb |f| / ((wb + ab)
B)`` bits per image towards the user and ``gb |f| / ((wb + ab) B)`` back (``gb``: gradient bits),
beside the activations and gradients it already carries.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WeightBalance:
    """A placement of weights along the chain (all in bits)."""

    flow: np.ndarray       #: net storage moved across each cut, rightward positive (``N - 1``)
    held: np.ndarray       #: each FPGA's storage after the moves, staging included (``N``)
    weights: np.ndarray    #: each FPGA's weights (and accumulators) after the moves (``N``)
    exporters: np.ndarray  #: FPGAs that give weights away (and keep staging), bool (``N``)

    @property
    def bit_hops(self) -> float:
        """Bits of storage moved times the links each crosses."""
        return float(np.abs(self.flow).sum())

    @property
    def moved(self) -> float:
        """Bits of storage that leave their FPGA (its net exports)."""
        export = np.diff(np.r_[0.0, self.flow, 0.0])
        return float(export[export > 0].sum())


def _linprog(c, A_ub, b_ub, bounds):
    from scipy.optimize import linprog

    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:  # (both programs are always feasible: flows of 0 with T large enough)
        raise RuntimeError(f"weight balancing: the linear program failed: {res.message}")
    return res.x


def _export_matrix(n: int) -> np.ndarray:
    """``E @ f`` = every FPGA's net export ``f[i] - f[i - 1]``."""
    E = np.zeros((n, n - 1))
    for i in range(n):
        if i < n - 1:
            E[i, i] = 1.0
        if i > 0:
            E[i, i - 1] = -1.0
    return E


def _place(load, movable, capacity, exporters):
    """The two programs for a given set of exporters (their staging already in ``load``);
    ``capacity`` per FPGA."""
    n = len(load)
    scale = max(float(np.max(load)), 1.0)  # solve in units of the largest load (conditioning)
    L, M, cap = load / scale, movable / scale, capacity / scale
    E = _export_matrix(n)
    # an FPGA that does not export (and keeps no staging) may still relay: its net export <= 0
    lim = np.where(exporters, M, 0.0)
    free = [(None, None)] * (n - 1)
    # 1: min t  s.t.  L - E f <= t cap,  E f <= lim     (variables f, t: the largest load as a
    #    share of its FPGA's RAM; with one RAM size, t cap is the smallest largest load)
    A1 = np.vstack([np.hstack([-E, -cap[:, None]]), np.hstack([E, np.zeros((n, 1))])])
    b1 = np.concatenate([-L, lim])
    x = _linprog(np.r_[np.zeros(n - 1), 1.0], A1, b1, free + [(None, None)])
    top = max(1.0, x[-1] * (1 + 1e-9) + 1e-12) * cap
    # 2: min sum a  s.t.  L - E f <= top,  E f <= lim,  -a <= f <= a     (variables f, a)
    I = np.eye(n - 1)
    Z = np.zeros((n, n - 1))
    A2 = np.vstack([np.hstack([-E, Z]), np.hstack([E, Z]), np.hstack([I, -I]), np.hstack([-I, -I])])
    b2 = np.concatenate([top - L, lim, np.zeros(2 * (n - 1))])
    x = _linprog(np.r_[np.zeros(n - 1), np.ones(n - 1)], A2, b2, free + [(0, None)] * (n - 1))
    return x[:n - 1] * scale


def balance(load, movable, capacity, staging=0.0) -> WeightBalance:
    """Place the weights of FPGAs whose ``load`` (bits, every term) exceeds ``capacity`` (bits of
    on-chip RAM: one size for every FPGA, or one per FPGA) on FPGAs with room (see the module
    docstring; with RAMs of different sizes the first program minimizes the largest load as a
    share of its FPGA's RAM).  ``movable``: each FPGA's weights and accumulators (bits, part of
    its load); ``staging``: the bits an FPGA that gives weights away keeps to receive them (scalar
    or per FPGA)."""
    load = np.asarray(load, dtype=float)
    movable = np.asarray(movable, dtype=float)
    staging = np.broadcast_to(np.asarray(staging, dtype=float), load.shape)
    capacity = np.broadcast_to(np.asarray(capacity, dtype=float), load.shape)
    n = len(load)
    if movable.shape != load.shape or np.any(movable < 0) or np.any(movable > load * (1 + 1e-12)):
        raise ValueError("weight balancing: movable bits must be per FPGA, within 0..load")
    if not np.all(capacity > 0):
        raise ValueError(f"weight balancing: capacity must be > 0 bits, not {capacity.min()}")
    exporters = load > capacity
    if n == 1 or not exporters.any():
        return WeightBalance(np.zeros(max(n - 1, 0)), load.copy(), movable.copy(), np.zeros(n, bool))
    E = _export_matrix(n)
    for _ in range(n + 1):  # exporters that end up exporting nothing drop their staging
        flow = _place(load + np.where(exporters, staging, 0.0), movable, capacity, exporters)
        export = E @ flow
        tol = 1e-9 * max(float(load.max()), 1.0)
        now = exporters & (export > tol)
        if np.array_equal(now, exporters):
            break
        exporters = now
        if not exporters.any():
            return WeightBalance(np.zeros(n - 1), load.copy(), movable.copy(), exporters)
    held = load + np.where(exporters, staging, 0.0) - export
    return WeightBalance(flow, held, movable - export, exporters)


def stream_bits(flow, weight_bits: int, acc_bits: int, grad_bits: int, batch: int):
    """Per image, the bits the moved weights add to each cut: ``(rightward, leftward)`` arrays
    (``N - 1``).  Weights stream towards their user twice a mini-batch, gradient sums back once."""
    f = np.asarray(flow, dtype=float)
    weights = np.abs(f) / (weight_bits + acc_bits)       # weights kept across this cut
    to_user = 2.0 * weight_bits * weights / batch
    to_home = float(grad_bits) * weights / batch
    # f > 0: the home is right of the cut, its user left: weights go leftward, sums rightward
    right = np.where(f > 0, to_home, to_user)
    left = np.where(f > 0, to_user, to_home)
    return np.where(f == 0, 0.0, right), np.where(f == 0, 0.0, left)


def staging_bits(chain, cuts, P: int) -> np.ndarray:
    """Per FPGA of the partition ``cuts``, the staging it needs to stream its conv weights in: two
    chunks of one ``P``-channel output tile of its largest conv layer (its share of the layer,
    at most ``P`` channels, times the layer's ``C/groups x R x S`` kernel) at the weights' width,
    and one such tile of gradient sums at the accumulator's.  fc weights are not counted (the
    fine-grained pipeline keeps them in DRAM, as FPDeep does)."""
    prec = chain.precision
    cuts = np.asarray(cuts, dtype=np.int64)
    out = np.zeros(len(cuts) - 1)
    for i, (a, b) in enumerate(itertools.pairwise(cuts)):
        for e in chain.stage_layers(int(a), int(b)):
            mac = chain.units[e["unit"]].mac
            if e["layer"] != mac.name or mac.kind != "conv":
                continue
            k = mac.K if e["axis"] == "rows" else e["hi"] - e["lo"]
            chunk = min(k, P) * (mac.C // mac.groups) * mac.R * mac.S
            out[i] = max(out[i], chunk * (2 * prec.weight_bits + prec.acc_bits))
    return out
