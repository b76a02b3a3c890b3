"""The units ``pymtl-fp translate`` (:mod:`pymtl_fp.cli.cmd_translate`) can translate: for each, its named
configurations, how to build and name it, its elaboration parameters, Verilator waivers, IP kit and the
smoke run that checks a build (engine: a ``fwd`` layer against the golden model; cluster: a training step
on the Verilated cluster)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError


@dataclasses.dataclass(frozen=True)
class Unit:
    """A unit translate can emit: how to list, build, name and describe its configurations."""

    name: str
    presets: Callable  #: () -> {preset name: config}
    build: Callable  #: (cfg) -> constructed component
    module: Callable  #: (cfg) -> Verilog module name
    params: Callable  #: (cfg) -> JSON-able elaboration parameters
    derived: Callable = lambda cfg: {}  #: (cfg) -> JSON-able derived figures
    resource_key: str | None = None  #: unit name in pymtl_fp.resources.estimate
    waivers: dict | None = None  #: None: pymtl_fp.lint.PYMTL3_WAIVERS
    plain_build: bool = False  #: --build: a plain `verilator --cc --build -Wall` with the emitted waivers
    smoke: Callable | None = None  #: (sim, cfg, cycles) -> description; default: random inputs
    kit: Callable | None = None  #: (out dir, module name, cfg) -> the IP-kit files written beside the Verilog
    kit_top: Callable | None = None  #: (module name) -> the top of the plain build (a wrapper of the kit)
    wave_state: tuple = ()  #: controller signals the GTKWave save file groups (names under the top)


def _engine_unit():
    def presets():
        from pymtl_fp.engine.config import PRESETS
        return dict(PRESETS)

    def build(cfg):
        from pymtl_fp.engine.EngineRTL import EngineRTL
        return EngineRTL(cfg)

    def derived(cfg):
        return dict(P=cfg.P, macs_per_cycle=cfg.macs_per_cycle, data_bits=cfg.data_bits)

    from pymtl_fp.engine import ipkit
    from pymtl_fp.engine.verilog import ENGINE_WAIVERS  # PyMTL3's plus engine-specific ones, each with a reason

    return Unit("engine", presets, build, lambda cfg: cfg.module_name(), lambda cfg: cfg.params(),
                derived, "engine", waivers=ENGINE_WAIVERS, smoke=_engine_smoke, kit=ipkit.write,
                kit_top=lambda name: f"{name}_axis", wave_state=ipkit.WAVE_STATE)


def _engine_smoke(sim, cfg, cycles) -> str:
    """A real operation: a small random ``fwd`` layer (P in/out channels, 3x3 kernel, padding 1)
    through the Verilated engine, checked against the golden model."""
    import numpy as np

    from pymtl_fp.engine import program
    from pymtl_fp.engine.cases import golden_op, validate_case
    from pymtl_fp.tb.engine_harness import drive, random_case

    rng = np.random.default_rng(1)
    case = validate_case(cfg, "fwd", random_case(cfg, "fwd", rng, n=1, c=cfg.P, k=cfg.P, h=3, w=3, r=3, s=3, pad=1))
    prog = program.build(cfg, "fwd", case)
    elements, timing = drive(sim, cfg, prog, stall=(0.2, 0.2, 0.2), seed=1)
    got, want = prog.unpack(elements)["y"], golden_op(cfg, "fwd", case)["y"]
    ok = got.shape == want.shape and bool(np.array_equal(got, want))
    if not ok:
        raise UserError("smoke run: the Verilated engine's fwd result differs from the golden model")
    return (f"smoke run: fwd of a {case['x'].shape} input with {case['w'].shape} weights, random stalls, "
            f"{timing['total_cycles']} cycles, result equals the golden model")


def _link_unit():
    def presets():
        from pymtl_fp.link.config import PRESETS
        return dict(PRESETS)

    def build(cfg):
        from pymtl3 import mk_bits

        from pymtl_fp.link.LinkRTL import LinkRTL
        return LinkRTL(mk_bits(cfg.msg_bits), cfg)

    def name_and_params(cfg):  # the name and parameters LinkRTL itself uses (one source)
        from pymtl_fp.link.LinkRTL import link_module_name
        return link_module_name(cfg)

    def derived(cfg):
        return dict(flits=cfg.flits, flit_bits=cfg.flit_bits, round_trip=cfg.round_trip,
                    zero_load_latency=cfg.zero_load_latency, throughput_bits=cfg.throughput_bits)

    return Unit("link", presets, build, lambda cfg: name_and_params(cfg)[0],
                lambda cfg: name_and_params(cfg)[1], derived, "link")


def _requant_unit():
    def presets():
        from pymtl_fp.primitives.RequantRTL import PRESETS
        return dict(PRESETS)

    def build(cfg):
        from pymtl_fp.primitives.RequantRTL import RequantRTL
        return RequantRTL(cfg.acc_bits, cfg.out_bits)

    return Unit("requant", presets, build, lambda cfg: cfg.module_name(), lambda cfg: cfg.params(),
                lambda cfg: {}, "requant")


def _node_unit():
    """A node: an engine preset with the default router/DMA (program memory, buffers)."""
    def presets():
        from pymtl_fp.cluster.hw.router_config import RouterConfig
        from pymtl_fp.engine.config import PRESETS
        return {name: (e, RouterConfig(stream_bits=e.stream_bits)) for name, e in PRESETS.items()}

    def build(cfg):
        from pymtl_fp.cluster.hw.node import NodeRTL
        return NodeRTL(*cfg)

    def module(cfg):
        from pymtl_fp.cluster.hw.node import node_module_name
        return node_module_name(*cfg)

    def params(cfg):
        from pymtl_fp.cluster.hw.node import node_params
        return node_params(*cfg)

    from pymtl_fp.cluster.hw import ipkit as isa_kit
    from pymtl_fp.cluster.hw.lint import CLUSTER_WAIVERS

    return Unit("node", presets, build, module, params, lambda cfg: dict(P=cfg[0].P), "node",
                waivers=CLUSTER_WAIVERS, plain_build=True, smoke=_node_smoke, kit=isa_kit.write)


def _cluster_unit():
    """A cluster of lenet-digits nodes (8-bit formats): ``--nodes``, ``--arrays``, ``--topology``,
    ``--faults`` (link fault injectors); the config name is ``lenet8``."""
    def presets():
        return {"lenet8": None}

    from pymtl_fp.cluster.hw.lint import CLUSTER_WAIVERS

    return Unit("cluster", presets, None, None, None, lambda cfg: {}, "cluster", waivers=CLUSTER_WAIVERS,
                plain_build=True, smoke=_cluster_smoke)


def cluster_config(args):
    """(ClusterConfig, router configs, faults) from the cluster options."""
    from pymtl_fp.cluster.config import MAX_NODES, ClusterConfig, ClusterError, default_link, engine_for_net
    from pymtl_fp.cluster.hw.node import router_config_for
    from pymtl_fp.cluster.hw.router_config import RouterConfig
    from pymtl_fp.net import load_net

    validate.integer(args.nodes, "--nodes", 1, MAX_NODES)
    try:
        arrays = [int(v) for v in args.arrays.split(",")] if args.arrays else [4] * args.nodes
    except ValueError:
        raise UserError(f"--arrays {args.arrays}: one integer array side per node") from None
    if len(arrays) != args.nodes:
        raise UserError(f"--arrays {args.arrays}: {len(arrays)} array sides for --nodes {args.nodes}")
    net = load_net("lenet-digits")
    try:
        pipes = validate.pipelines(args.pipeline) if getattr(args, "pipeline", None) is not None else {}
        engines = tuple(engine_for_net(net, "8", P=p).replace(**pipes) for p in arrays)
        ccfg = ClusterConfig(engines, default_link(engines[0].stream_bits, 8), topology=args.topology)
    except (ClusterError, ValueError) as exc:
        raise UserError(str(exc)) from None
    return ccfg, [router_config_for(e, RouterConfig()) for e in engines], bool(args.faults)


def _node_smoke(sim, cfg, cycles) -> str:
    return ("built: the kit's AXI4-Stream wrapper over the node (a training step runs in the kit's C++ bench on a "
            "--case, or inside a cluster: --unit cluster --build)")


def _cluster_smoke(ccfg, rcfgs, faults) -> str:
    """One training step of 2 images on the Verilated cluster, checked against the golden model."""
    from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster
    from pymtl_fp.data import load_digits_split, quantize_images
    from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
    from pymtl_fp.net import load_net

    net = load_net("lenet-digits")
    fmt = net.precision("8")
    split = load_digits_split(seed=0)
    images, labels = quantize_images(split.x_train[:2], fmt.act), split.y_train[:2]
    params = quantize_params(net, init_params_float64(net, 0), "8")
    tcfg = TrainConfig("8")
    f = dict(seed=1, drop=22, burst=22, flip=22) if faults else None
    run = train_on_cluster(net, params, images, labels, tcfg, ccfg, steps=1, batch=2, levels=["verilator"] * ccfg.n,
                           faults=f)
    want, _ = golden_steps(net, params, images, labels, tcfg, 1, 2)
    if not params_equal(run.params, want):
        raise UserError("smoke run: the Verilated cluster's weights differ from the golden model")
    return (f"smoke run: one training step of 2 images on the Verilated cluster{' with link faults' if f else ''}"
            f", {run.cycles} cycles, weights equal the golden model")


UNITS = {"engine": _engine_unit, "link": _link_unit, "node": _node_unit, "cluster": _cluster_unit,
         "requant": _requant_unit}


def get_unit(name: str) -> Unit:
    if name not in UNITS:
        raise UserError(f"unknown unit {name!r}; choose one of {', '.join(UNITS)}")
    return UNITS[name]()


def resolve_config(unit: Unit, preset: str):
    presets = unit.presets()
    if preset not in presets:
        raise UserError(f"unknown {unit.name} preset {preset!r}; valid: {', '.join(presets)}")
    return presets[preset]
