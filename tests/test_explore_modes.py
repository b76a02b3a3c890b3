"""explore's choice of dataflow per layer (explore.modes, explore design): channel-parallel,
tap-packed or batch-parallel, by the timing model (whose batch-parallel closed form
``tests/test_timing.py`` checks against the RTL)."""

import numpy as np
import pytest

from pymtl_fp import timing
from pymtl_fp.explore.design import search
from pymtl_fp.explore.devices import get_device
from pymtl_fp.explore.fpga_model import EngineArray, tiled_layer_cycles
from pymtl_fp.explore.modes import MODES, VARIANTS, layer_modes, study
from pymtl_fp.explore.zoo import get_network

CIFAR = get_network("vgg-cifar")


def test_each_pass_takes_its_fastest_mode():
    conv1 = next(ly for ly in CIFAR.layers if ly.name == "conv1_1")
    for P, batch in ((16, 4), (16, 32), (32, 32), (8, 1)):
        lm = layer_modes(conv1, P, batch, needs_dx=False)
        assert "bp" not in lm.cycles  # the first layer needs no data gradient
        assert set(lm.cycles["fp"]) == set(MODES) and set(lm.cycles["wg"]) == {"channel", "packed"}
        for pas, cyc in lm.cycles.items():
            assert cyc[lm.choice[pas]] == min(cyc.values())
            for mode, c in cyc.items():
                assert 0 < lm.utilization(pas, mode) <= 1 and c >= 1
    # the batch-parallel fwd: the images fill the columns, so a batch of P gains P/C over channels
    lm = layer_modes(conv1, 16, 16, needs_dx=False)
    assert lm.utilization("fp", "batch") > 0.95 > 0.19 > lm.utilization("fp", "channel")
    assert lm.choice["fp"] == "batch" and lm.choice["wg"] == "packed"
    # ... and a batch of 4 uses a quarter of them
    assert layer_modes(conv1, 16, 4, needs_dx=False).utilization("fp", "batch") <= 4 / 16


def test_the_whole_network_figures():
    res = study(CIFAR, (16, 32), (4, 32))
    assert len(res.rows) == 8 * 4 and len(res.totals) == 4
    for t in res.totals:
        assert t["channel only"] <= t["with tap packing"] <= t["every mode"] <= 1
    for r in res.rows:  # only the 3-channel first layer ever runs batch-parallel (and only at batch 32)
        assert (r["fp_choice"] == "batch") == (r["layer"] == "conv1_1" and r["batch"] == 32 and r["P"] == 16)
    only = study(get_network("vgg16"), (16,), (4,), layers=["conv1_1", "fc7"])
    assert [r["layer"] for r in only.rows] == ["conv1_1", "fc7"]
    assert only.totals[0]["every mode"] == study(get_network("vgg16"), (16,), (4,)).totals[0]["every mode"]
    with pytest.raises(ValueError, match=r"no MAC layer\(s\) pool1"):
        study(CIFAR, layers=["pool1"])
    assert set(VARIANTS) == {"channel only", "with tap packing", "every mode"}


def test_the_design_search_runs_a_forward_pass_batch_parallel_where_it_is_faster():
    arr = EngineArray(32, 12)
    conv1, conv2 = (next(ly for ly in CIFAR.layers if ly.name == n) for n in ("conv1_1", "conv1_2"))
    for ly in (conv1, conv2):
        for tb in (4, 32, 128):
            chan = tiled_layer_cycles(ly, arr, 1024, 256, tb)
            both = tiled_layer_cycles(ly, arr, 1024, 256, tb, batch_parallel=True)
            bp = timing.conv_cycles(32, "fwd", timing.ConvShape(n=tb, c=ly.C, k=-(-ly.K // 12), h=ly.in_shape[1],
                                                                w=ly.in_shape[2], r=3, s=3, pad=1, bp=True))
            assert both["fp"] == min(chan["fp"], bp) and both["fp_batch"] == (bp < chan["fp"])
            assert (both["bp"], both["wg"]) == (chan["bp"], chan["wg"])
    assert tiled_layer_cycles(conv1, arr, 1024, 256, 128, batch_parallel=True)["fp_batch"]
    assert not tiled_layer_cycles(conv2, arr, 1024, 256, 4, batch_parallel=True)["fp_batch"]
    dev = get_device("xcvu9p")
    runs = {m: search(CIFAR, dev, 128, modes=m) for m in (("channel",), ("channel", "batch"), ("channel", "packed"),
                                                           ("channel", "packed", "batch"))}
    base = runs[("channel",)].points["gops"]
    for m, res in runs.items():  # more modes: never slower, at every point
        assert res.count == runs[("channel",)].count
        assert np.all(res.points["gops"] >= base * (1 - 1e-12)), m
    assert np.all(runs[("channel", "packed", "batch")].points["gops"] >= np.maximum(
        runs[("channel", "batch")].points["gops"], runs[("channel", "packed")].points["gops"]) * (1 - 1e-12))
    best = {m: r.best(1)[0]["gops"] for m, r in runs.items()}
    assert best[("channel",)] < best[("channel", "batch")] < best[("channel", "packed")]
    with pytest.raises(ValueError, match="must include channel"):
        search(CIFAR, dev, 128, modes=("batch",))
