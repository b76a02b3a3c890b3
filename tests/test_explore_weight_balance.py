"""FPDeep's weight balancing at paper scale (explore.weight_balance): placements worked out by
hand, the optimum against closed forms and exhaustive search, and the link cost."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.explore.chain import Chain
from pymtl_fp.explore.devices import Precision
from pymtl_fp.explore.weight_balance import balance, staging_bits, stream_bits
from pymtl_fp.explore.zoo import get_network
from pymtl_fp.tb.hypothesis_profiles import examples


def test_an_overflow_goes_to_the_nearest_room():
    # FPGA 0 holds 10 with room for 6: 4 go one hop to FPGA 1 (not two hops to FPGA 2)
    b = balance([10, 2, 2], [8, 0, 0], 6)
    assert np.allclose(b.flow, [4, 0]) and np.allclose(b.held, [6, 6, 2])
    assert np.allclose(b.weights, [4, 4, 0]) and b.exporters.tolist() == [True, False, False]
    assert b.bit_hops == pytest.approx(4)
    # mirrored: the chain has no preferred direction
    m = balance([2, 2, 10], [0, 0, 8], 6)
    assert np.allclose(m.flow, [0, -4]) and np.allclose(m.held, [2, 6, 6])


def test_the_exporter_keeps_its_staging_and_fpga_1_relays():
    # staging 1 on FPGA 0: 11 to place, 5 leave it; FPGA 1 fills to 6 and relays 1 to FPGA 2
    b = balance([10, 2, 2], [8, 0, 0], 6, staging=1)
    assert np.allclose(b.flow, [5, 1]) and np.allclose(b.held, [6, 6, 3])
    assert np.allclose(b.weights, [3, 4, 1])


def test_what_cannot_fit_is_spread_evenly():
    b = balance([20, 2, 2], [18, 0, 0], 6)
    assert np.allclose(b.held, [8, 8, 8]) and np.allclose(b.flow, [12, 6])
    # an FPGA keeps what is not weights: 15 of FPGA 0's 20 cannot move
    b = balance([20, 2, 2], [5, 0, 0], 6)
    # (with the largest load 15 wherever it goes, the 5 go the one hop to FPGA 1)
    assert np.allclose(b.held, [15, 7, 2])


def test_nothing_moves_where_everything_fits():
    b = balance([5, 6, 1], [5, 6, 1], 6, staging=3)
    assert np.all(b.flow == 0) and np.allclose(b.held, [5, 6, 1]) and not b.exporters.any()
    one = balance([100.0], [90.0], 6)
    assert one.flow.size == 0 and one.held.tolist() == [100.0]


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="movable"):
        balance([5, 6], [6, 0], 4)
    with pytest.raises(ValueError, match="capacity"):
        balance([5, 6], [1, 0], 0)


def _fewest_bit_hops(excess, lim) -> int:
    """Exhaustive search: the fewest bit-hops of integer exports ``x`` (``excess <= x <= lim``,
    summing to 0); the flow across cut ``j`` is the prefix sum of the exports."""
    ranges = [range(int(lo), int(hi) + 1) for lo, hi in zip(excess, lim)]
    return min(sum(abs(p) for p in np.cumsum(x)[:-1]) for x in itertools.product(*ranges) if sum(x) == 0)


@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), min_size=1, max_size=5),
       st.integers(1, 8))
@settings(max_examples=examples(150), deadline=None)
def test_the_placement_is_optimal(items, cap):
    """Against closed forms and exhaustive search.  Only an FPGA over ``cap`` gives weights away
    (at most its movable ones), so the smallest largest load any placement reaches is
    ``max(total / N, max_i (load_i - lim_i))`` (a chain can realise any exports of sum 0 as prefix
    sums).  Where that is within ``cap``, the fewest bit-hops are found by enumerating every
    integer export vector (the flows' constraint matrix is totally unimodular, so an integral
    optimum exists)."""
    load = np.array([a + b for a, b in items], dtype=float)
    mov = np.array([a for a, _ in items], dtype=float)
    n = len(load)
    b = balance(load, mov, cap)
    lim = np.where(load > cap, mov, 0.0)
    best_top = max(load.sum() / n, float((load - lim).max()))
    exports = np.diff(np.r_[0.0, b.flow, 0.0])  # f[i] - f[i - 1]
    # conservation, the export limits and the loads the flows imply
    assert b.held.sum() == pytest.approx(load.sum())
    assert np.all(exports <= lim + 1e-6)
    assert np.allclose(b.held, load - exports, atol=1e-6)
    if load.max() <= cap:
        assert np.all(b.flow == 0)
        return
    assert b.held.max() == pytest.approx(max(cap, best_top), abs=1e-6)
    if best_top > cap:
        return
    assert b.bit_hops == pytest.approx(_fewest_bit_hops(load - cap, lim), abs=1e-6)


def test_ram_sizes_differ_per_fpga():
    # FPGA 0 sheds 4: FPGA 1 has room for 1 (1 hop), FPGA 2 takes 3 (2 hops, FPGA 1 relays)
    b = balance([10, 2, 2], [8, 0, 0], [6, 3, 9])
    assert np.allclose(b.flow, [4, 3]) and np.allclose(b.held, [6, 3, 5]) and b.bit_hops == pytest.approx(7)
    # one RAM size given per FPGA places as the scalar does
    s, v = balance([10, 2, 2], [8, 0, 0], 6, staging=1), balance([10, 2, 2], [8, 0, 0], [6, 6, 6], staging=1)
    assert np.allclose(s.flow, v.flow) and np.allclose(s.held, v.held)
    with pytest.raises(ValueError, match="capacity"):
        balance([5, 6], [1, 0], [4, 0])


@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(1, 8)), min_size=1, max_size=5))
@settings(max_examples=examples(150), deadline=None)
def test_the_placement_is_optimal_with_ram_sizes_per_fpga(items):
    """FPGAs of different RAM sizes: the smallest largest load as a share of its FPGA's RAM is
    ``t = max(sum load / sum cap, max_i (load_i - lim_i) / cap_i)`` (the exports only have to
    cover each FPGA's excess over ``t cap_i`` and sum to 0); where ``t <= 1`` everything fits and
    the fewest bit-hops are those of exhaustive search."""
    load = np.array([a + b for a, b, _ in items], dtype=float)
    mov = np.array([a for a, _, _ in items], dtype=float)
    cap = np.array([c for _, _, c in items], dtype=float)
    b = balance(load, mov, cap)
    lim = np.where(load > cap, mov, 0.0)
    t = max(load.sum() / cap.sum(), float(((load - lim) / cap).max()))
    exports = np.diff(np.r_[0.0, b.flow, 0.0])
    assert b.held.sum() == pytest.approx(load.sum())
    assert np.all(exports <= lim + 1e-6) and np.allclose(b.held, load - exports, atol=1e-6)
    if np.all(load <= cap):
        assert np.all(b.flow == 0)
        return
    assert float((b.held / cap).max()) == pytest.approx(max(1.0, t), abs=1e-6)
    if t > 1:
        return
    assert b.bit_hops == pytest.approx(_fewest_bit_hops(load - cap, lim), abs=1e-6)


def test_streams_cross_each_cut_towards_the_user_and_sums_back():
    # 48 bits of storage = one 16-bit weight and its 32-bit accumulator, kept right of cut 0;
    # batch 4: 2 x 16 / 4 = 8 bits a image leftward, 16 / 4 = 4 back
    right, left = stream_bits([48.0, 0.0, -96.0], weight_bits=16, acc_bits=32, grad_bits=16, batch=4)
    assert right.tolist() == [4.0, 0.0, 16.0] and left.tolist() == [8.0, 0.0, 8.0]


def test_staging_is_two_weight_tiles_and_a_sum_tile_of_the_largest_conv():
    net = get_network("vgg16")
    prec = Precision()
    chain = Chain(net, prec, 32, 64, "auto")
    whole = staging_bits(chain, [0, chain.M], 32)
    # conv5_x / conv4_2..3: 512 input channels, 3x3: 32 x 512 x 9 weights a tile
    assert whole.tolist() == [32 * 512 * 9 * (2 * prec.weight_bits + prec.acc_bits)]
    conv1 = next(m for m in range(1, chain.M + 1) if chain.end_u[m] == 0 and chain.end_p[m] == 1)
    part = staging_bits(chain, [0, conv1, chain.M], 32)
    c1 = chain.units[0].mac
    assert part[0] == min(c1.K, 32) * c1.C * c1.R * c1.S * (2 * prec.weight_bits + prec.acc_bits)
