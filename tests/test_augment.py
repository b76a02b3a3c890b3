"""Seeded augmentation (:func:`pymtl_fp.data.augment_batch`): small translations of the training
images, a pure function of (seed, epoch, image index), that the golden study and the cluster apply
alike; the ``translate`` training setting and ``pymtl-fp train --translate``."""

from __future__ import annotations

import numpy as np
import pytest

from pymtl_fp.data import (
    MAX_TRANSLATE,
    augment_batch,
    check_translate,
    image_shifts,
    load_mnist_split,
    quantize_images,
    shift_images,
)
from pymtl_fp.net import NetError, load_net, net_from_dict


def _shift_one(image: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """The oracle: out[y, x] = image[y - dy, x - dx] where that pixel exists, else 0."""
    out = np.zeros_like(image)
    h, w = image.shape[-2:]
    for y in range(h):
        for x in range(w):
            if 0 <= y - dy < h and 0 <= x - dx < w:
                out[..., y, x] = image[..., y - dy, x - dx]
    return out


def test_shift_images_moves_each_image_by_its_own_offset():
    rng = np.random.default_rng(3)
    images = rng.integers(-100, 100, size=(9, 2, 6, 7))
    shifts = np.array([(dy, dx) for dy in (-2, 0, 3) for dx in (-1, 0, 2)])
    got = shift_images(images, shifts)
    for i, (dy, dx) in enumerate(shifts):
        assert np.array_equal(got[i], _shift_one(images[i], dy, dx)), (dy, dx)
    assert np.array_equal(shift_images(images, np.zeros((9, 2), int)), images)


def test_shift_images_refuses_a_shift_table_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"shifts of shape \(3, 2\) for 2 images"):
        shift_images(np.zeros((2, 1, 4, 4)), np.zeros((3, 2), int))


def test_the_shifts_are_a_pure_function_of_seed_epoch_and_image():
    a = image_shifts(seed=1, epoch=2, count=4000, translate=2)
    assert a.shape == (4000, 2)
    assert np.array_equal(a, image_shifts(1, 2, 4000, 2))
    assert not np.array_equal(a, image_shifts(1, 3, 4000, 2)) and not np.array_equal(a, image_shifts(2, 2, 4000, 2))
    # every offset of -2..2 occurs, in both directions, and nothing beyond
    for axis in (0, 1):
        assert set(a[:, axis]) == {-2, -1, 0, 1, 2}
    assert not image_shifts(1, 2, 4000, 0).any()


@pytest.mark.parametrize("bad", [-1, MAX_TRANSLATE + 1, 1.5, True, "2"])
def test_check_translate_refuses_in_one_line(bad):
    with pytest.raises(ValueError, match=rf"translate {bad!r}: a whole number of pixels in 0..{MAX_TRANSLATE}") as e:
        check_translate(bad)
    assert "\n" not in str(e.value)


def test_augment_batch_picks_each_image_s_row_and_commutes_with_quantization():
    split = load_mnist_split(seed=0)
    idx = np.array([17, 3, 3999, 250])
    table = image_shifts(7, 1, len(split.y_train), 2)
    got = augment_batch(split.x_train[idx], idx, 7, 1, len(split.y_train), 2)
    for row, i in enumerate(idx):
        assert np.array_equal(got[row], _shift_one(split.x_train[i], *table[i]))
    assert np.array_equal(augment_batch(split.x_train[idx], idx, 7, 1, len(split.y_train), 0), split.x_train[idx])
    # translating, then rounding to the 8-bit format = rounding, then translating (zero stays zero)
    fmt = load_net("lenet5-mnist").precision("8").act
    assert np.array_equal(quantize_images(got, fmt),
                          augment_batch(quantize_images(split.x_train[idx], fmt), idx, 7, 1, len(split.y_train), 2))


def test_the_golden_study_trains_on_the_translated_images():
    """One step of :func:`fit` with ``translate`` equals one :func:`train_step` on the first batch
    of the seed's order, each image translated by its epoch-0 offset."""
    from pymtl_fp.golden import train as T
    from pymtl_fp.golden.study import fit

    net, split, seed, batch = load_net("lenet5-mnist"), load_mnist_split(seed=0), 2, 4
    params, _ = fit(net, split, "8", epochs=1, batch=batch, lr_log2=3, seed=seed, max_steps=1, translate=2)
    idx = np.random.default_rng(seed).permutation(len(split.y_train))[:batch]
    offsets = image_shifts(seed, 0, len(split.y_train), 2)[idx]
    images = np.stack([_shift_one(split.x_train[i], *o) for i, o in zip(idx, offsets)])
    fmt = net.precision("8")
    want, _ = T.train_step(net, T.quantize_params(net, T.init_params_float64(net, seed), "8"),
                           quantize_images(images, fmt.act), split.y_train[idx], T.TrainConfig("8", lr_log2=3, seed=seed))
    plain, _ = fit(net, split, "8", epochs=1, batch=batch, lr_log2=3, seed=seed, max_steps=1)
    for name in want:
        assert np.array_equal(params[name]["w"], want[name]["w"]) and np.array_equal(params[name]["b"], want[name]["b"])
    assert any(not np.array_equal(params[n]["w"], plain[n]["w"]) for n in want)  # the translation mattered


@pytest.mark.slow
def test_a_cl_cluster_run_with_translation_equals_the_golden_study():
    """Two steps of lenet5-mnist on 2 CL nodes with ``translate=2``: bit-exact with the golden model,
    and its final weights are the golden study's after the same two steps."""
    from pymtl_fp.cluster.compiler.mapping import Mapping
    from pymtl_fp.cluster.config import ClusterConfig, engine_for_net
    from pymtl_fp.cluster.run.session import run_training
    from pymtl_fp.golden.study import fit

    net = load_net("lenet5-mnist")
    ccfg = ClusterConfig.homogeneous(2, engine_for_net(net, "8"))
    result = run_training(net, ccfg, Mapping(), dataset="mnist", steps=2, batch=2, levels=["cl", "cl"],
                          precision="8", seed=1, lr_log2=3, translate=2, fitted=True)
    assert result.weights_equal
    params, _ = fit(net, load_mnist_split(seed=0), "8", epochs=1, batch=2, lr_log2=3, seed=1,
                    max_steps=2, translate=2)
    for name, p in params.items():
        assert np.array_equal(result.run.params[name]["w"], p["w"]) and np.array_equal(result.run.params[name]["b"], p["b"])


def test_the_translate_setting_is_validated_and_round_trips():
    d = load_net("lenet5-mnist").to_dict()
    d["train"]["translate"] = 3
    assert net_from_dict(d).train.translate == 3
    assert net_from_dict(net_from_dict(d).to_dict()) == net_from_dict(d)
    d["train"]["translate"] = MAX_TRANSLATE + 1
    with pytest.raises(NetError, match=r"train\.translate must be an integer in 0\.\.4"):
        net_from_dict(d)


@pytest.mark.parametrize("engine", ["golden", "cluster"])
@pytest.mark.parametrize("option, value, allowed", [("--translate", "-1", "0..4"), ("--translate", "5", "0..4"),
                                                    ("--lr-halve-every", "0", "1..1000")])
def test_cli_refuses_a_bad_translate_or_halving_in_one_line(capsys, engine, option, value, allowed):
    from pymtl_fp.cli.main import main

    assert main(["train", "--engine", engine, "--net", "lenet5-mnist", option, value]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and option in err and allowed in err, err
