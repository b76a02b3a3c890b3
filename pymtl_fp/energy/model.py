"""Joules of a simulated training run, from its activity (:mod:`.activity`) and a device family's
constants (:mod:`.constants`), split by phase, with the constants' uncertainty carried through.

Per node (one node is one FPGA):

* **compute** (per phase): ``macs x E_mac(bits) + (lane_cycles - macs) x E_mac x mac_idle``:
  every clocked MAC lane without a useful product (channel padding, taps outside the map, the
  drain of ``bwd_weight``) still costs a fraction of a MAC;
* **buffers** (per phase): engine buffer reads and writes in bits x the block-RAM read / write
  energy per bit;
* **router units**: elements through the ``BIAS`` / ``GATHER`` / ``MOVE`` units, one MAC of the
  element width each (an adder and a shifter in LUTs; small beside the array);
* **links** (communication): bits sent on link outputs and to the host x the transceiver energy
  per bit (the host channel priced as a link);
* **clock and control logic**: every flip-flop of the node's resource estimate
  (:func:`pymtl_fp.resources.node_resources`) clocked every cycle, every logic LUT (LUT RAM is
  priced as buffer traffic) toggling at the vendor estimator's default rate in busy cycles;
* **static**: the device's static power over the run's wall time at the cluster clock.

``low`` and ``high`` evaluate every constant at its low and high end (bounds, not a statistical
interval).  GOPs/J counts 2 operations per useful MAC (forward, backward-data and
weight-gradient), the convention FPDeep, CATERPILLAR and DarkFPGA report in.
"""

from __future__ import annotations

from pymtl_fp.energy.activity import PHASES
from pymtl_fp.energy.constants import family as get_family
from pymtl_fp.resources import node_resources

BOUNDS = ("value", "low", "high")
#: the report's rows: the five activity phases, then what no phase owns
ROWS = PHASES + ("control", "static")
#: the bound of the energy that gives each bound of an efficiency (the best with the lowest energy)
_FLIP = {"value": "value", "low": "high", "high": "low"}


def efficiency(joules: dict, amount: float) -> dict:
    """``{bound: amount / joules}`` for ``joules`` ``{bound: J}`` (``low`` from the high energy);
    None where the energy is zero."""
    return {b: float(amount / joules[_FLIP[b]]) if joules[_FLIP[b]] else None for b in BOUNDS}


def summarize(rows: dict, ops: float, images: float = 1.0) -> dict:
    """``rows`` ``{bound: {row: J}}`` -> ``{"joules": {bound: total J}, "rows": {row: J at the
    value}, "gops_per_j": {bound:}, "images_per_j": {bound:}}``."""
    tot = {b: float(sum(rows[b].values())) for b in BOUNDS}
    return {"joules": tot, "rows": {k: float(v) for k, v in rows["value"].items()},
            "gops_per_j": efficiency(tot, ops / 1e9), "images_per_j": efficiency(tot, images)}


def node_joules(act, fam, luts: int, ffs: int, clock_hz: float, bound: str = "value") -> dict:
    """``{row: joules}`` of one node's :class:`~.activity.NodeActivity` (rows: :data:`ROWS`)."""
    pj = 1e-12
    mac = fam.mac(act.mac_bits).pick(bound)
    idle = fam.get("mac_idle", bound)
    rd, wr, link = fam.get("bram_read", bound), fam.get("bram_write", bound), fam.get("link", bound)
    out = {}
    for ph in PHASES:
        m, lanes = act.macs[ph], act.lane_cycles[ph]
        out[ph] = pj * (m * mac + max(0, lanes - m) * mac * idle + act.read_bits[ph] * rd
                        + act.write_bits[ph] * wr + act.scalar_elems[ph] * mac)
    out["communication"] += pj * (act.link_bits + act.host_bits) * link
    out["control"] = pj * (ffs * act.cycles * fam.get("ff_clock", bound)
                           + luts * act.busy_cycles * fam.get("lut_toggle", bound))
    out["static"] = fam.get("static", bound) * act.cycles / clock_hz
    return out


def run_energy(activities: list, engines: list, routers: list, family: str, clock_mhz: float, *,
               steps: int, images: int) -> dict:
    """The energy section of a cluster report: per row (phase) and node, joules at the constants'
    value / low / high, per step, GOPs/J and images/J, and the constants used with their sources."""
    fam = get_family(family)
    clock = clock_mhz * 1e6
    res = [node_resources(e, r) for e, r in zip(engines, routers)]
    per = {b: [node_joules(a, fam, r.luts - r.lutram_luts, r.ffs, clock, b) for a, r in zip(activities, res)]
           for b in BOUNDS}
    rows = {row: {b: sum(n[row] for n in per[b]) for b in BOUNDS} for row in ROWS}
    total = {b: sum(rows[row][b] for row in ROWS) for b in BOUNDS}
    dynamic = {b: total[b] - rows["static"][b] for b in BOUNDS}
    macs = sum(sum(a.macs.values()) for a in activities)
    ops = 2 * sum(a.macs[ph] for a in activities for ph in ("forward", "backward_data", "weight_gradient"))

    used = {"mac": fam.mac(max(a.mac_bits for a in activities))}
    used.update({q: fam[q] for q in ("mac_idle", "bram_read", "bram_write", "ff_clock", "lut_toggle", "link",
                                     "static")})
    return {
        "family": fam.name, "family_title": fam.title, "clock_mhz": clock_mhz,
        "joules": rows, "total_joules": total, "dynamic_joules": dynamic,
        "joules_per_step": {b: total[b] / steps for b in BOUNDS},
        "per_node_joules": [{row: n[row] for row in ROWS} for n in per["value"]],
        "macs": macs, "train_ops": ops,
        "gops_per_joule": efficiency(total, ops / 1e9),
        "gops_per_joule_dynamic": efficiency(dynamic, ops / 1e9),
        "images_per_joule": efficiency(total, images),
        "activity": [a.as_dict() for a in activities],
        "constants": {q: {"value": c.value, "low": c.low, "high": c.high, "unit": c.unit, "source": c.source}
                      for q, c in used.items()},
    }


def format_energy(e: dict, steps: int) -> list:
    """The report's energy lines."""
    tot = e["total_joules"]
    lines = [f"energy ({e['family_title']}, {e['clock_mhz']:.4g} MHz; constants' low..high in brackets): "
             f"{_j(tot['value'] / steps)} per step [{_j(tot['low'] / steps)}..{_j(tot['high'] / steps)}]; "
             f"{_eff(e['gops_per_joule'])} GOPs/J ({_eff(e['gops_per_joule_dynamic'])} GOPs/J without static "
             f"power), {_eff(e['images_per_joule'], '.3g')} images/J"]
    parts = []
    for row in ROWS:
        v = e["joules"][row]["value"]
        parts.append(f"{row.replace('_', '-')} {_j(v / steps)} ({100 * v / tot['value']:.1f}%)" if tot["value"] else row)
    lines.append("  per step by phase: " + ", ".join(parts))
    return lines


def _j(x: float) -> str:
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6), ("nJ", 1e-9)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x / 1e-12:.3g} pJ"


def _eff(d: dict, spec: str = ".3g") -> str:
    if d["value"] is None:
        return "-"
    return f"{format(d['value'], spec)} [{format(d['low'], spec)}..{format(d['high'], spec)}]"
