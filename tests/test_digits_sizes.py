"""The digits at a net's input size (:func:`pymtl_fp.data.digits_for`): 8x8 images enlarged by pixel
replication for nets that take 16x16 maps (vgg-digits16), refused in one line for nets that cannot
take them, and vgg-digits16 training on the cluster in row bands bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import digits_for, digits_size, load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig
from pymtl_fp.net import load_net, net_from_dict
from pymtl_fp.tb.cluster_setup import seeded_params, small_cluster


def test_enlarged_images_replicate_every_pixel():
    small, big = load_digits_split(seed=0), load_digits_split(seed=0, size=16)
    assert big.x_train.shape == (len(small.x_train), 1, 16, 16)
    assert np.array_equal(big.y_train, small.y_train) and np.array_equal(big.y_test, small.y_test)
    for dy in (0, 1):
        for dx in (0, 1):
            assert np.array_equal(big.x_train[:, :, dy::2, dx::2], small.x_train)
    assert digits_size(load_net("vgg-digits16")) == 16
    assert digits_for(load_net("lenet-digits")).x_test.shape[1:] == (1, 8, 8)
    with pytest.raises(ValueError, match="multiple of 8"):
        load_digits_split(size=12)


@pytest.mark.parametrize("shape, classes", [((1, 12, 12), 10), ((3, 8, 8), 10), ((1, 8, 16), 10), ((1, 8, 8), 4)])
def test_a_net_the_digits_do_not_fit_is_refused_in_one_line(shape, classes):
    net = net_from_dict({"name": "odd", "input_shape": list(shape),
                         "layers": [{"type": "fc", "name": "fc", "out_features": classes}]})
    with pytest.raises(ValueError) as exc:
        digits_for(net)
    msg = str(exc.value)
    assert "(1, S, S) -> 10" in msg and "\n" not in msg


def test_the_cli_refuses_such_a_net_in_one_line(tmp_path, capsys):
    from pymtl_fp.cli.main import main
    from pymtl_fp.net import NETS_DIR

    path = tmp_path / "odd.toml"  # lenet-digits on 12x12 inputs
    text = (NETS_DIR / "lenet-digits.toml").read_text()
    assert "input_shape = [1, 8, 8]" in text
    path.write_text(text.replace("input_shape = [1, 8, 8]", "input_shape = [1, 12, 12]"))
    for engine in ("golden", "cluster"):
        assert main(["train", "--engine", engine, "--net", str(path)]) == 1
        err = capsys.readouterr().err
        assert "multiple of 8" in err and len(err.strip().splitlines()) == 1


def test_vgg_digits16_trains_in_row_bands_on_four_nodes_bit_for_bit():
    net, prec = load_net("vgg-digits16"), "8"
    split = digits_for(net)
    images, labels = quantize_images(split.x_train[:3], net.precision(prec).act), split.y_train[:3]
    params, tcfg = seeded_params(net, prec), TrainConfig(prec, lr_log2=3, seed=5)
    ccfg = small_cluster(4, net, prec, act_depth=8192)
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg, Mapping(bands=1, wgrad="auto"), steps=1, batch=3,
                           levels=["cl"] * 4)
    want, _ = golden_steps(net, params, images, labels, tcfg, 1, 3)
    assert params_equal(run.params, want)
    assert run.report["bands"] == 1
