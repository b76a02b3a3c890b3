"""``pymtl-fp bench storage``: the weight gradients over the batch against per image on the CL
cluster, every run checked against the golden step, with its figures (nothing is timed)."""

import json

import pytest

from pymtl_fp.cli.main import main


@pytest.mark.slow
def test_bench_storage_compares_the_three_modes(tmp_path, capsys):
    out_json = tmp_path / "storage.json"
    assert main(["bench", "storage", "--nets", "lenet-digits", "--nodes", "2", "--batches", "5,10", "--steps", "1",
                 "--workers", "1", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "every run bit-exact with the golden model" in out and "lenet-digits on 2 nodes, batch 10: image" in out
    rows = {(r["batch"], r["wgrad"]): r for r in json.loads(out_json.read_text())}
    assert set(rows) == {(b, w) for b in (5, 10) for w in ("batch", "image", "auto")}
    # over the batch a node keeps every image; per image only those in flight (the same at batch
    # 5 and 10), and B the un-rounded sums
    assert rows[5, "image"]["act_words"] == rows[10, "image"]["act_words"]
    assert all(a < b for a, b in zip(rows[5, "batch"]["act_words"], rows[10, "batch"]["act_words"]))
    assert all(i < b for i, b in zip(rows[10, "image"]["act_words"], rows[10, "batch"]["act_words"]))
    assert all(i > b for i, b in zip(rows[10, "image"]["b_words"], rows[10, "batch"]["b_words"]))
    # auto keeps the fc layer's inputs for the batch: more words than image, fewer B words
    assert sum(rows[10, "auto"]["act_words"]) > sum(rows[10, "image"]["act_words"])
    assert sum(rows[10, "auto"]["b_words"]) < sum(rows[10, "image"]["b_words"])
    for r in rows.values():
        assert r["fill_cycles"] > 0 and r["step_cycles"] > r["fill_cycles"] and 0 < r["steady_efficiency"]


def test_bench_storage_bad_input(capsys):
    assert main(["bench", "storage", "--batches", "0"]) == 1
    assert "--batches" in capsys.readouterr().err
    assert main(["bench", "storage", "--nets", "nonet"]) == 1
    assert "nonet" in capsys.readouterr().err
    assert main(["bench", "storage", "--stream-lanes", "3"]) == 1
    assert "must divide" in capsys.readouterr().err


def test_bench_storage_row_bands_beside_whole_layers(tmp_path, capsys):
    """``--bands 0,1 --band-passes fill,all``: the fine-grained pipeline (in the fill's passes, and
    in every pass) beside the layer pipeline on the same cuts (split layers allowed: LeNet on 3 nodes
    splits conv1 and conv2), every run checked against the golden step; the same words (bands run in
    place), the first logits sooner on 3 nodes."""
    out_json = tmp_path / "bands.json"
    assert main(["bench", "storage", "--nets", "lenet-digits", "--nodes", "3", "--batches", "4", "--steps", "2",
                 "--wgrads", "auto", "--bands", "0,1", "--band-passes", "fill,all", "--workers", "1",
                 "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "--bands 0/1 (split layers allowed)" in out
    assert "bands of 1 rows, the fill's passes: fill" in out and "bands of 1 rows, every forward pass: fill" in out
    rows = {(r["bands"], r["band_passes"]): r for r in json.loads(out_json.read_text())}
    assert set(rows) == {(0, None), (1, "fill"), (1, "all")}
    assert rows[0, None]["act_words"] == rows[1, "fill"]["act_words"] == rows[1, "all"]["act_words"]
    assert rows[1, "fill"]["fill_cycles"] < rows[0, None]["fill_cycles"]
    assert rows[1, "all"]["fill_cycles"] < rows[0, None]["fill_cycles"]
    assert all(r["fill_cycles_last_step"] > 0 for r in rows.values())
    assert main(["bench", "storage", "--bands", "0,1", "--band-passes", "some"]) == 1
    assert "--band-passes" in capsys.readouterr().err
    assert main(["bench", "storage", "--wgrads", "rows"]) == 1
    assert "--wgrads" in capsys.readouterr().err
