"""FPDeep-style scaling study: one network on 1..N identical FPGAs in a chain.

For every cluster size the network is balanced FPDeep's way (:func:`.partition.fpdeep`: equal
shares of FP+BP+WG time, layers split between neighbours where needed), then evaluated under
each link model.  The partition does not depend on the link, so one balancing per size serves
every bandwidth; everything is vectorized over the chain positions, so a VGG-16 sweep over
1..128 FPGAs and several links takes a fraction of a second.

Per (N, link) row: images/s and GOPS (2 ops per MAC of FP+BP+WG), speedup and parallel
efficiency against one FPGA, whether compute or the busiest link sets the pace, the busiest
link's bandwidth need at the compute-bound rate, per-FPGA MAC utilization (mean, min), and
the largest per-FPGA on-chip storage for the fine-grained pipeline (also with FPDeep's weight
balancing, :mod:`.weight_balance`: weights that do not fit kept by FPGAs with room and streamed
over the chain, with the throughput that streaming leaves and the weights' max/mean per FPGA
before and after), for whole-map buffering
(``2(N-i)-1`` images stashed at stage ``i``) and for the simulated cluster's 1F1B with per-image
weight gradients (its buffers, fc weights on chip, channels padded to the array side, the layer
inputs of the ``N-i+2`` images in flight: ``train --wgrad image``, :meth:`.Chain.cluster_bits`)
(and the share of FPGAs where each fits), and the largest per-FPGA DRAM bandwidth the fc
layers' weights need off chip (where the first two keep them).

The **knee** of a link model is the smallest N at which the busiest link, not compute, limits
throughput; past it GOPS stop growing (FPDeep: linear to 60-83 FPGAs with 6 transceivers per
FPGA, to ~100 with 250 Gb/s per FPGA).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from pymtl_fp.clock import assumed
from pymtl_fp.cluster.compiler.partition import nearest_positions
from pymtl_fp.energy.estimate import family_of, fpga_logic, image_energy, phase_macs
from pymtl_fp.explore.chain import Chain
from pymtl_fp.explore.devices import Device, Precision
from pymtl_fp.explore.fpga_fit import describe as fit_describe
from pymtl_fp.explore.partition import work_curve
from pymtl_fp.explore.weight_balance import balance, staging_bits, stream_bits

#: "linear" scaling: parallel efficiency (GOPS / (N x one FPGA's GOPS)) at least this
LINEAR_EFFICIENCY = 0.8


@dataclass
class ScalingResult:
    network: str
    device: Device
    array: object
    precision: Precision
    links: list
    rows: list                     #: one dict per (N, link)
    knees: dict                    #: link name -> first link-bound N (None: never)
    linear_to: dict                #: link name -> last N before efficiency first drops < 80%
    seconds: float                 #: wall time of the sweep
    assumptions: list = field(default_factory=list)

    def to_dataframe(self):
        """``rows`` as a pandas DataFrame: one row per (cluster size, link)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def series(self, link_name: str, key: str):
        pts = [(r["fpgas"], r[key]) for r in self.rows if r["link"] == link_name]
        return np.array([p[0] for p in pts]), np.array([p[1] for p in pts], dtype=float)


def _max_over_mean(x) -> float:
    m = float(np.mean(x))
    return float(np.max(x)) / m if m > 0 else 1.0


def fpdeep_cuts(chain: Chain, curve, n: int) -> np.ndarray:
    """FPDeep's balanced cut positions of ``chain`` over ``n`` FPGAs (``n + 1`` of them):
    equal shares of the FP+BP+WG work curve (:func:`.partition.work_curve`)."""
    cuts = np.zeros(n + 1, dtype=np.int64)
    cuts[1:n] = np.maximum.accumulate(nearest_positions(curve, np.arange(1, n) / n))
    cuts[n] = chain.M
    return cuts


def sweep(network, device: Device, fpgas, links, precision: Precision | None = None,
          batch: int = 32, max_pieces: int = 64, split: str = "auto",
          array=None, optimal: bool = False) -> ScalingResult:
    """Balance ``network`` on each cluster size in ``fpgas`` and evaluate it on each link.

    ``optimal`` adds, per (N, link), the best possible partition's throughput (exact minimum
    II over all cut vectors, :func:`.partition.bisect_optimal`) next to FPDeep's -- slower.
    """
    t0 = time.perf_counter()
    precision = precision or Precision()
    fpgas = sorted({int(n) for n in fpgas})
    if not fpgas or fpgas[0] < 1:
        raise ValueError("cluster sizes must be >= 1")
    chain = Chain(network, precision, batch, max_pieces, split)
    arr = array or device.default_array(precision)
    cyc = chain.cycles(arr)
    curve = work_curve(chain, arr)
    st = chain.storage()
    fine = chain.fine_storage()
    clock = device.clock_hz
    onchip = device.onchip_bits
    train_ops = 2.0 * chain.total_train_macs()
    link_bits = np.maximum(chain.fwd_bits, chain.bwd_bits)
    macs_img = phase_macs(network)
    efam = family_of(device)
    luts, ffs = fpga_logic(precision, arr.P, arr.E)
    rows, base_gops = [], {}
    if optimal:
        from pymtl_fp.explore.partition import Cluster, bisect_optimal
        mat = cyc.matrix() / clock
        total_s = cyc.full_cum[-1] / clock
    for n in fpgas:
        cuts = fpdeep_cuts(chain, curve, n)
        a, b = cuts[:-1], cuts[1:]
        stage_cycles = cyc.vec(a, b)
        compute_ii = stage_cycles.max() / clock
        busiest = float(link_bits[cuts[1:-1]].max()) if n > 1 else 0.0
        crossing = float((chain.fwd_bits[cuts[1:-1]] + chain.bwd_bits[cuts[1:-1]]).sum()) if n > 1 else 0.0
        macs = chain.macs.vec(a, b)
        fine_bits = fine.vec(a, b)
        weights_bits = st["weights"].vec(a, b)
        fc_bits = st["fc_dram"].vec(a, b)
        maps, stash = weights_bits + st["mapbuf"].vec(a, b), st["stash1"].vec(a, b)
        whole_bits = maps + (2 * (n - np.arange(n)) - 1) * stash
        # the simulated cluster's 1F1B with per-image weight gradients (train --wgrad image): its
        # buffers' terms (explore.node_storage's), channels padded to the array side; stage i keeps
        # the inputs of the images in flight, N - i + 2 (cluster.schedule.images_in_flight)
        flight_bits = chain.cluster_bits(cuts, arr.P)
        # FPDeep's weight balancing (explore.weight_balance): the fine-grained pipeline's weights
        # that do not fit kept by FPGAs with room, streamed to their users over the chain
        bal = balance(fine_bits, weights_bits, onchip, staging_bits(chain, cuts, arr.P))
        right, left = stream_bits(bal.flow, precision.weight_bits, precision.acc_bits,
                                  precision.grad_bits, batch)
        inner = cuts[1:-1]
        busiest_bal = float(np.maximum(chain.fwd_bits[inner] + right,
                                       chain.bwd_bits[inner] + left).max()) if n > 1 else 0.0
        for link in links:
            link_ii = link.seconds(busiest)
            ii = max(compute_ii, link_ii)
            ii_bal = max(compute_ii, link.seconds(busiest_bal))
            gops = train_ops / ii / 1e9
            if n == 1:
                base_gops[link.name] = gops
            util = macs / (arr.lanes * clock * ii)
            g1 = base_gops.get(link.name)
            extra = {}
            if optimal:
                cl = Cluster([device.with_array(arr)] * n, [link] * (n - 1), precision)
                _, opt_ii = bisect_optimal(chain, cl, 1e-4, [mat] * n, 0.99 * total_s / n,
                                           ii)
                extra = {"opt_images_s": 1.0 / opt_ii, "opt_gops": train_ops / opt_ii / 1e9}
            en = image_energy(efam, precision, arr.P, macs=macs_img, fpgas=n, lanes=arr.lanes, clock_hz=clock,
                              seconds=ii, link_bits=crossing, dram_bits=float(fc_bits.sum()),
                              params=network.params, batch=batch, luts=luts, ffs=ffs)
            rows.append({
                "network": network.name, "device": device.name, "array": str(arr),
                "link": link.name, "link_gbps": link.gbps, "fpgas": n,
                "images_s": 1.0 / ii, "gops": gops,
                "speedup": gops / g1 if g1 else float("nan"),
                "efficiency": gops / (n * g1) if g1 else float("nan"),
                "bound": "link" if link_ii > compute_ii else "compute",
                "compute_ii_us": compute_ii * 1e6,
                "busiest_link_mbit_per_image": busiest / 1e6,
                "link_need_gbps": busiest / compute_ii / 1e9,
                "util_mean": float(util.mean()), "util_min": float(util.min()),
                "balance": float(stage_cycles.max() / max(stage_cycles.mean(), 1e-30)),
                "weights_mb_max": float(weights_bits.max() / 1e6),
                "fine_mb_max": float(fine_bits.max() / 1e6),
                "whole_mb_max": float(whole_bits.max() / 1e6),
                "flight_mb_max": float(flight_bits.max() / 1e6),
                # the same, over the FPGAs that hold no fc layer (one FPGA's fc weights dominate)
                "flight_conv_mb_max": float(flight_bits[fc_bits == 0].max(initial=0.0) / 1e6),
                "onchip_mb": onchip / 1e6,
                "fine_fit_frac": float(np.mean(fine_bits <= onchip)),
                "fine_bal_mb_max": float(bal.held.max() / 1e6),
                "fine_bal_fit_frac": float(np.mean(bal.held <= onchip * (1 + 1e-9))),
                "weights_balance": _max_over_mean(weights_bits),
                "weights_balance_bal": _max_over_mean(bal.weights),
                "wstream_mbit_per_image": float(np.maximum(right, left).max(initial=0.0) / 1e6),
                "weights_moved_mb": bal.moved / 1e6,
                "weight_hops_mean": bal.bit_hops / bal.moved if bal.moved else 0.0,
                "bal_gops": train_ops / ii_bal / 1e9,
                "bal_bound": "link" if ii_bal > compute_ii else "compute",
                "whole_fit_frac": float(np.mean(whole_bits <= onchip)),
                "flight_fit_frac": float(np.mean(flight_bits <= onchip)),
                "fc_dram_gbs": float(fc_bits.max() / ii / 8e9),
                "energy_family": efam,
                "mj_per_image": en["joules"]["value"] * 1e3,
                "gops_per_j": en["gops_per_j"]["value"],
                "gops_per_j_low": en["gops_per_j"]["low"], "gops_per_j_high": en["gops_per_j"]["high"],
                "images_per_j": en["images_per_j"]["value"],
                "watts_per_fpga": en["joules"]["value"] / ii / n,
                "static_pct": 100.0 * en["rows"]["static"] / en["joules"]["value"],
                **extra,
            })
    knees, linear = {}, {}
    for link in links:
        mine = [r for r in rows if r["link"] == link.name]
        link_bound = [r["fpgas"] for r in mine if r["bound"] == "link"]
        knees[link.name] = min(link_bound) if link_bound else None
        last = None
        for r in mine:
            if r["efficiency"] < LINEAR_EFFICIENCY:
                break
            last = r["fpgas"]
        linear[link.name] = last
    seconds = time.perf_counter() - t0
    assumptions = [
        (f"device {device.name} ({device.family}): {device.dsp} DSPs, "
         f"{device.onchip_bits / 1e6:.1f} Mb on-chip RAM; {arr.E} engine{'s' if arr.E > 1 else ''} of {arr.P} x {arr.P} "
         f"({arr.lanes} lanes) at {assumed(device.clock_mhz, arr.P)}; {fit_describe(device, precision, arr)}"),
        (f"precision: {precision.act_bits}-bit activations, {precision.weight_bits}-bit "
         f"weights, {precision.grad_bits}-bit gradients, {precision.acc_bits}-bit "
         f"weight-gradient accumulators; mini-batch {batch}"),
        ("links: full duplex, per-direction payload bandwidth per chain link: " +
         ", ".join(f"{lk.name} = {lk.gbps:.1f} Gb/s" for lk in links)),
        (f"partition: FPDeep balancing (equal FP+BP+WG time), split={split}, "
         f"up to {max_pieces} pieces per layer; engine cycles from pymtl_fp.timing"),
        (f"energy: pymtl_fp.energy constants of family {efam} (derived figures with x0.3..x3 ranges; "
         f"GOPs/J low..high in the CSV), {luts:,} LUTs and {ffs:,} FFs of control per FPGA"),
    ]
    return ScalingResult(network.name, device, arr, precision, list(links), rows, knees,
                         linear, seconds, assumptions)
