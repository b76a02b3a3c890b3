"""Whether ``E`` engines of ``P x P`` fit an FPGA part: every resource, not only the DSPs.

The studies size a part's engines from its DSPs (:func:`pymtl_fp.explore.fpga_model.engines_for`
of :meth:`~pymtl_fp.explore.devices.Device.lane_budget`), but the engine's accumulators, row adder
trees, requantizers and control sit in the fabric: at ``P = 32`` one engine takes about 270k logic
LUTs at 16 bits, so a Virtex-7 690T whose DSPs would hold three engines has the LUTs for one.  This
module prices ``E`` engines and one router with the resource model calibrated on Yosys
(:mod:`pymtl_fp.resources`, within 20 % of ``synth_xilinx`` on every synthesized preset) and keeps
the largest array that fits every budget:

* **DSPs**: the lane budget (``dsp_fraction`` of the DSPs, MACs per DSP);
* **LUTs** and **FFs**: the model's logic LUTs and FFs within :data:`LOGIC_FRACTION` of the
  part's (placement and routing need slack);
* **block RAM**: the studies' own storage models (activations, weights, tiles) against the
  part's on-chip RAM: the engine's buffers are those stores, so the LUTs the model
  gives a default build's small buffers (LUT RAM) are not counted twice.

:func:`fit_array` returns the array and the resource that bound it; :func:`over_budget` names the
first resource an array exceeds.  A part with no LUT or FF count (a custom devices-file entry
without ``luts``/``ffs``) is not checked for it, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from pymtl_fp.energy.estimate import array_logic
from pymtl_fp.explore.fpga_model import P_MAX, DeviceError, EngineArray, engines_for

#: share of a part's LUTs and FFs the engines and the router may use
LOGIC_FRACTION = 0.9


def over_budget(device, prec, arr: EngineArray) -> str | None:
    """The first of LUTs, FFs that ``arr`` exceeds on ``device`` (``"LUTs 735k > 390k"``), or None."""
    u = array_logic(prec, arr.P, arr.E)
    for key, have, name in (("logic_luts", device.luts, "LUTs"), ("ffs", device.ffs, "FFs")):
        if have and u[key] > LOGIC_FRACTION * have:
            return f"{name} {u[key] / 1e3:.0f}k > {LOGIC_FRACTION:.0%} of {have / 1e3:.0f}k"
    return None


def most_engines(device, prec, P: int, upto: int) -> int:
    """The most engines of ``P x P`` (at most ``upto``, at least 1) whose logic fits ``device``."""
    E = upto
    while E > 1 and over_budget(device, prec, EngineArray(P, E)):
        E -= 1
    return E


@dataclass(frozen=True)
class Fit:
    """An array that fits a part, the resource that bound it and what its DSPs alone would hold."""

    array: EngineArray
    binding: str          #: "DSPs", "LUTs" or "FFs"
    dsp_array: EngineArray
    note: str

    def describe(self) -> str:
        return self.note


def fit_array(device, prec) -> Fit:
    """The largest array of ``device``'s DSP budget that also fits its LUTs and FFs: fewer engines
    first, then (one engine) a smaller side.  A part without LUT/FF counts keeps the DSP array."""
    dsp_arr = engines_for(device.lane_budget(prec))
    if not (device.luts or device.ffs):
        return Fit(dsp_arr, "DSPs", dsp_arr, "DSPs bind (the part gives no LUT/FF counts: not checked)")
    arr = dsp_arr
    reason = over_budget(device, prec, arr)
    if reason is None:
        u = array_logic(prec, arr.P, arr.E)
        used = [f"{u[k] / 1e3:.0f}k of {have / 1e3:.0f}k {name}" for k, have, name in
                (("logic_luts", device.luts, "LUTs"), ("ffs", device.ffs, "FFs")) if have]
        return Fit(arr, "DSPs", dsp_arr, f"DSPs bind ({', '.join(used)})")
    first = reason
    arr = EngineArray(arr.P, most_engines(device, prec, arr.P, arr.E))
    reason = over_budget(device, prec, arr)
    P = min(arr.P, P_MAX)
    while reason is not None and P > 1:
        P -= 1
        arr = EngineArray(P, 1)
        reason = over_budget(device, prec, arr)
    if reason is not None:
        raise DeviceError(f"device {device.name!r}: its LUTs and FFs hold no engine, not even 1x1 ({reason})")
    binding = first.split(" ", 1)[0]
    return Fit(arr, binding, dsp_arr, f"{binding} bind: {arr} instead of the DSPs' {dsp_arr} ({first})")


def describe(device, prec, arr: EngineArray) -> str:
    """What bound ``arr`` on ``device``: the part's own fit (:func:`fit_array`) when ``arr`` is it,
    else whether the given array fits (marked ``DOES NOT FIT`` with the resource when not)."""
    fit = fit_array(device, prec)
    if arr == fit.array:
        return fit.note
    why = over_budget(device, prec, arr)
    return f"{arr} as given: DOES NOT FIT ({why})" if why else f"{arr} as given (fits the LUTs and FFs)"
