"""The clock a configuration's RTL reaches: recorded pre-route paths times a routing allowance.

Every throughput in a report (images/s, energy's static part, a trace's microseconds) turns
cycles into time with a clock.  This module says which clock and where it comes from, so no figure
rests on an assumed 200 MHz:

* **pre-route path** (``pre_route.toml``): the critical path of a synthesized unit as Yosys 0.70
  ``sta`` reports it after ``synth_xilinx`` (7-series cell delays, no routing; :mod:`pymtl_fp.sta`),
  one record per unit (``engine``, ``node``), preset and set of engine pipelines, taken from
  ``pymtl-fp translate`` runs (``python -m pymtl_fp.cli.record_clock DIR`` records one);
* **routing allowance**: post-route path / logic delay of a placed-and-routed unit
  (``pymtl-fp translate --pnr ecp5``: nextpnr on an ECP5-85F; the runs in
  ``pymtl_fp/pnr_records.toml``, :func:`pymtl_fp.pnr.recorded`), the factor by which routing
  lengthens the cell delays;
* the estimate: ``mhz = 1000 / (pre_route_ns * allowance)``.

A cluster's node is looked up by its engine's array side (2: ``tiny``, 4: ``small``, 8:
``medium``; another side: the nearest recorded preset, said so) and its pipelines; a set of
pipelines with no record of its own takes the same pipelines recorded at the nearest preset, else
the slowest record of that unit and preset (said so).
The allowance is the run with the same unit, preset and pipelines, else the engine's of that
preset and pipelines (a node's engine), else the largest recorded among the runs without a
structure option (the conservative one, said so; a run with ``dsp`` or ``taps`` stands for that
option only).  A cluster runs at its slowest node's clock.

This is an estimate for comparing configurations and stating what a figure assumes, not a
sign-off: the pre-route delays are 7-series cell delays and the allowance comes from another
family's router.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pymtl_fp.engine.config import PIPELINES
from pymtl_fp.pnr import routing_allowance

HERE = Path(__file__).resolve().parent
#: engine presets by array side (:data:`pymtl_fp.engine.config.PRESETS`)
PRESET_OF_SIDE = {2: "tiny", 4: "small", 8: "medium"}


@cache
def pre_route_records() -> tuple:
    """The recorded pre-route paths (dicts: unit, preset, pipelines, ns, through)."""
    return tuple(tomllib.loads((HERE / "pre_route.toml").read_text())["path"])


@cache
def routing_records() -> tuple:
    """The recorded place-and-route runs (:func:`pymtl_fp.pnr.recorded`: dicts with unit, preset,
    pipelines, part, post_route_ns, logic_ns, routing_ns, ...)."""
    from pymtl_fp.pnr import recorded

    return tuple(recorded())


def pipelines_key(engine) -> str:
    """An engine config's pipelines as the records name them: ``none`` or ``requant,mac,...``."""
    on = [p for p in PIPELINES if getattr(engine, f"pipelined_{p}")]
    return ",".join(on) or "none"


@dataclass(frozen=True)
class ClockEstimate:
    """A clock and its provenance.  ``given``: the user chose ``mhz``; then ``rtl`` holds the
    estimate of the RTL beside it.  Otherwise ``mhz`` is the estimate itself."""

    mhz: float
    given: bool
    pre_route_ns: float = 0.0
    allowance: float = 1.0
    record: str = ""
    route: str = ""
    notes: tuple = ()
    rtl: ClockEstimate | None = None

    @property
    def period_ns(self) -> float:
        return 1000.0 / self.mhz

    def describe(self) -> str:
        """One line: the clock and where it comes from."""
        if self.given:
            line = f"{self.mhz:g} MHz as given"
            if self.rtl is not None:
                line += f" (the RTL reaches about {self.rtl.mhz:.0f} MHz: {self.rtl.derivation()})"
            return line
        return f"{self.mhz:.1f} MHz, the clock the RTL reaches: {self.derivation()}"

    def derivation(self) -> str:
        extra = "; ".join(self.notes)
        return (f"{self.record}: {self.pre_route_ns:g} ns pre-route (Yosys sta, 7-series cell delays) x "
                f"{self.allowance:.2f} routing allowance ({self.route}) = {self.pre_route_ns * self.allowance:.1f} ns"
                + (f"; {extra}" if extra else ""))

    def to_dict(self) -> dict:
        d = {"mhz": self.mhz, "given": self.given, "text": self.describe()}
        src = self if not self.given else self.rtl
        if src is not None:
            d.update(pre_route_ns=src.pre_route_ns, routing_allowance=src.allowance, record=src.record,
                     route=src.route, rtl_mhz=src.mhz)
        return d


def _preset_for(side: int) -> tuple:
    if side in PRESET_OF_SIDE:
        return PRESET_OF_SIDE[side], ()
    near = min(PRESET_OF_SIDE, key=lambda s: (abs(math.log2(s) - math.log2(side)), -s))
    return PRESET_OF_SIDE[near], (f"array {side}x{side} not recorded: the {near}x{near} preset's path",)


def pre_route(unit: str, side: int, key: str) -> tuple:
    """``(record dict, notes)``: the recorded path of ``unit`` for an array of ``side`` and pipelines ``key``."""
    preset, notes = _preset_for(side)
    same = [r for r in pre_route_records() if r["unit"] == unit and r["preset"] == preset]
    if not same:
        raise KeyError(f"no recorded pre-route path of {unit} {preset}")
    exact = [r for r in same if r["pipelines"] == key]
    if exact:
        return exact[0], notes
    elsewhere = [r for r in pre_route_records() if r["unit"] == unit and r["pipelines"] == key]
    if elsewhere:  # the same pipelines at the nearest preset that has them
        order = list(PRESET_OF_SIDE.values())
        r = min(elsewhere, key=lambda r: abs(order.index(r["preset"]) - order.index(preset)))
        return r, notes + (f"{unit} {preset} with pipelines {key} not recorded: recorded at {r['preset']}",)
    slow = max(same, key=lambda r: r["ns"])
    return slow, notes + (f"pipelines {key} not recorded: the slowest record (pipelines {slow['pipelines']})",)


def _key(pipelines: str) -> str:
    return ",".join(PIPELINES) if pipelines == "all" else pipelines


def _plain(pipelines: str) -> bool:
    """A record's pipelines are a set of the four, or none: no structure option (``dsp``, ``taps``)."""
    return pipelines in ("none", "all") or set(pipelines.split(",")) <= set(PIPELINES)


def allowance(unit: str, preset: str, key: str) -> tuple:
    """``(factor, text, notes)``: the routing allowance for a unit/preset/pipelines: its own
    place-and-route run, else the engine's of the same preset and pipelines (a node's engine), else
    the largest recorded among the runs of the presets' structures (said so; a run built with a
    structure option such as ``taps`` stands for that option only)."""
    recs = routing_records()
    exact = [r for r in recs if (r["unit"], r["preset"], _key(r["pipelines"])) == (unit, preset, key)]
    engine = [r for r in recs if (r["unit"], r["preset"], _key(r["pipelines"])) == ("engine", preset, key)]
    plain = [r for r in recs if _plain(r["pipelines"])]  # of the presets' structures (no dsp, no taps)
    r = (exact or engine or [max(plain, key=routing_allowance)])[0]
    text = (f"{r['part']} place-and-route of the {r['unit']} {r['preset']}, pipelines {r['pipelines']}: "
            f"{r['post_route_ns']:g} ns = {r['logic_ns']:g} logic + {r['routing_ns']:g} routing")
    notes = () if exact else (f"no place-and-route of the {unit}: its engine's" if engine else
                              f"no place-and-route of the {unit} {preset}, pipelines {key}: the largest "
                              "allowance recorded",)
    return routing_allowance(r), text, notes


def estimate(unit: str, side: int, key: str) -> ClockEstimate:
    """The clock a ``unit`` (``node``: engine + router, or ``engine``) with an array of ``side`` and
    pipelines ``key`` (:func:`pipelines_key`) reaches."""
    rec, notes = pre_route(unit, side, key)
    factor, route, more = allowance(unit, rec["preset"], rec["pipelines"])
    return ClockEstimate(mhz=1000.0 / (rec["ns"] * factor), given=False, pre_route_ns=rec["ns"], allowance=factor,
                         record=f"{unit} {rec['preset']}, pipelines {rec['pipelines']}", route=route,
                         notes=notes + more)


def rtl_clock(engines, unit: str = "node") -> ClockEstimate:
    """The clock the slowest of ``engines``' nodes (``unit="node"``: engine + router) or engines reaches."""
    return min((estimate(unit, max(e.rows, e.cols), pipelines_key(e)) for e in engines), key=lambda c: c.mhz)


def rtl_note(side: int) -> str:
    """What a node of ``side x side`` arrays with every engine pipeline reaches, as a phrase."""
    est = estimate("node", side, ",".join(PIPELINES))
    return f"the RTL's node reaches about {est.mhz:.0f} MHz: pymtl_fp.clock"


def assumed(mhz: float, side: int) -> str:
    """How a study states a clock it assumes (a part's nominal clock) beside what the RTL reaches."""
    return f"{mhz:g} MHz assumed (the part's nominal clock; {rtl_note(side)})"


def cluster_clock(engines, mhz: float | None) -> ClockEstimate:
    """A cluster's clock: ``mhz`` as given (with the RTL's estimate beside it), or the estimate."""
    est = rtl_clock(engines)
    return est if mhz is None else ClockEstimate(mhz=float(mhz), given=True, rtl=est)
