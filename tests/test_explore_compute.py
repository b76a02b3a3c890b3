"""The per-layer compute model (the stand-in for pymtl_fp.timing) and the device / link data."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymtl_fp.explore.compute_model import (
    ArrayShape,
    layer_cycles,
    mac_op_cycles,
    tiled_mac_cycles,
)
from pymtl_fp.explore.devices import (
    DEVICES,
    DeviceError,
    Precision,
    device_from_dict,
    get_device,
)
from pymtl_fp.explore.layers import NetBuilder
from pymtl_fp.explore.links import ENCODING_64B66B, LinkError, parse_link
from pymtl_fp.explore.zoo import get_network


def _conv(c, k, h, r, stride=1, pad=0, groups=1):
    b = NetBuilder("t", (c, h, h))
    b.conv("x", k, r, stride=stride, pad=pad, groups=groups)
    return b.layers[0]


def test_brief_formula_strict():
    ly = _conv(c=70, k=40, h=10, r=3, pad=1)
    arr = ArrayShape(16, 32)
    # ceil(K/rows) * ceil(C/cols) * R*S * Ho*Wo, plus rows+cols of fill
    assert mac_op_cycles(ly, arr, mode="strict") == 3 * 3 * 9 * 100 + 48
    # folding the 3x3 window onto the columns: ceil(70*9/32) = 20 < 3*9
    assert mac_op_cycles(ly, arr, mode="fold") == 3 * 20 * 100 + 48


def test_exact_when_shapes_divide():
    ly = _conv(c=64, k=64, h=8, r=3, pad=1)
    arr = ArrayShape(16, 64)
    fill = arr.rows + arr.cols
    assert mac_op_cycles(ly, arr) - fill == ly.fp_macs // arr.lanes


@given(c=st.integers(1, 80), k=st.integers(1, 80), h=st.integers(3, 12),
       r=st.sampled_from([1, 3, 5]), rows=st.integers(1, 40), cols=st.integers(1, 80),
       mode=st.sampled_from(["fold", "strict"]))
def test_cycles_never_beat_the_array_peak(c, k, h, r, rows, cols, mode):
    ly = _conv(c, k, h, r, pad=r // 2)
    arr = ArrayShape(rows, cols)
    cyc = layer_cycles(ly, arr, needs_dx=True, mode=mode)
    for op in ("fp", "bp", "wg"):
        assert cyc[op] * arr.lanes >= ly.fp_macs
    assert mac_op_cycles(ly, arr, mode="fold") <= mac_op_cycles(ly, arr, mode="strict")
    assert layer_cycles(ly, arr, needs_dx=False)["bp"] == 0


@given(k=st.integers(1, 96), h=st.integers(2, 12), rows=st.integers(1, 32))
def test_shares_are_monotone(k, h, rows):
    ly = _conv(12, k, h, 3, pad=1)
    arr = ArrayShape(rows, 24)
    by_k = [mac_op_cycles(ly, arr, k=i) for i in range(k + 1)]
    by_h = [mac_op_cycles(ly, arr, ho=i) for i in range(h + 1)]
    assert by_k[0] == 0 and by_h[0] == 0
    assert all(a <= b for a, b in itertools.pairwise(by_k))
    assert all(a <= b for a, b in itertools.pairwise(by_h))
    # splitting channels never saves cycles (ceil is superadditive)
    for i in range(1, k):
        assert by_k[i] + mac_op_cycles(ly, arr, k=k - i) >= by_k[k]


def test_grouped_conv_counts_groups():
    ly = _conv(c=32, k=64, h=6, r=3, pad=1, groups=2)
    arr = ArrayShape(16, 16)
    # per group: ceil(32/16) row tiles x ceil(16*9/16) = 9 folded col tiles x 36 positions
    assert mac_op_cycles(ly, arr) == 2 * (2 * 9 * 36) + 32
    assert ly.fp_macs == 64 * 16 * 9 * 36


@pytest.mark.parametrize("name", ["vgg16", "alexnet", "vgg-cifar"])
def test_tiled_equals_untiled_at_full_tiles(name):
    arr = ArrayShape(16, 96)
    for ly in get_network(name).mac_layers:
        full = tiled_mac_cycles(ly, arr, ly.K, ly.C)
        assert full == mac_op_cycles(ly, arr) - arr.rows - arr.cols
        small = tiled_mac_cycles(ly, arr, np.array([8]), np.array([8]))[0]
        assert small >= full


def test_devices_match_datasheets():
    # AMD/Xilinx DS180 and DS890 product tables
    v7 = get_device("xc7vx690t")
    assert (v7.dsp, v7.bram36, v7.transceivers) == (3600, 1470, 80)
    assert math.isclose(v7.onchip_bits / 1024, 52920)            # 52,920 Kb of BRAM
    vu9p = get_device("vu9p")
    assert (vu9p.dsp, vu9p.bram36, vu9p.uram, vu9p.transceivers) == (6840, 2160, 960, 120)
    assert math.isclose(vu9p.onchip_bits / 1024 / 1024, 75.9375 + 270, rel_tol=1e-9)
    for dev in DEVICES.values():
        for bits in (16, 8):
            p = Precision.bits(bits)
            arr = dev.default_array(p)
            assert arr.lanes <= dev.lane_budget(p) and arr.lanes >= 0.8 * dev.lane_budget(p)


def test_device_file_entries():
    d = device_from_dict({"part": "vu9p", "clock_mhz": 300, "array": [32, 64]})
    assert d.clock_mhz == 300 and d.default_array() == ArrayShape(32, 64)
    d = device_from_dict({"name": "mine", "dsp": 100, "bram36": 10})
    assert d.family == "custom"
    for bad in ({"part": "nope"}, {"name": "x", "dsp": 10}, {"part": "vu9p", "dsp": 1.5},
                {"part": "vu9p", "colour": 1}, {"part": "vu9p", "array": [1]}):
        with pytest.raises(DeviceError):
            device_from_dict(bad)


def test_link_specs():
    lk = parse_link("6x10G")
    assert math.isclose(lk.gbps, 3 * 10 * ENCODING_64B66B)
    assert parse_link("250G").gbps == 125
    assert parse_link("link40G").gbps == 40
    assert math.isinf(parse_link("inf").gbps)
    for bad in ("", "10", "1x10G", "fast", "x10G"):
        with pytest.raises(LinkError):
            parse_link(bad)
