"""The FPGA compute model (E engines of P x P, cycles from pymtl_fp.timing) and the device /
link data."""

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymtl_fp.cost.layer import engine_layer_cycles
from pymtl_fp.explore.devices import (
    DEVICES,
    DeviceError,
    Precision,
    device_from_dict,
    get_device,
)
from pymtl_fp.explore.fpga_fit import over_budget
from pymtl_fp.explore.fpga_model import (
    EngineArray,
    engines_for,
    layer_cycles,
    tiled_layer_cycles,
)
from pymtl_fp.explore.layers import NetBuilder
from pymtl_fp.explore.links import ENCODING_64B66B, LinkError, parse_link
from pymtl_fp.explore.zoo import get_network


def _conv(c, k, h, r, stride=1, pad=0, groups=1):
    b = NetBuilder("t", (c, h, h))
    b.conv("x", k, r, stride=stride, pad=pad, groups=groups)
    return b.layers[0]


def test_layer_cycles_are_the_busiest_engine_share():
    ly = _conv(c=70, k=40, h=10, r=3)
    # 2 engines of 32x32: 20 channels each -> KT = 1, CT = ceil(70/32) = 3; no padding, so
    # every one of the 3x3 taps of the 8x8 outputs is a step; + 3 pipeline cycles
    got = layer_cycles(ly, EngineArray(32, 2))
    assert got["fp"] == 1 * 3 * 9 * 64 + 3
    assert got == engine_layer_cycles(ly, 32, k=20)
    # 3 engines: ceil(40/3) = 14 channels on the busiest one
    assert layer_cycles(ly, EngineArray(16, 3), needs_dx=False, batch=4) == \
        engine_layer_cycles(ly, 16, needs_dx=False, k=14, batch=4)
    assert layer_cycles(ly, EngineArray(16, 3), needs_dx=False)["bp"] == 0


@given(c=st.integers(1, 80), k=st.integers(1, 80), h=st.integers(5, 12),
       r=st.sampled_from([1, 3, 5]), P=st.integers(1, 32), E=st.integers(1, 8))
def test_cycles_never_beat_the_peak_and_more_engines_never_slower(c, k, h, r, P, E):
    ly = _conv(c, k, h, r)      # no padding: every MAC of fp_macs is a real one
    arr, more = EngineArray(P, E), EngineArray(P, E + 1)
    cyc, cyc_more = layer_cycles(ly, arr), layer_cycles(ly, more)
    for op in ("fp", "bp", "wg"):
        assert cyc[op] * arr.lanes >= ly.fp_macs
        assert cyc_more[op] <= cyc[op]


@given(k=st.integers(1, 96), h=st.integers(2, 12), E=st.integers(1, 4))
def test_shares_are_monotone(k, h, E):
    ly = _conv(12, k, h, 3, pad=1)
    arr = EngineArray(8, E)
    by_k = [sum(layer_cycles(ly, arr, k=i).values()) for i in range(k + 1)]
    by_h = [sum(layer_cycles(ly, arr, ho=i).values()) for i in range(h + 1)]
    assert by_k[0] == 0 and by_h[0] == 0
    assert all(a <= b for a, b in itertools.pairwise(by_k))
    assert all(a <= b for a, b in itertools.pairwise(by_h))


@pytest.mark.parametrize("E", [1, 4])
def test_square_engines_are_nearly_fully_used_on_big_vgg_layers(E):
    net = get_network("vgg16")
    ly = max((x for x in net.mac_layers if x.kind == "conv" and x.K == x.C == 512),
             key=lambda x: x.fp_macs)        # conv4_2 / conv4_3: 512 -> 512 channels, 28 x 28
    assert (ly.R, ly.stride, ly.pad, ly.Ho) == (3, 1, 1, ly.in_shape[1])
    # the engine skips padding taps: per axis 3 taps x Ho outputs minus the 2 border taps
    useful = ly.K * ly.C * (3 * ly.Ho - 2) * (3 * ly.Wo - 2)
    arr = EngineArray(32, E)
    for op in ("fp", "wg"):
        util = useful / (arr.lanes * layer_cycles(ly, arr, batch=32)[op])
        assert 0.95 < util <= 1.0, (op, util)


def test_add_layers_use_the_column_lanes():
    b = NetBuilder("t", (8, 4, 4))
    b.conv("a", 8, 1)
    b.conv("b", 8, 1)
    b.add("s", "a", "b")
    add = b.layers[-1]
    # 128 outputs on 2 engines x 8 columns: 8 cycles forward, nothing backward
    assert layer_cycles(add, EngineArray(8, 2)) == {"fp": 8, "bp": 0, "wg": 0}


def test_tiles_cost_at_least_the_untiled_layer():
    arr = EngineArray(16, 3)
    for ly in get_network("alexnet").mac_layers:
        full = tiled_layer_cycles(ly, arr, ly.K, ly.C, 1)
        assert full.pop("fp_batch") is False  # (channel-parallel only unless asked)
        assert full == layer_cycles(ly, arr, k=ly.K // ly.groups) if ly.groups == 1 else True
        small = tiled_layer_cycles(ly, arr, 8, 8, 1)
        for op in ("fp", "bp", "wg"):
            assert small[op] >= full[op]
    with pytest.raises(ValueError):
        tiled_layer_cycles(ly, arr, 0, 8, 1)


def test_engines_from_the_dsp_budget():
    assert engines_for(12312) == EngineArray(32, 12)    # 12 * 1024 = 12288 <= 12312
    assert engines_for(100) == EngineArray(10, 1)       # smaller than one 32x32 engine
    assert str(EngineArray.parse("6x32")) == "6x32"
    for bad in ("16by8", "2x64", "0x8", "x"):
        with pytest.raises(ValueError, match="ENGINESxP"):
            EngineArray.parse(bad)
    with pytest.raises(ValueError):
        engines_for(0)


def test_devices_match_datasheets():
    # AMD/Xilinx DS180 and DS890 product tables
    v7 = get_device("xc7vx690t")
    assert (v7.dsp, v7.bram36, v7.transceivers) == (3600, 1470, 80)
    assert math.isclose(v7.onchip_bits / 1024, 52920)            # 52,920 Kb of BRAM
    vu9p = get_device("vu9p")
    assert (vu9p.dsp, vu9p.bram36, vu9p.uram, vu9p.transceivers) == (6840, 2160, 960, 120)
    assert math.isclose(vu9p.onchip_bits / 1024 / 1024, 75.9375 + 270, rel_tol=1e-9)
    assert (v7.luts, v7.ffs, vu9p.luts, vu9p.ffs) == (433_200, 866_400, 1_182_240, 2_364_480)
    for dev in DEVICES.values():
        for bits in (16, 8):
            p = Precision.bits(bits)
            fit = dev.fit(p)
            arr, dsp_arr = fit.array, fit.dsp_array
            assert arr == dev.default_array(p) and arr.lanes <= dsp_arr.lanes
            budget = dev.lane_budget(p)
            if budget >= 32 * 32:     # the DSPs: as many 32x32 engines as fit
                assert dsp_arr.P == 32 and budget - 32 * 32 < dsp_arr.lanes <= budget
            else:                     # one engine, the largest square that fits
                assert dsp_arr.E == 1 and dsp_arr.P ** 2 <= budget < (dsp_arr.P + 1) ** 2
            # the logic fits, and one engine more (or a side one larger) would not: it binds
            assert over_budget(dev, p, arr) is None
            if arr != dsp_arr:
                bigger = EngineArray(arr.P, arr.E + 1) if arr.E > 1 or arr.P == dsp_arr.P else EngineArray(arr.P + 1)
                assert over_budget(dev, p, bigger) is not None and fit.binding in ("LUTs", "FFs")
                assert fit.binding in fit.note and str(dsp_arr) in fit.note


def test_the_690t_holds_one_32x32_engine_of_todays_structure():
    """At 16 bits a 32x32 engine takes about 280k logic LUTs (accumulators, adder trees and
    requantizers in the fabric), so the 690T whose DSPs would hold three fits one; a part without
    LUT/FF counts keeps its DSP array and says it was not checked."""
    fit = get_device("xc7vx690t").fit(Precision())
    assert fit.array == EngineArray(32, 1) and fit.dsp_array == EngineArray(32, 3) and fit.binding == "LUTs"
    mine = device_from_dict({"name": "mine", "dsp": 3600, "bram36": 10})
    assert mine.fit(Precision()).array == EngineArray(32, 3) and "not checked" in mine.fit(Precision()).note
    with pytest.raises(DeviceError, match="its LUTs and FFs hold no engine, not even 1x1"):
        device_from_dict({"name": "small", "dsp": 3600, "bram36": 10, "luts": 5000}).fit(Precision())


def test_device_file_entries():
    d = device_from_dict({"part": "vu9p", "clock_mhz": 300, "array": [4, 32]})
    assert d.clock_mhz == 300 and d.default_array() == EngineArray(32, 4)
    d = device_from_dict({"name": "mine", "dsp": 100, "bram36": 10})
    assert d.family == "custom"
    for bad in ({"part": "nope"}, {"name": "x", "dsp": 10}, {"part": "vu9p", "dsp": 1.5},
                {"part": "vu9p", "colour": 1}, {"part": "vu9p", "array": [1]},
                {"part": "vu9p", "array": [2, 64]}):
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
