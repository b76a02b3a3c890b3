"""Moving LOADs earlier in a node program (:mod:`pymtl_fp.cluster.compiler.hoist`): what may be crossed
(buffer words, streams, router instructions, marks), the tables indexed by instruction follow
their instructions, and the 1F1B programs that move a backward pass's output gradient and the next
forward pass's input beside the per-image weight gradients train bit for bit as the golden step
(FL, CL, random stalls; the Verilated cluster in ``test_cluster_wgrad``) in fewer cycles."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymtl_fp.cluster import isa
from pymtl_fp.cluster.compiler import hoist
from pymtl_fp.cluster.compiler.compile import choose_partition, compile_pipeline
from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.program import NodeProgram
from pymtl_fp.cluster.config import ClusterConfig, default_link
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.engine import encoding, msgs
from pymtl_fp.engine.config import pipeline_fields
from pymtl_fp.golden.train import TrainConfig
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import seeded_params, small_cluster
from pymtl_fp.tb.hypothesis_profiles import examples

NET = load_net("lenet-digits")
PREC = "8"
TCFG = TrainConfig(PREC, lr_log2=3, seed=11)
X, D, O = msgs.BUF_X, msgs.BUF_D, msgs.BUF_O
P = 4


def _load(addr, count=64, src=isa.SRC_FWD_IN, target=X):
    return isa.load(src, target=target, addr=addr, count=count, ovl=1)


def _store(addr, count=64, target=O, dmask=isa.DST_FWD_OUT):
    return isa.store(dmask, target=target, addr=addr, count=count, ovl=1)


def _fwd(a0, d0=0):
    """A 3x3 conv over a 4-channel 4x4 map in X at ``a0`` (16 words), its result in O at ``d0``."""
    return isa.eng(op=encoding.OP["fwd"], n=1, c=4, ct=1, h=4, w=4, k=4, kt=1, r=3, s=3, ho=4, wo=4, pad=1,
                   a0=a0, a1=0, a2=0, d0=d0, ovl=1)


def test_what_a_block_of_loads_may_cross():
    block = [_load(100), _load(116)]  # X words 100..131
    assert hoist.may_cross(block, [_fwd(0), _fwd(32, d0=64), _store(0), _load(0, src=isa.SRC_BWD_IN, target=D)], P)
    assert not hoist.may_cross(block, [_fwd(120)], P)              # reads words the block writes
    assert not hoist.may_cross(block, [_load(130, src=isa.SRC_BWD_IN)], P)  # writes them too
    assert not hoist.may_cross(block, [_load(0, target=D)], P)     # takes from the same link
    assert not hoist.may_cross(block, [isa.move(isa.SRC_BWD_IN, isa.DST_BWD_OUT, 8)], P)  # a router move
    assert not hoist.may_cross(block, [_fwd(0).with_(done=3)], P)  # a report mark
    assert not hoist.may_cross([_load(100).with_(mark=1)], [_fwd(0)], P)
    assert not hoist.may_cross([_load(100), _store(0)], [_fwd(0)], P)  # only LOADs move
    assert not hoist.may_cross([_load(100, src=isa.SRC_SCRATCH)], [_fwd(0)], P)
    assert not hoist.may_cross([], [_fwd(0)], P)
    # a result written over the block's words, in O: no conflict in X
    assert hoist.may_cross(block, [_fwd(0, d0=100)], P)


def test_hoist_moves_the_block_and_renumbers_the_tables():
    ops = [_fwd(0), _store(0), _fwd(32), _load(100), _load(116), _fwd(48)]
    prog = NodeProgram(0, ops=list(ops), notes={0: "a", 2: "b", 5: "c"}, useful_macs={2: 7})
    nd = SimpleNamespace(ops=prog.ops, prog=prog, P=P)
    assert hoist.hoist(nd, 3, 5, 1)
    assert nd.ops == [ops[0], ops[3], ops[4], ops[1], ops[2], ops[5]]
    assert prog.notes == {0: "a", 4: "b", 5: "c"} and prog.useful_macs == {4: 7}
    assert not hoist.hoist(nd, 2, 3, 1)  # a LOAD in front of one from the same link
    assert not hoist.hoist(nd, 4, 5, 0)  # not a LOAD
    with pytest.raises(ValueError):
        hoist.hoist(nd, 3, 2, 0)


def _cluster(n, lanes=1, latency=8, pipelines=None):
    engines = tuple(e.replace(stream_lanes=lanes, **(pipelines or {})) for e in small_cluster(n, NET, PREC).engines)
    return ClusterConfig(engines, default_link(engines[0].stream_bits, latency, lanes))


def _compile(n, batch, lanes, wgrad="auto", pipelines=None):
    ccfg = _cluster(n, lanes, pipelines=pipelines)
    part = choose_partition(NET, ccfg, batch, Mapping(wgrad=wgrad))
    return compile_pipeline(NET, ccfg, part, seeded_params(NET, PREC), TCFG, 1,
                            Mapping(overlap=True, wgrad=wgrad))[1]


def test_1f1b_programs_move_the_next_input_in_front_of_the_backward_pass():
    """LeNet on 3 nodes, per-image weight gradients: node 1 (its upstream node computes little)
    takes the next image's input beside the weight gradients, in front of the backward pass (and,
    on engines without pipelines, its output gradient too); the last node does not (its upstream
    node's forward pass is not done by then), and with the weight gradients over the batch nothing
    moves."""
    bare = _compile(3, 8, 1, pipelines=pipeline_fields("none"))
    assert bare.nodes[1].hoisted.get("input", 0) > 0 and bare.nodes[1].hoisted.get("dy", 0) > 0
    cprog = _compile(3, 8, 1)
    hoisted = [p.hoisted for p in cprog.nodes]
    assert hoisted[1].get("input", 0) > 0
    assert hoisted[2].get("input", 0) == 0
    prog = bare.nodes[1]
    lo, hi = prog.loop
    ops = prog.ops[lo:hi + 1]
    # a fwd_in LOAD right behind a bwd_weight (the weight gradients) and before a pool_bwd
    kinds = [(ins.kind, ins.field("op"), ins.src) for ins in ops]
    found = any(kinds[i][1] == encoding.OP["bwd_weight"] and kinds[i + 1][:1] == (isa.LOAD,)
                and kinds[i + 1][2] == isa.SRC_FWD_IN for i in range(len(kinds) - 1))
    assert found
    assert not any(p.hoisted for p in _compile(3, 8, 1, wgrad="batch").nodes)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:16], NET.precision(PREC).act), split.y_train[:16]


def _run(data, n, level, lanes=1, stall=None, batch=8):
    images, labels = data
    params = seeded_params(NET, PREC)
    ccfg = _cluster(n, lanes)
    return train_on_cluster(NET, params, images, labels, TCFG, ccfg, Mapping(overlap=True, wgrad="auto"), steps=1,
                            batch=batch, levels=[level] * n, stall=stall), params


@pytest.mark.parametrize("n,level,stall", [(3, "cl", (0.3, 5)), (3, "fl", (0.2, 9)), (4, "cl", (0.25, 2)),
                                           (2, "cl", None)])
def test_moved_loads_train_bit_exact(data, n, level, stall):
    run, params = _run(data, n, level, stall=stall)
    images, labels = data
    want, _ = golden_steps(NET, params, images, labels, TCFG, 1, 8)
    assert params_equal(run.params, want)


@settings(max_examples=examples(4), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 4), batch=st.integers(4, 8), lanes=st.sampled_from([1, 4]), latency=st.integers(1, 12),
       stall=st.floats(0.0, 0.4), seed=st.integers(0, 1000), level=st.sampled_from(["fl", "cl"]),
       wgrad=st.sampled_from(["image", "auto"]), bands=st.sampled_from([0, 1]))
def test_moved_loads_property(data, n, batch, lanes, latency, stall, seed, level, wgrad, bands):
    """Any 1F1B pipeline of 2-4 nodes whose programs move LOADs (batches big enough for a
    backward pass between two forward passes), one or four elements a beat, random stalls and
    link latencies, per-image weight gradients, whole layers or bands: the golden step's weights."""
    images, labels = data
    params = seeded_params(NET, PREC)
    ccfg = _cluster(n, lanes, latency)
    run = train_on_cluster(NET, params, images[:batch], labels[:batch], TCFG, ccfg,
                           Mapping(overlap=True, wgrad=wgrad, bands=bands), steps=1, batch=batch, levels=[level] * n,
                           stall=(stall, seed))
    want, _ = golden_steps(NET, params, images[:batch], labels[:batch], TCFG, 1, batch)
    assert params_equal(run.params, want)


def test_moving_the_loads_saves_cycles(data, monkeypatch):
    """Side by side on the same CL cluster (one element a beat): the step takes fewer cycles
    with the LOADs moved than with them where the passes emit them."""
    moved, _ = _run(data, 3, "cl")
    monkeypatch.setattr(hoist, "hoist", lambda nd, lo, hi, dst: False)
    kept, _ = _run(data, 3, "cl")
    assert moved.cycles < kept.cycles
