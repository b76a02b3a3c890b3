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


def connect(scheduler: str, workers: int):
    """``(client, cluster or None)``: a new local cluster of ``workers`` processes, or a client of
    the scheduler at ``scheduler``."""
    from distributed import Client, LocalCluster

    logging.getLogger("tornado.application").addFilter(_RACE_FILTER)  # (idempotent: a filter is added once)
    if scheduler == "local":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR, preload=[__name__])
        return Client(cluster), cluster
    try:
        return Client(scheduler, timeout="5s"), None
    except (OSError, TimeoutError) as exc:
        raise SchedulerError(f"--scheduler {scheduler}: no Dask scheduler answers there ({exc})") from None


def dask_setup(worker) -> None:
    """Dask preload, run in each local worker process (also one restarted after a crash), on its
    main thread: ignore SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def close(client, cluster) -> None:
    client.close()
    if cluster is not None:
        cluster.close()


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
