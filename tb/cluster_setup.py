"""Small simulated clusters for the cluster tests: nodes with ``P x P`` arrays and buffers sized for
the digits nets (a smaller Verilator build than the CLI's defaults), router depths every test
program fits (:data:`SHARED_ROUTER`: clusters of equal nodes then share one Verilator build
whatever program they run), a tiny digits net for the
tests that simulate RTL nodes in PyMTL3 (the slowest level: every layer kind, a quarter of
``lenet-digits``' cycles), seeded initial weights, and a helper's keywords split into a mapping and
simulation options."""

from __future__ import annotations

import dataclasses

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, default_link, engine_for_net
from pymtl_fp.cluster.hw.router_config import RouterConfig
from pymtl_fp.cluster.run.train import MIN_ROUTER
from pymtl_fp.golden.train import init_params_float64, quantize_params
from pymtl_fp.net import load_net, net_from_dict

#: the smallest router depths of the tests' runs (``cluster.run.train.MIN_ROUTER`` under pytest):
#: a run's router config follows its program's size, and a Verilated cluster is built per config,
#: so with the library's smaller floor two tests of the same nodes would usually build twice
SHARED_ROUTER = RouterConfig(prog_depth=1024, table_depth=128, scratch_depth=4096)
#: the library's own floor (bound here before ``tests/conftest.py`` raises ``MIN_ROUTER``) with
#: output buffers of 512 elements (the tiny digits net's largest transfer is 256): for the
#: PyMTL3-simulated RTL nodes, whose every cycle costs time in proportion to their words of memory
#: (PyMTL3 updates every register and memory word at each clock edge), and which build nothing
SMALL_ROUTER = MIN_ROUTER.replace(out_depth=512)


def tiny_digits_net():
    """``lenet-digits`` with 4 channels in both conv layers (its formats and training defaults):
    conv, pool and fc layers, forward and backward, in about a quarter of its cycles."""
    d = load_net("lenet-digits").to_dict()
    d["name"] = "tiny-digits"
    for layer in d["layers"]:
        if layer["type"] == "conv":
            layer["out_channels"] = 4
    return net_from_dict(d)


def small_cluster(n: int, net, precision: str = "8", *, link=None, act_depth: int = 2048, weight_depth: int = 512,
                  bias_depth: int = 32, Ps=None) -> ClusterConfig:
    """``n`` nodes (array sides ``Ps``, default 4 each) joined by ``link`` (default: one element per
    cycle, 8 cycles of latency).  ``act_depth=512, weight_depth=256, bias_depth=1024`` is the
    Verilated tests' node (``test_cluster_verilated.py``): clusters of it share builds across files."""
    engines = tuple(engine_for_net(net, precision, P=p, act_depth=act_depth, weight_depth=weight_depth,
                                   bias_depth=bias_depth)
                    for p in (Ps or [4] * n))
    return ClusterConfig(engines, link or default_link(engines[0].stream_bits))


def seeded_params(net, precision: str = "8", seed: int = 2) -> dict:
    """The net's initial weights from ``seed``, quantized to ``precision``."""
    return quantize_params(net, init_params_float64(net, seed), precision)


def mapping_options(kw: dict, **defaults) -> tuple:
    """A test helper's keywords split into ``(Mapping, rest)``: the mapping choices (over
    ``defaults``) as one :class:`~pymtl_fp.cluster.compiler.mapping.Mapping`, the others (simulation
    options) as they were."""
    names = {f.name for f in dataclasses.fields(Mapping)}
    rest = {k: v for k, v in kw.items() if k not in names}
    return Mapping(**dict(defaults, **{k: v for k, v in kw.items() if k in names})), rest
