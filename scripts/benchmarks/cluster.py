"""``pymtl-fp bench cluster``: simulated cluster cycles per second of every way to simulate the same
cluster, measured side by side in one run on one configuration (the ``train --engine cluster``
defaults unless options say otherwise).

* ``cl``: the CL cluster (CL engines, CL routers, CL links), the whole run, three ways: ticked by
  PyMTL3's simulator, by the direct scheduler (:mod:`pymtl_fp.direct`), and by the direct
  scheduler skipping quiet cycles (the ``train`` default); the three reports must be identical;
* ``rtl``: the RTL cluster simulated by PyMTL3 (RTL nodes and links), the first ``--pymtl-cycles``
  cycles of the same run;
* ``verilator-per-cycle``: every RTL node translated and imported into Verilator one by one
  through PyMTL3, links in PyMTL3, Python driving every port every cycle (the pre-compiled-cluster
  path), the first ``--pymtl-cycles`` cycles;
* ``verilated``: the whole RTL cluster Verilated in a compiled bench, Python answering each image's
  logits (what ``train --level verilator`` runs), the whole run, in both builds: ``joined`` (each
  node and link module Verilated once, the instances joined in C++: the default) and ``flat`` (the
  whole ``ClusterRTL`` as one Verilated model); their cycles must be equal, and both are golden;
* ``plain C++``: the same compiled model and bench with every stream preloaded -- the loss
  gradients recorded from the run above -- run to the end in one C++ call: what a hand-written C++
  harness without Python would reach (its cycles differ slightly: the gradients are offered early).

Every full run is checked against the golden model.  Figures only: nothing passes or fails on time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError
from pymtl_fp.cluster.compiler.mapping import Mapping

#: most ``--pymtl-cycles``: the PyMTL3-driven RTL cluster runs about a thousand cycles per second
MAX_PYMTL_CYCLES = 100_000

HELP = "cluster simulation speed: CL, PyMTL3 RTL, per-cycle Verilator, compiled Verilated cluster, plain C++"


def add_arguments(parser):
    parser.add_argument("--nodes", type=int, default=4, metavar="N", help="nodes (default 4)")
    parser.add_argument("--batch", type=int, default=8, metavar="B", help="mini-batch (default 8)")
    parser.add_argument("--steps", type=int, default=2, metavar="S", help="training steps (default 2)")
    parser.add_argument("--pymtl-cycles", type=int, default=1500, metavar="C",
                        help=f"cycles of the PyMTL3-driven RTL runs (default 1500, at most {MAX_PYMTL_CYCLES:,}; "
                             "0 skips them)")
    parser.add_argument("--json", metavar="FILE.json", help="write the figures as JSON")


def _setup(args):
    import numpy as np

    from pymtl_fp.cluster.config import ClusterConfig, default_link, engine_for_net
    from pymtl_fp.data import load_digits_split, quantize_images
    from pymtl_fp.golden.train import TrainConfig, init_params_float64, quantize_params
    from pymtl_fp.net import load_net

    net = load_net("lenet-digits")
    fmt = net.precision("8")
    split = load_digits_split(seed=0)
    order = np.random.default_rng(0).permutation(len(split.y_train))[: args.steps * args.batch]
    images, labels = quantize_images(split.x_train[order], fmt.act), split.y_train[order]
    params = quantize_params(net, init_params_float64(net, 0), "8")
    eng = engine_for_net(net, "8")
    ccfg = ClusterConfig.homogeneous(args.nodes, eng, default_link(eng.stream_bits, 8))
    return net, fmt, images, labels, params, TrainConfig("8", seed=0), ccfg


def _pymtl_rate(net, fmt, images, labels, params, tcfg, ccfg, args, level):
    """Cycles/s of the first ``--pymtl-cycles`` cycles of a PyMTL3-driven RTL cluster."""
    from pymtl_fp.cluster.compiler.compile import choose_partition, compile_cluster
    from pymtl_fp.cluster.run.train import _build, router_configs

    part = choose_partition(net, ccfg, args.batch)
    cprog = compile_cluster(net, ccfg, part, params, tcfg, args.steps, Mapping(overlap=True))
    rcfgs = router_configs(ccfg, cprog)
    t0 = time.perf_counter()
    top = _build(ccfg, rcfgs, cprog, [level] * ccfg.n, "rtl", net, fmt, images, labels, None)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(args.pymtl_cycles):
        top.sim_tick()
    dt = time.perf_counter() - t0
    return dict(cycles=args.pymtl_cycles, seconds=dt, build_seconds=build, rate=args.pymtl_cycles / dt)


def _plain(net, fmt, images, labels, params, tcfg, ccfg, args, grads):
    """One C++ call over the whole run with every stream preloaded (gradients included)."""
    from pymtl_fp.cluster.compiler.compile import choose_partition, compile_cluster
    from pymtl_fp.cluster.hw.host import HostModel
    from pymtl_fp.cluster.hw.verilated import VerilatedCluster
    from pymtl_fp.cluster.run.train import router_configs

    part = choose_partition(net, ccfg, args.batch)
    cprog = compile_cluster(net, ccfg, part, params, tcfg, args.steps, Mapping(overlap=True))
    vc = VerilatedCluster(ccfg, router_configs(ccfg, cprog))
    vc.load(cprog)
    host = HostModel(ccfg.engines[0], net, fmt, images, labels, args.batch, ccfg.engines[-1].P,
                     cprog.image_pack)
    mask = (1 << ccfg.engines[0].stream_bits) - 1
    s = vc.sim
    s.push("img", [v & mask for v in host.image_elements()])
    for j, prog in enumerate(cprog.nodes):
        s.push("host_in", [v & mask for v in prog.host_in], j)
    s.push("grad", [g & mask for g in grads])
    t0 = time.perf_counter()
    cycles, why = s.run(50_000_000)
    dt = time.perf_counter() - t0
    vc.close()
    if why != "done":
        raise UserError(f"bench cluster: the preloaded run ended with {why}")
    return dict(cycles=cycles, seconds=dt, rate=cycles / dt)


def main(args) -> int:
    from pymtl_fp.cluster.config import MAX_NODES
    from pymtl_fp.cluster.hw.host import HostModel
    from pymtl_fp.cluster.run.train import golden_steps, params_equal, train_on_cluster

    validate.integer(args.nodes, "--nodes", 1, MAX_NODES)
    validate.integer(args.batch, "--batch", 1, 1437)
    validate.integer(args.steps, "--steps", 1, 1437 // args.batch)
    validate.integer(args.pymtl_cycles, "--pymtl-cycles", 0, MAX_PYMTL_CYCLES)
    validate.output_file(args.json, "--json", ".json")
    net, fmt, images, labels, params, tcfg, ccfg = _setup(args)
    validate.cluster_partition(net, ccfg, args.batch, f"bench cluster --nodes {args.nodes}")
    want, _ = golden_steps(net, params, images, labels, tcfg, args.steps, args.batch)
    print(f"cluster: lenet-digits, {args.nodes} nodes of 4x4, batch {args.batch}, {args.steps} steps, "
          f"overlapping engines, 1f1b", flush=True)
    rows = {}
    reports = {}
    from pymtl_fp.cluster.hw import verilated

    for key, level, kernel, skip in (("cl-pymtl", "cl", "pymtl", False), ("cl-direct", "cl", "direct", False),
                                     ("cl", "cl", "direct", True), ("verilated-flat", "verilator", None, True),
                                     ("verilator", "verilator", None, True)):
        verilated.DEFAULT_MODE = "flat" if key == "verilated-flat" else "joined"
        try:
            run = train_on_cluster(net, params, images, labels, tcfg, ccfg, Mapping(overlap=True), steps=args.steps,
                                   batch=args.batch, levels=[level] * args.nodes, kernel=kernel, skip=skip)
        finally:
            verilated.DEFAULT_MODE = "joined"
        if not params_equal(run.params, want):
            raise UserError(f"bench cluster: the {key} run does not equal the golden model")
        ws, cpu = run.report["wall_seconds"], run.report.get("cpu_seconds", {}).get("simulate")
        rows[key] = dict(cycles=run.cycles, seconds=ws["simulate"], build_seconds=ws["build"], cpu_seconds=cpu,
                         rate=run.cycles / ws["simulate"], golden=True)
        reports[key] = {k: v for k, v in run.report.items() if k in ("cycles_per_step", "node", "links", "losses")}
        print(f"  measured {key}: {run.cycles} cycles in {ws['simulate']:.2f} s", flush=True)
        if key == "verilator":
            host = HostModel(ccfg.engines[0], net, fmt, images, labels, args.batch, ccfg.engines[-1].P)
            grads = [g for y in run.logits for g in host.image_done(_logit_elements(y, host), 0)]
    if not rows["cl"]["cycles"] == rows["verilator"]["cycles"] == rows["verilated-flat"]["cycles"]:
        raise UserError("bench cluster: CL and Verilated cycles differ")
    if not reports["cl-pymtl"] == reports["cl-direct"] == reports["cl"]:
        raise UserError("bench cluster: the CL reports of the three schedulers differ")
    if args.pymtl_cycles:
        for level in ("rtl", "verilator-per-cycle"):
            rows[level] = _pymtl_rate(net, fmt, images, labels, params, tcfg, ccfg, args,
                                      "rtl" if level == "rtl" else "verilator")
            print(f"  measured {level}: {rows[level]['cycles']} cycles in {rows[level]['seconds']:.2f} s", flush=True)
    rows["plain C++"] = _plain(net, fmt, images, labels, params, tcfg, ccfg, args, grads)
    names = {"cl-pymtl": "CL cluster, PyMTL3's scheduler", "cl-direct": "CL cluster, direct scheduler",
             "cl": "CL, direct, quiet cycles skipped (default)", "rtl": "RTL cluster in PyMTL3",
             "verilator-per-cycle": "RTL nodes via PyMTL3's Verilator import",
             "verilated-flat": "Verilated cluster, flat build", "verilated": "Verilated cluster, joined build (default)",
             "plain C++": "joined build, one C++ call"}
    rows["verilated"] = rows.pop("verilator")
    print(f"  {'simulator':<44}{'cycles':>9}{'sim s':>9}{'CPU s':>8}{'cycles/s':>12}{'vs CL/PyMTL3':>14}")
    for key in ("cl-pymtl", "cl-direct", "cl", "rtl", "verilator-per-cycle", "verilated-flat", "verilated", "plain C++"):
        if key not in rows:
            continue
        r = rows[key]
        cpu = f"{r['cpu_seconds']:8.2f}" if r.get("cpu_seconds") is not None else f"{'':8}"
        print(f"  {names[key]:<44}{r['cycles']:>9}{r['seconds']:>9.2f}{cpu}{r['rate']:>12,.0f}"
              f"{r['rate'] / rows['cl-pymtl']['rate']:>13.1f}x")
    base, fast = rows["cl-pymtl"], rows["cl"]
    print(f"  CL simulation CPU time: {base['cpu_seconds']:.2f} s with PyMTL3's scheduler, {fast['cpu_seconds']:.2f} s "
          f"direct with skipping ({base['cpu_seconds'] / fast['cpu_seconds']:.1f}x less); the three CL reports equal")
    ratio = rows["plain C++"]["rate"] / rows["verilated"]["rate"]
    print(f"  the Python crossings (one per image) cost {ratio:.2f}x against one C++ call; "
          f"builds (cached after the first): flat {rows['verilated-flat']['build_seconds']:.1f} s, joined "
          f"{rows['verilated']['build_seconds']:.1f} s; the joined build simulates "
          f"{rows['verilated']['rate'] / rows['verilated-flat']['rate']:.2f}x as fast as the flat one")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(config=vars_of(args), rows=rows), indent=2) + "\n")
        print(f"  wrote {args.json}")
    return 0


def _logit_elements(y, host):
    """The logit stream elements of one image's logits ``y`` (in node N-1's layout)."""
    from pymtl_fp.engine.msgs import pack_act

    K, ho, wo = host.out_shape
    return [int(v) for v in pack_act(y.reshape(1, K, ho, wo), host.P_out).reshape(-1)]


def vars_of(args) -> dict:
    return {k: v for k, v in vars(args).items() if not k.startswith("_") and isinstance(v, (int, float, str))}
