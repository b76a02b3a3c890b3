"""The option readers of ``pymtl-fp explore`` (:mod:`pymtl_fp.cli.cmd_explore`): each turns an option's
text into the object a study takes (network, device, precision, link models, cluster sizes, dataflows,
output folder) or stops with a one-line :class:`~pymtl_fp.cli.errors.UserError` naming the option."""

from __future__ import annotations

import re
from pathlib import Path

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError

DEFAULT_LINKS = "6x10G,6x13.1G,250G,500G,inf"

def parse_sizes(text: str, option: str, hi: int, what: str) -> list:
    """``"1..128"``, ``"1..128:4"``, ``"1,2,4,8"`` or a mix (``"1..8,16,32"``) -> sorted values in
    ``1..hi``; a bad one is a one-line error naming ``option``."""
    out = set()
    for part in str(text).replace(" ", "").split(","):
        if not part:
            raise UserError(f"{option} {str(text)[:100]}: an empty item; use e.g. 1..128, 1..128:4 or 1,2,4,8")
        m = re.fullmatch(r"(\d+)(?:\.\.|-)(\d+)(?::(\d+))?", part)
        try:
            if m:
                lo, top = int(m.group(1)), int(m.group(2))
                step = int(m.group(3) or 1)
                if lo < 1 or top < lo or step < 1:
                    raise UserError(f"{option}: bad range {part!r} (need 1 <= low <= high, "
                                    "step >= 1)")
                if top > hi:  # (before the range is built: 1..10**12 is refused, not listed)
                    raise UserError(f"{option}: {top} is outside 1..{hi}")
                vals = list(range(lo, top + 1, step))
                if vals[-1] != top:
                    vals.append(top)
            else:
                vals = [int(part)]
        except ValueError:
            raise UserError(f"{option}: cannot read {part!r}; use e.g. 1..128, 1..128:4 or "
                            "1,2,4,8") from None
        for v in vals:
            if not 1 <= v <= hi:
                raise UserError(f"{option}: {v} is outside 1..{hi}")
        out.update(vals)
    if not out:
        raise UserError(f"{option}: no {what} given")
    return sorted(out)


def parse_fpgas(text: str) -> list:
    """Cluster sizes (:func:`parse_sizes` of ``--fpgas``)."""
    from pymtl_fp.explore.clusterfile import MAX_FPGAS

    return parse_sizes(text, "--fpgas", MAX_FPGAS, "cluster size")


def read_network(name):
    from pymtl_fp.explore.zoo import NETWORKS, get_network
    from pymtl_fp.net import NetError
    try:
        return get_network(name)
    except NetError as exc:  # a net file that does not load: its own message
        raise UserError(f"--net {name}: {exc}") from None
    except KeyError:
        raise UserError(f"unknown network {name!r}; known: {', '.join(NETWORKS)}, or a "
                        "pymtl_fp.net preset or net file (.toml/.json)") from None


def file_stem(*parts) -> str:
    """An output file stem from names (zoo or net-file names may hold spaces or brackets): only
    letters, digits, '.', '_' and '-' survive, so a name never reaches outside the folder."""
    return "_".join(re.sub(r"[^A-Za-z0-9._-]+", "-", str(p)).strip("-.") or "x" for p in parts)


def read_device(name, array=None):
    from pymtl_fp.explore.devices import DeviceError, get_device
    from pymtl_fp.explore.fpga_model import EngineArray
    try:
        dev = get_device(name)
        if array:
            dev = dev.with_array(EngineArray.parse(array))
        return dev
    except (DeviceError, ValueError) as exc:
        raise UserError(str(exc)) from None


def read_precision(bits):
    from pymtl_fp.explore.devices import DeviceError, Precision
    try:
        return Precision.bits(int(bits))
    except (DeviceError, ValueError) as exc:
        raise UserError(f"--bits: {exc}") from None


def read_links(text):
    from pymtl_fp.explore.links import LinkError, parse_link
    specs = [s for chunk in text for s in str(chunk).split(",")]
    if not all(s.strip() for s in specs):
        raise UserError(f"--link {','.join(map(str, text))[:100]}: an empty item; give link models such as 6x10G,250G")
    try:
        links = [parse_link(s) for s in specs]
    except LinkError as exc:
        raise UserError(str(exc)) from None
    names = [lk.name for lk in links]
    if len(set(names)) != len(names):
        raise UserError(f"--link: duplicate link models in {', '.join(names)}")
    return links


#: most pieces a layer may be split into (the cut positions, and the DP's work, grow with it)
MAX_PIECES = 1024
#: largest mini-batch of the analytic studies
MAX_BATCH = 1 << 20
#: most configurations a study evaluates (each a few milliseconds: cluster sizes x links for
#: ``scaling``, cluster sizes x mini-batches for ``parallelism`` (tens of milliseconds each), array
#: sides x batches for ``modes``); a range that would run for hours is refused with its count
MAX_SCALING_CONFIGS = 4096
#: ... with ``scaling --optimal`` (its dynamic programme takes up to ~0.1 s per configuration)
MAX_SCALING_OPTIMAL_CONFIGS = 1024
MAX_PARALLELISM_CONFIGS = 2048
MAX_MODES_CONFIGS = 4096


def output_folder(args) -> Path:
    """The output folder, probed first and created when the study is about to write."""
    out = validate.output_dir(args.out, "--out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out: cannot create {out}: {exc.strerror or exc}") from None
    return out


def read_modes(text) -> tuple:
    """``--modes``: the dataflows a layer's passes may take (channel always among them)."""
    from pymtl_fp.explore.modes import MODES

    modes = tuple(m.strip() for m in str(text).split(","))
    if "channel" not in modes or set(modes) - set(MODES):
        raise UserError(f"--modes {text}: a list of {', '.join(MODES)} that includes channel")
    return modes
