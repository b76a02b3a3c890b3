"""The trace-event file of a cluster run (cluster/run/trace.py), loaded into SQLite and queried by SQL
as a trace processor would: per node, the router-state slices tile the run and sum to the
report's cycles in each state; per link, the transfers carry the report's elements (as bytes);
every compute command is a slice named by its op and layer; the file is well-formed trace-event
JSON (the format ui.perfetto.dev and chrome://tracing open)."""

import json
import sqlite3

import pytest

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
from pymtl_fp.cluster.run.trace import write_trace
from pymtl_fp.cluster.run.train import train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.engine.msgs import OPS
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net

NET = load_net("lenet-digits")
FMT = NET.precision("8")
STEPS, BATCH = 2, 4


@pytest.fixture(scope="module", params=[("cl", "cl"), ("fl", "cl", "cl")], ids=["2cl", "fl-cl-cl"])
def run_db(request, tmp_path_factory):
    levels = list(request.param)
    split = load_digits_split(seed=0)
    images, labels = quantize_images(split.x_train[:8], FMT.act), split.y_train[:8]
    params = quantize_params(NET, init_params_float64(NET, 0), "8")
    ccfg = ClusterConfig.homogeneous(len(levels), engine_for_net(NET, "8"), clock_mhz=250.0)
    run = train_on_cluster(NET, params, images, labels, TrainConfig("8", seed=0), ccfg, Mapping(overlap=True), steps=STEPS,
                           batch=BATCH, levels=levels, trace=True)
    path = write_trace(run.trace, tmp_path_factory.mktemp("trace") / "run.json")
    doc = json.loads(path.read_text())
    db = sqlite3.connect(":memory:")
    db.execute("create table ev (ph, pid, tid, name, cat, ts, dur, args)")
    db.executemany("insert into ev values (?, ?, ?, ?, ?, ?, ?, ?)",
                   [(e["ph"], e["pid"], e.get("tid"), e["name"], e.get("cat"), e.get("ts"), e.get("dur"),
                     json.dumps(e.get("args", {}))) for e in doc["traceEvents"]])
    return run, doc, db, ccfg.clock_mhz


def _cycles(us, clock_mhz):
    return round(us * clock_mhz)


def test_the_file_is_trace_event_json(run_db):
    _, doc, db, _ = run_db
    assert doc["displayTimeUnit"] == "ns" and doc["traceEvents"]
    assert {p for (p,) in db.execute("select distinct ph from ev")} <= {"M", "X", "C", "i"}
    assert db.execute("select count(*) from ev where ph = 'X' and (ts < 0 or dur < 0)").fetchone() == (0,)
    names = {n for (n,) in db.execute("select json_extract(args, '$.name') from ev where name = 'process_name'")}
    assert {"node0", "node1", "links", "host"} <= names


def test_router_states_tile_the_run_and_equal_the_report(run_db):
    run, _, db, clock = run_db
    for node in run.report["node"]:
        pid = node["node"] + 1
        rows = db.execute("select name, sum(dur), count(*) from ev where pid = ? and cat = 'state' group by name",
                          (pid,)).fetchall()
        got = {name: _cycles(total, clock) for name, total, _ in rows}
        want = {k: v for k, v in node["cycles"].items() if v}
        assert got == want, f"node {pid - 1}: states by SQL {got}, report {want}"
        start, end = db.execute("select min(ts), max(ts + dur) from ev where pid = ? and cat = 'state'",
                                (pid,)).fetchone()
        assert _cycles(start, clock) == 0 and _cycles(end, clock) == run.cycles


def test_link_transfers_carry_the_reports_elements(run_db):
    run, _, db, _ = run_db
    rows = dict(db.execute("select json_extract(args, '$.link'), sum(json_extract(args, '$.bytes')) from ev "
                           "where cat = 'link' group by 1").fetchall())
    for lk in run.report["links"]:
        want = lk["elements_per_step"] * STEPS * 4  # 32-bit messages
        assert rows.get(lk["link"], 0) == want, lk["link"]
    counters = db.execute("select count(*), min(json_extract(args, '$.messages')) from ev where ph = 'C'").fetchone()
    assert counters[0] > 0 and counters[1] == 0  # every link drains back to empty


def test_compute_commands_are_named_by_op_and_layer(run_db):
    _, _, db, _ = run_db
    layers = {layer.name for layer in NET.layers}
    rows = db.execute("select json_extract(args, '$.op'), json_extract(args, '$.layer'), count(*) from ev "
                      "where cat = 'compute' group by 1, 2").fetchall()
    assert rows
    for op, layer, _ in rows:
        assert op in OPS and layer in layers, (op, layer)
    ops = {op for op, _, _ in rows}
    assert {"fwd", "bwd_weight", "update"} <= ops
    loads = db.execute("select count(*) from ev where cat = 'load'").fetchone()[0]
    assert loads > 0
    logits = db.execute("select count(*) from ev where ph = 'i' and name like 'logits of image %'").fetchone()[0]
    assert logits == STEPS * BATCH


def test_a_trace_needs_cycle_level_routers():
    split = load_digits_split(seed=0)
    ccfg = ClusterConfig.homogeneous(1, engine_for_net(NET, "8"))
    with pytest.raises(ClusterError, match="a trace is recorded by the CL routers"):
        train_on_cluster(NET, quantize_params(NET, init_params_float64(NET, 0), "8"),
                         quantize_images(split.x_train[:2], FMT.act), split.y_train[:2], TrainConfig("8"), ccfg,
                         steps=1, batch=1, levels=["rtl"], trace=True)
