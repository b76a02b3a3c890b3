"""Network descriptions: the lenet-digits preset, shape/MAC inference, shift derivation, loading."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymtl_fp import golden
from pymtl_fp.golden import reference
from pymtl_fp.golden import train as T
from pymtl_fp.net import Conv, Fc, Formats, Net, NetError, Pool, load_net, net_from_dict, presets
from pymtl_fp.numerics import QFormat


def test_lenet_digits_preset_has_the_agreed_shapes():
    net = load_net("lenet-digits")
    assert "lenet-digits" in presets()
    assert net.shapes() == [(1, 8, 8), (8, 8, 8), (8, 4, 4), (16, 4, 4), (16, 2, 2), (10, 1, 1)]
    assert [layer.name for layer in net.layers] == ["conv1", "pool1", "conv2", "pool2", "fc"]
    conv1, conv2, fc = net.param_layers()
    assert (conv1.kernel, conv1.pad, conv1.relu) == ((3, 3), 1, True)
    assert net.conv_geometry(conv2)["w_shape"] == (16, 8, 3, 3)
    assert net.conv_geometry(fc)["w_shape"] == (10, 16, 2, 2)  # 64 -> 10
    assert not fc.relu and net.classes == 10
    assert set(net.formats) == {"16", "8"}
    assert net.formats["16"].act.bits == 16 and net.formats["8"].weight.bits == 8


def test_mac_counts_per_sample():
    macs = {m.name: m for m in load_net("lenet-digits").macs()}
    # conv1: 8 filters x 1x3x3 at 8x8 positions; conv2: 16 x 8x3x3 at 4x4; fc: 10 x 64
    assert (macs["conv1"].fp, macs["conv1"].bp, macs["conv1"].wg) == (8 * 9 * 64, 0, 8 * 9 * 64)
    assert macs["conv2"].fp == macs["conv2"].bp == macs["conv2"].wg == 16 * 72 * 16
    assert macs["fc"].fp == macs["fc"].bp == macs["fc"].wg == 640


def test_strided_unpadded_shapes():
    net = Net("n", (3, 11, 11), (Conv("c", 4, (3, 5), stride=2, pad=1), Fc("f", 2)))
    # H: (11 + 2 - 3)//2 + 1 = 6; W: (11 + 2 - 5)//2 + 1 = 5
    assert net.shapes() == [(3, 11, 11), (4, 6, 5), (2, 1, 1)]
    assert net.macs()[0].fp == 4 * 3 * 15 * 30


@st.composite
def formats(draw):
    def q(lo, hi):
        return QFormat(16, draw(st.integers(lo, hi)))
    return Formats(act=q(2, 8), weight=q(4, 10), grad=q(6, 12), wgrad=q(2, 6), bias_bits=40,
                   loss_scale_log2=draw(st.integers(0, 4)))


@settings(deadline=None)
@given(formats(), st.integers(0, 6), st.integers(0, 2**32 - 1))
def test_derived_shifts_put_every_tensor_in_its_format(fmt, lr_log2, seed):
    """Run each op with the derived shift on quantized reals: the result, read in its format,
    is the real-valued result within half an LSB (nearest rounding, no saturation)."""
    net = Net("n", (2, 5, 5), (Conv("c", 3, 3, pad=1), Fc("f", 2)), formats={"p": fmt})
    sh = net.shifts("p", lr_log2)["c"]
    rng = np.random.default_rng(seed)
    x = fmt.act.quantize(rng.uniform(-1, 1, (2, 2, 5, 5)))
    w = fmt.weight.quantize(rng.uniform(-1, 1, (3, 2, 3, 3)))
    b = fmt.bias.quantize(rng.uniform(-1, 1, 3))
    dy = fmt.grad.quantize(rng.uniform(-1, 1, (2, 3, 5, 5)))
    xr, wr, br, dyr = fmt.act.to_float(x), fmt.weight.to_float(w), fmt.bias.to_float(b), fmt.grad.to_float(dy)

    y = golden.conv_fwd(x, w, b, pad=1, shift=sh.fwd, out_bits=16)
    assert np.all(np.abs(fmt.act.to_float(y) - reference.conv_fwd(xr, wr, br, pad=1)) <= fmt.act.lsb / 2)
    dx = golden.conv_bwd_data(dy, w, x, pad=1, shift=sh.bwd_data, out_bits=16)
    assert np.all(np.abs(fmt.grad.to_float(dx) - reference.conv_bwd_data(dyr, wr, xr, pad=1))
                  <= fmt.grad.lsb / 2)
    dw, db = golden.conv_bwd_weight(x, dy, w.shape, pad=1, shift=sh.wgrad, bias_shift=sh.bgrad,
                                    out_bits=40)
    dwr, dbr = reference.conv_bwd_weight(xr, dyr, w.shape, pad=1)
    assert np.all(np.abs(fmt.wgrad.to_float(dw) - dwr) <= fmt.wgrad.lsb / 2)
    assert np.all(np.abs(fmt.wgrad.to_float(db) - dbr) <= fmt.wgrad.lsb / 2)
    # the update undoes the loss scale and applies the learning rate 2**-lr_log2
    lr = 2.0**-lr_log2 * 2.0**-fmt.loss_scale_log2
    for param, grad, pfmt, shift in ((w, dw, fmt.weight, sh.update_w), (b, db, fmt.bias, sh.update_b)):
        new = golden.sgd_update(param, grad, lr_shift=shift, bits=pfmt.bits)
        ideal = pfmt.to_float(param) - lr * fmt.wgrad.to_float(grad)
        assert np.all(np.abs(pfmt.to_float(new) - ideal) <= pfmt.lsb / 2)


def test_explicit_shift_overrides_win():
    net = load_net("lenet-digits")
    d = net.to_dict()
    d["formats"]["16"]["shifts"] = {"conv2": {"fwd": 9, "update_w": -2}}
    custom = net_from_dict(d)
    assert custom.shifts("16")["conv2"].fwd == 9 and custom.shifts("16")["conv2"].update_w == -2
    assert custom.shifts("16")["conv1"] == net.shifts("16")["conv1"]


def load_net_from_json(net):
    return net_from_dict(json.loads(json.dumps(net.to_dict())))


def test_a_layers_lr_log2_offset_scales_its_learning_rate_only():
    """``lr_log2_offset = k`` gives the layer the update shifts of the learning rate 2**-(L + k)
    and leaves every other shift and every other layer as at 2**-L; an explicit shift still wins;
    the offset survives the JSON round trip and is left out of it when 0."""
    net = load_net("lenet-digits")
    d = net.to_dict()
    assert all("lr_log2_offset" not in layer for layer in d["layers"])
    d["layers"][-1]["lr_log2_offset"] = 3
    d["layers"][0]["lr_log2_offset"] = -1
    custom = net_from_dict(d)
    first, last = net.param_layers()[0].name, net.param_layers()[-1].name
    for lr_log2 in (2, 4):
        got, base = custom.shifts("16", lr_log2), net.shifts("16", lr_log2)
        assert got[last] == net.shifts("16", lr_log2 + 3)[last] != base[last]
        assert got[first] == net.shifts("16", lr_log2 - 1)[first] != base[first]
        assert (got[last].update_w, got[last].update_b) == (base[last].update_w + 3, base[last].update_b + 3)
        assert got[last].fwd == base[last].fwd and got[last].wgrad == base[last].wgrad
        middle = [layer.name for layer in net.param_layers()[1:-1]]
        assert middle and all(got[name] == base[name] for name in middle)
    assert load_net_from_json(custom) == custom
    d["formats"]["16"]["shifts"] = {last: {"update_w": 1}}
    assert net_from_dict(d).shifts("16", 2)[last].update_w == 1


def test_a_layers_lr_log2_offset_gives_its_float64_update_that_learning_rate():
    net = load_net("lenet-digits")
    d = net.to_dict()
    d["layers"][-1]["lr_log2_offset"] = 2
    custom = net_from_dict(d)
    rng = np.random.default_rng(3)
    params = T.init_params_float64(custom, seed=1)
    images = rng.random((2,) + custom.input_shape)
    labels = np.array([3, 7])
    cfg = T.TrainConfig("float64", lr_log2=3)
    _, grads = T.gradients_float64(custom, params, images, labels)
    new, _ = T.train_step_float64(custom, params, images, labels, cfg)
    last = custom.param_layers()[-1].name
    for name, (dw, db) in grads.items():
        lr = 2.0**-3 * (2.0**-2 if name == last else 1.0)
        np.testing.assert_allclose(new[name]["w"], params[name]["w"] - lr * dw, rtol=0, atol=1e-15)
        np.testing.assert_allclose(new[name]["b"], params[name]["b"] - lr * db, rtol=0, atol=1e-15)


def test_a_schedule_that_takes_an_update_shift_out_of_range_is_refused_before_any_step():
    """lr 2**-16 halved every epoch: conv1's update shift leaves -32..32 in a later epoch; the
    golden study refuses it before it trains (``max_steps=0``: no step would reach that epoch)."""
    from pymtl_fp.data import load_digits_split
    from pymtl_fp.golden.study import fit

    with pytest.raises(NetError, match=r"^lenet-digits/8: derived shift conv1\.update_w = 33 is outside -32\.\.32"):
        fit(load_net("lenet-digits"), load_digits_split(seed=0), "8", epochs=100, batch=32, lr_log2=16,
            lr_halve_every=1, max_steps=0)


def test_json_round_trip_and_toml_file(tmp_path):
    net = load_net("lenet-digits")
    path = tmp_path / "net.json"
    path.write_text(json.dumps(net.to_dict()))
    assert load_net(path) == net
    toml = tmp_path / "tiny.toml"
    toml.write_text('name = "tiny"\ninput_shape = [1, 4, 4]\n'
                    '[[layers]]\ntype = "conv"\nname = "c"\nout_channels = 2\nkernel = [3, 1]\n'
                    '[[layers]]\ntype = "pool"\nk = 2\n'
                    '[[layers]]\ntype = "fc"\nname = "out"\nout_features = 3\n'
                    '[formats.8]\nact = [8, 4]\nweight = {bits = 8, frac = 6}\ngrad = [8, 7]\n')
    tiny = load_net(str(toml))
    assert tiny.shapes() == [(1, 4, 4), (2, 2, 4), (2, 1, 2), (3, 1, 1)]
    assert tiny.layers[1].name == "pool1" and tiny.formats["8"].wgrad == QFormat(8, 7)


GOOD = {"name": "n", "input_shape": [1, 8, 8],
        "layers": [{"type": "conv", "name": "c", "out_channels": 2, "kernel": 3, "pad": 1},
                   {"type": "fc", "name": "f", "out_features": 3}],
        "formats": {"8": {"act": [8, 4], "weight": [8, 6], "grad": [8, 7]}}}


def edit(path, value):
    d = json.loads(json.dumps(GOOD))
    node = d
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


@pytest.mark.parametrize("doc,match", [
    (edit(["layers", 0, "type"], "deconv"), "unknown type"),
    (edit(["layers", 0, "pad"], -1), "padding"),
    (edit(["layers", 0, "pad"], 3), "padding"),
    (edit(["layers", 0, "stride"], 0), "stride"),
    (edit(["layers", 0, "kernel"], 11), "does not fit"),
    (edit(["layers", 0, "kernel"], [3, 3, 3]), "kernel"),
    (edit(["layers", 0, "out_channels"], 0), "out_channels"),
    (edit(["layers", 0, "relu"], "yes"), "relu"),
    (edit(["layers", 0, "colour"], "red"), "unknown keys"),
    (edit(["layers", 1, "name"], "c"), "duplicate"),
    (edit(["layers", 1], {"type": "pool", "k": 3}), "divisible"),
    (edit(["layers"], [{"type": "pool", "k": 2}]), "conv or fc"),
    (edit(["layers"], []), "at least one layer"),
    (edit(["input_shape"], [8, 8]), "input_shape"),
    (edit(["name"], KeyError), "missing 'name'"),
    (edit(["formats", "8", "act"], [8, 8]), "frac"),
    (edit(["formats", "8", "grad"], KeyError), "missing 'grad'"),
    (edit(["formats", "8", "bias_bits"], 8), "bias_bits"),
    (edit(["formats", "8", "shifts"], {"nope": {"fwd": 1}}), "unknown layers"),
    (edit(["formats", "8", "shifts"], {"c": {"fwd": 40}}), "shift"),
    (edit(["formats", "8", "shifts"], {"c": {"sideways": 1}}), "unknown shift"),
    (edit(["layers", 1, "lr_log2_offset"], 9), r"^f: lr_log2_offset must be an integer in -8..8, got 9$"),
    (edit(["layers", 0, "lr_log2_offset"], 1.5), r"^c: lr_log2_offset must be an integer"),
    (edit(["layers", 0, "lr_log2_offset"], True), r"^c: lr_log2_offset must be an integer"),
    (edit(["train"], {"epochs": 0}), "epochs"),
    (edit(["train"], {"speed": 3}), "unknown keys"),
])
def test_bad_descriptions_raise_net_error(doc, match):
    with pytest.raises(NetError, match=match):
        net_from_dict(doc)


def test_loading_errors(tmp_path):
    with pytest.raises(NetError, match="no preset or file"):
        load_net("no-such-net")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with pytest.raises(NetError, match="bad TOML"):
        load_net(bad)
    other = tmp_path / "net.yaml"
    other.write_text("name: x")
    with pytest.raises(NetError, match=r"\.toml or \.json"):
        load_net(other)
    net = net_from_dict(GOOD)
    with pytest.raises(NetError, match="no precision"):
        net.shifts("16")
    # a derived shift that cannot be a right shift is reported, not silently wrapped
    d = edit(["formats", "8", "wgrad"], [8, 7])
    d["formats"]["8"]["act"] = [8, 0]
    d["formats"]["8"]["grad"] = [8, 2]  # wgrad shift = 0 + 2 - 7 < 0
    with pytest.raises(NetError, match=r"bgrad|wgrad"):
        net_from_dict(d).shifts("8", lr_log2=3)


def test_layer_objects_validate_directly():
    with pytest.raises(NetError):
        Conv("bad name!", 2, 3)
    with pytest.raises(NetError):
        Pool(0)
    with pytest.raises(NetError):
        Fc("f", -1)
