"""Dask distributed, the one distributed engine of the tools (fuzz campaigns, design sweeps).

``scheduler="local"``: a ``LocalCluster`` of single-threaded worker processes, started here and
stopped by :func:`close`; otherwise the address of a running scheduler (``tcp://host:8786``;
``dask scheduler`` on one machine, ``dask worker tcp://host:8786 --nthreads 1`` on the others).

This module is also the local workers' Dask preload (:func:`dask_setup`): Ctrl-C on a terminal
reaches the whole process group, and a worker process must leave it to the command (which stops
the cluster) instead of dying with a traceback of its own.
"""

from __future__ import annotations

import logging
import signal


class SchedulerError(RuntimeError):
    """The Dask scheduler cannot be reached."""


class _SyncCancelRace(logging.Filter):
    """Drops one known traceback: distributed's ``utils.sync`` schedules a ``cancel`` callback when
    Ctrl-C interrupts a blocking client call, and that callback reads its ``future`` before the
    call has assigned it if the interrupt came first (``NameError: cannot access free variable
    'future'``, distributed 2026.8); the event loop's logger would print the traceback under the
    command's one-line "interrupted". Nothing was running to cancel, so nothing is lost."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, NameError) and "'future'" in str(exc) and "sync" in record.getMessage())


_RACE_FILTER = _SyncCancelRace()

#: prefix of the scratch folders :func:`connect` makes (and :func:`close` removes)
SCRATCH_PREFIX = ".dask-scratch-"


class _OwnScratchRemoved(logging.Filter):
    """Drops distributed's complaint that a work folder it meant to remove at exit is gone, when
    the folder is inside a scratch folder of ours that :func:`close` already removed whole."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("Failed to remove" in message and SCRATCH_PREFIX in message)


_SCRATCH_FILTER = _OwnScratchRemoved()

#: how long a client waits for a scheduler address to answer
CONNECT_TIMEOUT = "5s"


def connect(scheduler: str, workers: int, scratch_in=None):
    """``(client, cluster or None)``: a new local cluster of ``workers`` processes, or a client of
    the scheduler at ``scheduler`` (given up after :data:`CONNECT_TIMEOUT`).

    A local cluster's workers keep their scratch files (spill space, lock files) in a fresh folder
    inside ``scratch_in`` (the command's output folder), which :func:`close` removes: nothing is
    left in the system's temporary folder."""
    from distributed import Client, LocalCluster

    logging.getLogger("tornado.application").addFilter(_RACE_FILTER)  # (idempotent: a filter is added once)
    if scheduler == "local":
        import tempfile
        from pathlib import Path

        scratch = None
        if scratch_in is not None:
            Path(scratch_in).mkdir(parents=True, exist_ok=True)
            scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=scratch_in)
            logging.getLogger("distributed.diskutils").addFilter(_SCRATCH_FILTER)
        from distributed.deploy.spec import SpecCluster

        before = set(SpecCluster._instances)
        executable = _workers_start_ignoring_sigint(scratch)
        try:
            import dask

            with dask.config.set({"temporary-directory": scratch} if scratch else {}):
                # no dashboard; the scheduler's own HTTP routes on a free port, not 8787 (a second
                # campaign would warn that 8787 is taken)
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                       scheduler_kwargs={"dashboard_address": ":0"}, silence_logs=logging.ERROR,
                                       preload=[__name__], local_directory=scratch)
                cluster.pymtl_fp_scratch, cluster.pymtl_fp_executable = scratch, executable
            return Client(cluster), cluster
        except BaseException:  # (Ctrl-C while the cluster started: stop what did start)
            for started in set(SpecCluster._instances) - before:  # (also one whose constructor did not return)
                close(None, started)
            _restore_executable(executable)
            _remove(scratch)
            raise
    try:
        return Client(scheduler, timeout=CONNECT_TIMEOUT), None
    except (OSError, TimeoutError, ValueError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise SchedulerError(f"--scheduler {scheduler}: no Dask scheduler answers there within "
                             f"{CONNECT_TIMEOUT} ({reason})") from None


def _workers_start_ignoring_sigint(scratch):
    """Make the worker processes that multiprocessing spawns from now on start with SIGINT ignored:
    their interpreter is a two-line shell script in the scratch folder (``trap '' INT``, then
    ``exec`` Python), and an ignored signal stays ignored across ``exec`` -- Python then installs no
    KeyboardInterrupt handler.  A Ctrl-C to the terminal's process group while they start (before
    :func:`dask_setup` runs in them, seconds of imports) thus cannot end one with a traceback; the
    command's own process still gets it.  Returns the interpreter to restore at :func:`close`
    (None, and nothing changed, without a scratch folder or ``/bin/sh``)."""
    import multiprocessing
    import os
    import shlex
    from multiprocessing import spawn
    from pathlib import Path

    if scratch is None or not os.access("/bin/sh", os.X_OK):
        return None
    previous = spawn.get_executable()
    script = Path(scratch) / "python-sigint-ignored"
    script.write_text(f"#!/bin/sh\ntrap '' INT\nexec {shlex.quote(os.fsdecode(previous))} \"$@\"\n")
    script.chmod(0o700)
    multiprocessing.set_executable(str(script))
    return previous


def _restore_executable(previous) -> None:
    if previous is not None:
        import multiprocessing

        multiprocessing.set_executable(previous)


def _remove(folder) -> None:
    if folder is not None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def dask_setup(worker) -> None:
    """Dask preload, run in each local worker process (also one restarted after a crash), on its
    main thread: ignore SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def close(client, cluster) -> None:
    """Close the client, then a local cluster (and remove its scratch folder).  distributed may
    raise from a cluster closed while it was still starting (Ctrl-C in its first seconds); the
    cluster is being torn down either way, so that is not reported over the interruption."""
    try:
        if client is not None:
            client.close()
    finally:
        if cluster is not None:
            try:
                cluster.close()
            except (AssertionError, RuntimeError, OSError, TimeoutError):
                # distributed's exit handler would close it again and print the same error
                _forget(cluster)
            finally:
                _restore_executable(getattr(cluster, "pymtl_fp_executable", None))
                _remove(getattr(cluster, "pymtl_fp_scratch", None))


def _forget(cluster) -> None:
    """Take a cluster whose close failed half-way out of distributed's list of clusters to close at
    exit (``SpecCluster._instances``, read by its ``atexit`` handler)."""
    from distributed.deploy.spec import SpecCluster

    SpecCluster._instances.discard(cluster)


def mapper(client, progress=None):
    """``map_fn(function, items)`` running each item as a Dask task, results in order;
    ``progress(done, total)`` is called as tasks finish."""

    def map_fn(fn, items):
        from distributed import as_completed

        items = list(items)
        futures = client.map(fn, items, pure=False)
        done = 0
        for _ in as_completed(futures):
            done += 1
            if progress is not None:
                progress(done, len(futures))
        return client.gather(futures)

    return map_fn
