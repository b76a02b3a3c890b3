"""Softmax cross-entropy and its fixed-point gradient (the host's function)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp.golden import softmax_xent_grad
from pymtl_fp.numerics import QFormat


def independent_softmax_xent(z, labels):
    """Loss and mean gradient via log-sum-exp with np.logaddexp (a different formula)."""
    lse = np.logaddexp.reduce(z, axis=1)
    n = z.shape[0]
    loss = float(np.mean(lse - z[np.arange(n), labels]))
    g = np.exp(z - lse[:, None])
    g[np.arange(n), labels] -= 1
    return loss, g / n


@st.composite
def loss_inputs(draw):
    n, k = draw(st.integers(1, 8)), draw(st.integers(2, 12))
    act = QFormat(draw(st.integers(6, 16)), 0)
    act = QFormat(act.bits, draw(st.integers(0, act.bits - 1)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    logits = rng.integers(act.min, act.max + 1, size=(n, k))
    labels = rng.integers(0, k, size=n)
    gbits = draw(st.integers(4, 16))
    grad = QFormat(gbits, draw(st.integers(0, gbits - 1)))
    return logits, labels, act, grad, draw(st.integers(0, 6))


@settings(deadline=None)
@given(loss_inputs())
def test_gradient_is_the_softmax_gradient_rounded_to_the_format(inputs):
    logits, labels, act, grad, scale = inputs
    loss, dlogits = softmax_xent_grad(logits, labels, logit_frac=act.frac, grad_format=grad,
                                      loss_scale_log2=scale)
    ref_loss, g = independent_softmax_xent(logits * 2.0**-act.frac, labels)
    assert loss == pytest.approx(ref_loss, rel=1e-12, abs=1e-12)
    target = g * 2.0**scale * 2.0**grad.frac  # in raw gradient units
    clipped = np.clip(target, grad.min, grad.max)
    assert dlogits.dtype == np.int64 and dlogits.shape == logits.shape
    assert np.all(np.abs(dlogits - clipped) <= 0.5 + 1e-9)
    assert np.all((dlogits >= grad.min) & (dlogits <= grad.max))
    again = softmax_xent_grad(logits, labels, logit_frac=act.frac, grad_format=grad,
                              loss_scale_log2=scale)
    assert again[0] == loss and np.array_equal(again[1], dlogits)


def test_known_small_case_and_four_d_logits():
    # two equal logits: p = 1/2 each; label 0 -> g = (-1/2, 1/2) / N(=1); Q8.4 -> (-8, 8)
    loss, d = softmax_xent_grad(np.array([[3, 3]]), np.array([0]), logit_frac=2,
                                grad_format=QFormat(8, 4))
    assert loss == pytest.approx(np.log(2)) and d.tolist() == [[-8, 8]]
    _, d4 = softmax_xent_grad(np.array([[3, 3]]).reshape(1, 2, 1, 1), np.array([0]),
                                  logit_frac=2, grad_format=QFormat(8, 4))
    assert d4.shape == (1, 2, 1, 1) and d4.ravel().tolist() == [-8, 8]
    # without batch_mean the gradient is not divided by N
    _, d_sum = softmax_xent_grad(np.array([[3, 3], [3, 3]]), np.array([0, 1]), logit_frac=2,
                                 grad_format=QFormat(8, 4), batch_mean=False)
    assert d_sum.tolist() == [[-8, 8], [8, -8]]


def test_saturated_logits_stop_pushing_outwards():
    fmt = QFormat(8, 3)
    logits = np.array([[127, 120, -128], [127, 120, -128]])
    labels = np.array([0, 2])  # row 0 wants logit 0 up (it is at the top); row 1 wants logit 2 up
    _, plain = softmax_xent_grad(logits, labels, logit_frac=3, grad_format=QFormat(8, 7),
                                 loss_scale_log2=1)
    _, masked = softmax_xent_grad(logits, labels, logit_frac=3, grad_format=QFormat(8, 7),
                                  loss_scale_log2=1, logit_bits=fmt.bits)
    assert plain[0, 0] < 0 and masked[0, 0] == 0       # top, pushed further up: masked
    assert plain[1, 0] > 0 and masked[1, 0] == plain[1, 0]  # top, pushed down: kept
    assert plain[1, 2] < 0 and masked[1, 2] == plain[1, 2]  # bottom, pushed up: kept
    assert np.array_equal(masked[:, 1], plain[:, 1])


@pytest.mark.parametrize("logits,labels,kwargs,exc", [
    (np.zeros((2, 3)), [0, 1], {}, TypeError),
    (np.zeros((2, 3), np.int64), [0, 3], {}, ValueError),
    (np.zeros((2, 3), np.int64), [0, -1], {}, ValueError),
    (np.zeros((2, 3), np.int64), [0], {}, ValueError),
    (np.zeros((2, 3), np.int64), [0.0, 1.0], {}, TypeError),
    (np.zeros((2, 3, 2), np.int64), [0, 1], {}, ValueError),
    (np.zeros((2, 3), np.int64), [0, 1], {"grad_format": (8, 4)}, TypeError),
    (np.zeros((2, 3), np.int64), [0, 1], {"logit_frac": -1}, ValueError),
    (np.full((2, 3), 300), [0, 1], {"logit_bits": 8}, ValueError),
])
def test_loss_bad_input(logits, labels, kwargs, exc):
    args = {"logit_frac": 4, "grad_format": QFormat(8, 4)}
    args.update(kwargs)
    with pytest.raises(exc):
        softmax_xent_grad(logits, np.array(labels), **args)
