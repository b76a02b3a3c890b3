"""Chain costs and partitioners: the DP is exact (= exhaustive search) and never worse than the
even split or FPDeep balancing; traffic counts residual shortcuts."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.explore.chain import Chain
from pymtl_fp.explore.devices import Device, Precision, get_device
from pymtl_fp.explore.fpga_model import EngineArray
from pymtl_fp.explore.layers import NetBuilder
from pymtl_fp.explore.links import Link, parse_link
from pymtl_fp.explore.partition import (
    Cluster,
    bisect_optimal,
    dp_optimal,
    evaluate,
    even_split,
    exhaustive,
    fpdeep,
)
from pymtl_fp.explore.zoo import get_network
from pymtl_fp.tb.hypothesis_profiles import examples


# -- random small instances -------------------------------------------------------------------
@st.composite
def small_networks(draw, max_mac_layers=8):
    c0 = draw(st.integers(1, 8))
    h = draw(st.sampled_from([4, 6, 8, 12]))
    b = NetBuilder("rand", (c0, h, h))
    n_mac = draw(st.integers(1, max_mac_layers))
    made = 0
    while made < n_mac - 1:
        kind = draw(st.sampled_from(["conv", "conv", "res", "pool"])) if made else "conv"
        _, hh, _ = b.shape()
        if kind == "pool" and hh >= 4 and hh % 2 == 0:
            b.pool(f"p{len(b.layers)}", 2, 2)
        elif kind == "res" and made + 2 <= n_mac - 1:
            x = b.cur
            c = b.shape()[0]
            b.conv(f"r{len(b.layers)}a", draw(st.integers(1, 24)), 3, pad=1)
            y = b.conv(f"r{len(b.layers)}b", c, 1)
            b.add(f"s{len(b.layers)}", y, x)
            made += 2
        else:
            r = draw(st.sampled_from([1, 3]))
            b.conv(f"c{len(b.layers)}", draw(st.integers(1, 48)), r, pad=r // 2)
            made += 1
    b.fc("fc", draw(st.integers(1, 40)), relu=False)
    return b.build()


def _device(draw, i):
    return Device(f"d{i}", "synthetic", dsp=draw(st.integers(16, 2000)),
                  bram36=draw(st.integers(1, 60)), clock_mhz=draw(st.sampled_from([100, 200, 250])),
                  array=EngineArray(draw(st.sampled_from([4, 8, 16])),
                                    draw(st.sampled_from([1, 2, 3]))))


@st.composite
def instances(draw, max_fpgas=4, max_positions=14):
    net = draw(small_networks())
    chain = Chain(net, Precision.bits(draw(st.sampled_from([8, 16]))),
                  batch=draw(st.integers(1, 8)), max_pieces=draw(st.integers(1, 3)),
                  split=draw(st.sampled_from(["auto", "rows", "channels"])),
                  channel_tile=draw(st.sampled_from([4, 8])))
    if chain.M > max_positions:
        chain = Chain(net, chain.precision, chain.batch, 1, chain.split, chain.channel_tile)
    n = draw(st.integers(1, max_fpgas))
    devices = [_device(draw, i) for i in range(n)]
    links = [Link(f"l{i}", math.inf if draw(st.booleans()) and i % 2 else
                  draw(st.floats(1e-4, 1.0)))          # slow links make traffic matter
             for i in range(n - 1)]
    cluster = Cluster(devices, links, chain.precision, memory_limit=draw(st.booleans()))
    return chain, cluster


@settings(max_examples=examples(40))
@given(instances())
def test_dp_equals_exhaustive_search(inst):
    chain, cluster = inst
    cuts, value = dp_optimal(chain, cluster, return_value=True)
    _, best = exhaustive(chain, cluster)
    if math.isinf(best):
        assert math.isinf(value)
        return
    assert value == pytest.approx(best, rel=1e-12)
    # the DP's cut vector really achieves its value (evaluated independently)
    assert evaluate(chain, cluster, cuts).ii == pytest.approx(best, rel=1e-12)


@settings(max_examples=examples(40))
@given(instances(max_fpgas=5, max_positions=40))
def test_dp_never_worse_than_even_split_or_fpdeep(inst):
    chain, cluster = inst
    dp = evaluate(chain, cluster, dp_optimal(chain, cluster)).ii
    for method in (even_split, fpdeep):
        other = evaluate(chain, cluster, method(chain, cluster)).ii
        assert dp <= other * (1 + 1e-12)


@settings(max_examples=examples(25))
@given(instances(max_fpgas=5, max_positions=40))
def test_bisection_agrees_with_dp(inst):
    chain, cluster = inst
    _, dp = dp_optimal(chain, cluster, return_value=True)
    _, bis = bisect_optimal(chain, cluster, rtol=1e-9)
    if math.isinf(dp):
        assert math.isinf(bis)
    else:
        assert bis == pytest.approx(dp, rel=1e-6)
        assert bis >= dp * (1 - 1e-12)


@settings(max_examples=examples(25))
@given(small_networks(), st.integers(1, 6), st.integers(1, 4), st.data())
def test_bisection_agrees_with_dp_on_identical_fpgas(net, n, pieces, data):
    chain = Chain(net, max_pieces=pieces, channel_tile=4)
    dev = _device(data.draw, 0)
    link = Link("l", data.draw(st.floats(1e-4, 1.0)))
    cluster = Cluster.homogeneous(dev, n, link)
    _, dp = dp_optimal(chain, cluster, return_value=True)
    cuts, bis = bisect_optimal(chain, cluster, rtol=1e-9)     # the uniform fast path
    assert bis == pytest.approx(dp, rel=1e-6) and bis >= dp * (1 - 1e-12)
    assert evaluate(chain, cluster, cuts).ii == pytest.approx(bis, rel=1e-12)


@settings(max_examples=examples(25))
@given(small_networks(), st.integers(1, 6), st.sampled_from(["auto", "rows", "channels"]))
def test_fast_range_costs_equal_plain_sums(net, pieces, split):
    chain = Chain(net, max_pieces=pieces, split=split, channel_tile=4)
    arr = EngineArray(8, 3)
    funcs = [chain.cycles(arr), chain.macs, chain.fine_storage()] + \
        list(chain.storage().values())
    a, b = np.meshgrid(np.arange(chain.M + 1), np.arange(chain.M + 1), indexing="ij")
    for f in funcs:
        plain = np.array([[f.scalar(i, j) for j in range(chain.M + 1)]
                          for i in range(chain.M + 1)])
        assert np.allclose(f.vec(a.ravel(), b.ravel()).reshape(a.shape), np.triu(plain, 1))
        assert np.allclose(f.matrix(), np.triu(plain, 1))
    # whole network = sum over any split; MACs are exactly additive (the useful ones: without the
    # padding's taps, never more than the published count the GOPS use)
    mid = chain.M // 2
    assert chain.macs.scalar(0, mid) + chain.macs.scalar(mid, chain.M) == \
        pytest.approx(float(net.macs(useful=True)["train"]))
    assert chain.total_train_macs() == net.macs()["train"] >= net.macs(useful=True)["train"]


# -- traffic ----------------------------------------------------------------------------------
def _res_net():
    b = NetBuilder("res", (4, 8, 8))
    x = b.conv("stem", 16, 3, pad=1)          # 16x8x8 = 1024 elements
    b.conv("a", 8, 1)                           # 8x8x8 = 512
    y = b.conv("b", 16, 3, pad=1)
    b.add("sum", y, x)
    b.fc("fc", 10, relu=False)
    return b.build()


def test_cut_traffic_counts_the_shortcut():
    prec = Precision(act_bits=16, weight_bits=16, grad_bits=8)
    chain = Chain(_res_net(), prec, max_pieces=1)
    # units: stem | a | b+sum | fc ; positions 0..4 are unit boundaries
    assert chain.M == 4
    # before a: stem's output (1024); before b: a's output (512) + the shortcut (1024)
    assert chain.fwd_elems[1] == 1024
    assert chain.fwd_elems[2] == 512 + 1024
    assert chain.fwd_elems[3] == 1024               # sum's output
    assert chain.fwd_elems[0] == 4 * 64 and chain.bwd_elems[0] == 0   # input: no gradient
    assert chain.fwd_bits[2] == (512 + 1024) * 16
    assert chain.bwd_bits[2] == (512 + 1024) * 8


def test_cut_inside_a_layer():
    prec = Precision.bits(16)
    b = NetBuilder("seq", (4, 16, 16))
    b.conv("c1", 8, 3, pad=1)        # params 288 < input 1024: split by rows; out 2048
    b.conv("c2", 64, 3, pad=1)       # params 4608 > input 2048: by channels; out 16384
    b.fc("fc", 10)
    chain = Chain(b.build(), prec, batch=4, max_pieces=2, channel_tile=16)
    u1, u2 = chain.units[0], chain.units[1]
    assert (u1.axis, u2.axis) == ("rows", "channels")
    # halfway through c1 (8 of 16 rows done): the rest of the input plus a 2-row halo
    # (2 x 16 wide x 4 channels), and half the output
    m = chain.offset[0] + 1
    assert chain.fwd_elems[m] == pytest.approx(512 + 128 + 1024)
    assert chain.bwd_elems[m] == pytest.approx(1024)     # the input needs no gradient
    # ... plus the weight-gradient reduction (32-bit partial sums), amortized over batch 4
    assert chain.fwd_bits[m] == pytest.approx((512 + 128 + 1024) * 16 + 288 * 32 / 4)
    # halfway through c2 by channels: the whole input, half the output; back: partial dx
    m = chain.offset[1] + 1
    assert chain.fwd_elems[m] == pytest.approx(2048 + 8192)
    assert chain.bwd_elems[m] == pytest.approx(2048 + 8192)


# -- realistic cases --------------------------------------------------------------------------
def test_fpdeep_balances_identical_fpgas():
    chain = Chain(get_network("vgg16"), max_pieces=64)
    dev = get_device("xc7vx690t")
    # the longest single piece: no cut vector can balance finer than that
    piece = max(chain.cycles(dev.default_array()).scalar(p, p + 1)
                for p in range(chain.M)) / dev.clock_hz
    for n in (2, 8, 32):
        ev = evaluate(chain, Cluster.homogeneous(dev, n, parse_link("inf")),
                      fpdeep(chain, Cluster.homogeneous(dev, n, parse_link("inf"))))
        assert ev.stage_s.max() - ev.stage_s.mean() <= piece
        if n <= 8:      # stages of many pieces
            assert ev.stage_s.max() / ev.stage_s.mean() < 1.1
        assert ev.bottleneck.startswith("FPGA")


def test_resnet152_example_partition():
    from pymtl_fp.explore.clusterfile import example_path, load_cluster
    cluster, _, _ = load_cluster(example_path())
    assert cluster.n == 16 and len({d.name for d in cluster.devices}) >= 4
    chain = Chain(get_network("resnet152"), max_pieces=4)
    res = {m: evaluate(chain, cluster, f(chain, cluster)) for m, f in
           (("even", even_split), ("fpdeep", fpdeep), ("dp", dp_optimal))}
    assert res["dp"].ii <= res["fpdeep"].ii <= res["even"].ii
    # compute, not a link, is the limit; an FPGA the DP leaves idle is one that cannot run
    # even the first piece (a quarter of conv1, 3 input channels) within the DP's II
    assert res["dp"].bottleneck.startswith("FPGA")
    cuts = res["dp"].cuts
    for i in np.nonzero(np.diff(cuts) == 0)[0]:
        assert i == 0 and cuts[0] == 0
        first = chain.cycles(cluster.arrays[0]).scalar(0, 1) / cluster.devices[0].clock_hz
        assert first > res["dp"].ii


def test_memory_limit_with_weight_balancing():
    """``explore partition --memory-limit`` also reports ``dp+wb``: ResNet-50 at 8 bits on the
    16 asymmetric FPGAs fits their RAM under the hard limit only with slower cuts; the unlimited
    DP's cuts with FPDeep's weight balancing fit every FPGA at the unlimited II (compute-bound),
    their links carrying the weight streams too.  Where everything fits, nothing moves.  (ResNet-152's
    unlimited cuts, its adds at the cluster's costs, overflow more than balancing recovers: docs/explore.md.)"""
    import dataclasses

    from pymtl_fp.explore.balanced_partition import compare_balanced as compare
    from pymtl_fp.explore.clusterfile import example_path, load_cluster
    prec = Precision.bits(8)
    cluster, _, _ = load_cluster(example_path(), prec, memory_limit=True)
    chain = Chain(get_network("resnet50"), prec, max_pieces=4)
    ev = compare(chain, cluster)
    free = compare(chain, dataclasses.replace(cluster, memory_limit=False))
    wb, dp = ev["dp+wb"], ev["dp"]
    assert not np.all(free["dp"].storage_bits <= free["dp"].onchip_bits)  # the fast cuts overflow
    assert np.all(wb.storage_bits <= wb.onchip_bits) and wb.moved_bits > 0
    assert wb.ii == pytest.approx(free["dp"].ii) and wb.ii < dp.ii
    assert np.all(wb.link_s >= free["dp"].link_s) and np.any(wb.link_s > free["dp"].link_s)
    assert wb.bit_hops >= wb.moved_bits
    roomy = Cluster.homogeneous(get_device("vu9p"), 2, parse_link("6x10G"), memory_limit=True)
    small = Chain(_res_net(), max_pieces=2)
    both = compare(small, roomy)
    assert both["dp+wb"].moved_bits == 0 and both["dp+wb"].ii == pytest.approx(both["dp"].ii)


def test_bad_cut_vectors_are_rejected():
    chain = Chain(_res_net(), max_pieces=1)
    cl = Cluster.homogeneous(get_device("vu9p"), 2, parse_link("inf"))
    for bad in ([0, 4], [0, 3, 2], [1, 2, 4], [0, 2, 5]):
        with pytest.raises(ValueError):
            evaluate(chain, cl, bad)
    with pytest.raises(ValueError):
        Cluster([get_device("vu9p")] * 3, [parse_link("inf")])


@settings(max_examples=examples(20))
@given(instances(max_fpgas=4, max_positions=40))
def test_node_work_lists_cover_the_network_once(inst):
    chain, cluster = inst
    cuts = dp_optimal(chain, cluster)
    ev = evaluate(chain, cluster, cuts)
    covered = {}
    for i, arr in enumerate(cluster.arrays):
        for item in chain.stage_layers(cuts[i], cuts[i + 1]):
            covered.setdefault(item["layer"], []).append((item["lo"], item["hi"]))
        assert chain.node_cycles(arr, cuts[i], cuts[i + 1]) == pytest.approx(ev.stage_cycles[i])
    for ly in chain.network.layers:
        spans = sorted(covered[ly.name])
        assert spans[0][0] == 0 and all(x[1] == y[0] for x, y in itertools.pairwise(spans))
        assert spans[-1][1] == chain.units[chain.unit_of[ly.name]].extent


@settings(max_examples=examples(25))
@given(small_networks(), st.integers(1, 40), st.integers(1, 4), st.booleans(), st.data())
def test_the_dp_stops_early_on_a_settled_chain_with_the_same_cuts(net, n, pieces, odd_last, data):
    """A chain of identical FPGAs (optionally a different last one): the DP that copies a settled
    step's choices gives exactly the cuts and the II of the DP that computes every step."""
    chain = Chain(net, max_pieces=pieces, channel_tile=4)
    dev = _device(data.draw, 0)
    link = Link("l", data.draw(st.floats(1e-4, 1.0)))
    cluster = Cluster.homogeneous(dev, n, link)
    if odd_last and n > 1:
        cluster = Cluster(cluster.devices[:-1] + [_device(data.draw, 1)], cluster.links)
    fast, fast_ii = dp_optimal(chain, cluster, return_value=True)
    full, full_ii = dp_optimal(chain, cluster, return_value=True, converge=False)
    assert list(fast) == list(full) and fast_ii == full_ii
