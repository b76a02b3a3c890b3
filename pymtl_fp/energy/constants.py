"""Energy constants per device family, read from one sourced data file.

``pymtl_fp/energy/data/energy_constants.toml`` holds, for every device family, the energy of the
operations the activity counts measure: a DSP multiply-accumulate at a given operand width, a
block-RAM read and write per bit, a flip-flop's clock load and a LUT toggle, a transceiver bit,
a DRAM bit, and the device's static power.  Every number carries ``low``/``high`` (its
uncertainty) and a ``source`` (a vendor document or a published measurement, or the word
``assumption`` with the reasoning); :func:`load` refuses an entry without them, so the file
cannot grow an unsourced figure.

Families: ``7series`` (28 nm, e.g. XC7VX690T: FPDeep's boards), ``ultrascale+`` (16 nm, e.g.
XCVU9P: DarkFPGA's MAX5 / AWS F1 part) and ``asic45`` (45 nm standard cells, Horowitz ISSCC 2014:
CATERPILLAR's technology, for comparison only).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA_FILE = Path(__file__).with_name("data") / "energy_constants.toml"

#: the quantities each family defines (name -> unit)
QUANTITIES = {
    "mac": "pJ per MAC",              # one multiply-accumulate, per operand width (mac.<bits>)
    "mac_idle": "fraction of mac",    # a clocked lane without a useful MAC (padding, idle tiles)
    "bram_read": "pJ per bit",
    "bram_write": "pJ per bit",
    "ff_clock": "pJ per flip-flop per cycle",
    "lut_toggle": "pJ per LUT per cycle at the toggle rate",
    "link": "pJ per bit",
    "dram": "pJ per bit",
    "static": "W per device",
}


class EnergyConstantsError(ValueError):
    """A malformed or unsourced energy-constants file, or an unknown family."""


@dataclass(frozen=True)
class Constant:
    """One figure with its uncertainty and where it comes from."""

    value: float
    low: float
    high: float
    unit: str
    source: str
    note: str = ""

    def pick(self, bound: str) -> float:
        """``value``, ``low`` or ``high``."""
        return {"value": self.value, "low": self.low, "high": self.high}[bound]


@dataclass(frozen=True)
class Family:
    """The constants of one device family."""

    name: str
    title: str
    macs: dict       #: operand bits -> Constant (pJ per MAC)
    consts: dict     #: quantity -> Constant

    def mac(self, bits: int) -> Constant:
        """The MAC energy at ``bits``-bit operands: the narrowest tabulated width that holds them."""
        fits = [b for b in sorted(self.macs) if b >= bits]
        if not fits:
            raise EnergyConstantsError(f"family {self.name}: no MAC energy for {bits}-bit operands "
                                       f"(tabulated: {', '.join(map(str, sorted(self.macs)))} bits)")
        return self.macs[fits[0]]

    def __getitem__(self, quantity: str) -> Constant:
        try:
            return self.consts[quantity]
        except KeyError:
            raise EnergyConstantsError(f"family {self.name} has no {quantity!r} figure") from None

    def get(self, quantity: str, bound: str = "value") -> float:
        return self[quantity].pick(bound)


def _constant(fam: str, key: str, d) -> Constant:
    where = f"{DATA_FILE.name}: {fam}.{key}"
    if not isinstance(d, dict):
        raise EnergyConstantsError(f"{where} must be a table")
    for k in ("value", "low", "high", "source"):
        if k not in d:
            raise EnergyConstantsError(f"{where} has no {k!r} (every figure needs its range and source)")
    try:
        v, lo, hi = (float(d[k]) for k in ("value", "low", "high"))
    except (TypeError, ValueError):
        raise EnergyConstantsError(f"{where}: value, low and high must be numbers") from None
    if not (0 <= lo <= v <= hi):
        raise EnergyConstantsError(f"{where}: needs 0 <= low <= value <= high, got {lo}, {v}, {hi}")
    if not str(d["source"]).strip():
        raise EnergyConstantsError(f"{where}: empty source")
    return Constant(v, lo, hi, str(d.get("unit", QUANTITIES.get(key.split(".")[0], ""))), str(d["source"]),
                    str(d.get("note", "")))


def parse(doc: dict) -> dict:
    """``{family name: Family}`` from the data file's document."""
    fams = {}
    for name, body in doc.items():
        if not isinstance(body, dict):
            raise EnergyConstantsError(f"{DATA_FILE.name}: {name} must be a table")
        macs = {}
        for bits, d in (body.get("mac") or {}).items():
            if not str(bits).isdigit():
                raise EnergyConstantsError(f"{DATA_FILE.name}: {name}.mac.{bits}: keys are operand bits")
            macs[int(bits)] = _constant(name, f"mac.{bits}", d)
        if not macs:
            raise EnergyConstantsError(f"{DATA_FILE.name}: family {name} has no MAC energy")
        consts = {q: _constant(name, q, body[q]) for q in QUANTITIES if q != "mac" and q in body}
        fams[name] = Family(name, str(body.get("title", name)), macs, consts)
    return fams


@cache
def families() -> dict:
    """The families of the data file."""
    with DATA_FILE.open("rb") as fh:
        return parse(tomllib.load(fh))


def family(name: str) -> Family:
    fams = families()
    if name not in fams:
        raise EnergyConstantsError(f"unknown device family {name!r}; choose one of {', '.join(fams)}")
    return fams[name]


#: the FPGA families (those that define every quantity the cluster model uses)
def fpga_families() -> list:
    return [n for n, f in families().items() if all(q in f.consts for q in QUANTITIES if q != "mac")]
