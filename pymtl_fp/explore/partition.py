"""Partitioning a :class:`~pymtl_fp.explore.chain.Chain` over a chain of FPGAs.

A *cluster* is a list of devices (each with its engines and clock) joined by ``N - 1``
links.  A partition is a cut vector (see :mod:`.chain`); its figure of merit is the pipeline's
**initiation interval** (seconds per image in steady state)::

    II = max( max_i  cycles_i(cuts[i], cuts[i+1]) / f_i ,            # compute of FPGA i
              max_i  max(fwd_bits, bwd_bits)(cuts[i+1]) / bw_i )      # traffic of link i

(a stage whose fine-grained storage exceeds its device's on-chip memory is infeasible when the
cluster asks for ``memory_limit``).  Four partitioners:

* :func:`even_split`  -- the same number of MAC layers per FPGA, cut at layer boundaries;
* :func:`fpdeep`      -- FPDeep's workload balancing: FPGA ``i`` gets the share of the total
  FP+BP+WG time proportional to its peak MAC rate (equal shares on identical FPGAs), cutting
  inside layers where needed; it ignores links and memory;
* :func:`dp_optimal`  -- the exact minimum of ``II`` over every cut vector, by dynamic
  programming over (FPGA, position) in ``O(N M^2)`` with vectorized rows (Zhang et al.'s
  resource allocation for asymmetric FPGAs, with links and memory in the cost);
* :func:`exhaustive`  -- the same minimum by enumerating every cut vector (tests only).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from pymtl_fp.cluster.compiler.partition import nearest_positions
from pymtl_fp.explore.devices import Device, Precision
from pymtl_fp.explore.fpga_model import EngineArray
from pymtl_fp.explore.links import Link


@dataclass
class Cluster:
    """``N`` devices in a chain and the ``N - 1`` links between them."""

    devices: list
    links: list
    precision: Precision = field(default_factory=Precision)
    memory_limit: bool = False

    def __post_init__(self):
        if not self.devices:
            raise ValueError("a cluster needs at least one FPGA")
        if len(self.links) != len(self.devices) - 1:
            raise ValueError(f"{len(self.devices)} FPGAs need {len(self.devices) - 1} links, "
                             f"got {len(self.links)}")
        self.arrays = [d.default_array(self.precision) for d in self.devices]

    @property
    def n(self) -> int:
        return len(self.devices)

    @classmethod
    def homogeneous(cls, device: Device, n: int, link: Link, precision=None,
                    memory_limit=False) -> Cluster:
        return cls([device] * n, [link] * (n - 1), precision or Precision(), memory_limit)

    @classmethod
    def from_config(cls, ccfg, device: Device) -> Cluster:
        """The design-space view of a simulated cluster (:class:`~pymtl_fp.cluster.config.ClusterConfig`):
        node ``j`` is ``device`` with node ``j``'s one engine (``EngineArray.of_engine``) clocked at the
        cluster's ``clock_mhz``; link ``j`` carries the slower direction's payload rate of the links
        between nodes ``j`` and ``j + 1`` (``throughput_bits`` per cycle at that clock) and their
        zero-load latency; the word widths are node 0's engine's.  The device stands for what a
        ``ClusterConfig`` does not describe (DSPs, memories, transceivers of the part)."""
        mhz = ccfg.clock.mhz
        devices = [replace(device, clock_mhz=mhz).with_array(EngineArray.of_engine(e)) for e in ccfg.engines]
        links = []
        for j in range(ccfg.n - 1):
            pair = [ccfg.link_cfg(f"node{a}->node{b}") for a, b in ((j, j + 1), (j + 1, j))]
            links.append(Link(f"node{j}<->node{j + 1}", min(lc.throughput_bits for lc in pair) * mhz / 1e3,
                              max(lc.zero_load_latency for lc in pair) * 1e3 / mhz))
        return cls(devices, links, Precision.of_engine(ccfg.engines[0]))

    def kinds(self):
        """Distinct (array, clock, on-chip bits) kinds, and each FPGA's kind index."""
        keys, index = [], []
        for d, a in zip(self.devices, self.arrays):
            key = (a.P, a.E, d.clock_hz, d.onchip_bits)
            if key not in keys:
                keys.append(key)
            index.append(keys.index(key))
        return keys, index


@dataclass
class Evaluation:
    """A partition's cost breakdown."""

    method: str
    cuts: np.ndarray
    ii: float                      #: seconds per image
    stage_s: np.ndarray            #: compute seconds per image, per FPGA
    link_s: np.ndarray             #: transfer seconds per image, per link
    stage_macs: np.ndarray
    stage_util: np.ndarray         #: useful MACs / (lanes x clock x II)
    fwd_bits: np.ndarray           #: per link, per image
    bwd_bits: np.ndarray
    storage_bits: np.ndarray       #: fine-grained pipeline storage per FPGA
    onchip_bits: np.ndarray
    train_ops: float               #: 2 x FP+BP+WG MACs per image
    stage_cycles: np.ndarray = None  #: FP+BP+WG cycles per image, per FPGA (the prediction a
    #: cycle-level simulation of the same partition is checked against)
    #: FPDeep's weight balancing (:mod:`~pymtl_fp.explore.balanced_partition`): storage bits that
    #: leave their FPGA, and those bits times the links each crosses
    moved_bits: float = 0.0
    bit_hops: float = 0.0

    @property
    def images_per_s(self) -> float:
        return 0.0 if not math.isfinite(self.ii) else 1.0 / self.ii

    @property
    def gops(self) -> float:
        return self.train_ops * self.images_per_s / 1e9

    @property
    def compute_ii(self) -> float:
        return float(self.stage_s.max())

    @property
    def link_ii(self) -> float:
        return float(self.link_s.max()) if len(self.link_s) else 0.0

    @property
    def bottleneck(self) -> str:
        if not math.isfinite(self.ii):
            return "infeasible (storage)"
        if len(self.link_s) and self.link_ii >= self.compute_ii:
            return f"link {int(np.argmax(self.link_s))}"
        return f"FPGA {int(np.argmax(self.stage_s))}"


def _link_seconds(chain, cluster: Cluster, positions, extra=None) -> np.ndarray:
    """Seconds per image on link ``i`` if it carries the cut at ``positions[i]`` (``extra``: more
    bits per image on each link, ``(rightward, leftward)`` arrays)."""
    out = np.zeros(len(positions))
    right, left = extra if extra is not None else (np.zeros(len(positions)),) * 2
    for i, (link, m) in enumerate(zip(cluster.links, positions)):
        bits = max(chain.fwd_bits[m] + right[i], chain.bwd_bits[m] + left[i])
        out[i] = link.seconds(bits)
    return out


def evaluate(chain, cluster: Cluster, cuts, method: str = "") -> Evaluation:
    """Cost of the partition ``cuts`` (length ``N + 1``, from 0 to ``M``)."""
    cuts = np.asarray(cuts, dtype=np.int64)
    n = cluster.n
    if len(cuts) != n + 1 or cuts[0] != 0 or cuts[-1] != chain.M or np.any(np.diff(cuts) < 0):
        raise ValueError(f"bad cut vector {cuts.tolist()} for {n} FPGAs and M={chain.M}")
    stage_cycles = np.zeros(n)
    storage = np.zeros(n)
    fine = chain.fine_storage()
    for i, (_dev, arr) in enumerate(zip(cluster.devices, cluster.arrays)):
        stage_cycles[i] = chain.cycles(arr).vec([cuts[i]], [cuts[i + 1]])[0]
        storage[i] = fine.vec([cuts[i]], [cuts[i + 1]])[0]
    clocks = np.array([d.clock_hz for d in cluster.devices])
    onchip = np.array([d.onchip_bits for d in cluster.devices], dtype=float)
    stage_s = stage_cycles / clocks
    if cluster.memory_limit:
        stage_s = np.where(storage > onchip, np.inf, stage_s)
    link_s = _link_seconds(chain, cluster, cuts[1:-1])
    ii = float(max(stage_s.max(), link_s.max() if len(link_s) else 0.0))
    macs = chain.macs.vec(cuts[:-1], cuts[1:])
    lanes = np.array([a.lanes for a in cluster.arrays], dtype=float)
    util = macs / (lanes * clocks * ii) if math.isfinite(ii) and ii > 0 else np.zeros(n)
    inner = cuts[1:-1]
    return Evaluation(method, cuts, ii, stage_s, link_s, macs, util,
                      chain.fwd_bits[inner], chain.bwd_bits[inner], storage, onchip,
                      2.0 * chain.total_train_macs(), stage_cycles)


# -- partitioners -----------------------------------------------------------------------------
def even_split(chain, cluster: Cluster) -> np.ndarray:
    """Equal numbers of MAC layers (units) per FPGA, cut at layer boundaries."""
    U = len(chain.units)
    idx = np.round(np.arange(cluster.n + 1) * U / cluster.n).astype(np.int64)
    return chain.offset[idx]


def fpdeep(chain, cluster: Cluster) -> np.ndarray:
    """FPDeep balancing: time shares proportional to each FPGA's peak MAC rate.

    FPGA ``i``'s end cut is the position where the work done so far, measured on FPGA ``i``'s
    own array as a fraction of the whole network's work on that array, is nearest to the
    cumulative share of the peak rates of FPGAs ``0..i``.
    """
    n = cluster.n
    peak = np.array([a.lanes * d.clock_hz for d, a in zip(cluster.devices, cluster.arrays)])
    target = np.cumsum(peak) / peak.sum()
    curves = {}
    cuts = np.zeros(n + 1, dtype=np.int64)
    for i in range(n - 1):
        arr = cluster.arrays[i]
        key = (arr.P, arr.E)
        if key not in curves:
            curves[key] = work_curve(chain, arr)
        cuts[i + 1] = max(nearest_positions(curves[key], target[i:i + 1])[0], cuts[i])
    cuts[n] = chain.M
    return cuts


def work_curve(chain, array) -> np.ndarray:
    """Fraction of the network's FP+BP+WG cycles on ``array`` done before each position."""
    positions = np.arange(chain.M + 1)
    cum = chain.cycles(array).vec(np.zeros_like(positions), positions)
    return cum / cum[-1]


def _stage_seconds_matrix(chain, cluster: Cluster, kind_key) -> np.ndarray:
    P, E, clock, onchip = kind_key
    mat = chain.cycles(EngineArray(P, E)).matrix() / clock
    if cluster.memory_limit:
        mat = np.where(chain.fine_storage().matrix() > onchip, np.inf, mat)
    return mat


def dp_optimal(chain, cluster: Cluster, return_value: bool = False, converge: bool = True):
    """The cut vector of minimum II (exact), by dynamic programming.

    ``D[i][j]`` = least II of FPGAs ``0..i`` computing positions ``[0, j)``;
    ``D[i][j] = min_{k<=j} max(D[i-1][k], link_{i-1}(k), stage_i(k, j))``.

    ``converge``: once a step leaves ``D`` unchanged and every later FPGA and link is the same as
    this step's, every later step is this step again (the same operator on the same ``D``): its
    choices are copied instead of recomputed -- the same cuts, and a chain of thousands of
    identical FPGAs costs as many steps as ``D`` takes to settle.
    """
    n, M = cluster.n, chain.M
    keys, kind = cluster.kinds()
    mats = {}
    lower = np.tril(np.ones((M + 1, M + 1), dtype=bool), -1)   # k > j: not allowed

    def stage(i):
        k = kind[i]
        if k not in mats:
            m = _stage_seconds_matrix(chain, cluster, keys[k])
            m[lower] = np.inf
            mats[k] = m
        return mats[k]

    link_all = np.maximum(chain.fwd_bits, chain.bwd_bits)
    lks = [link.seconds(link_all) for link in cluster.links]
    same_after = np.zeros(n, dtype=bool)  # same_after[i]: FPGAs and links i.. repeat step i's
    same_after[n - 1] = True
    for i in range(n - 2, 0, -1):
        same_after[i] = same_after[i + 1] and kind[i + 1] == kind[i] and np.array_equal(lks[i], lks[i - 1])
    D = stage(0)[0].copy()
    back = np.zeros((n, M + 1), dtype=np.int64)
    cols = np.arange(M + 1)
    for i in range(1, n):
        base = np.maximum(D, lks[i - 1])
        cand = np.maximum(base[:, None], stage(i))
        arg = np.argmin(cand, axis=0)
        back[i] = arg
        new = cand[arg, cols]
        if converge and same_after[i] and np.array_equal(new, D):
            back[i + 1:] = arg
            break
        D = new
    cuts = np.zeros(n + 1, dtype=np.int64)
    cuts[n] = M
    for i in range(n - 1, 0, -1):
        cuts[i] = back[i][cuts[i + 1]]
    if return_value:
        return cuts, float(D[M])
    return cuts


def greedy_feasible(stage_mats, link_s, tau: float, n: int):
    """A cut vector meeting II <= ``tau``, or ``None`` (exact feasibility test).

    ``stage_mats[i]``: FPGA ``i``'s ``[a, b)`` seconds matrix, non-decreasing in ``b`` and
    non-increasing in ``a``; ``link_s[i]``: link ``i``'s seconds at every position.  Positions
    reachable after ``i + 1`` stages: ``b`` such that link ``i`` may carry cut ``b`` and FPGA
    ``i`` can cover ``[a, b)`` from the *latest* position ``a <= b`` reachable after ``i``
    stages (by monotonicity the latest start is the cheapest), so one vectorized pass per
    FPGA decides feasibility -- no search over start positions.
    """
    M = stage_mats[0].shape[0] - 1
    idx = np.arange(M + 1)
    reach = idx == 0
    starts = []
    for i in range(n):
        last = np.maximum.accumulate(np.where(reach, idx, -1))
        ok = last >= 0
        cost = np.full(M + 1, np.inf)
        cost[ok] = stage_mats[i][last[ok], idx[ok]]
        reach = cost <= tau
        if i < n - 1:
            reach &= link_s[i] <= tau
        starts.append(last)
        if not reach.any():
            return None
    if not reach[M]:
        return None
    cuts = np.zeros(n + 1, dtype=np.int64)
    cuts[n] = M
    for i in range(n - 1, -1, -1):
        cuts[i] = starts[i][cuts[i + 1]]
    return cuts


def _greedy_uniform(mat, link, tau: float, n: int):
    """:func:`greedy_feasible` for identical FPGAs and links: end every stage as late as
    allowed (exact then, by the exchange argument), ``O(n log M)``."""
    M = mat.shape[0] - 1
    last_ok = np.maximum.accumulate(np.where(link <= tau, np.arange(M + 1), -1))
    cuts = [0]
    a = 0
    for i in range(n):
        b = a + int(np.searchsorted(mat[a, a:], tau, side="right")) - 1
        if i == n - 1:
            if b < M:
                return None
            cuts.append(M)
            return np.array(cuts, dtype=np.int64)
        # the link after this stage carries the tensor at b, even when b = M (the FPGAs after
        # it hold nothing): end the stage at the latest position that link can carry
        b = int(last_ok[b])
        if b < a:
            return None
        cuts.append(b)
        a = b
    return None


def _ii_from(stage_mats, link_s, cuts) -> float:
    worst = 0.0
    for i in range(len(cuts) - 1):
        worst = max(worst, stage_mats[i][cuts[i], cuts[i + 1]])
        if i < len(cuts) - 2:
            worst = max(worst, link_s[i][cuts[i + 1]])
    return float(worst)


def bisect_optimal(chain, cluster: Cluster, rtol: float = 1e-9, stage_mats=None,
                   lower: float = 0.0, upper: float | None = None):
    """Minimum II within ``rtol`` by bisection on II with :func:`greedy_feasible`.

    An independent exact method (for monotone costs) to cross-check :func:`dp_optimal`, and
    the fast one for long sweeps of identical FPGAs, where ``stage_mats`` can be shared
    between runs and known bounds on the II (``lower``, ``upper``) shorten the search.
    """
    n = cluster.n
    if stage_mats is None:
        keys, kind = cluster.kinds()
        cache = {}
        stage_mats = []
        for i in range(n):
            if kind[i] not in cache:
                cache[kind[i]] = _stage_seconds_matrix(chain, cluster, keys[kind[i]])
            stage_mats.append(cache[kind[i]])
    link_all = np.maximum(chain.fwd_bits, chain.bwd_bits)
    link_s = [lk.seconds(link_all) for lk in cluster.links]
    uniform = all(m is stage_mats[0] for m in stage_mats) and \
        all(lk.gbps == cluster.links[0].gbps for lk in cluster.links)

    def feasible(tau):
        if uniform:
            return _greedy_uniform(stage_mats[0], link_s[0] if link_s else
                                   np.zeros(chain.M + 1), tau, n)
        return greedy_feasible(stage_mats, link_s, tau, n)

    hi = upper
    if hi is None:
        hi = _ii_from(stage_mats, link_s, fpdeep(chain, cluster))
    if not math.isfinite(hi):
        finite = [m[np.isfinite(m)].max() for m in stage_mats if np.isfinite(m).any()]
        hi = max(finite + [max((s.max() for s in link_s), default=0.0)]) * 2 + 1.0
    best = feasible(hi)
    if best is None:
        return fpdeep(chain, cluster), math.inf
    lo = min(lower, hi)
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        c = feasible(mid)
        if c is None:
            lo = mid
        else:
            hi, best = mid, c
    return best, _ii_from(stage_mats, link_s, best)


def exhaustive(chain, cluster: Cluster):
    """Minimum II over every cut vector, by enumeration and the plain scalar costs."""
    n, M = cluster.n, chain.M
    cyc = [chain.cycles(a) for a in cluster.arrays]
    fine = chain.fine_storage()
    best, best_cuts = math.inf, None
    link_all = np.maximum(chain.fwd_bits, chain.bwd_bits)
    for inner in itertools.combinations_with_replacement(range(M + 1), n - 1):
        cuts = (0,) + inner + (M,)
        worst = 0.0
        for i, dev in enumerate(cluster.devices):
            a, b = cuts[i], cuts[i + 1]
            t = cyc[i].scalar(a, b) / dev.clock_hz
            if cluster.memory_limit and fine.scalar(a, b) > dev.onchip_bits:
                t = math.inf
            worst = max(worst, t)
            if i < n - 1:
                worst = max(worst, cluster.links[i].seconds(link_all[b]))
            if worst >= best:
                break
        if worst < best:
            best, best_cuts = worst, np.array(cuts, dtype=np.int64)
    return best_cuts, best


METHODS = {"even": even_split, "fpdeep": fpdeep, "dp": dp_optimal}


def compare(chain, cluster: Cluster) -> dict:
    """Evaluate the even split, FPDeep balancing and the DP optimum on one cluster (with the
    weight-balanced DP under ``memory_limit``:
    :func:`~pymtl_fp.explore.balanced_partition.compare_balanced`)."""
    return {name: evaluate(chain, cluster, fn(chain, cluster), name)
            for name, fn in METHODS.items()}
