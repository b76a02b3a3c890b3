"""Where Verilator builds go, and the lock that lets processes share them.

* :func:`build_dir`: ``$PYMTL_FP_BUILD_DIR`` (default ``~/.cache/pymtl-fp/build``), one
  sub-directory per pytest-xdist worker, never the repository;
* :func:`shared_build_dir`: one directory every worker and process shares, for builds keyed by
  their content that never run in the current directory (compiled cluster benches, Verilator's
  runtime objects);
* :func:`digest`: a build's cache key from its inputs;
* :func:`build_lock`: an exclusive ``flock`` while a target is built; :func:`build_once` builds a
  directory once under it, atomically.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path


def _base() -> Path:
    base = os.environ.get("PYMTL_FP_BUILD_DIR") or str(Path.home() / ".cache" / "pymtl-fp" / "build")
    return Path(base).expanduser().resolve()


def build_dir(sub: str = "") -> Path:
    """The directory Verilator builds go to (created on demand)."""
    path = _base() / (os.environ.get("PYTEST_XDIST_WORKER", "") or "main") / sub
    path.mkdir(parents=True, exist_ok=True)
    return path


def shared_build_dir(sub: str) -> Path:
    """A build directory every pytest-xdist worker (every process) shares, for builds keyed by their
    content that never run in the current directory (the compiled cluster benches): one worker
    builds a design, the others wait for it under :func:`build_lock` and load the same library."""
    path = _base() / "shared" / sub
    path.mkdir(parents=True, exist_ok=True)
    return path


def digest(*parts: str) -> str:
    """A build's cache key: the first 16 hex digits of the SHA-256 of ``parts``, each ended by NUL."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


@contextlib.contextmanager
def build_lock(target: Path):
    """Hold an exclusive lock (``<target>.lock``, ``flock``) while building ``target``: a second
    process building the same target waits, then finds it built."""
    import fcntl

    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_once(target: Path, make) -> Path:
    """``target`` (a directory) if it exists; otherwise build it under a lock with
    ``make(tmp)`` into a temporary sibling directory, then rename it to ``target`` (another process
    never sees half of it; a ``done`` file inside marks it complete)."""
    if target.exists():
        return target
    with build_lock(target):
        if target.exists():
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            make(tmp)
            (tmp / "done").write_text("")
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target
