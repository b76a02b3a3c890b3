"""The parallelism study (pymtl_fp.explore.parallelism) against the scaling study's own figures
(one FPGA; the FPDeep pipeline's initiation interval) and the ring all-reduce's closed form."""

import math

import pytest

from pymtl_fp.explore.devices import Precision, get_device
from pymtl_fp.explore.links import Link, parse_link
from pymtl_fp.explore.parallelism import allreduce_seconds, crossover
from pymtl_fp.explore.scaling import sweep
from pymtl_fp.explore.zoo import get_network

NET = get_network("alexnet")
DEV = get_device("xc7vx690t")
INF = parse_link("inf")


def test_ring_allreduce_closed_form():
    link = Link("l", 10.0, latency_ns=0.0)
    assert allreduce_seconds(1, 8, 1e6, 32, link) == 0.0
    assert allreduce_seconds(2, 2, 1e6, 32, link) == pytest.approx(32e6 / 10e9)        # 2 (1/2) W g / bw
    assert allreduce_seconds(4, 4, 1e6, 32, link) == pytest.approx(1.5 * 32e6 / 10e9)  # 2 (3/4) W g / bw
    slow = Link("s", 10.0, latency_ns=100.0)
    assert allreduce_seconds(4, 8, 1e6, 32, slow) == pytest.approx(1.5 * 32e6 / 10e9 + 2 * 3 * 7 * 100e-9)


@pytest.mark.parametrize("batch", [1, 8, 32])
def test_one_fpga_and_the_pipeline_agree_with_the_scaling_study(batch):
    res = crossover(NET, DEV, [1, 4], [batch], INF)
    scale = sweep(NET, DEV, [1, 4], [INF], Precision(), batch)
    ii = {r["fpgas"]: 1.0 / r["images_s"] for r in scale.rows}
    one = res.best[(1, batch)]
    assert one["images_s"] == pytest.approx(1.0 / ii[1])  # B images at the per-image interval
    pipe = next(r for r in res.rows if r["fpgas"] == 4 and r["groups"] == 1)
    assert pipe["step_ms"] == pytest.approx((batch + 3) * ii[4] * 1e3)


def test_data_parallel_with_free_links_is_n_times_one_fpga_at_its_share():
    res = crossover(NET, DEV, [1, 4], [8, 2], INF)
    dp = next(r for r in res.rows if r["fpgas"] == 4 and r["groups"] == 4 and r["batch"] == 8)
    one_at_2 = res.best[(1, 2)]["images_s"]
    assert dp["allreduce_ms"] == 0.0 and dp["images_per_group"] == 2
    assert dp["images_s"] == pytest.approx(4 * one_at_2)


def test_gradient_width_and_bandwidth_move_the_crossover():
    slow, fast = parse_link("6x10G"), parse_link("250G")
    kw = dict(fpgas=[4], batches=[8, 32])
    wide = crossover(NET, DEV, link=slow, **kw)
    narrow = crossover(NET, DEV, link=slow, grad_bits=16, **kw)
    quick = crossover(NET, DEV, link=fast, **kw)
    for b in (8, 32):
        dps = [next(r for r in res.rows if r["groups"] == 4 and r["batch"] == b) for res in (wide, narrow, quick)]
        # 16 bits fewer per gradient: 2 (3/4) W 16 / bw less (the latency term stays)
        assert dps[0]["allreduce_ms"] - dps[1]["allreduce_ms"] == pytest.approx(
            2 * 3 / 4 * NET.params * 16 / slow.bits_per_s * 1e3)
        assert dps[2]["step_ms"] < dps[0]["step_ms"]
        assert math.isclose(dps[0]["pipeline_ms"], dps[1]["pipeline_ms"])
    assert wide.grad_bits == 32 and narrow.grad_bits == 16
