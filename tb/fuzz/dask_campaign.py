"""A fuzz campaign on Dask distributed: the same workers as :mod:`pymtl_fp.tb.fuzz.campaign`, run as
tasks of a Dask cluster, so a campaign can use many machines.

* ``scheduler="local"``: the command starts a ``LocalCluster`` of ``workers`` single-threaded
  worker processes (no server to start by hand) and stops it at the end;
* ``scheduler="tcp://host:8786"``: the tasks go to a running cluster (``dask scheduler`` on one
  machine, ``dask worker tcp://host:8786 --nthreads 1`` on each of the others).

Each worker task reports through a Dask ``Queue`` (progress, failures, a ``start`` message with
its process id).  When a worker process dies (a segfaulting Verilator build, the out-of-memory
killer), Dask's nanny starts a new one and the scheduler runs the lost task again; the restarted
worker sends ``start`` again and the summary counts the restart.  A failure the dead worker had
found is in the example database (Hypothesis saves failing examples as it finds and shrinks them),
so the re-run replays it first: with a shared Redis database (``db_url``) every machine's
campaign replays every other's failures first.

Why Dask rather than Ray: a pure-Python install of a few MB (Ray's wheel is hundreds), a local
cluster in about a second, a nanny per worker that restarts a dead process and a scheduler that
re-runs its task, and a cluster that is one command per machine.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid

from pymtl_fp.distributed import close, connect
from pymtl_fp.tb.fuzz import campaign
from pymtl_fp.tb.fuzz.campaign import CampaignConfig, Summary, Tally


class _QueueOut:
    """``put`` onto a Dask queue (what the worker body writes its messages to)."""

    def __init__(self, name):
        from distributed import Queue

        self.q = Queue(name)

    def put(self, msg):
        self.q.put(msg)


def _task(wid: int, cfg: CampaignConfig, seed: int, deadline_wall: float, qname: str) -> int:
    """One worker, as a Dask task (in a Dask worker process)."""
    out = _QueueOut(qname)
    campaign.worker_env(wid, cfg)
    try:
        out.put(("start", wid, os.getpid()))
        campaign._worker_body(wid, cfg, seed, deadline_wall, out)
    except BaseException as exc:  # (reported, like a local worker's)
        out.put(("error", wid, campaign._short_error(exc)))
    finally:
        out.put(("done", wid))
    return wid


def run_campaign_dask(cfg: CampaignConfig, scheduler: str = "local", *, stream=None, client=None) -> Summary:
    """Run a campaign on Dask (``scheduler``: ``local`` or an address; or an existing ``client``)."""
    from distributed import Queue

    stream = stream or sys.stderr
    seed = campaign.check_config(cfg)
    own = client is None
    cluster = None
    if own:
        client, cluster = connect(scheduler, cfg.workers, scratch_in=cfg.out_dir)
    where = "a local Dask cluster" if cluster is not None else f"Dask at {client.scheduler.address}"
    qname = f"pymtl-fp-fuzz-{uuid.uuid4().hex}"
    q = Queue(qname, client=client)
    start = time.time()
    deadline_wall = start + cfg.seconds
    hard_stop = deadline_wall + cfg.shrink_seconds + 300  # startup, restarts, a last slow example
    futures = [client.submit(_task, w, cfg, seed, deadline_wall, qname, pure=False, key=f"fuzz-w{w}-{qname}")
               for w in range(cfg.workers)]
    tally = Tally()
    tty = hasattr(stream, "isatty") and stream.isatty()
    last_print = 0.0
    try:
        while len(tally.done) < cfg.workers:
            msgs = q.get(batch=True)  # (everything waiting, without a timeout: a timed-out get logs an error)
            for msg in msgs:
                tally.take(msg)
            if not msgs:
                time.sleep(0.25)
                if time.time() > hard_stop:
                    tally.errors.append("workers did not finish in time (cancelled)")
                    break
                for f in futures:
                    if f.status == "error" and f.key not in tally.done:
                        tally.errors.append(f"task {f.key}: {f.exception()}")
                        tally.done.add(f.key)
            now = time.time()
            if now - last_print >= (1.0 if tty else 15.0):
                last_print = now
                campaign.print_progress(stream, tally.line(now, start, deadline_wall), tty)
        time.sleep(0.2)  # messages still in flight
        for msg in q.get(batch=True):
            tally.take(msg)
        if tty:
            stream.write("\n")
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C cannot interrupt the clean-up
        raise
    finally:
        client.cancel(futures)
        if own:
            close(client, cluster)
    return campaign.tally_summary(cfg, seed, time.time() - start, tally, scheduler=where)
