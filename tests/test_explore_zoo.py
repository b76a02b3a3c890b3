"""The network zoo: operation counts against published totals and hand derivations."""

import math

import pytest

from pymtl_fp.explore.layers import NetBuilder, NetworkError
from pymtl_fp.explore.zoo import NETWORKS, get_network

# Published forward multiply-accumulates per image.  Independent of the zoo module's own
# ``published`` dicts on purpose: these are typed in from the papers.
#  * Sze, Chen, Yang, Emer, "Efficient Processing of Deep Neural Networks: A Tutorial and
#    Survey", Proc. IEEE 105(12), 2017 -- table of popular DNNs: AlexNet 724M MACs (conv 666M,
#    fc 58.6M), 61M weights (conv 2.3M); VGG-16 15.5G MACs, 138M weights (conv 14.7M).
#  * He, Zhang, Ren, Sun, "Deep Residual Learning for Image Recognition", CVPR 2016 -- Sec. 3.3:
#    VGG-19 19.6 billion FLOPs (multiply-adds); Table 1: ResNet-50 3.8e9, ResNet-152 11.3e9.
PUBLISHED_FP_MACS = {
    "alexnet": 724e6,
    "vgg16": 15.5e9,
    "vgg19": 19.6e9,
    "resnet50": 3.8e9,
    "resnet152": 11.3e9,
}
PUBLISHED_PARAMS = {"alexnet": 61e6, "vgg16": 138e6}
PUBLISHED_CONV_MACS = {"alexnet": 666e6}
PUBLISHED_CONV_PARAMS = {"alexnet": 2.3e6, "vgg16": 14.7e6}


@pytest.mark.parametrize("name", sorted(PUBLISHED_FP_MACS))
def test_forward_macs_match_published_within_2pct(name):
    fp = get_network(name).macs()["fp"]
    assert abs(fp / PUBLISHED_FP_MACS[name] - 1) < 0.02, (name, fp)


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_weights_match_published_within_2pct(name):
    assert abs(get_network(name).params / PUBLISHED_PARAMS[name] - 1) < 0.02


def test_conv_only_totals_match_published():
    for name, pub in PUBLISHED_CONV_MACS.items():
        net = get_network(name)
        conv = sum(ly.fp_macs for ly in net.layers if ly.kind == "conv")
        assert abs(conv / pub - 1) < 0.02
    for name, pub in PUBLISHED_CONV_PARAMS.items():
        net = get_network(name)
        conv = sum(ly.params for ly in net.layers if ly.kind == "conv")
        assert abs(conv / pub - 1) < 0.03


def test_lenet_digits_by_hand():
    # conv1: 8 out x 1 in x 3x3 at 8x8; conv2: 16 x 8 x 3x3 at 4x4; fc: 10 x (16*2*2)
    conv1, conv2, fc = 8 * 1 * 9 * 64, 16 * 8 * 9 * 16, 10 * 64
    m = get_network("lenet-digits").macs()
    assert m["fp"] == conv1 + conv2 + fc == 23680
    assert m["bp"] == conv2 + fc          # the input needs no gradient
    assert m["wg"] == m["fp"]


def test_vgg_cifar_by_hand():
    convs = [(3, 128, 32), (128, 128, 32), (128, 256, 16), (256, 256, 16), (256, 512, 8),
             (512, 512, 8)]
    fp = sum(c * k * 9 * h * h for c, k, h in convs) + 512 * 4 * 4 * 1024 + 1024 * 10
    assert get_network("vgg-cifar").macs()["fp"] == fp


def test_resnet152_structure():
    net = get_network("resnet152")
    convs = [ly for ly in net.layers if ly.kind == "conv"]
    adds = [ly for ly in net.layers if ly.kind == "add"]
    # 1 stem conv + 50 bottlenecks x 3 convs + 4 projection shortcuts; 152 = 1 + 150 + fc
    assert len(convs) == 1 + 3 * 50 + 4
    assert len(adds) == 50
    assert net.layers[-1].kind == "fc" and net.layers[-1].K == 1000
    assert net.shape_of(net.layers[-3].name) == (2048, 7, 7)


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_backward_counts(name):
    net = get_network(name)
    first = net.mac_layers[0]
    for ly in net.layers:
        m = net.layer_macs(ly)
        assert m["wg"] == m["fp"]
        assert m["bp"] == (0 if ly is first else m["fp"])
    assert net.macs()["train"] == 3 * net.macs()["fp"] - first.fp_macs


def test_residual_add_counts_elementwise_ops():
    b = NetBuilder("tiny-res", (4, 6, 6))
    x = b.conv("c1", 8, 3, pad=1)
    y = b.conv("c2", 8, 3, pad=1)
    b.add("sum", y, x)
    net = b.build()
    assert net.layer("sum").elementwise_ops() == 8 * 6 * 6
    assert net.layer("sum").fp_macs == 0


def test_bad_networks_are_rejected():
    b = NetBuilder("bad", (4, 6, 6))
    x = b.conv("c1", 8, 3, pad=1)
    b.conv("c2", 8, 3, stride=2, pad=1)
    with pytest.raises(NetworkError):
        b.add("sum", "c2", x)          # 8x3x3 + 8x6x6
    with pytest.raises(NetworkError):
        NetBuilder("bad2", (3, 4, 4)).conv("c", 8, 7)  # kernel larger than the input
    with pytest.raises(KeyError):
        get_network("no-such-net")


def test_lenet_matches_pymtl_fp_net():
    from pymtl_fp import net as hwnet

    theirs = {m.name: (m.fp, m.bp, m.wg) for m in hwnet.load_net("lenet-digits").macs()}
    net = get_network("lenet-digits")
    mine = {ly.name: tuple(net.layer_macs(ly).values()) for ly in net.mac_layers}
    assert mine == theirs
    ours_from_theirs = get_network(str(hwnet.NETS_DIR / "lenet-digits.toml"))
    assert [ly.out_shape for ly in ours_from_theirs.layers] == [ly.out_shape for ly in
                                                                 net.layers]


def test_train_ops_is_twice_the_macs():
    net = get_network("vgg16")
    assert net.train_ops() == 2 * net.macs()["train"]
    assert math.isclose(net.train_ops() / 1e9, 92.6, rel_tol=0.01)  # 6 x 15.5G - conv1_1's BP
