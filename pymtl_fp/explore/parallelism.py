"""Data-parallel, hybrid and FPDeep-pipelined training of one network on N identical FPGAs in a
chain, per mini-batch: which parallelism wins at which batch size (analytic, paper scale).

A step trains a mini-batch of ``B`` images and updates the weights once (synchronous SGD); the
``N`` FPGAs form ``G`` groups (``G`` divides ``N``) of ``m = N / G`` FPGAs each:

* **pipeline** (``G = 1``, FPDeep): the network balanced over the ``N`` FPGAs
  (:func:`.scaling.fpdeep_cuts`); the step takes ``(B + N - 1) x II_N`` (the first image crosses
  every stage forward and back, then one image leaves per initiation interval ``II_N``: the
  slowest stage's FP+BP+WG time or its busiest link's transfer) plus the links' latency on the way;
* **data parallel** (``G = N``, CATERPILLAR's collectives): every FPGA holds the whole network and
  trains ``ceil(B / N)`` images (fewer FPGAs work when ``B < N``), then the weight gradients are
  all-reduced;
* **hybrid** (``1 < G < N``): ``G`` replicas of an ``m``-FPGA pipeline, ``ceil(B / G)`` images each,
  every stage's gradients all-reduced with its ``G - 1`` twins.

**All-reduce** (ring reduce-scatter + all-gather): ``2 (G - 1) / G x W x g`` bits cross each link
direction, where ``W`` is the number of weights and ``g`` the bits per gradient on the wire.  A
chain embeds the ring in its two directions (the forward links carry the ring one way, the
backward links bring the last replica's chunks back to the first), so each link direction carries
at most one ring flow and the bandwidth term is the ring's; in the hybrid every stage's ring
crosses the same group boundaries, so the links carry ``2 (G - 1) / G x W x g`` bits in all.  Its
latency is ``2 (G - 1)`` ring steps, each crossing up to ``N - 1`` links (the wrap-around).
``g = acc_bits`` (32) by default: the replicas reduce their accumulator-wide partial sums and
requantize once, which is what makes data-parallel training bit-exact with one FPGA (the golden
model's rule); ``g = grad_bits`` models a reduce of rounded gradients.  The all-reduce starts
after the step's last backward pass (no overlap with it: conservative).

Per-FPGA compute comes from the same engine timing model as the scaling study (weight-gradient
commands over the images an FPGA trains per step).  Not modelled: the DRAM traffic of weights
that do not fit on chip (the data-parallel and small-``m`` rows report whether they do).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from pymtl_fp.clock import assumed
from pymtl_fp.explore.chain import Chain
from pymtl_fp.explore.devices import Device, Precision
from pymtl_fp.explore.fpga_fit import describe as fit_describe
from pymtl_fp.explore.links import Link
from pymtl_fp.explore.partition import work_curve
from pymtl_fp.explore.scaling import fpdeep_cuts

MODES = ("pipeline", "hybrid", "data")


@dataclass
class CrossoverResult:
    network: str
    device: Device
    array: object
    link: Link
    grad_bits: int
    rows: list                     #: one dict per (N, B, G)
    best: dict                     #: (N, B) -> the fastest row
    seconds: float
    assumptions: list = field(default_factory=list)

    def to_dataframe(self):
        """``rows`` as a pandas DataFrame: one row per (cluster size, mini-batch, groups)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def winner_table(self, fpgas, batches) -> list:
        """``[{"fpgas": N, B: "mode (images/s)", ...}]`` for a Markdown table."""
        out = []
        for n in fpgas:
            row = {"fpgas": n}
            for b in batches:
                r = self.best[(n, b)]
                tag = r["mode"] if r["mode"] != "hybrid" else f"hybrid G={r['groups']}"
                row[b] = f"{tag} ({r['images_s']:.0f})"
            out.append(row)
        return out

    def crossover_batches(self, n: int) -> dict:
        """For ``N = n``: the smallest batch at which each mode is the fastest (None: never)."""
        out = {}
        for mode in MODES:
            bs = [b for (m, b), r in sorted(self.best.items()) if m == n and r["mode"] == mode]
            out[mode] = min(bs) if bs else None
        return out


def allreduce_seconds(groups: int, fpgas: int, weights: float, grad_bits: int, link: Link) -> float:
    """Ring all-reduce of ``weights`` gradients of ``grad_bits`` among ``groups`` replicas on a chain of
    ``fpgas`` FPGAs (see the module docstring)."""
    if groups <= 1:
        return 0.0
    bw = link.seconds(2 * (groups - 1) / groups * weights * grad_bits)
    return bw + 2 * (groups - 1) * (fpgas - 1) * link.latency_ns * 1e-9


def _divisors(n: int) -> list:
    return [g for g in range(1, n + 1) if n % g == 0]


def crossover(network, device: Device, fpgas, batches, link: Link, precision: Precision | None = None,
              grad_bits: int | None = None, max_pieces: int = 64, split: str = "auto", array=None) -> CrossoverResult:
    """Every (N, B, G) of ``fpgas`` x ``batches`` x the divisors of N, and the fastest per (N, B)."""
    t0 = time.perf_counter()
    precision = precision or Precision()
    grad_bits = int(grad_bits or precision.acc_bits)
    fpgas, batches = sorted({int(n) for n in fpgas}), sorted({int(b) for b in batches})
    if not fpgas or fpgas[0] < 1 or not batches or batches[0] < 1:
        raise ValueError("cluster sizes and batches must be >= 1")
    arr = array or device.default_array(precision)
    clock, onchip = device.clock_hz, device.onchip_bits
    chains, stages = {}, {}  # batch -> the chain and what its pipelines need; (m, batch) -> stage()

    def stage(m, b):
        """(II seconds, largest stage's weight bits) of an m-FPGA FPDeep pipeline at batch b."""
        if (m, b) not in stages:
            if b not in chains:
                ch = Chain(network, precision, b, max_pieces, split)
                chains[b] = (ch, work_curve(ch, arr), np.maximum(ch.fwd_bits, ch.bwd_bits), ch.storage()["weights"])
            ch, curve, link_bits, wts = chains[b]
            cuts = fpdeep_cuts(ch, curve, m)
            a, z = cuts[:-1], cuts[1:]
            comp = ch.cycles(arr).vec(a, z).max() / clock
            busiest = float(link_bits[cuts[1:-1]].max()) if m > 1 else 0.0
            lnk = link.seconds(busiest)
            stages[(m, b)] = (max(comp, lnk), float(wts.vec(a, z).max()))
        return stages[(m, b)]

    weights = float(network.params)
    rows, best = [], {}
    for n in fpgas:
        for b in batches:
            for g in _divisors(n):
                m = n // g
                local = math.ceil(b / g)
                ii, wbits = stage(m, local)
                pipe = (local + m - 1) * ii + 2 * (m - 1) * link.latency_ns * 1e-9
                ar = allreduce_seconds(g, n, weights, grad_bits, link)
                step = pipe + ar
                mode = "pipeline" if g == 1 else ("data" if g == n else "hybrid")
                r = {"fpgas": n, "batch": b, "groups": g, "mode": mode, "fpgas_per_group": m,
                     "images_per_group": local, "ii_ms": ii * 1e3, "pipeline_ms": pipe * 1e3,
                     "allreduce_ms": ar * 1e3, "step_ms": step * 1e3, "images_s": b / step,
                     "weights_mb_per_fpga": wbits / 1e6, "weights_fit_onchip": wbits <= onchip}
                rows.append(r)
                if (n, b) not in best or r["images_s"] > best[(n, b)]["images_s"]:
                    best[(n, b)] = r
    seconds = time.perf_counter() - t0
    assumptions = [
        (f"device {device.name}: {arr.E} engine{'s' if arr.E > 1 else ''} of {arr.P} x {arr.P} at "
         f"{assumed(device.clock_mhz, arr.P)}, "
         f"{onchip / 1e6:.1f} Mb on chip ({fit_describe(device, precision, arr)}); "
         "engine cycles from pymtl_fp.timing (FP+BP+WG per image, weight "
         "gradients over the images an FPGA trains per step)"),
        (f"link {link.name}: {link.gbps:.1f} Gb/s per direction, {link.latency_ns:g} ns per hop; all-reduce "
         f"of {weights / 1e6:.1f} M weights at {grad_bits} bits per gradient (ring over the chain's two "
         "directions, after the step's last backward pass)"),
        (f"pipeline: FPDeep balancing, up to {max_pieces} pieces per layer, split={split}; a step costs "
         "(images + stages - 1) initiation intervals"),
        "not modelled: DRAM traffic of weights that do not fit on chip (column weights_fit_onchip)",
    ]
    return CrossoverResult(network.name, device, arr, link, grad_bits, rows, best, seconds, assumptions)
