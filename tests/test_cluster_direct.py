"""The direct scheduler (pymtl_fp.direct) ticks the same CL/FL models as PyMTL3's simulator,
cycle for cycle: on random clusters (1-4 nodes, fl/cl mixes, chain or ring, random stalls, link
latencies and credits, serial or overlapping engines, 1F1B or GPipe), the PyMTL3-scheduled run,
the direct run and the direct run with quiet-cycle skipping give the same report (every cycle
count, state statistic, mark, link figure and loss), the same logits and the same weights."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, default_link, engine_for_net
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.direct import Channel, DirectError, DirectSim
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import tiny_digits_net
from pymtl_fp.tb.hypothesis_profiles import examples

NET = load_net("lenet-digits")
PREC = "8"
FMT = NET.precision(PREC)
ENGINE = engine_for_net(NET, PREC)
TINY = tiny_digits_net()
TINY_ENGINE = engine_for_net(TINY, PREC)
TCFG = TrainConfig(PREC, lr_log2=3, seed=11)
#: report entries that are measurements of the simulator, not of the simulated cluster
MEASURED = ("wall_seconds", "sim_cycles_per_second", "cpu_seconds", "sim_cycles_per_cpu_second", "simulator",
            "skipped_cycles", "skipped_component_edges")


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:16], FMT.act), split.y_train[:16]


def _simulated(rep: dict) -> dict:
    return {k: v for k, v in rep.items() if k not in MEASURED}


def _three_ways(data, levels, *, steps=1, batch=2, stall=None, topology="chain", link=None, overlap=False,
                schedule="1f1b", engine=ENGINE, net=NET):
    images, labels = data
    params = quantize_params(net, init_params_float64(net, 3), PREC)
    ccfg = ClusterConfig.homogeneous(len(levels), engine, link, topology=topology)
    kw = dict(steps=steps, batch=batch, levels=levels, stall=stall)
    mapping = Mapping(overlap=overlap, schedule=schedule)
    runs = {name: train_on_cluster(net, params, images, labels, TCFG, ccfg, mapping, kernel=kernel, skip=skip, **kw)
            for name, kernel, skip in (("pymtl", "pymtl", False), ("direct", "direct", False),
                                       ("skipping", "direct", True))}
    ref = runs["pymtl"]
    for name in ("direct", "skipping"):
        run = runs[name]
        assert run.cycles == ref.cycles, f"{name}: {run.cycles} cycles, PyMTL3 {ref.cycles}"
        assert _simulated(run.report) == _simulated(ref.report), f"{name}: the report differs from PyMTL3's"
        assert all(np.array_equal(a, b) for a, b in zip(run.logits, ref.logits, strict=True))
        assert params_equal(run.params, ref.params)
    want, _ = golden_steps(net, params, images, labels, TCFG, steps, batch)
    assert params_equal(ref.params, want)
    return runs


@pytest.mark.slow
@pytest.mark.cl
@pytest.mark.parametrize("n", [1, 2, 4])
def test_direct_and_skipping_equal_pymtl3_on_the_default_shape(data, n):
    runs = _three_ways(data, ["cl"] * n, steps=2, batch=2, overlap=True)
    skipping, direct = runs["skipping"].report, runs["direct"].report
    assert skipping["skipped_component_edges"] > 0, "no quiet component edge was skipped"
    if n == 1:  # (one node: its engine's long commands leave the whole cluster quiet)
        assert skipping["skipped_cycles"] > 0, "no quiet span was skipped"
    assert direct["skipped_cycles"] == direct["skipped_component_edges"] == 0


@pytest.mark.cl
@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(levels=st.lists(st.sampled_from(["fl", "cl"]), min_size=1, max_size=3),
       stall=st.one_of(st.none(), st.tuples(st.floats(0.05, 0.4), st.integers(0, 1000))),
       latency=st.integers(1, 30), credits=st.integers(1, 6), ring=st.booleans(), overlap=st.booleans(),
       schedule=st.sampled_from(["1f1b", "gpipe"]), batch=st.integers(1, 3))
def test_direct_and_skipping_equal_pymtl3_on_random_clusters(data, levels, stall, latency, credits, ring, overlap,
                                                             schedule, batch):
    """On the tiny digits net (every layer kind in a quarter of lenet-digits' cycles)."""
    link = default_link(TINY_ENGINE.stream_bits, latency).replace(credits=credits)
    _three_ways(data, levels, batch=batch, stall=stall, link=link, topology="ring" if ring and len(levels) > 1
                else "chain", overlap=overlap, schedule=schedule, engine=TINY_ENGINE, net=TINY)


@pytest.mark.cl
def test_direct_equals_pymtl3_with_the_command_register(data):
    """Engines with the command register (``EngineConfig.pipelined_cmd``: ``cmd.rdy`` from
    registers, a held command counts as busy) in a 2-node cluster, overlapping: the direct and
    skipping runs equal PyMTL3's, and the weights the golden model's.  The step's cycles differ
    from the plain engines' (a command offered to an idle engine starts a cycle later, but the
    router's sequencer moves on at the handshake, while the register may still hold the command)."""
    assert ENGINE.pipelined_cmd  # (the cluster's default engine)
    runs = _three_ways(data, ["cl", "cl"], batch=2, overlap=True)
    plain = _three_ways(data, ["cl", "cl"], batch=2, overlap=True, engine=ENGINE.replace(pipelined_cmd=False))
    assert runs["pymtl"].cycles != plain["pymtl"].cycles


def test_the_direct_kernel_refuses_what_it_cannot_tick(data):
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 3), PREC)
    ccfg = ClusterConfig.homogeneous(1, ENGINE)
    with pytest.raises(ClusterError, match="direct kernel needs every node at fl or cl"):
        train_on_cluster(NET, params, images, labels, TCFG, ccfg, steps=1, batch=1, levels=["rtl"], kernel="direct")
    with pytest.raises(ClusterError, match="unknown simulation kernel"):
        train_on_cluster(NET, params, images, labels, TCFG, ccfg, steps=1, batch=1, levels=["cl"], kernel="fast")


def test_a_component_without_the_protocol_is_refused():
    from pymtl3 import Bits8, Component, update_ff
    from pymtl3.stdlib.stream.ifcs import SendIfcRTL

    class Plain(Component):
        def construct(s):
            s.out = SendIfcRTL(Bits8)

            @update_ff
            def up():
                s.out.val <<= 1

    class Top(Component):
        def construct(s):
            s.p = Plain()

    top = Top()
    top.elaborate()
    with pytest.raises(DirectError, match=r"Plain .* has update blocks but no direct protocol"):
        DirectSim(top)


def test_a_channel_fires_only_on_val_and_rdy():
    ch = Channel("x")
    assert not ch.fire()
    ch.val = 1
    assert not ch.fire()
    ch.rdy = 1
    assert ch.fire()
