"""Build an emitted kit outside Python: the Verilator command run in a plain ``bash`` whose only set-up
is the one line ``pymtl-fp doctor`` prints (:func:`pymtl_fp.cli.cmd_doctor.shell_line`), with a
minimal ``PATH`` and no Python environment -- as a team with only the kit's files would build it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def run_verilator(shell: str, folder: Path, command: str, makeflags: str) -> tuple:
    """Run ``command`` (a ``verilator ...`` line) in ``folder`` in a shell set up by ``shell`` (doctor's
    line), ``makeflags`` added to ``MAKEFLAGS``; ``(completed process, the %Warning / %Error lines it
    printed)``."""
    script = f"{shell}\nexport MAKEFLAGS=\"${{MAKEFLAGS:-}} {makeflags}\"\n{command}"
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    proc = subprocess.run(["bash", "-c", script], cwd=folder, capture_output=True, text=True, env=env, check=False)
    warnings = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("%Warning", "%Error"))]
    return proc, warnings
