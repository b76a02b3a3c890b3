"""Bring your own network (:mod:`pymtl_fp.interop`): a PyTorch model imported, checked against
PyTorch's own float64 forward and backward, trained on the simulated cluster, exported back to a
``state_dict`` and evaluated in PyTorch; the same model through an ONNX file; one-line refusals of
every layer that does not map; net files written and read back; ``pymtl-fp import``."""

from __future__ import annotations

import copy
import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

import torch.nn.functional as F  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from torch import nn  # noqa: E402

from pymtl_fp.cluster.config import ClusterConfig, engine_for_net  # noqa: E402
from pymtl_fp.cluster.run.session import run_training  # noqa: E402
from pymtl_fp.data import load_split, quantize_images  # noqa: E402
from pymtl_fp.golden import train as T  # noqa: E402
from pymtl_fp.interop.chain import InteropError  # noqa: E402
from pymtl_fp.interop.onnx_net import net_from_onnx, params_from_onnx  # noqa: E402
from pymtl_fp.interop.torch_net import (  # noqa: E402
    hardware_rounding,
    net_from_torch,
    params_from_torch,
    state_dict_from_params,
    torch_from_net,
)
from pymtl_fp.net import Conv, Fc, Pool, load_net, save_net  # noqa: E402

SHAPE = (1, 8, 8)
PREC = "8"


def _lenet():
    """lenet-digits' shape, written as a PyTorch user would."""
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64, 10))


@pytest.fixture(scope="module")
def digits():
    return load_split("digits")


@pytest.fixture(scope="module")
def model(digits):
    """The model, trained for five epochs in PyTorch (float32, plain SGD written out: importing
    torch.optim costs seconds): a model worth importing."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        m = _lenet()
        x, y = torch.tensor(digits.x_train, dtype=torch.float32), torch.tensor(digits.y_train)
        for _ in range(5):
            for i in range(0, len(y), 32):
                m.zero_grad()
                F.cross_entropy(m(x[i:i + 32]), y[i:i + 32]).backward()
                with torch.no_grad():
                    for p in m.parameters():
                        p -= 0.1 * p.grad
        yield m
    finally:
        torch.set_num_threads(threads)


def _one_line_error(call) -> str:
    with pytest.raises(InteropError) as exc:
        call()
    text = str(exc.value)
    assert "\n" not in text
    return text


# ---- the import --------------------------------------------------------------------------------

def test_the_imported_net_is_the_models_chain(model):
    net = net_from_torch(model, SHAPE, "byo")
    assert net.layers == (Conv("conv0", 8, 3, 1, 1, relu=True), Pool(2, "pool2"), Conv("conv3", 16, 3, 1, 1, relu=True),
                          Pool(2, "pool5"), Fc("fc7", 10))
    assert net.formats == load_net("lenet-digits").formats and net.train == load_net("lenet-digits").train
    params = params_from_torch(model, net)
    assert np.array_equal(params["conv3"]["w"], model[3].weight.detach().double().numpy())
    assert np.array_equal(params["fc7"]["w"].reshape(10, 64), model[7].weight.detach().double().numpy())
    assert np.array_equal(params["fc7"]["b"], model[7].bias.detach().double().numpy())


def test_golden_float64_forward_and_backward_equal_pytorch(model, digits):
    """The imported net on 32 real images: the golden model's float64 logits, mean loss and every
    weight and bias gradient are PyTorch autograd's on the model itself (in float64) to 1e-12."""
    m = copy.deepcopy(model).double()
    net = net_from_torch(m, SHAPE, "byo")
    params = params_from_torch(m, net)
    images, labels = digits.x_train[:32], digits.y_train[:32]
    loss, grads = T.gradients_float64(net, params, images, labels)
    logits = m(torch.tensor(images))
    t_loss = F.cross_entropy(logits, torch.tensor(labels))
    t_loss.backward()
    np.testing.assert_allclose(T.predict_float64(net, params, images), logits.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert loss == pytest.approx(t_loss.item(), rel=1e-12, abs=1e-12)
    modules = {"conv0": m[0], "conv3": m[3], "fc7": m[7]}
    assert set(grads) == set(modules)
    for name, (dw, db) in grads.items():
        tw, tb = modules[name].weight.grad.numpy(), modules[name].bias.grad.numpy()
        assert np.abs(dw).max() > 0 and np.abs(db).max() > 0, name  # every layer's gradient reached
        np.testing.assert_allclose(dw.reshape(tw.shape), tw, rtol=1e-12, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(db, tb, rtol=1e-12, atol=1e-12, err_msg=name)


def test_onnx_export_imports_as_the_same_net_and_params(model, tmp_path):
    """``torch.onnx.export`` (the TorchScript exporter: the default one needs onnxscript) of the
    model: the ONNX import is the torch import, weights bit for bit."""
    path = tmp_path / "byo.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.zeros(1, *SHAPE), str(path), dynamo=False)
    net = net_from_torch(model, SHAPE, "byo")
    got = net_from_onnx(path)  # the input shape from the graph, the name from the file's
    assert got.input_shape == SHAPE and got.name == "byo" and got == net
    params, from_onnx = params_from_torch(model, net), params_from_onnx(path, net)
    for name in params:
        for k in "wb":
            assert np.array_equal(params[name][k], from_onnx[name][k]), (name, k)


# ---- the round trip ------------------------------------------------------------------------------

def test_round_trip_trained_on_the_cluster_and_evaluated_in_pytorch(model, digits):
    """Import -> 2 steps of 8 images on 2 CL nodes from the model's weights (bit-exact with the
    golden model) -> ``state_dict`` -> PyTorch, on the 360 test images.

    PyTorch computes the accuracy the report prints exactly when it rounds as the hardware does
    (:func:`hardware_rounding`, float64, images on the 8-bit activation grid): every product and
    partial sum is then a multiple of 2**-10 far below 2**53 of them, so float64 holds each one
    exactly and every logit equals the golden model's fixed-point logit over 2**4 -- the argmax, and
    so the prediction, is equal on every test image.  A plain float32 evaluation of the same weights
    skips the rounding of every layer's output to 4 fraction bits and the saturation at +-8: its
    predictions can differ where two logits are close; it is only checked to be near."""
    net = net_from_torch(model, SHAPE, "byo")
    init = params_from_torch(model, net)
    ccfg = ClusterConfig.homogeneous(2, engine_for_net(net, PREC))
    result = run_training(net, ccfg, steps=2, batch=8, precision=PREC, init_params=init)
    assert result.weights_equal
    start = T.quantize_params(net, init, PREC)
    assert any(not np.array_equal(result.run.params[n]["w"], start[n]["w"]) for n in start)  # it trained
    fmt = net.precision(PREC)

    # exported into the float32 model: the raw integers over 2**frac, exactly
    trained = copy.deepcopy(model)
    trained.load_state_dict(state_dict_from_params(model, result.run.params, net=net, precision=PREC))
    for name, module in (("conv0", trained[0]), ("fc7", trained[7])):
        w = module.weight.detach().double().numpy() * 2**fmt.weight.frac
        b = module.bias.detach().double().numpy() * 2**fmt.bias.frac
        assert np.array_equal(w.reshape(result.run.params[name]["w"].shape), result.run.params[name]["w"])
        assert np.array_equal(b, result.run.params[name]["b"])

    # evaluated as the hardware computes: the same logits, so the same accuracy, on every image
    m64 = copy.deepcopy(trained).double()
    test_raw = quantize_images(digits.x_test, fmt.act)
    with torch.no_grad(), hardware_rounding(m64, net, PREC):
        logits = m64(torch.tensor(test_raw / 2.0**fmt.act.frac)).numpy()
    golden = T.predict(net, result.run.params, test_raw, PREC)
    assert np.array_equal(logits * 2**fmt.act.frac, golden)
    pred = logits.argmax(axis=1)
    assert np.array_equal(pred, golden.argmax(axis=1))
    accuracy = float(np.mean(pred == digits.y_test))
    assert accuracy == result.accuracy_after
    assert f"test accuracy of the trained weights: {100 * accuracy:.1f}% on the 360 test images" in result.summary()[1]
    assert accuracy > 0.5  # (the pre-trained model: far above chance)

    # a plain float32 evaluation, same quantized images, no rounding of the layers' outputs: near,
    # not necessarily equal (measured: the same prediction on all 360 images; the bounds are slack
    # for the rounding, not a guarantee)
    with torch.no_grad():
        float_pred = trained(torch.tensor(test_raw / 2.0**fmt.act.frac, dtype=torch.float32)).numpy().argmax(axis=1)
    assert np.mean(float_pred != pred) <= 0.05
    assert abs(float(np.mean(float_pred == digits.y_test)) - accuracy) <= 0.05


def test_a_net_exports_to_a_sequential_that_imports_back(digits):
    """A zoo net as PyTorch (:func:`torch_from_net`), its golden weights through a ``state_dict``:
    the same net back, the same float logits."""
    net = load_net("lenet-digits")
    seq = torch_from_net(net).double()
    params = T.init_params_float64(net, 3)
    seq.load_state_dict(state_dict_from_params(net, params))
    assert net_from_torch(seq, net.input_shape, net.name, formats="lenet-digits") == net
    with torch.no_grad():
        got = seq(torch.tensor(digits.x_test[:16])).numpy()
    np.testing.assert_allclose(got, T.predict_float64(net, params, digits.x_test[:16]), rtol=1e-12, atol=1e-12)


# ---- refusals ------------------------------------------------------------------------------------

def test_every_unsupported_layer_is_named_in_one_line():
    m = nn.Sequential(OrderedDict(
        features=nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.AvgPool2d(2)),
        flat=nn.Flatten(), drop=nn.Dropout(), head=nn.Linear(64, 10), out=nn.Softmax(dim=1)))
    text = _one_line_error(lambda: net_from_torch(m, SHAPE))
    assert text.startswith("unsupported layers: features.1 (BatchNorm2d), features.3 (AvgPool2d), drop (Dropout), "
                           "out (Softmax): pymtl-fp runs Conv2d, ReLU, MaxPool2d (stride = kernel), Flatten, Linear")
    assert "ReLU" not in text.split("runs")[0]  # the ReLU fuses once the BatchNorm2d is gone


def test_a_relu_that_follows_no_conv_or_linear_is_refused():
    for m, where in ((nn.Sequential(nn.ReLU(), nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(72, 3)), "0 (ReLU)"),
                     (nn.Sequential(nn.Conv2d(1, 2, 3), nn.MaxPool2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(18, 3)),
                      "2 (ReLU)"),
                     (nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.ReLU(), nn.Flatten(), nn.Linear(72, 3)),
                      "2 (ReLU)")):
        text = _one_line_error(lambda m=m: net_from_torch(m, SHAPE))
        assert f"layers out of place: {where}: a ReLU must directly follow a conv or linear layer" in text


@pytest.mark.parametrize("conv, setting", [
    (lambda: nn.Conv2d(1, 4, 3, groups=1, dilation=2), "dilation=(2, 2)"),
    (lambda: nn.Conv2d(2, 4, 3, groups=2), "groups=2"),
    (lambda: nn.Conv2d(1, 4, 3, stride=(1, 2)), "stride=(1, 2) (one stride for both axes)"),
    (lambda: nn.Conv2d(1, 4, 3, padding=(1, 0)), "padding=(1, 0) (one padding for both axes)"),
    (lambda: nn.Conv2d(1, 4, 3, bias=False), "bias=False"),
    (lambda: nn.Conv2d(1, 4, 3, padding=1, padding_mode="reflect"), "padding_mode='reflect'"),
    (lambda: nn.Conv2d(1, 4, 4, padding="same"), "padding='same' with this kernel"),
])
def test_conv_settings_the_engine_lacks_are_named(conv, setting):
    m = nn.Sequential(conv(), nn.Flatten(), nn.Linear(4, 3))
    text = _one_line_error(lambda: net_from_torch(m, (conv().in_channels, 8, 8)))
    assert text.startswith("unsupported settings: 0 (Conv2d): ") and setting in text


def test_a_rectangular_kernel_maps_and_a_rectangular_pool_does_not(digits):
    """The net format takes R x S kernels (one stride, one padding): imported, the golden forward
    is PyTorch's, and a step on the cluster (FL) is the golden model's.  A pool is k x k, stride k."""
    m = nn.Sequential(nn.Conv2d(1, 4, (3, 1), padding=0), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 8, 10)).double()
    net = net_from_torch(m, SHAPE)
    assert net.layers[0].kernel == (3, 1) and net.shapes()[1] == (4, 6, 8)
    with torch.no_grad():
        want = m(torch.tensor(digits.x_test[:4])).numpy()
    params = params_from_torch(m, net)
    np.testing.assert_allclose(T.predict_float64(net, params, digits.x_test[:4]), want, rtol=1e-12, atol=1e-12)
    ccfg = ClusterConfig.homogeneous(1, engine_for_net(net, PREC))
    assert run_training(net, ccfg, steps=1, batch=2, precision=PREC, init_params=params, levels=["fl"]).weights_equal
    for pool, setting in ((nn.MaxPool2d((2, 1)), "kernel_size=(2, 1) (square windows only)"),
                          (nn.MaxPool2d(2, stride=1), "stride=(1, 1) with kernel_size=(2, 2)"),
                          (nn.MaxPool2d(2, padding=1), "padding=1")):
        text = _one_line_error(lambda p=pool: net_from_torch(nn.Sequential(nn.Conv2d(1, 2, 3), p), SHAPE))
        assert "1 (MaxPool2d): " in text and setting in text


def test_shapes_that_do_not_chain_are_named():
    text = _one_line_error(lambda: net_from_torch(nn.Sequential(nn.Conv2d(1, 2, 3), nn.Linear(6, 3)), SHAPE))
    assert "1 (Linear): on (C, H, W) maps (put a Flatten before it)" in text
    text = _one_line_error(lambda: net_from_torch(nn.Sequential(nn.Conv2d(3, 2, 3), nn.Flatten(), nn.Linear(72, 3)),
                                                  SHAPE))
    assert "0 (Conv2d): 3 input channels, its input has 1" in text
    text = _one_line_error(lambda: net_from_torch(nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(50, 3)),
                                                  SHAPE))
    assert "2 (Linear): 50 input features, its input has 72 (2x6x6)" in text


class _Chain(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(torch.flatten(F.max_pool2d(F.relu(self.conv(x)), 2), 1))


class _Residual(_Chain):
    def forward(self, x):
        y = self.conv(x)
        return self.fc(torch.flatten(F.max_pool2d(y + x, 2), 1))


def test_a_module_whose_forward_is_a_chain_imports_and_a_branch_is_refused():
    net = net_from_torch(_Chain(), SHAPE, "chain")
    assert net.layers == (Conv("conv", 4, 3, 1, 1, relu=True), Pool(2, "max_pool2d"), Fc("fc", 10))
    text = _one_line_error(lambda: net_from_torch(_Residual(), SHAPE))
    assert text.startswith("_Residual is not a plain chain of layers: add (takes conv, x)")


class _Branching(_Chain):
    def forward(self, x):
        y = self.conv(x)
        return self.fc(torch.flatten(y if y.sum() > 0 else -y, 1))


def test_a_module_torch_fx_cannot_trace_is_one_line():
    text = _one_line_error(lambda: net_from_torch(_Branching(), SHAPE))
    assert text.startswith("cannot trace _Branching with torch.fx (TraceError: ")


# ---- ONNX graphs built by hand -----------------------------------------------------------------

def _graph(nodes, inits, path, classes=3):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_onnx_matmul_add_is_a_linear_layer(tmp_path):
    """Conv -> Relu -> Flatten -> MatMul + Add, written with onnx.helper: the same net and weights as
    the PyTorch model holding them (MatMul's weights are the transpose of Linear's)."""
    rng = np.random.default_rng(1)
    w, b = rng.normal(size=(2, 1, 3, 3)), rng.normal(size=2)
    fw, fb = rng.normal(size=(72, 3)), rng.normal(size=3)
    path = _graph([helper.make_node("Conv", ["x", "c.weight", "c.bias"], ["a"], name="/c/Conv", kernel_shape=[3, 3]),
                   helper.make_node("Relu", ["a"], ["r"], name="/r/Relu"),
                   helper.make_node("Flatten", ["r"], ["f"], name="/f/Flatten", axis=1),
                   helper.make_node("MatMul", ["f", "fc.weight"], ["m"], name="/fc/MatMul"),
                   helper.make_node("Add", ["m", "fc.bias"], ["y"], name="/fc/Add")],
                  {"c.weight": w, "c.bias": b, "fc.weight": fw, "fc.bias": fb}, tmp_path / "mm.onnx")
    m = nn.Sequential(OrderedDict(c=nn.Conv2d(1, 2, 3), r=nn.ReLU(), f=nn.Flatten(), fc=nn.Linear(72, 3)))
    with torch.no_grad():
        for t, v in ((m.c.weight, w), (m.c.bias, b), (m.fc.weight, fw.T), (m.fc.bias, fb)):
            t.copy_(torch.tensor(v.astype(np.float32)))
    net = net_from_torch(m, SHAPE, "mm")
    assert net_from_onnx(path) == net
    want, got = params_from_torch(m, net), params_from_onnx(path, net)
    assert all(np.array_equal(want[n][k], got[n][k]) for n in want for k in "wb")


def test_onnx_unsupported_ops_are_named_in_one_line(tmp_path):
    rng = np.random.default_rng(2)
    path = _graph([helper.make_node("Conv", ["x", "w", "b"], ["a"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                   helper.make_node("BatchNormalization", ["a", "s", "b", "b", "s"], ["n"], name="bn"),
                   helper.make_node("Relu", ["n"], ["r"], name="relu"),
                   helper.make_node("AveragePool", ["r"], ["p"], name="avg", kernel_shape=[2, 2], strides=[2, 2]),
                   helper.make_node("Flatten", ["p"], ["f"], name="flat"),
                   helper.make_node("Gemm", ["f", "fw", "fb"], ["g"], name="fc", transB=1),
                   helper.make_node("Softmax", ["g"], ["y"], name="")],
                  {"w": rng.normal(size=(2, 1, 3, 3)), "b": np.zeros(2), "s": np.ones(2),
                   "fw": rng.normal(size=(3, 32)), "fb": np.zeros(3)}, tmp_path / "bad.onnx")
    text = _one_line_error(lambda: net_from_onnx(path))
    assert text.startswith("unsupported layers: bn (BatchNormalization), avg (AveragePool), node 6 (Softmax): "
                           "pymtl-fp runs Conv, Relu, MaxPool (stride = kernel)")


def test_a_file_that_is_not_onnx_is_one_line(tmp_path):
    path = tmp_path / "x.onnx"
    path.write_bytes(b"\x08\x07garbage that is not a protobuf message \xff\xff")
    assert re.match(rf"{re.escape(str(path))}: not (an|a valid) ONNX model", _one_line_error(lambda: net_from_onnx(path)))
    assert "cannot read it" in _one_line_error(lambda: net_from_onnx(tmp_path / "none.onnx"))


# ---- net files and the CLI -----------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".toml", ".json", ".TOML"])
def test_an_imported_net_is_saved_and_loads_back_equal(model, tmp_path, suffix):
    net = net_from_torch(model, SHAPE, "byo", formats="lenet5-mnist")
    assert net.train == load_net("lenet5-mnist").train
    assert load_net(save_net(net, tmp_path / f"byo{suffix}")) == net
def test_cli_import_writes_the_net_file_and_nothing_else(model, tmp_path, capsys):
    from pymtl_fp.cli.main import main

    path = tmp_path / "byo.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.zeros(1, *SHAPE), str(path), dynamo=False)
    assert main(["import", str(path), "--out", str(tmp_path / "net.toml"), "--like", "lenet5-mnist"]) == 0
    out = capsys.readouterr().out
    assert "net byo: input 1x8x8, 5 layers, 10 outputs" in out and out.rstrip().endswith(f"wrote {tmp_path / 'net.toml'}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["byo.onnx", "net.toml"]
    assert load_net(tmp_path / "net.toml") == net_from_torch(model, SHAPE, "byo", formats="lenet5-mnist")
