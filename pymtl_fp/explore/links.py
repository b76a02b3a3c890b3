"""FPGA-to-FPGA link models for a 1-D chain (FPDeep's preferred topology).

A link joins neighbours ``i`` and ``i+1``; it is full duplex, so forward activations (toward
the loss) and backward gradients (toward the input) each get the link's whole bandwidth in
their own direction.  Bandwidth is what limits a pipeline's throughput; latency only adds to
its fill time, so the models here keep latency for reports but the initiation interval uses
bandwidth alone.

Link specs on the command line:

``6x10G``   6 transceivers per FPGA at a 10 Gb/s line rate: in a chain each FPGA gives half
            of them (3) to each neighbour; payload rate = lanes x rate x 64/66 (64b/66b);
``250G``    250 Gb/s per FPGA in each direction (FPDeep's "250 Gb/s bidirectional per FPGA"),
            half to each neighbour, no encoding overhead deducted;
``link40G`` 40 Gb/s of payload per link and direction, whatever the FPGA;
``inf``     unlimited (compute-bound reference).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pymtl_fp.cost.link import LINE_64B66B, payload_fraction, transfer_seconds

ENCODING_64B66B = payload_fraction(LINE_64B66B)


class LinkError(ValueError):
    """A malformed link specification."""


@dataclass(frozen=True)
class Link:
    """One chain link: payload bandwidth per direction, and latency."""

    name: str
    gbps: float                  #: payload Gb/s per direction
    latency_ns: float = 500.0    #: serializer + cable + deserializer + router (assumption)

    def __post_init__(self):
        if not self.gbps > 0:
            raise LinkError(f"link {self.name!r}: bandwidth must be > 0, not {self.gbps}")
        if not (0 <= self.latency_ns < float("inf")):
            raise LinkError(f"link {self.name!r}: latency_ns must be a finite number >= 0, not {self.latency_ns}")

    @property
    def bits_per_s(self) -> float:
        return self.gbps * 1e9

    def seconds(self, bits) -> float:
        """Transfer time of ``bits`` (scalar or array) at full bandwidth (0 on an unlimited link)."""
        return transfer_seconds(bits, self.bits_per_s)

    @property
    def label(self) -> str:
        return self.name


_XCVR = re.compile(r"^(\d+)\s*x\s*(\d+(?:\.\d+)?)\s*g(?:bps)?$")
_AGG = re.compile(r"^(\d+(?:\.\d+)?)\s*g(?:bps)?$")
_PER = re.compile(r"^link\s*(\d+(?:\.\d+)?)\s*g(?:bps)?$")


def parse_link(spec: str) -> Link:
    """A :class:`Link` from a spec string (see the module docstring)."""
    s = str(spec).strip().lower()
    if s in ("inf", "infinite", "unlimited"):
        return Link("inf", math.inf, 0.0)
    m = _XCVR.match(s)
    if m:
        n, rate = int(m.group(1)), float(m.group(2))
        if n < 2:
            raise LinkError(f"link {spec!r}: a chain needs at least 2 transceivers per FPGA")
        return Link(f"{n}x{rate:g}G", (n // 2) * rate * ENCODING_64B66B)
    m = _AGG.match(s)
    if m:
        return Link(f"{float(m.group(1)):g}G", float(m.group(1)) / 2)
    m = _PER.match(s)
    if m:
        return Link(f"link{float(m.group(1)):g}G", float(m.group(1)))
    raise LinkError(f"bad link spec {spec!r}: use e.g. 6x10G (transceivers x line rate), "
                    "250G (per FPGA), link40G (per link) or inf")


def link_between(dev_a, dev_b, lanes: int, rate_gbps: float | None = None) -> Link:
    """A link of ``lanes`` transceivers at the slower end's maximum line rate (or ``rate``)."""
    if lanes < 1:
        raise LinkError("a link needs at least one lane")
    rate = rate_gbps or min(dev_a.transceiver_gbps, dev_b.transceiver_gbps)
    if rate <= 0:
        raise LinkError(f"no transceiver rate known for {dev_a.name}/{dev_b.name}")
    return Link(f"{lanes}x{rate:g}G", lanes * rate * ENCODING_64B66B)
