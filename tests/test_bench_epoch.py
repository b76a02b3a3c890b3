"""``pymtl-fp bench epoch``: the epoch extrapolated from measured steps of a golden-checked cluster
run (figures only, nothing is timed), and its refusals."""

import json

from pymtl_fp.cli.main import main


def _epoch(tmp_path, capsys, steps: int) -> dict:
    out_json = tmp_path / f"epoch{steps}.json"
    assert main(["bench", "epoch", "--net", "lenet-digits", "--level", "cl", "--nodes", "2", "--array", "4",
                 "--tap-pack", "off", "--stream-lanes", "1", "--batch", "2", "--steps", str(steps),
                 "--json", str(out_json)]) == 0
    assert "weights equal the golden model's" in capsys.readouterr().out
    return json.loads(out_json.read_text())["figures"]


def test_bench_epoch_extrapolates_the_measured_steps(tmp_path, capsys):
    """The extrapolation's premise, checked against the simulator: a third simulated step takes the
    cycles of the second, so the 2-step run's estimate of 3 steps is the 3-step run's count."""
    fig = _epoch(tmp_path, capsys, 2)
    from pymtl_fp.data import load_digits_split

    assert fig["epoch_steps"] == len(load_digits_split(seed=0).y_train) // 2
    steps = fig["cycles_per_step"]
    assert len(steps) == 2 and fig["cycles_measured"] > sum(steps)  # (plus the weights loaded and read back)
    three = _epoch(tmp_path, capsys, 3)
    assert three["cycles_per_step"][:2] == steps and three["cycles_per_step"][2] == steps[1]
    assert three["cycles_measured"] == fig["cycles_measured"] + steps[1]
    assert fig["epoch_cycles"] == three["epoch_cycles"]  # (both extrapolate the same epoch)
    assert fig["node_cycles_per_s"] == 2 * fig["cycles_per_s"]
    assert abs(fig["epoch_seconds"] * fig["cycles_per_s"] - fig["epoch_cycles"]) < 1e-6 * fig["epoch_cycles"]


def test_bench_epoch_bad_input(capsys):
    assert main(["bench", "epoch", "--net", "nonet"]) == 1
    assert "--net nonet" in capsys.readouterr().err
    assert main(["bench", "epoch", "--net", "lenet-digits", "--batch", "8", "--steps", "5000"]) == 1
    assert "--steps" in capsys.readouterr().err
    assert main(["bench", "epoch", "--net", "lenet-digits", "--stream-lanes", "0"]) == 1
    assert "--stream-lanes" in capsys.readouterr().err
    assert main(["bench", "epoch", "--net", "lenet-digits", "--pipeline", "fast"]) == 1
    assert "--pipeline 'fast'" in capsys.readouterr().err
