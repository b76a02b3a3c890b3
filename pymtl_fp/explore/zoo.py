"""The network zoo: published CNNs as shape-level layer lists, with their published totals.

=============  ==========  =================================================================
name           input       what it is
=============  ==========  =================================================================
lenet-digits   1x8x8       the project's demo net (:mod:`pymtl_fp.net`'s preset, as a view)
vgg-cifar      3x32x32     the VGG-like CIFAR-10 net used for low-precision integer training
                           (2x128C3-MP2-2x256C3-MP2-2x512C3-MP2-1024FC-10FC, as in WAGE,
                           Wu et al. ICLR'18, the 8-bit scheme DarkFPGA builds on)
alexnet        3x227x227   Krizhevsky et al. 2012, two-group conv2/4/5 as in the original
vgg16 / vgg19  3x224x224   Simonyan & Zisserman 2015, configurations D and E
resnet50/152   3x224x224   He et al. CVPR'16, bottleneck blocks, projection shortcuts at each
                           stage's first block, stride 2 on that block's first 1x1 conv (the
                           original Caffe models); BN folded into the convs
=============  ==========  =================================================================

Published totals (forward multiply-accumulates per image; "FLOPs" in He et al. are
multiply-adds, as that paper states):

* AlexNet 724 M MACs, 61 M weights; VGG-16 15.5 G MACs, 138 M weights -- Sze, Chen, Yang, Emer,
  "Efficient Processing of Deep Neural Networks: A Tutorial and Survey", Proc. IEEE 105(12),
  2017, Table "Summary of popular DNNs".
* VGG-19 19.6 G, ResNet-50 3.8 G, ResNet-152 11.3 G multiply-adds -- He, Zhang, Ren, Sun,
  "Deep Residual Learning for Image Recognition", CVPR 2016 (Sec. 3.3 and Table 1).

``tests/test_explore_zoo.py`` checks every count against these within 2 %.

The simulated hardware's nets (:mod:`pymtl_fp.net`: sequences of conv, max pool and fc layers)
are not written down again here: lenet-digits, any other preset and any net file are their
:meth:`~pymtl_fp.explore.layers.Network.from_net` views.  The published networks stay
shape-level records only, because a ``Net`` has no residual addition, grouped convolution or
average pool to hold them.
"""

from __future__ import annotations

from pymtl_fp.explore.layers import NetBuilder, Network
from pymtl_fp.net import load_net, presets

SZE_2017 = ("Sze et al., 'Efficient Processing of Deep Neural Networks: A Tutorial and "
            "Survey', Proc. IEEE 105(12), 2017, summary table of popular DNNs")
HE_2016 = ("He et al., 'Deep Residual Learning for Image Recognition', CVPR 2016, "
           "Sec. 3.3 / Table 1 (FLOPs = multiply-adds)")


def lenet_digits() -> Network:
    """The simulated cluster's workload, :mod:`pymtl_fp.net`'s preset itself (:meth:`Network.from_net`)."""
    return Network.from_net(load_net("lenet-digits"),
                            "demo CNN for scikit-learn's 8x8 digits (the simulated cluster's workload)")


def vgg_cifar() -> Network:
    b = NetBuilder("vgg-cifar", (3, 32, 32))
    for stage, width in enumerate((128, 256, 512), start=1):
        b.conv(f"conv{stage}_1", width, 3, pad=1)
        b.conv(f"conv{stage}_2", width, 3, pad=1)
        b.pool(f"pool{stage}", 2, 2)
    b.fc("fc1", 1024)
    b.fc("fc2", 10, relu=False)
    return b.build("VGG-like CIFAR-10 net of 8-bit integer training (WAGE / DarkFPGA style)")


def alexnet() -> Network:
    b = NetBuilder("alexnet", (3, 227, 227))
    b.conv("conv1", 96, 11, stride=4)
    b.pool("pool1", 3, 2)
    b.conv("conv2", 256, 5, pad=2, groups=2)
    b.pool("pool2", 3, 2)
    b.conv("conv3", 384, 3, pad=1)
    b.conv("conv4", 384, 3, pad=1, groups=2)
    b.conv("conv5", 256, 3, pad=1, groups=2)
    b.pool("pool5", 3, 2)
    b.fc("fc6", 4096)
    b.fc("fc7", 4096)
    b.fc("fc8", 1000, relu=False)
    return b.build("AlexNet (Krizhevsky et al. 2012), grouped conv2/4/5, 227x227 input",
                   {"fp_macs": (724e6, SZE_2017), "params": (61e6, SZE_2017)})


def _vgg(name: str, convs_per_stage: tuple, published: dict) -> Network:
    b = NetBuilder(name, (3, 224, 224))
    for stage, (n, width) in enumerate(zip(convs_per_stage, (64, 128, 256, 512, 512)), 1):
        for i in range(1, n + 1):
            b.conv(f"conv{stage}_{i}", width, 3, pad=1)
        b.pool(f"pool{stage}", 2, 2)
    b.fc("fc6", 4096)
    b.fc("fc7", 4096)
    b.fc("fc8", 1000, relu=False)
    return b.build(f"{name.upper()} (Simonyan & Zisserman 2015), 224x224 input", published)


def vgg16() -> Network:
    return _vgg("vgg16", (2, 2, 3, 3, 3),
                {"fp_macs": (15.5e9, SZE_2017), "params": (138e6, SZE_2017)})


def vgg19() -> Network:
    return _vgg("vgg19", (2, 2, 4, 4, 4), {"fp_macs": (19.6e9, HE_2016)})


def _resnet(name: str, blocks: tuple, published: dict) -> Network:
    b = NetBuilder(name, (3, 224, 224))
    b.conv("conv1", 64, 7, stride=2, pad=3)
    b.pool("pool1", 3, 2, pad=1)
    x = b.cur
    for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512)), start=2):
        for i in range(1, n + 1):
            p = f"res{stage}_{i}"
            stride = 2 if (i == 1 and stage > 2) else 1
            b.conv(p + "_a", width, 1, stride=stride, src=x, bias=False)
            b.conv(p + "_b", width, 3, pad=1, bias=False)
            main = b.conv(p + "_c", 4 * width, 1, relu=False, bias=False)
            short = x
            if i == 1:   # the projection where the cluster runs it: beside the add, on the block's input
                short = b.conv(p + "_proj", 4 * width, 1, stride=stride, relu=False, src=x, bias=False)
            x = b.add(p + "_add", main, short)
    b.global_pool("pool5")
    b.fc("fc", 1000, relu=False)
    return b.build(f"{name} (He et al. 2016), bottleneck blocks {blocks}", published)


def resnet50() -> Network:
    return _resnet("resnet50", (3, 4, 6, 3), {"fp_macs": (3.8e9, HE_2016)})


def resnet152() -> Network:
    return _resnet("resnet152", (3, 8, 36, 3), {"fp_macs": (11.3e9, HE_2016)})


NETWORKS = {
    "lenet-digits": lenet_digits,
    "vgg-cifar": vgg_cifar,
    "alexnet": alexnet,
    "vgg16": vgg16,
    "vgg19": vgg19,
    "resnet50": resnet50,
    "resnet152": resnet152,
}

_ALIASES = {"lenet": "lenet-digits", "vgg-16": "vgg16", "vgg-19": "vgg19",
            "resnet-152": "resnet152", "resnet-50": "resnet50", "vggcifar": "vgg-cifar",
            "vgg_cifar": "vgg-cifar", "lenet_digits": "lenet-digits"}


def get_network(name: str) -> Network:
    """A fresh :class:`Network` by zoo name (case-insensitive; a few aliases accepted).

    A name that is not in the zoo is tried as a :mod:`pymtl_fp.net` preset or net file
    (``.toml`` / ``.json``); a net file that does not load raises its
    :class:`~pymtl_fp.net.NetError`.
    """
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key in NETWORKS:
        return NETWORKS[key]()
    if key in presets() or name.lower().endswith((".toml", ".json")):
        return Network.from_net(load_net(name))  # a net file with a problem raises its NetError
    raise KeyError(f"unknown network {name!r}; known: {', '.join(NETWORKS)} "
                   "(or a pymtl_fp.net preset / net file)")
