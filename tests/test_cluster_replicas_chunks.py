"""The replicas' all-reduce in chunks (:mod:`pymtl_fp.cluster.compiler.collectives`): with routers
whose output buffers hold far fewer elements than a layer's weight gradients, data-parallel and
hybrid runs (a pass-through node included) still end bit-exact with one node's training; an
all-reduce that fits one output buffer compiles to one chunk; routers too small for a program's
chunks are refused in one line before any simulation."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.compiler.replicas import compile_replicas, replicas_for
from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
from pymtl_fp.cluster.isa import DST_FWD_OUT, MOVE, SRC_BWD_IN, SRC_FWD_IN, STORE
from pymtl_fp.cluster.run.train import compile_run, golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import SHARED_ROUTER

NET = load_net("lenet-digits")
PREC = "8"
ENGINE = engine_for_net(NET, PREC)
TCFG = TrainConfig(PREC, lr_log2=3, seed=7)
OUT_DEPTH = 16  # elements of each output buffer: a few words of the weight gradients


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:8], NET.precision(PREC).act), split.y_train[:8]


def _params():
    return quantize_params(NET, init_params_float64(NET, 0), PREC)


@pytest.mark.parametrize("n, parallel, groups", [(2, "data", None), (4, "hybrid", 2)])
def test_small_output_buffers_all_reduce_in_chunks_bit_exact(data, n, parallel, groups):
    images, labels = data
    params, ccfg, mapping = _params(), ClusterConfig.homogeneous(n, ENGINE), Mapping(parallel=parallel, groups=groups)
    router = SHARED_ROUTER.replace(out_depth=OUT_DEPTH)
    _, _, _, cprog = compile_run(NET, ccfg, params, TCFG, mapping, steps=1, batch=4, router=router)
    # the first member sends its partial sums chunk by chunk, each chunk's sums back before the next
    # (the last stage's first member, node size - 1: the largest all-reduces, 768 elements, which
    # unchunked hang these routers: its STORE waits for room the broadcast coming back has taken)
    size = replicas_for(parallel, n, 4, groups).size
    ops = cprog.nodes[size - 1].ops
    pairs = [(a.count, b.count) for a, b in pairwise(ops)
             if a.kind == STORE and a.dmask == DST_FWD_OUT and b.kind == MOVE and b.src == SRC_BWD_IN]
    assert all(a == b for a, b in pairs) and max(a for a, _ in pairs) == OUT_DEPTH
    assert sum(a for a, _ in pairs) > 40 * OUT_DEPTH  # many output buffers' worth
    if parallel == "hybrid":  # node 2 passes stage 1's all-reduce between nodes 1 and 3, in chunks
        fwd = [ins.count for ins in cprog.nodes[2].ops if ins.kind == MOVE and ins.src == SRC_FWD_IN]
        bwd = [ins.count for ins in cprog.nodes[2].ops if ins.kind == MOVE and ins.src == SRC_BWD_IN]
        assert fwd.count(OUT_DEPTH) > 10 and bwd.count(OUT_DEPTH) == fwd.count(OUT_DEPTH)
    run = train_on_cluster(NET, params, images, labels, TCFG, ccfg, mapping, steps=1, batch=4, levels=["cl"] * n,
                           router=router)
    want, losses = golden_steps(NET, params, images, labels, TCFG, 1, 4)
    assert params_equal(run.params, want) and not params_equal(want, params)
    assert np.allclose(run.losses, losses)


def test_an_all_reduce_that_fits_one_output_buffer_is_one_chunk():
    ccfg, rep = ClusterConfig.homogeneous(2, ENGINE), replicas_for("data", 2, 4, None)
    whole = compile_replicas(NET, ccfg, rep, _params(), TCFG, 1, chunk=None)[1]
    fits = compile_replicas(NET, ccfg, rep, _params(), TCFG, 1, chunk=4096)[1]
    assert [p.ops for p in fits.nodes] == [p.ops for p in whole.nodes]


def test_routers_too_small_for_the_chunks_are_refused_before_simulating(data):
    images, labels = data
    params, ccfg, mapping = _params(), ClusterConfig.homogeneous(2, ENGINE), Mapping(parallel="data")
    compiled = compile_run(NET, ccfg, params, TCFG, mapping, steps=1, batch=4)  # (for the default routers)
    with pytest.raises(ClusterError, match=r"all-reduce sends chunks of .* compile the run for those routers"):
        train_on_cluster(NET, params, images, labels, TCFG, ccfg, mapping, steps=1, batch=4, levels=["cl"] * 2,
                         router=SHARED_ROUTER.replace(out_depth=OUT_DEPTH), compiled=compiled)
    with pytest.raises(ClusterError, match=r"out_depth=2\) hold less than one 4-element word"):
        train_on_cluster(NET, params, images, labels, TCFG, ccfg, mapping, steps=1, batch=4, levels=["cl"] * 2,
                         router=SHARED_ROUTER.replace(out_depth=2))
