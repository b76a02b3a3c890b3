"""FPGA device models from public datasheets, and the precision they compute in.

Resource figures are the device totals of the vendors' product tables:

* AMD/Xilinx DS180, "7 Series FPGAs Data Sheet: Overview" (XC7K325T, XC7VX690T): DSP48E1
  slices, 36 Kb block RAMs, CLB LUTs and flip-flops, GTX/GTH transceivers and their maximum line
  rate;
* AMD/Xilinx DS890, "UltraScale Architecture and Product Data Sheet: Overview" (XCKU115,
  XCVU9P, XCVU13P): DSP48E2 slices, 36 Kb block RAMs, 288 Kb UltraRAMs, CLB LUTs and
  flip-flops, GTH/GTY transceivers.

A node's engines are as many as the DSPs hold and the LUTs and FFs fit
(:mod:`pymtl_fp.explore.fpga_fit`, the resource model calibrated on Yosys).

What is *not* a datasheet figure, and is an assumption of this model, stated in every report:

* ``clock_mhz``: the engines' clock (200 MHz on 7-series, 250 MHz on UltraScale(+)), a
  typical achieved figure for DSP-dense accelerator designs, well under the DSP fmax;
* ``dram_gbs``: off-chip memory bandwidth of a typical board carrying the part (VC707/VC709:
  DDR3; KCU1500/VCU1525-class boards and AWS F1 / Maxeler MAX5: 4 x DDR4 channels);
* ``dsp_fraction``: share of the DSPs given to the engines (the rest: address generation,
  pooling, routers, rounding);
* MACs per DSP: 1 at 16 bits; 2 at 8 bits (two products sharing an operand in one DSP, the
  packing of AMD/Xilinx WP486 "Deep Learning with INT8 Optimization on Xilinx Devices").

A devices file (TOML or JSON) may define further parts with the same fields, see
:func:`device_from_dict`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from pymtl_fp.explore.fpga_model import DeviceError, EngineArray


@dataclass(frozen=True)
class Precision:
    """Word widths of the training datapath (FPDeep uses 16-bit fixed point, DarkFPGA 8)."""

    act_bits: int = 16
    weight_bits: int = 16
    grad_bits: int = 16
    acc_bits: int = 32      #: weight-gradient accumulators, kept until the update

    def __post_init__(self):
        for name in ("act_bits", "weight_bits", "grad_bits", "acc_bits"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 1 <= v <= 64:
                raise DeviceError(f"precision {name} must be an integer in 1..64, not {v!r}")

    @property
    def macs_per_dsp(self) -> int:
        return 2 if max(self.act_bits, self.weight_bits, self.grad_bits) <= 8 else 1

    @classmethod
    def bits(cls, n: int) -> Precision:
        return cls(n, n, n, 32)

    @classmethod
    def of_engine(cls, ecfg) -> Precision:
        """The word widths of an engine build (:class:`~pymtl_fp.engine.config.EngineConfig`)."""
        return cls(ecfg.act_bits, ecfg.weight_bits, ecfg.grad_bits, ecfg.acc_bits)


@dataclass(frozen=True)
class Device:
    """One FPGA part as the models see it."""

    name: str
    family: str
    dsp: int
    bram36: int                 #: 36 Kb block RAMs
    uram: int = 0               #: 288 Kb UltraRAMs
    luts: int = 0               #: CLB LUTs (0: not known, not budgeted)
    ffs: int = 0                #: CLB flip-flops (0: not known, not budgeted)
    transceivers: int = 0
    transceiver_gbps: float = 0.0
    clock_mhz: float = 200.0
    dram_gbs: float = 12.8
    dsp_fraction: float = 0.9
    source: str = ""
    array: EngineArray | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.dsp < 1 or self.bram36 < 0 or self.uram < 0 or self.luts < 0 or self.ffs < 0:
            raise DeviceError(f"device {self.name!r}: resource counts must be positive")
        if self.clock_mhz <= 0 or self.dram_gbs <= 0:
            raise DeviceError(f"device {self.name!r}: clock and DRAM bandwidth must be > 0")
        if not 0 < self.dsp_fraction <= 1:
            raise DeviceError(f"device {self.name!r}: dsp_fraction must be in (0, 1]")
        if self.transceivers < 0 or self.transceiver_gbps < 0:
            raise DeviceError(f"device {self.name!r}: transceiver figures must be >= 0")

    @property
    def onchip_bits(self) -> int:
        return self.bram36 * 36 * 1024 + self.uram * 288 * 1024

    @property
    def clock_hz(self) -> float:
        return self.clock_mhz * 1e6

    def lane_budget(self, precision: Precision = Precision()) -> int:
        """MAC lanes the array may use: DSPs x share x MACs per DSP."""
        return int(self.dsp * self.dsp_fraction) * precision.macs_per_dsp

    def default_array(self, precision: Precision = Precision()) -> EngineArray:
        """The engines a node of this part gets unless told otherwise: the largest array of the DSP
        budget (:func:`pymtl_fp.explore.fpga_model.engines_for` of :meth:`lane_budget`) that also fits
        the part's LUTs and FFs (:func:`pymtl_fp.explore.fpga_fit.fit_array`)."""
        if self.array is not None:
            return self.array
        return self.fit(precision).array

    def fit(self, precision: Precision = Precision()):
        """:func:`pymtl_fp.explore.fpga_fit.fit_array`: the array, the resource that bound it, a note."""
        from pymtl_fp.explore.fpga_fit import fit_array

        return fit_array(self, precision)

    def peak_macs_per_s(self, precision: Precision = Precision(),
                        array: EngineArray | None = None) -> float:
        a = array or self.default_array(precision)
        return a.lanes * self.clock_hz

    def with_array(self, array: EngineArray | None) -> Device:
        return replace(self, array=array)


_DS180 = "AMD/Xilinx DS180 7 Series FPGAs Data Sheet: Overview"
_DS890 = "AMD/Xilinx DS890 UltraScale Architecture and Product Data Sheet: Overview"

DEVICES = {
    "xc7k325t": Device("xc7k325t", "Kintex-7", dsp=840, bram36=445, luts=203800, ffs=407600, transceivers=16,
                       transceiver_gbps=12.5, clock_mhz=200, dram_gbs=12.8, source=_DS180),
    "xc7vx690t": Device("xc7vx690t", "Virtex-7", dsp=3600, bram36=1470, luts=433200, ffs=866400, transceivers=80,
                        transceiver_gbps=13.1, clock_mhz=200, dram_gbs=29.9, source=_DS180),
    "xcku115": Device("xcku115", "Kintex UltraScale", dsp=5520, bram36=2160, luts=663360, ffs=1326720, transceivers=64,
                      transceiver_gbps=16.3, clock_mhz=250, dram_gbs=38.4, source=_DS890),
    "xcvu9p": Device("xcvu9p", "Virtex UltraScale+", dsp=6840, bram36=2160, luts=1182240, ffs=2364480, uram=960,
                     transceivers=120, transceiver_gbps=32.75, clock_mhz=250, dram_gbs=68.3,
                     source=_DS890),
    "xcvu13p": Device("xcvu13p", "Virtex UltraScale+", dsp=12288, bram36=2688, luts=1728000, ffs=3456000, uram=1280,
                      transceivers=128, transceiver_gbps=32.75, clock_mhz=250, dram_gbs=68.3,
                      source=_DS890),
}

_ALIASES = {"690t": "xc7vx690t", "v7-690t": "xc7vx690t", "vc709": "xc7vx690t",
            "virtex7": "xc7vx690t", "vu9p": "xcvu9p", "f1": "xcvu9p", "max5": "xcvu9p",
            "ku115": "xcku115", "325t": "xc7k325t", "k7-325t": "xc7k325t", "vc707": "xc7vx690t",
            "vu13p": "xcvu13p"}


def get_device(name: str) -> Device:
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in DEVICES:
        raise DeviceError(f"unknown device {name!r}; known: {', '.join(DEVICES)} "
                          f"(aliases: {', '.join(sorted(_ALIASES))})")
    return DEVICES[key]


_FIELDS = {"name": str, "family": str, "dsp": int, "bram36": int, "uram": int, "luts": int, "ffs": int,
           "transceivers": int, "transceiver_gbps": float, "clock_mhz": float,
           "dram_gbs": float, "dsp_fraction": float, "source": str}

#: the range of every numeric field a devices file may give: (low, high, low end open); far above any
#: real part (the largest AMD parts have ~12 000 DSPs, ~4 000 BRAM36, 1 000 URAM, 128 transceivers)
FIELD_RANGES = {"dsp": (1, 1_000_000, False), "bram36": (0, 1_000_000, False), "uram": (0, 100_000, False),
                "luts": (0, 100_000_000, False), "ffs": (0, 100_000_000, False),
                "transceivers": (0, 10_000, False), "transceiver_gbps": (0, 1_000, False),
                "clock_mhz": (0, 10_000, True), "dram_gbs": (0, 100_000, True), "dsp_fraction": (0, 1, True)}


def checked_number(value, where: str, key: str, typ: type, lo: float, hi: float, lo_open: bool = False):
    """A devices file's numeric field: a number of the right kind (no string, no bool), finite and in
    ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``); a one-line :class:`DeviceError` naming the field."""
    span = f"{'>' if lo_open else '>='} {lo:g} and <= {hi:g}"
    kind = "an integer" if typ is int else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (typ is int and value != int(value)):
        raise DeviceError(f"{where}: field {key!r} must be {kind} {span}, not {value!r}")
    if not math.isfinite(value) or value < lo or value > hi or (lo_open and value == lo):
        raise DeviceError(f"{where}: field {key!r} must be a finite number {span}, not {value!r}")
    return typ(value)


def device_from_dict(d: dict, where: str = "device") -> Device:
    """A device from a mapping: either ``{"part": "xcvu9p", ...overrides}`` or every field.

    ``array = [engines, P]`` pins the FPGA's engines (``engines`` of ``P x P``).  Every field is
    checked here (its kind, and numbers against :data:`FIELD_RANGES`): a one-line
    :class:`DeviceError` naming ``where`` and the field.
    """
    if not isinstance(d, dict):
        raise DeviceError(f"{where}: expected a table, got {type(d).__name__}")
    d = dict(d)
    array = d.pop("array", None)
    part = d.pop("part", None)
    unknown = set(d) - set(_FIELDS)
    if unknown:
        raise DeviceError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    kw = {}
    for key, val in d.items():
        typ = _FIELDS[key]
        if typ is str:
            if not isinstance(val, str):
                raise DeviceError(f"{where}: field {key!r} must be a string, not {val!r}")
            kw[key] = val
        else:
            kw[key] = checked_number(val, where, key, typ, *FIELD_RANGES[key])
    if part is not None and not isinstance(part, str):
        raise DeviceError(f"{where}: field 'part' must be a part name (a string), not {part!r}")
    if part is not None:
        try:
            base = get_device(part)
        except DeviceError as exc:
            raise DeviceError(f"{where}: {exc}") from None
        dev = _made(lambda: replace(base, **kw), where)
    else:
        missing = {"name", "dsp", "bram36"} - set(kw)
        if missing:
            raise DeviceError(f"{where}: needs 'part' or the fields {', '.join(sorted(missing))}")
        kw.setdefault("family", "custom")
        dev = _made(lambda: Device(**kw), where)
    if array is not None:
        dev = dev.with_array(_array(array, dev, where))
    return dev


def _made(make, where: str) -> Device:
    try:
        return make()
    except DeviceError as exc:
        raise DeviceError(f"{where}: {exc}") from None


def _array(array, dev: Device, where: str) -> EngineArray:
    """``array = [engines, P]``: integers, ``P`` at most 32, and no more MAC lanes than the part's
    DSPs can give (:meth:`Device.lane_budget` at 2 MACs per DSP, the most any precision packs)."""
    ok = isinstance(array, list) and len(array) == 2 and all(
        isinstance(v, int) and not isinstance(v, bool) for v in array)
    try:
        arr = EngineArray(array[1], array[0]) if ok else None
    except ValueError:
        arr = None
    if arr is None:
        raise DeviceError(f"{where}: array must be [engines, P], two integers with engines >= 1 and "
                          f"1 <= P <= 32, not {array!r}")
    budget = int(dev.dsp * dev.dsp_fraction) * 2
    if arr.lanes > budget:
        raise DeviceError(f"{where}: array {array!r} has {arr.lanes} MAC lanes; {dev.name}'s {dev.dsp} DSPs "
                          f"(dsp_fraction {dev.dsp_fraction:g}) give at most {budget}")
    return arr
