"""DarkFPGA-style design search: one FPGA training a network on mini-batches from DRAM.

DarkFPGA (Luo et al., FCCM'19 / J. Semicond. 2020) trains a whole network on one FPGA with
batch-level parallelism: a weight tile on chip is applied to ``Tb`` images of the mini-batch
before the next one is fetched (batch-innermost layout), tiles bound the buffers, and an
analytical model picks the parameters for a network and a device budget.  This module is such
a model, roofline style:

**Parameters.**  The FPGA's engines: ``E`` copies of the ``P x P`` engine (``P`` in 8, 16,
32; ``E`` a quarter, half, three quarters or all of what the DSP budget holds, see
:mod:`.fpga_model`); output-channel tile ``Tk``; input-channel tile
``Tc``; output-row tile ``Th``; batch tile ``Tb`` (a divisor of the mini-batch ``B``).  The
same tiles serve every layer (clipped to the layer's size).

**Time of one layer and operation** (per mini-batch) = ``max(compute, memory)`` with the
engines' cycles from :mod:`pymtl_fp.timing` (the model the RTL validates) at the device clock
-- each ``Tk x Tc`` channel tile of ``Tb`` images is one engine command, its ``Tk`` channels
dealt to the ``E`` engines, so tiles smaller than the engines waste lanes and small batch tiles
expose the weight-gradient drain (:func:`.fpga_model.tiled_layer_cycles`) -- and the DRAM
traffic at the board's bandwidth (double buffering overlaps the two):

=====  =====================================================================================
FP     weights x ``B/Tb`` x ``ceil(Ho/Th)``; input x ``B`` x ``ceil(K/Tk)`` x halo;
       output x ``B``
BP     weights as FP; output gradient x ``B`` x ``ceil(C/Tc)``; input gradient x ``B``
WG     input x ``B`` x ``ceil(K/Tk)`` x halo; output gradient x ``B`` x ``ceil(C/Tc)``; per
       mini-batch the update reads and writes the weights and the gradients once
=====  =====================================================================================

(``halo`` = ``((Th-1)*stride + R) / (Th*stride)``: input rows re-read between row tiles.)

**Resources.**  DSPs = lanes / MACs per DSP; on-chip bits = double-buffered input, weight and
output tiles (accumulators at ``acc_bits``), the largest over layers and operations; LUTs and FFs
of the engines and a router from the Yosys-calibrated resource model
(:mod:`.fpga_fit`).  A point is feasible when all fit the device (DSPs within ``dsp_fraction``,
RAM within 90 %, LUTs and FFs within :data:`.fpga_fit.LOGIC_FRACTION`); an array whose logic does
not fit is refused, and the assumptions name it and the resource.

**Energy.**  Joules per image of every point (:mod:`pymtl_fp.energy.estimate`: the MACs, the
lanes' idle cycles, operand reads, DRAM traffic, the engines' control logic and the device's
static power over the point's time), and GOPs/J.

Results: every feasible point, the best by throughput, and the Pareto front of throughput
against DSPs, on-chip RAM and energy per image.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from pymtl_fp.clock import assumed
from pymtl_fp.energy.estimate import family_of, fpga_logic, image_joules, phase_macs
from pymtl_fp.explore.devices import Device, Precision
from pymtl_fp.explore.fpga_fit import LOGIC_FRACTION, most_engines, over_budget
from pymtl_fp.explore.fpga_model import P_MAX, EngineArray, tiled_layer_cycles
from pymtl_fp.explore.layers import Layer
from pymtl_fp.explore.modes import MODES

RAM_FRACTION = 0.9


@dataclass
class DesignResult:
    network: str
    device: Device
    precision: Precision
    batch: int
    points: dict              #: feasible design points: column name -> numpy array
    pareto: np.ndarray        #: indices of the Pareto front (throughput vs DSPs vs RAM vs J/image)
    evaluated: int            #: grid size
    seconds: float
    assumptions: list = field(default_factory=list)

    def to_dataframe(self):
        """Every feasible point as a pandas DataFrame (``pareto`` marks the Pareto front)."""
        import pandas as pd

        frame = pd.DataFrame({k: np.asarray(v) for k, v in self.points.items()})
        frame["pareto"] = False
        frame.loc[np.asarray(self.pareto, dtype=int), "pareto"] = True
        return frame

    @property
    def count(self) -> int:
        return len(self.points["gops"])

    def best(self, n: int = 10) -> list:
        """The ``n`` fastest distinct designs (array and channel/batch tiles; of the row
        tiles giving the same throughput, the one needing least RAM)."""
        p = self.points
        order = np.lexsort((p["ram_mb"], p["dsps"], -np.round(p["gops"], 6)))
        out, seen = [], set()
        for i in order:
            key = (p["E"][i], p["P"][i], p["Tb"][i], p["Tk"][i], p["Tc"][i])
            if key in seen:
                continue
            seen.add(key)
            out.append(point(p, int(i)))
            if len(out) == n:
                break
        return out

    def front(self) -> list:
        return [point(self.points, int(i)) for i in self.pareto]


def _pow2_upto(n: int, start: int = 1) -> list:
    out, v = [], start
    while v < n:
        out.append(v)
        v *= 2
    out.append(n)
    return sorted(set(out))


def candidate_arrays(device: Device, precision: Precision) -> list:
    """Engine arrays: ``P`` in 8, 16, 32 (the engine's limit); ``E`` a quarter, half, three
    quarters and all of the engines of that ``P`` the lane budget holds, and the most of them the
    part's LUTs and FFs fit (:func:`.fpga_fit.most_engines`)."""
    budget = device.lane_budget(precision)
    shapes = set()
    for P in (8, 16, P_MAX):
        full = budget // (P * P)
        for frac in (0.25, 0.5, 0.75, 1.0):
            E = int(full * frac)
            if E >= 1:
                shapes.add((P, E))
        if full >= 1:
            shapes.add((P, most_engines(device, precision, P, full)))
    return [EngineArray(P, E) for P, E in sorted(shapes)]


COLUMNS = ("E", "P", "Tb", "Tk", "Tc", "Th", "dsps", "ram_mb", "gops", "images_s", "mem_bound_pct", "peak_gops",
           "mj_per_image", "gops_per_j")


def array_points(arr, ctx: dict) -> dict | None:
    """The grid's feasible points for one engine array (one unit of work of a fan-out: the grid
    and the array-independent traffic and buffers come in ``ctx``); None if the array does not
    fit the DSP budget."""
    prec, ram_ok, batch, clock, dram_bps = ctx["prec"], ctx["ram_ok"], ctx["batch"], ctx["clock"], ctx["dram_bps"]
    TB, TK, TC, TH = ctx["TB"], ctx["TK"], ctx["TC"], ctx["TH"]
    cols = {}
    dsps = math.ceil(arr.lanes / prec.macs_per_dsp)
    if dsps > ctx["dsp_budget"] or not len(ram_ok):
        return None
    total = np.zeros(len(ram_ok))
    mem_time = np.zeros(len(ram_ok))
    dram_bits = np.full(len(ram_ok), float(ctx["upd_bits"]))
    tiles = np.stack([TB[ram_ok], TK[ram_ok], TC[ram_ok]]).astype(np.int64)
    combos, inv = np.unique(tiles, axis=1, return_inverse=True)
    inv = inv.ravel()
    for alts, nd in zip(ctx["alternatives"], ctx["needs_dx"]):
        # per operation the fastest of the layer's mappings (its channel- or batch-parallel one; a
        # tap-packed one where its tiles fit): max(compute, DRAM) of batch / Tb commands a tile
        best = {op: None for op in ("fp", "bp", "wg")}
        for ly, ops, ok in alts:
            per = [tiled_layer_cycles(ly, arr, tk, tc, tb, ctx["batch_parallel"]) for tb, tk, tc in combos.T]
            for op, bits in zip(("fp", "bp", "wg"), ops):
                if op == "bp" and not nd:
                    continue
                t_c = np.array([c[op] * batch / tb for c, tb in zip(per, combos[0])])[inv] / clock
                t_m = bits[ram_ok] / dram_bps
                got = (np.where(ok[ram_ok], np.maximum(t_c, t_m), np.inf), np.where(t_m > t_c, t_m, 0.0), bits[ram_ok])
                if best[op] is not None:  # keep the faster mapping, point by point
                    win = got[0] < best[op][0]
                    got = tuple(np.where(win, new, old) for new, old in zip(got, best[op]))
                best[op] = got
        for got in best.values():
            if got is not None:
                total += got[0]
                mem_time += got[1]
                dram_bits += got[2]
    total += ctx["upd_bits"] / dram_bps
    n = len(ram_ok)
    cols["E"] = np.full(n, arr.E)
    cols["P"] = np.full(n, arr.P)
    for key, src in (("Tb", TB), ("Tk", TK), ("Tc", TC), ("Th", TH)):
        cols[key] = src[ram_ok].astype(np.int64)
    cols["dsps"] = np.full(n, dsps)
    cols["ram_mb"] = ctx["buffers"][ram_ok] / 1e6
    cols["gops"] = ctx["train_ops"] * batch / total / 1e9
    cols["images_s"] = batch / total
    cols["mem_bound_pct"] = 100.0 * mem_time / total
    cols["peak_gops"] = np.full(n, 2.0 * arr.lanes * clock / 1e9)
    luts, ffs = fpga_logic(prec, arr.P, arr.E)
    joules = sum(image_joules(ctx["family"], prec, arr.P, macs=ctx["macs"], fpgas=1, lanes=arr.lanes, clock_hz=clock,
                              seconds=total / batch, dram_bits=dram_bits / batch, params=ctx["params"], batch=batch,
                              luts=luts, ffs=ffs).values())
    cols["mj_per_image"] = joules * 1e3
    cols["gops_per_j"] = ctx["train_ops"] / joules / 1e9
    return cols


def tap_packed_layer(ly):
    """The 1x1 conv a first conv layer runs tap-packed (:func:`pymtl_fp.timing.tap_packed_shape`):
    ``C*R*S`` input channels over its ``Ho x Wo`` outputs; None where packing does not apply."""
    if ly.kind != "conv" or ly.groups != 1 or ly.R * ly.S == 1:
        return None
    return Layer(ly.name, "conv", ly.inputs, (ly.C * ly.R * ly.S, ly.Ho, ly.Wo), ly.out_shape, relu=ly.relu,
                 bias=ly.bias)


def _traffic_and_buffers(ly, needs_dx, prec, batch, TB, TK, TC, TH):
    """Per grid point, a layer's DRAM bits per mini-batch for FP, BP and WG (the module docstring's
    table) and its double-buffered tiles' on-chip bits."""
    tk = np.minimum(TK, ly.K)
    tc = np.minimum(TC, ly.C)
    th = np.minimum(TH, ly.Ho)
    if ly.kind == "fc":
        halo = np.ones_like(TB)
        rows_in = np.ones_like(TB)
        w_in = 1
        cin_tile = np.minimum(TC * ly.in_shape[1] * ly.in_shape[2], ly.in_elems)
        rs_eff = 1
    else:
        halo = ((th - 1) * ly.stride + ly.R) / (th * ly.stride)
        rows_in = (th - 1) * ly.stride + ly.R
        w_in = ly.in_shape[2]
        cin_tile = tc
        rs_eff = ly.R * ly.S
    row_tiles = np.ceil(ly.Ho / th)
    k_tiles = np.ceil(ly.K / tk)
    c_tiles = np.ceil(ly.C / tc)
    w_bits = ly.params * prec.weight_bits
    x_bits = ly.in_elems * prec.act_bits
    y_bits = ly.out_elems * prec.act_bits
    dy_bits = ly.out_elems * prec.grad_bits
    dx_bits = ly.in_elems * prec.grad_bits
    fp = w_bits * (batch / TB) * row_tiles + x_bits * batch * k_tiles * halo + y_bits * batch
    wg = x_bits * batch * k_tiles * halo + dy_bits * batch * c_tiles
    bp = (w_bits * (batch / TB) * row_tiles + dy_bits * batch * c_tiles + dx_bits * batch) \
        if needs_dx else np.zeros_like(TB)
    in_buf = 2 * TB * cin_tile * rows_in * w_in * prec.act_bits
    w_buf = 2 * tk * cin_tile * rs_eff * prec.weight_bits
    out_buf = TB * tk * th * ly.Wo * prec.acc_bits
    wg_buf = tk * cin_tile * rs_eff * prec.acc_bits
    return (fp, bp, wg), in_buf + w_buf + np.maximum(out_buf, wg_buf)


def search(network, device: Device, batch: int = 128, precision: Precision | None = None,
           dram_gbs: float | None = None, arrays=None, map_fn=None, modes=MODES) -> DesignResult:
    """Evaluate the whole parameter grid; return the feasible points and the Pareto front.

    ``map_fn(function, arrays)``: how the per-array work is mapped (default: the built-in
    ``map``, in this process; a Dask client's map and gather fans it out), in order.

    ``precision`` defaults to 8-bit training (DarkFPGA's).  ``modes``: the dataflows a layer may
    run in (:data:`MODES`), each pass taking the fastest by the timing model and the DRAM traffic:
    ``channel`` always; ``packed``, a first conv layer tap-packed (its input ``R*S`` times the
    words, at points whose RAM holds its tiles); ``batch``, a forward pass batch-parallel (the
    engine's ``bp`` mode, the batch tile's images on the array's columns).
    """
    unknown = set(modes) - set(MODES)
    if unknown or "channel" not in modes:
        raise ValueError(f"modes must include channel and be among {', '.join(MODES)}, not {', '.join(modes)}")
    batch_parallel = "batch" in modes
    precision = precision or Precision.bits(8)
    if batch < 1:
        raise ValueError("batch must be >= 1")
    t0 = time.perf_counter()
    layers = [ly for ly in network.layers if ly.has_macs]
    needs_dx = [any(s != "input" for s in ly.inputs) for ly in layers]
    dram_bps = (dram_gbs or device.dram_gbs) * 8e9
    clock = device.clock_hz
    prec = precision
    kmax = max(ly.K for ly in layers)
    cmax = max(ly.C for ly in layers)
    hmax = max(ly.Ho for ly in layers)
    tb_vals = [d for d in range(1, batch + 1) if batch % d == 0 and (d & (d - 1) == 0 or d == batch)]
    tk_vals = _pow2_upto(kmax, 16)
    tc_vals = _pow2_upto(cmax, 16)
    th_vals = _pow2_upto(hmax, 1)
    TB, TK, TC, TH = (a.ravel() for a in np.meshgrid(tb_vals, tk_vals, tc_vals, th_vals,
                                                     indexing="ij"))
    TB, TK, TC, TH = (x.astype(float) for x in (TB, TK, TC, TH))
    arrays = arrays or candidate_arrays(device, prec)
    refused = {a: why for a in arrays if (why := over_budget(device, prec, a))}
    arrays = [a for a in arrays if a not in refused]
    ram_budget = device.onchip_bits * RAM_FRACTION
    dsp_budget = int(device.dsp * device.dsp_fraction)
    train_ops = 2.0 * network.macs()["train"]
    upd_bits = sum(ly.params for ly in layers) * (2 * prec.weight_bits + 2 * prec.acc_bits)
    # tile-dependent memory traffic and buffers do not depend on the array: compute once; a first
    # layer may also run tap-packed, at points whose RAM holds its (larger) input tiles too
    alternatives, buffers = [], np.zeros_like(TB)
    for ly, nd in zip(layers, needs_dx):
        ops, buf = _traffic_and_buffers(ly, nd, prec, batch, TB, TK, TC, TH)
        buffers = np.maximum(buffers, buf)
        alts = [(ly, ops, np.ones(len(TB), dtype=bool))]
        packed = tap_packed_layer(ly) if not nd and "packed" in modes else None
        if packed is not None:
            pops, pbuf = _traffic_and_buffers(packed, nd, prec, batch, TB, TK, TC, TH)
            alts.append((packed, pops, pbuf <= ram_budget))
        alternatives.append(alts)
    ram_ok = np.nonzero(buffers <= ram_budget)[0]
    ctx = dict(prec=prec, dsp_budget=dsp_budget, ram_ok=ram_ok, TB=TB, TK=TK, TC=TC, TH=TH,
               needs_dx=needs_dx, alternatives=alternatives, batch=batch, clock=clock, dram_bps=dram_bps, upd_bits=upd_bits,
               buffers=buffers, train_ops=train_ops, family=family_of(device),
               macs=phase_macs(network),
               params=network.params, batch_parallel=batch_parallel)
    cols = {k: [] for k in COLUMNS}
    for part in (map_fn or map)(functools.partial(array_points, ctx=ctx), arrays):
        if part is not None:
            for k in COLUMNS:
                cols[k].append(part[k])
    points = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
    points["dsp_pct"] = 100.0 * points["dsps"] / device.dsp
    points["ram_pct"] = 100.0 * points["ram_mb"] * 1e6 / device.onchip_bits
    pareto = pareto_front(points)
    seconds = time.perf_counter() - t0
    assumptions = [
        (f"device {device.name}: {device.dsp} DSPs ({device.dsp_fraction:.0%} usable), "
         f"{device.onchip_bits / 1e6:.1f} Mb on-chip RAM ({RAM_FRACTION:.0%} usable), "
         f"clock {assumed(device.clock_mhz, P_MAX)}, DRAM {dram_bps / 8e9:.1f} GB/s"),
        (f"precision {prec.act_bits}/{prec.weight_bits}/{prec.grad_bits}-bit act/weight/grad, "
         f"{prec.acc_bits}-bit accumulators, {prec.macs_per_dsp} MAC(s) per DSP; "
         f"mini-batch {batch}"),
        ("E engines of P x P, cycles from pymtl_fp.timing (the model the RTL validates); "
         "time per layer-operation = max(compute, DRAM traffic), of the fastest of its dataflows: "
         + ", ".join({"channel": "channel-parallel", "packed": "tap-packed (a first layer)",
                      "batch": "batch-parallel (a forward pass, the engine's bp mode)"}[m] for m in modes)),
        (f"energy: pymtl_fp.energy constants of family {family_of(device)} (derived figures, x0.3..x3); "
         "the Pareto front is over GOPS, DSPs, on-chip RAM and mJ per image"),
        (f"logic: every array within {LOGIC_FRACTION:.0%} of the part's "
         + " and ".join(f"{have / 1e3:.0f}k {name}" for have, name in ((device.luts, "LUTs"), (device.ffs, "FFs"))
                        if have)
         + " (pymtl_fp.explore.fpga_fit, the Yosys-calibrated resource model); "
         + (f"refused {len(refused)} of {len(refused) + len(arrays)}: "
            + "; ".join(f"{a}: {why}" for a, why in refused.items()) if refused else "every candidate fits")
         if device.luts or device.ffs else "logic: the part gives no LUT/FF counts, not budgeted"),
    ]
    return DesignResult(network.name, device, prec, batch, points, pareto,
                        len(TB) * len(arrays), seconds, assumptions)


def pareto_front(points: dict) -> np.ndarray:
    """Indices of the points not dominated in (more GOPS, fewer DSPs, less RAM, less energy per
    image), ordered by GOPS descending; of duplicate points one is kept.

    Points are visited in lexicographic order (GOPS descending, then DSPs, RAM, energy
    ascending), so a later point never dominates an earlier one; each is kept unless a kept
    point is at least as good in all four objectives."""
    g, d, r = points["gops"], points["dsps"], points["ram_mb"]
    e = points["mj_per_image"]
    if not len(g):
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((e, r, d, -g))
    kg, kd, kr, ke = (np.empty(len(g)) for _ in range(4))
    front, k = [], 0
    for i in order.tolist():
        if k and np.any((kg[:k] >= g[i]) & (kd[:k] <= d[i]) & (kr[:k] <= r[i]) & (ke[:k] <= e[i])):
            continue
        kg[k], kd[k], kr[k], ke[k] = g[i], d[i], r[i], e[i]
        k += 1
        front.append(i)
    return np.array(front, dtype=np.int64)


def point(points: dict, i: int) -> dict:
    """One design point as a plain dict."""
    out = {}
    for k, v in points.items():
        x = v[i].item()
        out[k] = x
    out["array"] = f"{out['E']}x{out['P']}"
    return out
