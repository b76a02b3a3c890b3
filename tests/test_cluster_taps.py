"""The cluster compiler's tap packing of the first conv layer (``--tap-pack auto|on|off``): the
host sends each image packed (``C*R*S`` channels on the first layer's output map), node 0 keeps
the layer's weights packed and runs it as a ``1 x 1`` conv, and the final weights, unpacked on
the way back, are the golden model's.  ``auto`` packs where it shortens the layer and the packed
input fits the buffers, else it runs the layer unpacked; ``on`` refuses a misfit."""

import numpy as np
import pytest

from pymtl_fp.cluster.config import ClusterConfig, ClusterError, engine_for_net
from pymtl_fp.cluster.run.train import cp_versions, golden_steps, params_equal, train_on_cluster
from pymtl_fp.data import load_digits_split, quantize_images
from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
from pymtl_fp.net import load_net
from pymtl_fp.tb.cluster_setup import mapping_options

pytestmark = pytest.mark.cl

NET = load_net("lenet-digits")
PREC = "8"
TCFG = TrainConfig(PREC, lr_log2=3, seed=11)


@pytest.fixture(scope="module")
def data():
    split = load_digits_split(seed=0)
    return quantize_images(split.x_train[:16], NET.precision(PREC).act), split.y_train[:16]


def _train(data, n, pack, *, lanes=1, steps=2, batch=8, schedule="1f1b", **kw):
    images, labels = data
    params = quantize_params(NET, init_params_float64(NET, 0), PREC)
    ccfg = ClusterConfig.homogeneous(n, engine_for_net(NET, PREC).replace(stream_lanes=lanes))
    mapping, kw = mapping_options(kw, overlap=True, schedule=schedule, pack=pack)
    run = train_on_cluster(NET, params, images, labels, TCFG, ccfg, mapping, steps=steps, batch=batch,
                           levels=["cl"] * n, **kw)
    want, losses = golden_steps(NET, params, images, labels, TCFG, steps, batch,
                                cp_versions(NET, ccfg, batch, mapping, TCFG))
    assert params_equal(run.params, want), f"{n} nodes, --tap-pack {pack}: weights differ from the golden model's"
    assert np.allclose(run.losses, losses)
    return run


def _link(run, name):
    return next(lk["elements_per_step"] for lk in run.report["links"] if lk["link"] == name)


@pytest.mark.parametrize("lanes", [1, 4])
def test_default_cluster_packs_conv1_and_runs_faster(data, lanes):
    """The default 4-node cluster at batch 8: packed, conv1's node keeps its array busier, the
    steady state is shorter, the host sends 9 channels of each 8 x 8 output map (3 tiles of 4
    lanes, 768 elements) instead of the 1-channel image (256), and the useful MACs are the same."""
    packed, plain = _train(data, 4, "auto", lanes=lanes), _train(data, 4, "off", lanes=lanes)
    assert packed.report["partition"]["tap_packed"] == ["conv1"] and plain.report["partition"]["tap_packed"] == []
    assert _link(packed, "host->node0") == 8 * 768 and _link(plain, "host->node0") == 8 * 256
    assert sum(nd["macs"] for nd in packed.report["node"]) == sum(nd["macs"] for nd in plain.report["node"])
    assert packed.report["steady_state"]["cycles_per_image"] < plain.report["steady_state"]["cycles_per_image"]
    assert packed.report["node"][0]["mac_utilization"] > 1.5 * plain.report["node"][0]["mac_utilization"]


def test_auto_runs_the_layer_unpacked_where_the_packed_input_does_not_fit(data):
    """Two nodes: node 0 would need more X words than it has for 8 packed images; ``auto`` runs
    conv1 unpacked (bit-exact), ``on`` refuses before simulating."""
    run = _train(data, 2, "auto")
    assert run.report["partition"]["tap_packed"] == []
    with pytest.raises(ClusterError, match="does not fit the nodes' buffers"):
        _train(data, 2, "on")


@pytest.mark.parametrize("n,schedule", [(3, "cp"), (1, "sgd")])
def test_per_image_schedules_with_a_packed_first_layer(data, n, schedule):
    """Continuous propagation and plain SGD (an update after each image) with conv1 packed: the
    golden per-image step with the staleness of the partition the run compiled."""
    run = _train(data, n, "auto", steps=1, batch=3, schedule=schedule)
    assert run.report["partition"]["tap_packed"] == ["conv1"]


def test_split_packed_layer_with_forced_cuts(data):
    """conv1 packed and split over nodes 0 and 1 (the packed input and weights cross the link)."""
    run = _train(data, 4, "on", batch=2, cuts=[0, 1, 2, 5, 9])
    assert run.report["partition"]["tap_packed"] == ["conv1"] and "conv1" in run.report["partition"]["split_layers"]


def test_auto_checks_the_fit_with_the_runs_precision_and_learning_rate(tmp_path, capsys):
    """A net whose only precision and learning rate differ from the defaults: ``auto`` compiles the
    packed programs with the run's shifts (not the defaults', whose update shift is negative here)."""
    import re

    from pymtl_fp.cli.main import main as cli_main
    from pymtl_fp.net import NETS_DIR

    text = (NETS_DIR / "lenet-digits.toml").read_text()
    text = re.sub(r"\[formats\.16\].*?(?=\[formats\.8\])", "", text, flags=re.S)
    text = text.replace("weight = [8, 6]", "weight = [8, 7]").replace("lr_log2 = 3", "lr_log2 = 5")
    (tmp_path / "net.toml").write_text(text)
    rc = cli_main(["train", "--engine", "cluster", "--net", str(tmp_path / "net.toml"), "--precision", "8",
                   "--nodes", "1", "--steps", "1", "--batch", "2", "--tap-pack", "auto"])
    out = capsys.readouterr().out
    assert rc == 0 and "tap-packed: conv1" in out and "final weights equal the golden model's: yes" in out
