"""The energy model: a constants file that refuses unsourced figures, activity counted two ways
that must agree (the instruction stream against the compiler's counts and the routers' measured
traffic), joules that behave as energy must (monotone in work, linear in time, bounded by the
constants' ranges), and the paper-scale estimate in explore (the cluster's CL == Verilator
equality of the energy section is in tests/test_cluster_verilated.py)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp import timing
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, default_link, engine_for_net
from pymtl_fp.cluster.run.train import train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.energy import constants
from pymtl_fp.energy.activity import PHASES, NodeActivity, command_traffic
from pymtl_fp.energy.constants import EnergyConstantsError, parse
from pymtl_fp.energy.model import BOUNDS, ROWS, node_joules
from pymtl_fp.explore.devices import Precision, get_device
from pymtl_fp.explore.links import parse_link
from pymtl_fp.explore.scaling import sweep
from pymtl_fp.explore.zoo import get_network
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net
from pymtl_fp.tb.hypothesis_profiles import examples

pytestmark = pytest.mark.cl

NET = load_net("lenet-digits")
PREC = "8"
FMT = NET.precision(PREC)
STEPS, BATCH = 2, 4
US = constants.family("ultrascale+")


# ---- the constants file -------------------------------------------------------------------------

def test_every_figure_has_a_range_and_a_source():
    for fam in constants.families().values():
        for name, c in [(f"mac.{b}", c) for b, c in fam.macs.items()] + list(fam.consts.items()):
            assert c.low <= c.value <= c.high, (fam.name, name)
            assert len(c.source) > 20, (fam.name, name, "source too thin to find")
    assert set(constants.fpga_families()) == {"7series", "ultrascale+"}


@pytest.mark.parametrize("entry,match", [
    ({"value": 1, "low": 1, "high": 1}, "no 'source'"),
    ({"value": 1, "low": 2, "high": 3, "source": "x"}, "low <= value <= high"),
    ({"value": "a", "low": 1, "high": 1, "source": "x"}, "must be numbers"),
    ({"value": 1, "low": 1, "high": 1, "source": "  "}, "empty source"),
])
def test_a_figure_without_range_or_source_is_refused(entry, match):
    with pytest.raises(EnergyConstantsError, match=match):
        parse({"fam": {"mac": {"8": entry}}})


def test_mac_energy_takes_the_narrowest_width_that_holds_the_operands():
    assert US.mac(8) is US.macs[8] and US.mac(5) is US.macs[8]
    assert US.mac(9) is US.macs[16] and US.mac(32) is US.macs[32]
    with pytest.raises(EnergyConstantsError, match="no MAC energy for 40-bit"):
        US.mac(40)
    with pytest.raises(EnergyConstantsError, match="unknown device family 'xc9'"):
        constants.family("xc9")
    with pytest.raises(ClusterError, match="unknown FPGA family 'asic45'"):
        ClusterConfig((engine_for_net(NET, PREC),), default_link(), fpga_family="asic45")


# ---- activity of a simulated run --------------------------------------------------------------

@pytest.fixture(scope="module")
def run():
    split = load_digits_split(seed=0)
    images, labels = quantize_images(split.x_train[:8], FMT.act), split.y_train[:8]
    engines = tuple(engine_for_net(NET, PREC, P=p, act_depth=1024) for p in (4, 2))
    ccfg = ClusterConfig(engines, default_link(engines[0].stream_bits))
    params = quantize_params(NET, init_params_float64(NET, 1), PREC)
    r = train_on_cluster(NET, params, images, labels, TrainConfig(PREC, lr_log2=3, seed=3), ccfg, steps=STEPS,
                         batch=BATCH, levels=["cl", "cl"])
    return ccfg, r.report


def test_instruction_stream_macs_equal_the_compilers_count(run):
    """The activity walks the executed instructions; the report's MACs were counted by the code
    generator as it emitted them: two independent counts."""
    _, rep = run
    for node, act in zip(rep["node"], rep["energy"]["activity"]):
        assert sum(act["macs"].values()) == node["macs"] > 0
        for ph in PHASES:  # the array is never more than fully used
            assert act["macs"][ph] <= act["lane_cycles"][ph]
        # by phase and by buffer: the same bits
        assert sum(act["read_bits"].values()) == sum(act["buffer_reads"].values()) > 0
        assert sum(act["write_bits"].values()) == sum(act["buffer_writes"].values()) > 0
        # the engine computes within the cycles the router saw it busy
        assert 0 < act["engine_cycles"] <= act["cycles"]


def test_measured_link_bits_equal_the_compiled_traffic(run):
    """Bits the routers counted on their link outputs == elements the compiler planned on every
    link leaving a node, times the steps and the message width."""
    ccfg, rep = run
    planned = sum(lk["elements_per_step"] for lk in rep["links"] if lk["link"].startswith("node"))
    measured = sum(a["link_bits"] for a in rep["energy"]["activity"])
    assert measured == planned * STEPS * ccfg.link.msg_bits > 0


def test_run_energy_adds_up_and_lies_within_the_constants_range(run):
    ccfg, rep = run
    e = rep["energy"]
    for b in BOUNDS:
        assert e["total_joules"][b] == pytest.approx(sum(e["joules"][r][b] for r in ROWS))
    assert e["total_joules"]["low"] < e["total_joules"]["value"] < e["total_joules"]["high"]
    g = e["gops_per_joule"]
    assert g["low"] < g["value"] < g["high"]
    assert e["train_ops"] == 2 * sum(n["macs"] for n in rep["node"])  # no update MACs in this net's count
    # static: every node's device for the run's measured cycles at the report's clock
    static = US["static"].value * ccfg.n * rep["cycles_total"] / (rep["clock_mhz"] * 1e6)
    assert e["joules"]["static"]["value"] == pytest.approx(static)
    for row in ("forward", "backward_data", "weight_gradient", "communication", "control"):
        assert e["joules"][row]["value"] > 0, row


def test_command_traffic_is_one_operand_word_per_step():
    """For a 1x1 fwd (no padding: every step useful), reads are an X word and a W word per step,
    i.e. per MAC one weight and 1/P of an activation; writes are the outputs once."""
    ecfg = engine_for_net(NET, PREC, P=4)
    f = timing.ConvShape(n=2, c=8, k=8, h=3, w=3, r=1, s=1).fields(4)
    rd, wr = command_traffic(ecfg, "fwd", f)
    macs = timing.useful_macs("fwd", f)
    assert rd == {"X": macs * ecfg.act_bits / 4, "W": macs * ecfg.weight_bits}
    assert wr == {"O": 2 * 8 * 3 * 3 * max(ecfg.act_bits, ecfg.grad_bits)}


# ---- joules behave as energy ------------------------------------------------------------------

def _activity(draw_ints):
    macs, extra, rd, wr, link, busy, idle = draw_ints
    per = dict.fromkeys(PHASES, 0)
    return NodeActivity(0, 4, 8, macs={**per, "forward": macs}, lane_cycles={**per, "forward": macs + extra},
                        read_bits={**per, "forward": rd}, write_bits={**per, "forward": wr},
                        scalar_elems=dict(per), link_bits=link, busy_cycles=busy, cycles=busy + idle)


ints = st.tuples(*[st.integers(0, 10**9)] * 7)


@settings(max_examples=examples(60))
@given(ints, st.sampled_from(["7series", "ultrascale+"]))
def test_energy_is_monotone_in_work_and_linear_in_time(v, fam):
    fam = constants.family(fam)
    a = _activity(v)
    base = node_joules(a, fam, 1000, 2000, 200e6)
    # a useful MAC in place of an idle lane cycle costs more; more bits or cycles never cost less
    if a.lane_cycles["forward"] > a.macs["forward"]:
        more = dataclasses.replace(a, macs={**a.macs, "forward": a.macs["forward"] + 1})
        assert node_joules(more, fam, 1000, 2000, 200e6)["forward"] > base["forward"]
    # more MACs (each on its own clocked lane) or more link bits never cost less
    busier = dataclasses.replace(a, macs={**a.macs, "forward": a.macs["forward"] + 7},
                                 lane_cycles={**a.lane_cycles, "forward": a.lane_cycles["forward"] + 7},
                                 link_bits=a.link_bits + 32)
    jb = node_joules(busier, fam, 1000, 2000, 200e6)
    assert all(jb[r] >= base[r] for r in ROWS) and jb["forward"] > base["forward"]
    assert jb["communication"] > base["communication"]
    longer = dataclasses.replace(a, cycles=2 * a.cycles)
    j2 = node_joules(longer, fam, 1000, 2000, 200e6)
    assert j2["static"] == pytest.approx(2 * base["static"])
    assert j2["control"] >= base["control"]
    lo, hi = node_joules(a, fam, 1000, 2000, 200e6, "low"), node_joules(a, fam, 1000, 2000, 200e6, "high")
    for row in ROWS:
        assert lo[row] <= base[row] <= hi[row]


@settings(max_examples=examples(30))
@given(st.integers(1, 10**9), st.sampled_from(["7series", "ultrascale+"]), st.sampled_from(BOUNDS))
def test_zero_activity_costs_static_power_times_time_and_nothing_in_any_phase(cycles, fam, bound):
    fam = constants.family(fam)
    idle = _activity((0, 0, 0, 0, 0, 0, cycles))
    j = node_joules(idle, fam, 1000, 2000, 250e6, bound)
    assert j["static"] == pytest.approx(fam.get("static", bound) * cycles / 250e6)
    assert all(j[ph] == 0 for ph in PHASES)
    # (the clock still toggles every flip-flop: dynamic, not static, and no LUT toggles)
    assert j["control"] == pytest.approx(2000 * cycles * fam.get("ff_clock", bound) * 1e-12)


# ---- paper scale -------------------------------------------------------------------------------

def test_scaling_rows_carry_energy_and_eight_bits_cost_less():
    net, dev = get_network("vgg16"), get_device("xc7vx690t")
    links = [parse_link("6x10G")]
    r16 = sweep(net, dev, [1, 8], links, Precision.bits(16), batch=32)
    r8 = sweep(net, dev, [1, 8], links, Precision.bits(8), array=r16.array, batch=32)
    for a, b in zip(r16.rows, r8.rows):
        assert a["gops_per_j_low"] < a["gops_per_j"] < a["gops_per_j_high"]
        assert 0 < a["static_pct"] < 100
        # same engines, same cycles: narrower words only lower the MAC and buffer energy
        assert b["images_s"] == pytest.approx(a["images_s"])
        assert b["gops_per_j"] > a["gops_per_j"]
    one, eight = r16.rows
    assert eight["watts_per_fpga"] == pytest.approx(one["watts_per_fpga"], rel=0.2)


def test_a_faster_partition_of_the_same_chain_costs_less_energy_per_image():
    """ResNet-152 on the asymmetric 16-FPGA example: the same MACs in less time leave fewer idle
    lane cycles and less static energy, so the DP optimum beats FPDeep balancing beats the even
    split in GOPs/J; every FPGA is priced by its own family."""
    from pymtl_fp.energy.estimate import chain_energy
    from pymtl_fp.explore.chain import Chain
    from pymtl_fp.explore.clusterfile import example_path, load_cluster
    from pymtl_fp.explore.partition import compare

    cluster, _, _ = load_cluster(example_path())
    net = get_network("resnet152")
    evals = compare(Chain(net, max_pieces=4), cluster)
    en = {m: chain_energy(net, cluster, ev, 32) for m, ev in evals.items()}
    assert en["dp"]["gops_per_j"]["value"] > en["fpdeep"]["gops_per_j"]["value"] > en["even"]["gops_per_j"]["value"]
    for e in en.values():
        assert e["joules"]["value"] == pytest.approx(sum(e["rows"].values()))
        assert e["gops_per_j"]["low"] < e["gops_per_j"]["value"] < e["gops_per_j"]["high"]
