"""The engine bench program format shared by the C++ bench (``tb/cxx/engine_tb.cpp``) and the
cocotb bench: text, one item per line::

    cmd <field>=<value> ...   a command (fields by name, as in the emitted reference)
    din <value>               one element of the data-in stream (signed decimal)

Blank lines and lines starting with ``#`` are ignored.  Pure Python: no cocotb, no PyMTL3.
"""

from __future__ import annotations

from pathlib import Path

from pymtl_fp.engine import encoding


class ProgramFileError(ValueError):
    """A malformed program file (the message names the file and line)."""


def read(path) -> tuple:
    """``(commands, din)``: commands as field dicts (checked against the encoding), din as ints."""
    cmds, din = [], []
    for no, line in enumerate(Path(path).read_text().splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        where = f"{path}:{no}"
        try:
            if words[0] == "cmd":
                fields = {k: int(v) for k, _, v in (w.partition("=") for w in words[1:])}
                encoding.pack(**fields)  # unknown fields, values that do not fit
                cmds.append(fields)
            elif words[0] == "din" and len(words) == 2:
                din.append(int(words[1]))
            else:
                raise ValueError(f"expected 'cmd field=value ...' or 'din value', got {line.strip()!r}")
        except ValueError as exc:
            raise ProgramFileError(f"{where}: {exc}") from None
    return cmds, din


def write(path, cmds, din) -> None:
    """Write commands (field dicts; zero fields left out) and din elements."""
    lines = ["cmd " + " ".join(f"{k}={v}" for k, v in c.items() if v) for c in cmds]
    lines += [f"din {int(v)}" for v in din]
    Path(path).write_text("\n".join(lines) + "\n")
