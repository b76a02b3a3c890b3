"""Helpers of the hostile-input tables (``tests/test_hostile_*.py``) and the sweep
(:mod:`pymtl_fp.tb.hostile_sweep`), which run the CLI on careless and hostile arguments:
placeholders in a row's arguments filled with the test's folder, the listing of that folder
(nothing may appear in it when a run is refused), the small net and devices files the rows read,
and the processes a run left in its session."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

#: the 8-bit formats of the rows' net files
NET_FORMATS = {"8": {"act": [8, 4], "weight": [8, 6], "grad": [8, 7], "wgrad": [8, 3], "bias_bits": 16}}


def net_doc(input_shape, layers, name="t", **train) -> bytes:
    """A net file (JSON) of ``layers`` on ``input_shape`` at :data:`NET_FORMATS`, ``train`` its settings."""
    doc = {"name": name, "input_shape": input_shape, "layers": layers, "formats": NET_FORMATS}
    if train:
        doc["train"] = train
    return json.dumps(doc).encode()


def devices_doc(**over) -> bytes:
    """A devices file (JSON) of two VU9Ps on 10 Gb/s links, ``over`` replacing its fields."""
    d = {"name": "rack", "description": "d", "fpga": [{"part": "xcvu9p", "count": 2}], "link": {"gbps": 10.0}}
    d.update(over)
    return json.dumps(d).encode()


def session_alive(sid: int) -> list:
    """Processes of session ``sid`` that are still running (zombies waiting to be reaped are not)."""
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getsid(int(pid)) != sid:
                continue
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(int(pid))
    return alive


def kill_session(sid: int) -> None:
    """SIGKILL every process :func:`session_alive` finds in session ``sid``."""
    for pid in session_alive(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def settle(sid: int, tries: int) -> list:
    """The processes of session ``sid`` still alive after waiting up to ``tries`` tenths of a second
    for them to exit (a worker's interpreter may take a moment more than its parent)."""
    left = session_alive(sid)
    for _ in range(tries):
        if not left:
            break
        time.sleep(0.1)
        left = session_alive(sid)
    return left


def fill(text: str, tmp: Path) -> str:
    """``{tmp}`` -> the folder; ``{f:NAME}`` -> ``NAME`` inside it."""
    return text.replace("{tmp}", str(tmp)).replace("{f:", str(tmp) + os.sep).replace("}", "")


def listing(root: Path) -> set:
    """Every file and folder under ``root``, relative to it."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}
