"""``pymtl-fp bench bands``: every conv layer of a zoo net in row bands at CL, checked against the
whole map (the run fails on a difference), with its figures (nothing is timed)."""

import json

from pymtl_fp import timing
from pymtl_fp.cli.main import main
from pymtl_fp.engine.config import preset


def test_bench_bands_checks_every_band_and_prints_its_cost(tmp_path, capsys):
    out_json = tmp_path / "bands.json"
    assert main(["bench", "bands", "--heights", "1,3,all", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "every banded result checked against the whole map's" in out
    rows = json.loads(out_json.read_text())["rows"]
    cfg = preset("small")  # (the bench's default engine: the array's PIPE, the preset's pipelines)
    per_command = timing.PIPE + cfg.wb_latency + cfg.cmd_latency
    assert {r["op"] for r in rows} == {"fwd", "bwd_data", "bwd_weight"}
    for r in rows:
        whole = next(w for w in rows if (w["layer"], w["op"]) == (r["layer"], r["op"]) and w["commands"] == 1)
        # a band pays the pipeline's fill and drain again: never fewer cycles than the whole map
        assert r["cycles"] >= whole["cycles"] and r["window_words"] <= whole["window_words"]
        if r["op"] == "fwd" and r["commands"] > 1:  # fwd bands add exactly the pipelines' cycles each
            assert r["cycles"] - whole["cycles"] == per_command * (r["commands"] - 1)
    thin = [r for r in rows if r["height"] == 1]
    assert thin and all(r["window_words"] < r["map_words"] for r in thin)


def test_bench_bands_bad_input(capsys):
    assert main(["bench", "bands", "--heights", "2,x"]) == 1
    assert "not a band height" in capsys.readouterr().err
    assert main(["bench", "bands", "--net", "nonet"]) == 1
    assert "--net nonet" in capsys.readouterr().err
