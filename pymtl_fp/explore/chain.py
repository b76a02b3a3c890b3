"""A network laid out along a 1-D chain of FPGAs: pieces, stage costs, cut traffic, storage.

**Units.**  The network is cut into *units*: one MAC layer (conv / fc) plus the pooling,
addition (and folded ReLU / BN) layers that follow it before the next MAC layer.  Units keep
the topological order of :class:`~pymtl_fp.explore.layers.Network`; a residual block's
projection shortcut comes first, so what stays live across the block is its (smaller) output.

**Pieces.**  A unit may be shared by neighbouring FPGAs (FPDeep's model parallelism).  It is
split along one axis, chosen per unit (``split="auto"``):

* ``channels`` -- by output channels, in multiples of ``channel_tile`` (default 32, one
  engine tile of the ``32 x 32`` engine):
  every sharer needs the unit's whole input, nobody duplicates weights;  used for fc layers and
  for conv layers whose weights outweigh their input map (deep layers);
* ``rows`` -- by output rows: each sharer needs only its band of the input (plus a halo of
  ``R - stride`` rows), but holds a full copy of the weights, and the sharers all-reduce their
  weight gradients once per mini-batch; used for conv layers whose input map outweighs their
  weights (shallow layers, where channel splits cannot keep the array busy).

A unit of ``Q`` pieces gives ``Q - 1`` cut points inside it; a chain *position* ``m`` in
``0..M`` is a cut point (0 = before everything, ``M`` = after everything).  A partition of the
chain over ``N`` FPGAs is a non-decreasing vector of ``N+1`` positions from 0 to ``M``; FPGA
``i`` computes pieces ``[cuts[i], cuts[i+1])`` (possibly none: it then only relays).

**Traffic of a cut** (per image, forward direction in activations, backward in gradients):
every tensor produced before the cut and consumed after it (so residual shortcuts that jump
over a cut are counted), with, at a cut inside a unit at fraction ``f``, the unit's input
counted whole (channels) or as ``1 - f`` plus the halo (rows), the part of the unit's output
already computed (``f``), and for ``rows`` the amortized weight-gradient all-reduce.  The
network input needs no gradient; the network output carries the loss gradient back.

**Stage cost** on a device: the sum over its pieces of FP + BP + WG cycles from
:mod:`pymtl_fp.cost.layer` -- the engine's closed forms, the model the RTL validates, on
the FPGA's engines, ``batch`` images per command (each unit share is one engine command); the adds,
their forks and the global average pools as the simulated cluster's router runs them
(:mod:`pymtl_fp.explore.chain_residual`, the node model's residual terms).

**Storage** per FPGA: :mod:`pymtl_fp.explore.chain_storage` (FPDeep's fine-grained pipeline and
the simulated cluster's words, the skips' slots from :mod:`pymtl_fp.explore.chain_residual`); costs of
position ranges: :mod:`pymtl_fp.explore.ranges`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pymtl_fp.cost.layer import packs
from pymtl_fp.explore import chain_residual
from pymtl_fp.explore.chain_storage import cluster_storage, fpdeep_storage, pad
from pymtl_fp.explore.devices import Precision
from pymtl_fp.explore.fpga_model import EngineArray, layer_cycles
from pymtl_fp.explore.ranges import RangeFunc, RangeSum

SPLITS = ("auto", "rows", "channels")


@dataclass
class Unit:
    index: int
    mac: object                 #: the MAC layer
    members: list               #: every layer of the unit (MAC layer included)
    out: str                    #: the tensor the unit produces
    axis: str                   #: "rows" | "channels"
    bounds: np.ndarray          #: piece boundaries, in output rows or output channels
    needs_dx: bool

    @property
    def pieces(self) -> int:
        return len(self.bounds) - 1

    @property
    def extent(self) -> int:
        return int(self.bounds[-1])


@dataclass
class Chain:
    """A network prepared for partitioning along a chain (see the module docstring)."""

    network: object
    precision: Precision = field(default_factory=Precision)
    batch: int = 32
    max_pieces: int = 8
    split: str = "auto"
    channel_tile: int = 32

    def __post_init__(self):
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, not {self.split!r}")
        if self.batch < 1 or self.max_pieces < 1 or self.channel_tile < 1:
            raise ValueError("batch, max_pieces and channel_tile must be >= 1")
        self.residuals = chain_residual.Residuals(self.network)
        self._build_units()
        self._build_positions()
        self._build_traffic()
        self._cycle_cache: dict = {}
        self._fpdeep = None
        self._storage: dict = {}
        self._crossings: dict = {}
        self._macs = None

    # -- construction ----------------------------------------------------------------------
    def _build_units(self):
        net = self.network
        units, lead = [], []
        for layer in net.layers:
            if layer.has_macs:
                units.append([layer, lead + [layer]])
                lead = []
            elif units:
                units[-1][1].append(layer)
            else:
                lead.append(layer)
        if not units:
            raise ValueError(f"{net.name}: no conv / fc layer to partition")
        if lead:
            units[-1][1].extend(lead)
        self.units = []
        unit_of = {"input": -1}
        for u, (_mac, members) in enumerate(units):
            for ly in members:
                unit_of[ly.name] = u
        for u, (mac, members) in enumerate(units):
            names = {ly.name for ly in members}
            for ly in members[:-1]:   # only the last member's output may leave the unit
                if any(c not in names for c in net.consumers(ly.name)):
                    raise ValueError(f"{net.name}: {ly.name!r} is read outside its unit")
            axis = self._axis(mac)
            if axis == "rows":
                q = min(mac.Ho, self.max_pieces)
                bounds = (np.arange(q + 1) * mac.Ho) // q
            else:
                tiles = -(-mac.K // self.channel_tile)
                q = min(tiles, self.max_pieces)
                bounds = np.minimum(mac.K, self.channel_tile * ((np.arange(q + 1) * tiles) // q))
            needs_dx = any(src != "input" for src in mac.inputs)
            self.units.append(Unit(u, mac, members, members[-1].name, axis,
                                   bounds.astype(np.int64), needs_dx))
        self.unit_of = unit_of

    def _axis(self, mac) -> str:
        if mac.kind == "fc" or mac.Ho <= 1:
            return "channels"
        if self.split != "auto":
            return self.split
        return "rows" if mac.params < mac.in_elems else "channels"

    def _build_positions(self):
        q = np.array([u.pieces for u in self.units], dtype=np.int64)
        self.offset = np.concatenate([[0], np.cumsum(q)])
        self.M = int(self.offset[-1])
        M = self.M
        self.start_u = np.zeros(M + 1, dtype=np.int64)
        self.start_p = np.zeros(M + 1, dtype=np.int64)
        self.end_u = np.zeros(M + 1, dtype=np.int64)
        self.end_p = np.zeros(M + 1, dtype=np.int64)
        for u, unit in enumerate(self.units):
            o = self.offset[u]
            for p in range(unit.pieces):
                self.start_u[o + p], self.start_p[o + p] = u, p
                self.end_u[o + p + 1], self.end_p[o + p + 1] = u, p + 1
        self.start_u[M] = len(self.units)   # sentinel; never used as a stage start
        self.unit_boundaries = self.offset.copy()

    def _build_traffic(self):
        """Elements / bits crossing each cut position, per image, in each direction."""
        prec = self.precision
        fwd, bwd = self._crossing(1)
        reduce_f = np.zeros(self.M + 1)
        reduce_b = np.zeros(self.M + 1)
        for m in range(self.M):
            unit = self.units[self.start_u[m]]
            if self.start_p[m] > 0 and unit.axis == "rows":
                reduce_f[m] = unit.mac.params * prec.acc_bits / self.batch
                reduce_b[m] = unit.mac.params * prec.weight_bits / self.batch
        self.fwd_elems, self.bwd_elems = fwd, bwd
        self.fwd_bits = fwd * prec.act_bits + reduce_f
        self.bwd_bits = bwd * prec.grad_bits + reduce_b

    def _crossing(self, P: int, skips: bool = True):
        """Elements crossing each cut position per image, forward and backward (the module
        docstring's traffic, without the all-reduce), channel counts rounded up to ``P``; without
        ``skips``, the tensors crossing only to be read as an add's skip (or its projection's input)
        left out (what the cluster sends from its own slots: :meth:`cluster_bits`)."""
        net = self.network
        U = len(self.units)
        tensors = ["input"] + [ly.name for ly in net.layers]
        size = {t: pad(net.shape_of(t)[0], P) * math.prod(net.shape_of(t)[1:]) for t in tensors}
        prod = {t: self.unit_of[t] for t in tensors}
        skip_reads = set() if skips else self.residuals.skip_reads()
        last = {}
        for t in tensors:
            cons = [self.unit_of[c] for c in net.consumers(t) if (c, t) not in skip_reads]
            last[t] = max(cons) if cons else U     # network output: read by the loss
        live = [t for t in tensors if last[t] > prod[t]]
        fwd = np.zeros(self.M + 1)
        bwd = np.zeros(self.M + 1)
        for m in range(self.M + 1):
            u, p = (self.start_u[m], self.start_p[m]) if m < self.M else (U, 0)
            for t in live:
                if not (prod[t] < u <= last[t]):
                    continue
                coef = 1.0
                if p > 0:
                    unit = self.units[u]
                    f = unit.bounds[p] / unit.extent
                    consumed_here = last[t] == u
                    if t == unit.mac.inputs[0]:
                        if unit.axis == "rows" and consumed_here:
                            halo = max(unit.mac.R - unit.mac.stride, 0) * unit.mac.in_shape[2] \
                                * pad(unit.mac.C, P)
                            coef = (1.0 - f) + halo / size[t]
                    elif consumed_here:
                        coef = 1.0 - f
                fwd[m] += coef * size[t]
                if t != "input":
                    bwd[m] += coef * size[t]
            if 0 < p:
                unit = self.units[u]
                f = unit.bounds[p] / unit.extent
                fwd[m] += f * size[unit.out]
                bwd[m] += f * size[unit.out]
        return fwd, bwd

    # -- per-unit share functions ------------------------------------------------------------
    def _share(self, u: int, lo: int, hi: int):
        unit = self.units[u]
        n = hi - lo
        if unit.axis == "rows":
            return {"ho": n, "k": None, "frac": n / unit.extent}
        return {"ho": None, "k": n, "frac": n / unit.extent}

    def unit_cycles(self, u: int, n: int, array: EngineArray) -> int:
        """FP+BP+WG cycles per image of ``n`` rows / channels of unit ``u`` on the engines
        ``array``, ``batch`` images per engine command (cached)."""
        key = (u, n, array.P, array.E)
        hit = self._cycle_cache.get(key)
        if hit is not None:
            return hit
        unit = self.units[u]
        sh = self._share(u, 0, n)
        total = 0
        if n > 0:
            res = self.residuals
            for ly in unit.members:
                if res.index[ly.name] in res.kind:
                    continue  # (below)
                if ly.has_macs:
                    c = layer_cycles(ly, array, unit.needs_dx, sh["k"], sh["ho"], self.batch)
                else:
                    c = layer_cycles(ly, array, True,
                                     None if sh["k"] is None else
                                     max(1, round(ly.K * sh["frac"])),
                                     None if sh["ho"] is None else
                                     max(1, round(ly.Ho * sh["frac"])), self.batch)
                total += sum(c.values())
            total += chain_residual.cycles(res, [res.index[ly.name] for ly in unit.members], array.P,
                                           (unit.axis, n / unit.extent, array.E))
        self._cycle_cache[key] = total
        return total

    def cycles(self, array: EngineArray) -> RangeFunc:
        key = ("rf", array.P, array.E)
        if key not in self._cycle_cache:
            self._cycle_cache[key] = RangeFunc(
                self, lambda u, lo, hi: float(self.unit_cycles(u, hi - lo, array)))
        return self._cycle_cache[key]

    @property
    def macs(self) -> RangeFunc:
        """Useful FP+BP+WG multiply-accumulates per image of a range (the padding's taps, which
        the engines skip, not counted: a stage's utilization stays at most 1)."""
        if self._macs is None:
            net = self.network

            def part(u, lo, hi):
                unit = self.units[u]
                m = net.layer_macs(unit.mac, useful=True)
                return (m["fp"] + m["bp"] + m["wg"]) * (hi - lo) / unit.extent
            self._macs = RangeFunc(self, part)
        return self._macs

    # -- storage -----------------------------------------------------------------------------
    def storage(self, P: int = 1) -> dict:
        """Range functions in bits: ``weights`` (conv weights + gradient accumulators, on
        chip), ``linebuf``, ``stash1`` (WG inputs and ReLU/argmax masks of one image),
        ``mapbuf`` (double-buffered whole maps), and ``fc_dram``: DRAM traffic per image of
        the fc layers, whose weights stay off chip as in FPDeep (per mini-batch: weights read
        for FP and BP and written after the update, gradients written once); and the simulated
        cluster's (the module docstring's **Storage**), channel counts rounded up to ``P``, the
        engines' array side (1: unpadded): ``cluster_weights``, ``cluster_stash`` (one image in
        flight) and ``cluster_maps``.  :meth:`cluster_bits` adds them up per FPGA."""
        if P not in self._storage:
            if self._fpdeep is None:
                self._fpdeep = fpdeep_storage(self)
            self._storage[P] = {**self._fpdeep, **cluster_storage(self, P)}
        return self._storage[P]

    def tap_packed(self, u: int, P: int) -> bool:
        """Does unit ``u``'s MAC layer run tap-packed on ``P x P`` engines?  As
        :func:`pymtl_fp.cost.layer.engine_layer_cycles` decides for the cycles (and the cluster's
        ``--tap-pack auto``): a conv fed by the network input alone, when packing pays."""
        unit = self.units[u]
        return unit.mac.kind == "conv" and packs(unit.mac, P, unit.needs_dx, self.batch)

    def cluster_bits(self, cuts, P: int = 1) -> np.ndarray:
        """Bits each FPGA of the partition ``cuts`` keeps under the simulated cluster's 1F1B
        with per-image weight gradients (``train --wgrad image``, overlap), channel counts
        rounded up to ``P``: ``cluster_weights + cluster_maps``, the O slots (two per direction:
        the one-image results it sends forward and the data gradient it sends back, what
        crosses its two cuts but the skips), ``cluster_stash`` for each image in flight, ``N - i + 2`` at
        FPGA ``i`` of ``N`` (:func:`pymtl_fp.explore.node_storage.in_flight`), at most the batch, and
        the residual layers' :meth:`skip_bits`."""
        cuts = np.asarray(cuts, dtype=np.int64)
        n = len(cuts) - 1
        a, b = cuts[:-1], cuts[1:]
        st = self.storage(P)
        if P not in self._crossings:
            self._crossings[P] = self._crossing(P, skips=False)
        fwd, bwd = self._crossings[P]
        slots = 2 * (fwd[b] * self.precision.act_bits + bwd[a] * self.precision.grad_bits)
        ring = np.minimum(n - np.arange(n) + 2, self.batch)
        return st["cluster_weights"].vec(a, b) + st["cluster_maps"].vec(a, b) + slots \
            + ring * st["cluster_stash"].vec(a, b) + self.skip_bits(cuts, P)

    def skip_bits(self, cuts, P: int = 1) -> np.ndarray:
        """Bits each FPGA of the partition ``cuts`` keeps for the residual layers under
        :meth:`cluster_bits`'s schedule (:func:`~pymtl_fp.explore.chain_residual.skip_words`: the adds' and
        average pools' inputs, the skips held or passing through, the gradient shares)."""
        n = len(cuts) - 1
        ring = np.minimum(n - np.arange(n) + 2, self.batch)
        words = chain_residual.skip_words(self.residuals, self, cuts, P, ring)
        return np.array([P * (w.X * self.precision.act_bits + w.D * self.precision.grad_bits) for w in words],
                        dtype=float)

    def fine_storage(self) -> RangeFunc:
        """Fine-grained pipeline storage of a range: weights + line buffers + 2 images."""
        st = self.storage()
        if "fine" not in st:
            st["fine"] = RangeSum(self, [(1.0, st["weights"]), (1.0, st["linebuf"]),
                                     (2.0, st["stash1"])])
        return st["fine"]

    # -- helpers -----------------------------------------------------------------------------
    def describe_position(self, m: int) -> str:
        if m >= self.M:
            return "end"
        u, p = self.start_u[m], self.start_p[m]
        unit = self.units[u]
        if p == 0:
            return f"before {unit.mac.name}"
        what = "rows" if unit.axis == "rows" else "ch"
        return f"{unit.mac.name}@{what}{unit.bounds[p]}/{unit.extent}"

    def stage_layers(self, a: int, b: int) -> list:
        """The work of pieces ``[a, b)``, layer by layer: what one node must run.

        Each entry: ``{"unit", "layer", "kind", "axis", "lo", "hi", "extent"}`` -- output rows
        (axis ``rows``) or output channels (``channels``) ``lo..hi`` of ``extent`` of the unit's
        MAC layer; the unit's pooling / addition layers follow the same share.  This is the
        hand-off to a cluster compiler, and what a cycle-level cluster simulation of the same
        partition should be compared against, node by node (:meth:`node_cycles`).
        """
        out = []
        if b <= a:
            return out
        ua, pa = self.start_u[a], self.start_p[a]
        ub, pb = self.end_u[b], self.end_p[b]
        for u in range(ua, ub + 1):
            unit = self.units[u]
            lo = int(unit.bounds[pa]) if u == ua else 0
            hi = int(unit.bounds[pb]) if u == ub else unit.extent
            if hi <= lo:
                continue
            for ly in unit.members:
                out.append({"unit": u, "layer": ly.name, "kind": ly.kind, "axis": unit.axis,
                            "lo": lo, "hi": hi, "extent": unit.extent})
        return out

    def node_cycles(self, array: EngineArray, a: int, b: int) -> int:
        """Predicted FP+BP+WG cycles per image of the node computing pieces ``[a, b)``."""
        return round(self.cycles(array).scalar(a, b))

    def total_train_macs(self) -> float:
        """FP+BP+WG multiply-accumulates per image as published totals count them (the padding's
        taps included): what GOPS figures are made of."""
        return float(self.network.macs()["train"])
