"""Training steps (fixed point and float64), the digits study and ``pymtl-fp train --engine golden``."""

import argparse
import json

import numpy as np
import pytest

from pymtl_fp.cli import cmd_train
from pymtl_fp.cli.errors import UserError
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden import conv_bwd_data, conv_bwd_weight, pool_bwd, softmax_xent_grad
from pymtl_fp.golden import train as T
from pymtl_fp.golden.study import fit
from pymtl_fp.net import load_net

NET = load_net("lenet-digits")


@pytest.fixture(scope="module")
def digits():
    return load_digits_split()


def random_float_params(seed):
    params = T.init_params_float64(NET, seed)
    rng = np.random.default_rng(seed + 1)
    for p in params.values():  # non-zero biases keep pre-activations off the ReLU kink
        p["b"] = rng.normal(0.0, 0.3, size=p["b"].shape)
    return params


def test_float64_network_gradients_match_finite_differences(digits):
    params = random_float_params(3)
    images, labels = digits.x_train[:3], digits.y_train[:3]
    _, grads = T.gradients_float64(NET, params, images, labels)
    rng = np.random.default_rng(0)
    eps = 1e-6
    for name, prm in params.items():
        for key, grad in (("w", grads[name][0]), ("b", grads[name][1])):
            for flat in rng.choice(prm[key].size, size=min(6, prm[key].size), replace=False):
                idx = np.unravel_index(flat, prm[key].shape)
                old = prm[key][idx]
                prm[key][idx] = old + eps
                up = T.gradients_float64(NET, params, images, labels)[0]
                prm[key][idx] = old - eps
                down = T.gradients_float64(NET, params, images, labels)[0]
                prm[key][idx] = old
                assert grad[idx] == pytest.approx((up - down) / (2 * eps), rel=1e-4, abs=1e-7), (name, key, idx)


def test_16bit_gradients_track_float64_gradients(digits):
    """With nearest rounding the 16-bit gradients point where the float64 ones do."""
    fmt = NET.precision("16")
    q = T.quantize_params(NET, random_float_params(5), "16")
    deq = {n: {"w": fmt.weight.to_float(p["w"]), "b": fmt.bias.to_float(p["b"])} for n, p in q.items()}
    images = quantize_images(digits.x_train[:16], fmt.act)
    cfg = T.TrainConfig("16", grad_mode="nearest", update_mode="nearest")
    _, int_grads = T.gradients(NET, q, images, digits.y_train[:16], cfg)
    _, float_grads = T.gradients_float64(NET, deq, fmt.act.to_float(images), digits.y_train[:16])
    for name in q:
        for got, ref in zip(int_grads[name], float_grads[name]):
            got = fmt.wgrad.to_float(got) * 2.0**-fmt.loss_scale_log2
            cosine = float(got.ravel() @ ref.ravel()) / (np.linalg.norm(got) * np.linalg.norm(ref))
            assert cosine > 0.99, name
            assert np.max(np.abs(got - ref)) < 0.05 * np.max(np.abs(ref)) + 4 * fmt.wgrad.lsb


@pytest.mark.parametrize("precision", ["16", "8"])
def test_relu_mask_fused_into_next_layer_equals_mask_at_the_relu(digits, precision):
    """Bit-exact: masking dx at the next layer's input (after pooling) == masking at the ReLU."""
    fmt, shifts = NET.precision(precision), NET.shifts(precision)
    params = T.quantize_params(NET, random_float_params(7), precision)
    images = quantize_images(digits.x_train[:8], fmt.act)
    labels = digits.y_train[:8]
    cfg = T.TrainConfig(precision, seed=11)
    _, expected = T.gradients(NET, params, images, labels, cfg)

    acts = T.forward(NET, params, images, precision)
    conv1, pool1, conv2, pool2, fc = acts[1], acts[2], acts[3], acts[4], acts[5]
    _, g = softmax_xent_grad(fc, labels, logit_frac=fmt.act.frac, grad_format=fmt.grad,
                             loss_scale_log2=fmt.loss_scale_log2, logit_bits=fmt.act.bits)
    common = {"out_bits": fmt.grad.bits, "mode": "stochastic", "seed": 11}
    g = conv_bwd_data(g, params["fc"]["w"], pool2[0], shift=shifts["fc"].bwd_data,
                      tensor_id=T.tensor_id(2, "DX"), **common)  # no mask here ...
    g = pool_bwd(g, pool2[1])
    g = np.where(conv2 > 0, g, 0)  # ... but at conv2's ReLU output
    g = conv_bwd_data(g, params["conv2"]["w"], pool1[0], pad=1, shift=shifts["conv2"].bwd_data,
                      tensor_id=T.tensor_id(1, "DX"), **common)
    g = np.where(conv1 > 0, pool_bwd(g, pool1[1]), 0)
    dw, db = conv_bwd_weight(images, g, params["conv1"]["w"].shape, pad=1,
                             shift=shifts["conv1"].wgrad, bias_shift=shifts["conv1"].bgrad,
                             out_bits=fmt.wgrad.bits, mode="stochastic", seed=11,
                             tensor_id=T.tensor_id(0, "DW"))
    assert np.array_equal(dw, expected["conv1"][0]) and np.array_equal(db, expected["conv1"][1])


def test_train_step_is_deterministic_and_seeded(digits):
    fmt = NET.precision("8")
    params = T.quantize_params(NET, T.init_params_float64(NET, 0), "8")
    images = quantize_images(digits.x_train[:32], fmt.act)
    labels = digits.y_train[:32]
    a, loss_a = T.train_step(NET, params, images, labels, T.TrainConfig("8", seed=1))
    b, loss_b = T.train_step(NET, params, images, labels, T.TrainConfig("8", seed=1))
    c, _ = T.train_step(NET, params, images, labels, T.TrainConfig("8", seed=2))
    assert loss_a == loss_b
    assert all(np.array_equal(a[n][k], b[n][k]) for n in a for k in ("w", "b"))
    assert any(not np.array_equal(a[n]["w"], c[n]["w"]) for n in a)
    for n in a:  # the update moved the weights and kept them in format
        assert fmt.weight.contains(a[n]["w"]) and fmt.bias.contains(a[n]["b"])
    assert any(not np.array_equal(a[n]["w"], params[n]["w"]) for n in a)


def test_momentum_steps_keep_velocities(digits):
    params = T.quantize_params(NET, T.init_params_float64(NET, 0), "16")
    images = quantize_images(digits.x_train[:16], NET.precision("16").act)
    cfg = T.TrainConfig("16", momentum=3)
    new, _ = T.train_step(NET, params, images, digits.y_train[:16], cfg)
    new2, _ = T.train_step(NET, new, images, digits.y_train[:16], cfg)
    assert new2["fc"]["vw"].shape == new["fc"]["w"].shape
    fnew, _ = T.train_step_float64(NET, T.init_params_float64(NET, 0), digits.x_train[:16],
                                   digits.y_train[:16], cfg)
    assert fnew["conv1"]["vb"].shape == (8,)


def test_train_step_rejects_bad_input(digits):
    params = T.quantize_params(NET, T.init_params_float64(NET, 0), "16")
    images = quantize_images(digits.x_train[:4], NET.precision("16").act)
    cfg = T.TrainConfig("16")
    with pytest.raises(ValueError, match="images"):
        T.train_step(NET, params, images[:, :, :4], digits.y_train[:4], cfg)
    with pytest.raises(ValueError, match="labels"):
        T.train_step(NET, params, images, digits.y_train[:3], cfg)
    with pytest.raises(TypeError):
        T.train_step(NET, params, digits.x_train[:4], digits.y_train[:4], cfg)
    with pytest.raises(ValueError, match="lack"):
        T.train_step(NET, {"conv1": params["conv1"]}, images, digits.y_train[:4], cfg)
    with pytest.raises(ValueError, match="float64"):
        T.train_step(NET, params, images, digits.y_train[:4], T.TrainConfig("float64"))
    with pytest.raises(ValueError, match="outside its 16-bit"):
        T.train_step(NET, params, images * 1000, digits.y_train[:4], cfg)
    with pytest.raises(ValueError, match="mode"):
        T.TrainConfig("16", grad_mode="down")


@pytest.mark.parametrize("precision", ["float64", "16", "8"])
def test_a_few_epochs_reach_a_clear_accuracy_bar(digits, precision):
    _, history = fit(NET, digits, precision, epochs=5, batch=32, lr_log2=3, seed=0)
    assert history.steps == 5 * (len(digits.y_train) // 32)
    assert history.final_accuracy >= 0.88
    assert history.train_loss[-1] < history.train_loss[0] / 3


@pytest.mark.slow
def test_full_digits_study_meets_the_accuracy_targets(tmp_path):
    report = tmp_path / "study.json"
    assert run_cli("--report", str(report)) == 0
    results = json.loads(report.read_text())["results"]
    acc = {p: r["final_test_accuracy"] for p, r in results.items()}
    assert acc["float64"] >= 0.95
    assert acc["16"] >= acc["float64"] - 0.01
    assert acc["8"] >= acc["float64"] - 0.03


# ---- the CLI subcommand -------------------------------------------------------------------

def run_cli(*argv):
    parser = argparse.ArgumentParser()
    cmd_train.add_arguments(parser)
    return cmd_train.main(parser.parse_args(list(argv)))


def test_cli_short_run_writes_report_and_plot(tmp_path, capsys):
    report, plot = tmp_path / "r.json", tmp_path / "curves.png"
    assert run_cli("--epochs", "1", "--precision", "8", "--report", str(report), "--plot", str(plot)) == 0
    out = capsys.readouterr().out
    assert "8: test accuracy" in out
    data = json.loads(report.read_text())
    assert data["engine"] == "golden" and list(data["results"]) == ["8"]
    assert len(data["results"]["8"]["test_accuracy"]) == 1
    assert data["net"]["name"] == "lenet-digits"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv,match", [
    (["--engine", "cluster", "--level", "gates"], "choose one of"),
    (["--engine", "fpga"], "choose one of golden, cluster"),
    (["--precision", "4"], "offers float64, 16, 8"),
    (["--net", "no-such-net"], "no preset"),
    (["--epochs", "0"], "--epochs"),
    (["--batch", "0"], "--batch"),
    (["--batch", "100000"], "batch"),
    (["--seed", "-1"], "--seed"),
    (["--plot", "curves.pdf"], ".png"),
    (["--report", "no/such/dir/r.json"], "does not exist"),
])
def test_cli_bad_options_are_user_errors(argv, match):
    with pytest.raises(UserError, match=match):
        run_cli(*argv)
