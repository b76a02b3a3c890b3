"""Small simulated clusters for the cluster tests: nodes with ``P x P`` arrays and buffers sized for
the digits nets (a smaller Verilator build than the CLI's defaults), seeded initial weights, and a
helper's keywords split into a mapping and simulation options."""

from __future__ import annotations

import dataclasses

from pymtl_fp.cluster.compiler.mapping import Mapping
from pymtl_fp.cluster.config import ClusterConfig, default_link, engine_for_net
from pymtl_fp.golden.train import init_params_float64, quantize_params


def small_cluster(n: int, net, precision: str = "8", *, link=None, act_depth: int = 2048, Ps=None) -> ClusterConfig:
    """``n`` nodes (array sides ``Ps``, default 4 each; W 512, B 32 words) joined by ``link``
    (default: one element per cycle, 8 cycles of latency)."""
    engines = tuple(engine_for_net(net, precision, P=p, act_depth=act_depth, weight_depth=512, bias_depth=32)
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
