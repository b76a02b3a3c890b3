"""The energy model at paper scale: joules per training image of a design the explore tools
evaluate analytically (no simulation), with the same constants and rows as a simulated run
(:mod:`.model`).

Per image, for ``fpgas`` FPGAs of ``lanes`` MAC lanes each at ``clock_hz``, taking
``seconds`` per image in the steady state:

* forward / backward-data / weight-gradient: useful MACs x ``E_mac``; the lanes' other cycles
  (``fpgas x lanes x clock x seconds - MACs``, shared out in proportion to each phase's MACs)
  x ``E_mac x mac_idle``; operand reads by the engine's dataflow per MAC: forward a weight and
  ``1/P`` of an activation, backward-data a weight and ``1/P`` of a gradient, weight-gradient
  ``1/P`` of each (:func:`pymtl_fp.energy.activity.command_traffic` per step, divided by the
  step's ``P*P`` MACs);
* update: per weight and mini-batch, a read of the weight and its gradient and a write of the
  weight, and one MAC;
* communication: link bits x ``E_link``, off-chip (DRAM) bits x ``E_dram``;
* control: every flip-flop of the resource estimate clocked, every LUT toggling, all the time;
* static: ``fpgas x P_static x seconds``.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from pymtl_fp.energy.constants import family as get_family
from pymtl_fp.energy.model import BOUNDS, ROWS, summarize


def family_of(device) -> str:
    """The energy-constants family of an explore :class:`~pymtl_fp.explore.devices.Device`:
    7-series parts ``7series``, UltraScale(+) and custom parts ``ultrascale+`` (a 20 nm
    UltraScale part priced as 16 nm: its figures are then low)."""
    return "7series" if "-7" in device.family else "ultrascale+"


def phase_macs(network) -> dict:
    """``{"fp":, "bp":, "wg":}``: one image's MACs by phase (an explore network)."""
    return {k: float(v) for k, v in network.macs().items() if k in ("fp", "bp", "wg")}


def image_joules(fam, prec, P: int, *, macs: dict, fpgas: int, lanes: int, clock_hz: float, seconds: float,
                 link_bits: float = 0.0, dram_bits: float = 0.0, params: int = 0, batch: int = 1,
                 luts: int = 0, ffs: int = 0, bound: str = "value") -> dict:
    """``{row: joules per image}`` (rows of :data:`pymtl_fp.energy.model.ROWS`); ``macs``:
    ``{"fp":, "bp":, "wg":}`` per image; ``lanes``, ``luts``, ``ffs``: per FPGA."""
    if isinstance(fam, str):
        fam = get_family(fam)
    pj = 1e-12
    bits = max(prec.act_bits, prec.weight_bits, prec.grad_bits)
    mac = fam.mac(bits).pick(bound)
    idle = fam.get("mac_idle", bound)
    rd, wr = fam.get("bram_read", bound), fam.get("bram_write", bound)
    a, w, g, acc = prec.act_bits, prec.weight_bits, prec.grad_bits, prec.acc_bits
    per_mac_bits = {"fp": w + a / P, "bp": w + g / P, "wg": (a + g) / P}
    total = sum(macs.values())
    spare = np.maximum(0.0, fpgas * lanes * clock_hz * seconds - total)  # (seconds may be an array)
    out = {}
    for key, row in (("fp", "forward"), ("bp", "backward_data"), ("wg", "weight_gradient")):
        m = macs.get(key, 0)
        share = m / total if total else 0.0
        out[row] = pj * (m * mac + spare * share * mac * idle + m * per_mac_bits[key] * rd)
    per_batch = params / batch
    out["update"] = pj * per_batch * ((w + acc) * rd + w * wr + mac)
    out["communication"] = pj * (link_bits * fam.get("link", bound) + dram_bits * fam.get("dram", bound))
    cycles = clock_hz * seconds
    out["control"] = pj * fpgas * cycles * (ffs * fam.get("ff_clock", bound) + luts * fam.get("lut_toggle", bound))
    out["static"] = fpgas * fam.get("static", bound) * seconds
    return {r: out[r] for r in ROWS}


def image_energy(fam, prec, P: int, **kw) -> dict:
    """Joules per image at the constants' value, low and high, and GOPs/J and images/J (the best
    efficiency with the low energies): ``{"joules": {bound: J}, "rows": {row: J}, "gops_per_j":
    {bound:}, "images_per_j": {bound:}}``."""
    return summarize({b: image_joules(fam, prec, P, bound=b, **kw) for b in BOUNDS}, 2.0 * sum(kw["macs"].values()))


@cache
def engine_build(prec, P: int):
    """The engine build a precision and array side are priced as: the word widths, accumulators of
    ``max(32, acc_bits, 2 * data + 2)`` bits (at most 64) and the stream width they need."""
    from pymtl_fp.engine.config import EngineConfig

    data = max(prec.act_bits, prec.weight_bits, prec.grad_bits)
    acc = min(64, max(32, prec.acc_bits, 2 * data + 2))
    return EngineConfig(rows=P, cols=P, act_bits=prec.act_bits, weight_bits=prec.weight_bits,
                        grad_bits=prec.grad_bits, acc_bits=acc, stream_bits=32 if acc <= 32 else 64)


@cache
def _unit_resources(prec, P: int) -> tuple:
    from pymtl_fp.cluster.hw.router_config import RouterConfig
    from pymtl_fp.resources import engine_resources, router_resources

    ecfg = engine_build(prec, P)
    return engine_resources(ecfg), router_resources(RouterConfig(stream_bits=ecfg.stream_bits))


def array_logic(prec, P: int, E: int) -> dict:
    """``{"luts", "ffs", "logic_luts"}`` of ``E`` engines of ``P x P`` and one router on one FPGA, from
    the calibrated resource model (:mod:`pymtl_fp.resources`); ``logic_luts`` leaves out LUTs used as
    RAM."""
    e, r = _unit_resources(prec, P)
    return {"luts": E * e.luts + r.luts, "ffs": E * e.ffs + r.ffs,
            "logic_luts": E * (e.luts - e.lutram_luts) + r.luts - r.lutram_luts}


def fpga_logic(prec, P: int, E: int) -> tuple:
    """``(logic LUTs, FFs)`` of ``E`` engines of ``P x P`` and one router on one FPGA
    (:func:`array_logic`); LUTs used as RAM are left out (their reads and writes are priced as buffer
    traffic)."""
    u = array_logic(prec, P, E)
    return u["logic_luts"], u["ffs"]


def chain_energy(network, cluster, ev, batch: int) -> dict:
    """Joules per image of a partition ``ev`` (:class:`pymtl_fp.explore.partition.Evaluation`) of
    ``network`` on a chain of FPGAs (``cluster``: each device priced by its own family, with its
    own engines and clock), as :func:`image_energy` returns; each FPGA's MACs split into phases
    in the network's proportions, its update in proportion to its MACs, link bits charged to the
    sending side of each link."""
    prec = cluster.precision
    net = phase_macs(network)
    total = sum(net.values()) or 1.0
    if not np.isfinite(ev.ii):
        return summarize({b: dict.fromkeys(ROWS, float("inf")) for b in BOUNDS}, 2.0 * total)
    rows = {b: dict.fromkeys(ROWS, 0.0) for b in BOUNDS}
    for i, (dev, arr) in enumerate(zip(cluster.devices, cluster.arrays)):
        share = float(ev.stage_macs[i]) / total
        link = float(ev.fwd_bits[i] + ev.bwd_bits[i]) if i < len(ev.link_s) else 0.0
        luts, ffs = fpga_logic(prec, arr.P, arr.E)
        for b in BOUNDS:
            j = image_joules(family_of(dev), prec, arr.P, macs={k: v * share for k, v in net.items()}, fpgas=1,
                             lanes=arr.lanes, clock_hz=dev.clock_hz, seconds=ev.ii, link_bits=link,
                             params=round(network.params * share), batch=batch, luts=luts, ffs=ffs, bound=b)
            for r in ROWS:
                rows[b][r] += j[r]
    return summarize(rows, 2.0 * total)
