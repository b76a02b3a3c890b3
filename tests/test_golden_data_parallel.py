"""Data-parallel training in the golden model is one node's step, bit for bit.

* For any split of the batch over replicas (random shares, 1..6 replicas, both nets, stochastic
  and nearest rounding, random step seeds), :func:`train_step_data_parallel` leaves exactly the
  weights and loss of :func:`train_step` on one node.
* The rule matters: rounding each replica's share before adding them (what an all-reduce of
  finished gradients does) differs from one node on the same data, and so does a replica that
  rounds its images as images ``0..`` of its share instead of at their place in the batch.
* Bad shares are refused.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden import data_parallel as dp
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params, train_step
from pymtl_fp.net import load_net
from pymtl_fp.numerics import requantize
from pymtl_fp.tb.hypothesis_profiles import examples

NETS = {name: load_net(name) for name in ("lenet-digits", "vgg-digits")}
PREC = "8"


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:16], NETS["lenet-digits"].precision(PREC).act), split.y_train[:16]


def _equal(a, b):
    return all(np.array_equal(a[n][k], b[n][k]) for n in a for k in ("w", "b"))


@settings(max_examples=examples(8), deadline=None)
@given(net=st.sampled_from(sorted(NETS)), batch=st.integers(1, 8), cuts=st.lists(st.integers(1, 7), max_size=5),
       seed=st.integers(0, 2**32 - 1), step=st.integers(0, 20), grad=st.sampled_from(["stochastic", "nearest"]),
       fwd=st.sampled_from(["nearest", "stochastic"]))
def test_any_split_of_the_batch_is_the_one_node_step(data, net, batch, cuts, seed, step, grad, fwd):
    net = NETS[net]
    images, labels = data[0][:batch], data[1][:batch]
    edges = sorted({c for c in cuts if c < batch} | {0, batch})
    shares = [b - a for a, b in itertools.pairwise(edges)]
    params = quantize_params(net, init_params_float64(net, seed % 1000), PREC)
    cfg = TrainConfig(PREC, seed=seed, step=step, grad_mode=grad, fwd_mode=fwd)
    want, loss = train_step(net, params, images, labels, cfg)
    got, got_loss = dp.train_step_data_parallel(net, params, images, labels, cfg, shares)
    assert _equal(got, want), shares
    assert got_loss == loss


def test_rounding_each_share_first_or_at_its_own_offsets_is_not_the_one_node_step(data):
    net = NETS["lenet-digits"]
    images, labels = data[0][:8], data[1][:8]
    params = quantize_params(net, init_params_float64(net, 0), PREC)
    cfg = TrainConfig(PREC, seed=11)
    want, _ = train_step(net, params, images, labels, cfg)
    shares = [3, 5]
    parts = [dp.replica_partials(net, params, images[:3], labels[:3], cfg, 0, 8)[1],
             dp.replica_partials(net, params, images[3:], labels[3:], cfg, 3, 8)[1]]
    exact = dp.reduce_and_round(net, parts, cfg)
    # an all-reduce of finished (rounded) gradients: each share rounded, then added
    shifts = net.shifts(PREC, cfg.lr_log2)
    name = net.param_layers()[0].name
    rounded = sum(requantize(part[name][0], shifts[name].wgrad, 8, "nearest") for part in parts)
    assert not np.array_equal(rounded, exact[name][0])
    # a replica rounding its images as images 0.. of its own share
    wrong = [dp.replica_partials(net, params, images[3:], labels[3:], TrainConfig(PREC, seed=11, fwd_mode="stochastic"),
                                 0, 8)[1],
             dp.replica_partials(net, params, images[3:], labels[3:], TrainConfig(PREC, seed=11, fwd_mode="stochastic"),
                                 3, 8)[1]]
    assert any(not np.array_equal(wrong[0][n][0], wrong[1][n][0]) for n in wrong[0])
    got, _ = dp.train_step_data_parallel(net, params, images, labels, cfg, shares)
    assert _equal(got, want)


@pytest.mark.parametrize("shares", [[], [0, 8], [3, 3], [9], [-1, 9]])
def test_bad_shares_are_refused(data, shares):
    net = NETS["lenet-digits"]
    params = quantize_params(net, init_params_float64(net, 0), PREC)
    with pytest.raises(ValueError, match="shares"):
        dp.train_step_data_parallel(net, params, data[0][:8], data[1][:8], TrainConfig(PREC), shares)
