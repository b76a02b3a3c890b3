"""Cluster description files for ``pymtl-fp explore partition --devices FILE`` (TOML or JSON).

A chain of FPGAs, in order, and the links between neighbours::

    name = "asymmetric16"
    description = "free text"

    [link]                 # every chain link, unless overridden below
    lanes = 4              # transceivers between two neighbours (each full duplex)
    # rate_gbps = 10.3125  # line rate; default: the slower end's maximum (datasheet)
    # gbps = 40            # or: payload Gb/s per direction, directly

    [[fpga]]
    part = "xcvu9p"        # a known part (pymtl_fp.explore.devices.DEVICES) ...
    count = 2              # ... repeated (default 1)
    # clock_mhz = 300      # any Device field overrides the part's value
    # array = [4, 32]      # pin the engines: 4 engines of 32 x 32

    [[fpga]]               # or a custom part: name, dsp, bram36 (+ optional fields)
    name = "my-part"
    dsp = 2000
    bram36 = 600

    [[links]]              # per-link overrides: index = link number (0 joins FPGAs 0 and 1)
    index = 3
    gbps = 20

JSON files hold the same structure (``{"link": {...}, "fpga": [...], "links": [...]}``).
"""

from __future__ import annotations

import re
from pathlib import Path

from pymtl_fp.documents import DocumentError, read_document
from pymtl_fp.explore.devices import DeviceError, Precision, checked_number, device_from_dict
from pymtl_fp.explore.links import ENCODING_64B66B, Link, LinkError
from pymtl_fp.explore.partition import Cluster

#: most FPGAs in a chain (as ``explore scaling --fpgas``): the DP partition is quadratic in it
MAX_FPGAS = 4096
#: a cluster name names the output files: one plain file-name component
NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


class ClusterFileError(ValueError):
    """A devices file that cannot be read or makes no sense."""


def _load_text(path: Path) -> dict:
    try:
        return read_document(path)
    except DocumentError as exc:
        raise ClusterFileError(str(exc)) from None


#: a link field's range in a devices file: (kind, low, high, low end open)
LINK_RANGES = {"lanes": (int, 1, 1024, False), "rate_gbps": (float, 0, 1_000, True),
               "gbps": (float, 0, 100_000, True), "latency_ns": (float, 0, 1e9, False)}


def _link(spec: dict, dev_a, dev_b, where: str) -> Link:
    if not isinstance(spec, dict):
        raise ClusterFileError(f"{where}: expected a table")
    unknown = set(spec) - {"lanes", "rate_gbps", "gbps", "latency_ns", "index"}
    if unknown:
        raise ClusterFileError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    try:
        given = {key: checked_number(spec[key], where, key, *LINK_RANGES[key]) for key in LINK_RANGES if key in spec}
    except DeviceError as exc:
        raise ClusterFileError(str(exc)) from None
    latency = given.get("latency_ns", 500.0)
    try:
        if "gbps" in given:
            return Link(f"{given['gbps']:g}G", given["gbps"], latency)
        lanes = given.get("lanes", 4)
        rate = given.get("rate_gbps", min(dev_a.transceiver_gbps, dev_b.transceiver_gbps))
        if rate <= 0:
            raise ClusterFileError(f"{where}: no line rate known for {dev_a.name}-{dev_b.name}; "
                                   "give rate_gbps")
        return Link(f"{lanes}x{rate:g}G", lanes * rate * ENCODING_64B66B, latency)
    except LinkError as exc:
        raise ClusterFileError(f"{where}: {exc}") from None


def cluster_from_dict(data: dict, precision: Precision | None = None,
                      memory_limit: bool = False, where: str = "devices file") -> Cluster:
    precision = precision or Precision()
    if not isinstance(data, dict):
        raise ClusterFileError(f"{where}: expected a table at the top level")
    unknown = set(data) - {"name", "description", "link", "fpga", "links"}
    if unknown:
        raise ClusterFileError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    if not isinstance(data.get("description", ""), str):
        raise ClusterFileError(f"{where}: description must be a string, not {data['description']!r}")
    if not isinstance(data.get("links", []), list):
        raise ClusterFileError(f"{where}: links must be a list of [[links]] tables, not {data['links']!r}")
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or not NAME.fullmatch(name)):
        raise ClusterFileError(f"{where}: name {name!r} names the output files: give 1-64 letters, digits, "
                               "'.', '_' or '-' (no '/', no leading '.')")
    entries = data.get("fpga")
    if not isinstance(entries, list) or not entries:
        raise ClusterFileError(f"{where}: needs at least one [[fpga]] entry")
    devices = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ClusterFileError(f"{where}: fpga entry {i} is not a table")
        entry = dict(entry)
        count = entry.pop("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ClusterFileError(f"{where}: fpga entry {i}: count must be a positive integer")
        if len(devices) + count > MAX_FPGAS:
            raise ClusterFileError(f"{where}: fpga entry {i}: count {count} makes more than {MAX_FPGAS} "
                                   f"FPGAs; the chain holds at most {MAX_FPGAS}")
        try:
            dev = device_from_dict(entry, f"{where}: fpga entry {i}")
        except DeviceError as exc:
            raise ClusterFileError(str(exc)) from None
        devices.extend([dev] * count)
    default = data.get("link", {})
    links = [_link(default, devices[i], devices[i + 1], f"{where}: [link]")
             for i in range(len(devices) - 1)]
    for j, spec in enumerate(data.get("links", [])):
        if not isinstance(spec, dict) or "index" not in spec:
            raise ClusterFileError(f"{where}: [[links]] entry {j} needs an index")
        idx = spec["index"]
        if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(links):
            raise ClusterFileError(f"{where}: [[links]] entry {j}: index {idx!r} is not a link "
                                   f"of this chain (0..{len(links) - 1})")
        merged = {**{k: v for k, v in default.items() if k != "gbps"}, **spec}
        links[idx] = _link(merged, devices[idx], devices[idx + 1], f"{where}: link {idx}")
    return Cluster(devices, links, precision, memory_limit)


def load_cluster(path, precision: Precision | None = None, memory_limit: bool = False):
    """(:class:`Cluster`, name, description) from a devices file."""
    path = Path(path)
    data = _load_text(path)
    cluster = cluster_from_dict(data, precision, memory_limit, path.name)
    default = re.sub(r"[^A-Za-z0-9._-]", "_", path.stem).lstrip(".")[:64] or "cluster"
    return cluster, data.get("name", default), str(data.get("description", ""))


def example_path() -> Path:
    """The example 16-FPGA asymmetric chain shipped with the package."""
    return Path(__file__).with_name("data") / "asymmetric16.toml"
