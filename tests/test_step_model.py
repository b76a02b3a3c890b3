"""The analytical step model (:mod:`pymtl_fp.explore.step_model`) and ``pymtl-fp bench model``, which
sets it, the storage model and the link model beside the CL cluster.

The model's own properties are checked against textbook pipeline arithmetic (one node: the sum of
its passes; GPipe on equal stages: ``(B + N - 1)`` stage times per phase); the command's figures
against the simulated runs on small configurations, with split layers (LeNet on 2 and 4 nodes, VGG
on 3): cycles per step within 3 %, every node's buffer words and every link's elements exact."""

import json
import re

import pytest

from pymtl_fp.cli.main import main
from pymtl_fp.explore.step_model import NodePasses, predict_steps


def _node(fwd, bwd, wg, **kw):
    return NodePasses(fwd=fwd, bwd=bwd, wg=wg, **kw)


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("batch", [1, 2, 5])
def test_one_node_steps_are_the_sum_of_its_passes(schedule, batch):
    """Nothing to wait for on one node (links without latency; the host answers in one cycle, which
    another image's forward pass covers: with two images or more, both schedules run two forward
    passes before the first backward pass)."""
    p = predict_steps([_node(100, 70, 300)], batch, latency=0, lanes=1, schedule=schedule)
    assert p.cycles_per_step == batch * 170 + 300 + (1 if batch == 1 else 0)
    assert p.weight_phase == 300


@pytest.mark.parametrize("n,batch", [(2, 4), (4, 8), (8, 3)])
def test_gpipe_on_equal_stages_takes_b_plus_n_minus_1_stage_times_per_phase(n, batch):
    """GPipe's bubble: ``(B + N - 1)`` forward stage times, ``(B + N - 1)`` backward stage times
    (node N-1 has image 0's loss gradient long before its last forward pass ends), then node 0's
    weight phase; the next step starts at node 0 behind it."""
    f, b, w = 100, 150, 400
    p = predict_steps([_node(f, b, w)] * n, batch, latency=0, lanes=1, schedule="gpipe")
    assert p.cycles_per_step == (batch + n - 1) * (f + b) + w
    assert p.fill == n * f  # node 0's start to the first logits: every node's forward pass
    assert p.interval == f  # node N-1's forward completions, one stage time apart


def test_link_latency_adds_to_every_hop_of_the_fill():
    f = 100
    flat = predict_steps([_node(f, 150, 400)] * 4, 4, latency=0, lanes=1)
    slow = predict_steps([_node(f, 150, 400)] * 4, 4, latency=8, lanes=1)
    assert slow.fill - flat.fill == 4 * 8  # three links between nodes and the one to the host


def test_a_second_holder_waits_for_the_first_holders_weights():
    first = _node(100, 100, 1000, wg_last=900)  # its last command: the STORE of its updated piece
    alone = predict_steps([first, _node(100, 100, 300, wg_last=50)], 2, latency=5, lanes=1)
    waits = predict_steps([first, _node(100, 100, 300, weights_loaded_at=10, wg_last=50)], 2, latency=5, lanes=1)
    assert waits.weight_phase > alone.weight_phase
    # the second node's LOAD of the first's piece ends one link after it, 290 cycles of its phase follow
    assert waits.ends[(1, "wg", 2, None)] == waits.ends[(0, "wg", 2, None)] + 5 + 290


def test_a_nodes_step_ends_when_its_engine_takes_the_last_command():
    """As the cluster report's marks count it: a node's weight phase ends where its program passes
    the step's end, once the engine has taken the phase's last command; a second holder whose last
    command is the LOAD of the first holder's piece waits for it after that (in the next step)."""
    one = predict_steps([_node(100, 70, 300, wg_last=120)], 2, latency=0, lanes=1)
    assert one.weight_phase == 300 - 120 and one.cycles_per_step == 2 * 170 + 300
    first = _node(100, 100, 1000, wg_last=900)
    p = predict_steps([first, _node(100, 100, 40, weights_loaded_at=40, wg_last=30)], 2, latency=5, lanes=1)
    assert p.weight_phase == max(1000 - 900, 40 - 30)
    assert p.ends[(1, "wg", 2, None)] == p.ends[(0, "wg", 2, None)] + 5  # (its LOAD still waits)


def test_unknown_schedule_refused():
    with pytest.raises(ValueError, match="step model covers"):
        predict_steps([_node(1, 1, 1)], 2, latency=0, lanes=1, schedule="cp")


@pytest.mark.cl
def test_bench_model_predicts_the_cl_cluster_within_3_percent(tmp_path, capsys):
    out_json, out_md = tmp_path / "model.json", tmp_path / "model.md"
    argv = ["bench", "model", "--nets", "lenet-digits", "--nodes", "2,4", "--batches", "4", "--workers", "1",
            "--json", str(out_json), "--markdown", str(out_md)]
    assert main(argv) == 0
    assert main(["bench", "model", "--nets", "vgg-digits", "--nodes", "3,8", "--batches", "4", "--workers", "1",
                 "--json", str(tmp_path / "vgg.json")]) == 0
    out = capsys.readouterr().out
    assert "cycles per step: largest error" in out
    rows = json.loads(out_json.read_text()) + json.loads((tmp_path / "vgg.json").read_text())
    assert [(r["net"], r["nodes"]) for r in rows] == [("lenet-digits", 2), ("lenet-digits", 4), ("vgg-digits", 3),
                                                      ("vgg-digits", 8)]
    for r in rows:
        c = r["compare"]
        assert any("[" in d for d in r["partition"])  # every one has a layer split between two nodes
        sim, model, _ = c["cycles_per_step"]
        assert sim > 0 and abs(model / sim - 1) <= 0.03, r["compare"]
        # (the interval over the later half of four images: two or three gaps)
        assert abs(c["fill"][2]) <= 0.10 and abs(c["interval"][2]) <= 0.05, r["compare"]
        # (split layers: a first holder's last STORE of its updated piece, a second holder's LOAD;
        # on vgg-digits' 8 nodes they end the weight phase)
        assert abs(c["weight_phase"][2]) <= 0.03, r["compare"]
        assert c["words_exact"][0] == c["words_exact"][1] == r["nodes"]
        assert c["links_exact"][0] == c["links_exact"][1]
    assert "| lenet-digits | 4 | 4 |" in out_md.read_text()


@pytest.mark.slow
@pytest.mark.cl
def test_the_weight_phases_mark_after_a_store_is_the_last_commands(tmp_path):
    """With the command register the router marks the weight phase as the engine takes the backward
    pass's last command: as the compute command before it starts, but after a LOAD or STORE as soon
    as that one is taken (lenet5-mnist on 8 nodes, where a LOAD or STORE comes before the last
    compute of the node with the longest weight phase; counting it as held put the phase 5.1 % too
    long)."""
    out = tmp_path / "m.json"
    assert main(["bench", "model", "--nets", "lenet5-mnist", "--nodes", "8", "--batches", "4", "--workers", "1",
                 "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    c = row["compare"]
    assert abs(c["weight_phase"][2]) <= 0.01 and abs(c["cycles_per_step"][2]) <= 0.01, c


@pytest.mark.cl
def test_bench_model_predicts_the_cl_cluster_with_slow_links_within_3_percent(tmp_path):
    """Links eight times slower than the streams bound the pipeline: LeNet on 4 nodes, where a node
    holding only a split layer's first piece passes the data gradient on, a backward pass receives
    the next input before its last STOREs and a second holder sends its first holder's gradient in
    the middle of its pass.  Cycles per step and the steady-state interval within 3 % of the
    simulated cluster (bit-exact: the bench checks), buffer words and link elements exact."""
    out_json = tmp_path / "slow.json"
    assert main(["bench", "model", "--nets", "lenet-digits", "--nodes", "4", "--batches", "4", "--link-flits", "8",
                 "--workers", "1", "--json", str(out_json)]) == 0
    (r,) = json.loads(out_json.read_text())
    # (a node whose only item is the first piece of a layer: the one that passes the gradient on)
    assert any(re.match(r"node \d+: \w+\[0:\d+\] +\(", d) for d in r["partition"]), r["partition"]
    c = r["compare"]
    for key in ("cycles_per_step", "interval"):
        sim, model, _ = c[key]
        assert sim > 0 and abs(model / sim - 1) <= 0.03, (key, c)
    assert c["words_exact"][0] == c["words_exact"][1] == 4
    assert c["links_exact"][0] == c["links_exact"][1]


def test_bench_model_bad_input(capsys):
    assert main(["bench", "model", "--nets", "nonet"]) == 1
    assert "nonet" in capsys.readouterr().err
    assert main(["bench", "model", "--steps", "1"]) == 1
    assert "--steps" in capsys.readouterr().err
    assert main(["bench", "model", "--markdown", "table.txt"]) == 1
    assert "--markdown" in capsys.readouterr().err


@pytest.mark.cl
def test_bench_scaling_draws_the_simulated_points_on_the_models_curve(tmp_path, capsys):
    """LeNet on 1 and 2 nodes at links of one and of eight cycles a message: every point bit-exact
    (the bench checks), the model within 3 % of every simulated step; the slow links lower the
    throughput; the figure and the table are written."""
    png, out_json = tmp_path / "scaling.png", tmp_path / "scaling.json"
    assert main(["bench", "scaling", "--net", "lenet-digits", "--nodes", "1,2", "--batch", "4", "--link-flits", "1,8",
                 "--curve-to", "3", "--workers", "1", "--plot", str(png), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "largest error in cycles per step" in out
    doc = json.loads(out_json.read_text())
    assert sorted((c["nodes"], c["flits"]) for c in doc["curve"]) == [(n, f) for n in (1, 2, 3) for f in (1, 8)]
    sims = {(s["nodes"], s["flits"]): s for s in doc["simulated"]}
    assert set(sims) == {(n, f) for n in (1, 2) for f in (1, 8)}
    for s in sims.values():
        assert abs(s["error"]) <= 0.03, s
    for n in (1, 2):
        assert sims[n, 8]["images_s"] < sims[n, 1]["images_s"]
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    # drawn again from the recorded points: nothing simulated, the same figures
    again = tmp_path / "again.json"
    assert main(["bench", "scaling", "--net", "lenet-digits", "--batch", "4", "--curve-to", "3",
                 "--simulated", str(out_json), "--json", str(again)]) == 0
    assert "recorded in" in capsys.readouterr().out
    redrawn = {(s["nodes"], s["flits"]): s["error"] for s in json.loads(again.read_text())["simulated"]}
    assert redrawn == {k: s["error"] for k, s in sims.items()}


@pytest.mark.parametrize("doc, message", [
    ({"curve": []}, "no 'simulated' list"),
    ({"simulated": [{"nodes": 1, "flits": 1, "cycles_per_step": -5, "images_s": 1.0}]}, "point 0 needs positive"),
    ({"simulated": [{"nodes": 99, "flits": 1, "cycles_per_step": 5, "images_s": 1.0}]}, "integers in 1..64"),
    ({"simulated": [{"nodes": 1, "flits": 1, "cycles_per_step": 5, "images_s": 1.0, "batch": 8}]}, "same 'pipelines'"),
    ({"simulated": [{"nodes": 1, "flits": 1, "cycles_per_step": 5, "images_s": 1.0, "batch": 8, "pipelines": "none"},
                    {"nodes": 2, "flits": 1, "cycles_per_step": 5, "images_s": 1.0, "batch": 8,
                     "pipelines": "requant,mac,addr,cmd"}]}, "same 'pipelines'"),
    ({"simulated": [{"nodes": 1, "flits": 1, "cycles_per_step": 5, "images_s": 1.0, "batch": 8, "pipelines": "none"}]},
     "another batch"),
])
def test_bench_scaling_refuses_a_bad_record(doc, message, tmp_path, capsys):
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(doc))
    assert main(["bench", "scaling", "--net", "lenet-digits", "--batch", "4", "--simulated", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_bench_scaling_bad_input(capsys):
    assert main(["bench", "scaling", "--nodes", "65"]) == 1
    assert "--nodes" in capsys.readouterr().err
    assert main(["bench", "scaling", "--net", "lenet-digits", "--nodes", "8", "--curve-to", "8"]) == 1
    assert "at most 6 nodes" in capsys.readouterr().err
    assert main(["bench", "scaling", "--link-flits", "0"]) == 1
    assert "--link-flits" in capsys.readouterr().err
    assert main(["bench", "scaling", "--plot", "figure.jpg"]) == 1
    assert "--plot" in capsys.readouterr().err
    # 32 images of deep-mnist's maps on one node: more words than a command field addresses,
    # refused by the compiler before any simulation starts
    assert main(["bench", "scaling", "--nodes", "1", "--batch", "32", "--curve-to", "1"]) == 1
    captured = capsys.readouterr()
    assert "command fields" in captured.err and "simulated" not in captured.out


def test_a_lone_first_holder_passes_the_data_gradient_on_at_the_end_of_its_backward_pass():
    """Node 1 holds only the first piece of a split layer: node 2's data gradient reaches node 0
    through a MOVE at the end of node 1's backward pass (after its own work on what node 2 sent it,
    one link away), which retires once its last element has gone through at the link's rate; node
    0 takes it one link later."""
    relay = 40  # elements an image, at one a cycle
    for own in (100, 5000):
        p = predict_steps([_node(100, 100, 10), _node(100, own, 10, relay=relay), _node(100, 100, 10)], 1, latency=7,
                          lanes=1, steps=2)
        assert p.ends[(1, "bwd", 1, 0)] == p.ends[(2, "bwd", 1, 0)] + 7 + own + relay
        assert p.ends[(0, "bwd", 1, 0)] == p.ends[(1, "bwd", 1, 0)] + 7 + 100
