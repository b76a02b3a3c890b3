"""``pymtl-fp bench modes``: one forward pass in each of the engine's dataflows, simulated.

A first layer of few input channels (``C`` = 3, 3x3, padding 1; ``K`` = P output channels) and
a layer with ``C`` = 2P, on 5x5 maps of ``P`` images (one image tile; what the preset's buffers
hold, tap packing's input included), each run on the simulated engine as channel-parallel (``fwd``), tap-packed
(:mod:`pymtl_fp.engine.packing`, only a layer fed from off the engine) and batch-parallel
(``bp = 1``).  Per run: the compute command's cycles measured on the level and the timing model's
(:mod:`pymtl_fp.timing`, what ``explore modes`` and ``explore design`` choose by), its MAC
utilization, and whether the result equals the golden model's bits.

``--layer NET:LAYER`` runs a zoo network's conv layer at full size instead, as ``explore design``
deals it (one engine's share of ``ceil(K / E)`` output channels, ``--batch`` images), at CL on a
``P x P`` engine with 64 Ki-word buffers: each mode's commands hold as many of the images as its
maps fit (the batch-innermost maps are ``P`` times smaller than channel-layout ones for ``C < P``),
and the cycles per batch are set beside :func:`pymtl_fp.explore.fpga_model.tiled_layer_cycles`'.
"""

from __future__ import annotations

import numpy as np

HELP = "one forward pass per dataflow (channel, tap-packed, batch-parallel), simulated: cycles, utilization"

#: name -> (c, k as multiples of P or absolute, h, w): the measured layers
LAYERS = {"first (C=3)": (3, None, 5, 5), "deep (C=2P)": (None, None, 5, 5)}


def add_arguments(p) -> None:
    p.add_argument("--level", default=None, choices=("fl", "cl", "rtl", "verilator"),
                   help="simulation level (default verilator: the RTL; cl with --layer)")
    p.add_argument("--layer", default=None, metavar="NET:LAYER",
                   help="a zoo network's conv layer at full size, as explore design deals it (e.g. vgg-cifar:conv1_1)")
    p.add_argument("--array", type=int, default=32, help="with --layer: the array side P (default 32)")
    p.add_argument("--engines", type=int, default=4,
                   help="with --layer: engines sharing the layer (default 4: the design search's best on a VU9P "
                        "at 8 bits, the most 32x32 engines its LUTs fit)")
    p.add_argument("--config", default="medium", help="engine preset (default medium: P = 8)")
    p.add_argument("--batch", type=int, default=None, help="images (default P: one image tile)")
    p.add_argument("--seed", type=int, default=7)


def measure(cfg, level: str, batch: int, seed: int = 7) -> list:
    """One row per (layer, mode): measured and modelled compute cycles, utilization, bit-exact."""
    from pymtl_fp.engine import packing, program
    from pymtl_fp.engine.cases import golden_op, validate_case
    from pymtl_fp.tb.engine_harness import random_case, run_op

    P = cfg.P
    rng = np.random.default_rng(seed)
    rows = []
    for name, (c, k, h, w) in LAYERS.items():
        c, k = c or 2 * P, k or P
        case = validate_case(cfg, "fwd", random_case(cfg, "fwd", rng, n=batch, c=c, k=k, h=h, w=w, r=3, s=3,
                                                     stride=1, pad=1, mode="stochastic"))
        want = golden_op(cfg, "fwd", case)["y"]
        macs = program.op_timing(cfg, "fwd", case)["macs"]
        runs = {"channel": (case, lambda out: out["y"]), "batch": (dict(case, bp=1), lambda out: out["y"])}
        if c < P:  # tap packing: a layer fed from off the engine
            runs["packed"] = (validate_case(cfg, "fwd", packing.pack_case("fwd", case)), lambda out: out["y"])
        for mode, (run_case, result) in runs.items():
            got = run_op(level, cfg, "fwd", **run_case)
            model = program.op_timing(cfg, "fwd", validate_case(cfg, "fwd", run_case))["compute_cycles"]
            cyc = got.get("compute_cycles") or model
            rows.append(dict(layer=name, mode=mode, c=c, k=k, n=batch, measured=got.get("compute_cycles"),
                             model=model, util=macs / (P * P * cyc),
                             exact=bool(np.array_equal(result(got), want))))
    return rows


def measure_layer(net_layer: str, P: int, engines: int, batch: int, level: str = "cl", seed: int = 7) -> list:
    """One row per mode of a zoo conv layer's share (see the module docstring)."""
    from pymtl_fp.engine import packing, program
    from pymtl_fp.engine.cases import CaseError, golden_op, validate_case
    from pymtl_fp.engine.config import EngineConfig
    from pymtl_fp.explore.fpga_model import EngineArray, tiled_layer_cycles
    from pymtl_fp.explore.zoo import get_network
    from pymtl_fp.tb.engine_harness import drive, get_model, random_case

    net_name, _, name = net_layer.partition(":")
    layer = next((ly for ly in get_network(net_name).mac_layers if ly.name == name), None)
    if layer is None or layer.kind != "conv" or layer.groups != 1:
        raise ValueError(f"{net_layer}: no ungrouped conv layer of that name")
    k = -(-layer.K // engines)
    cfg = EngineConfig(rows=P, cols=P, act_depth=65536, weight_depth=65536, bias_depth=4096,
                       stream_lanes=max(e for e in (1, 2, 4, 8, 16) if P % e == 0))
    rng = np.random.default_rng(seed)
    first = all(s == "input" for s in layer.inputs)
    explore = {"channel": tiled_layer_cycles(layer, EngineArray(P, engines), layer.K, layer.C, batch),
               "batch": tiled_layer_cycles(layer, EngineArray(P, engines), layer.K, layer.C, batch, True)}
    rows = []
    for mode in ("channel", "packed", "batch") if first else ("channel", "batch"):
        n = batch
        while True:  # the most images a command's maps hold
            case = random_case(cfg, "fwd", rng, n=n, c=layer.C, k=k, h=layer.in_shape[1], w=layer.in_shape[2],
                               r=layer.R, s=layer.S, stride=layer.stride, pad=layer.pad, mode="stochastic")
            run = dict(case, bp=1) if mode == "batch" else packing.pack_case("fwd", case) if mode == "packed" else case
            try:
                run = validate_case(cfg, "fwd", run)
                break
            except CaseError:
                if n == 1:
                    raise
                n = max(1, n // 2)
        want = golden_op(cfg, "fwd", case)["y"]  # (the layer itself: its maps need not fit a buffer)
        prog = program.build(cfg, "fwd", run)
        out, t = drive(get_model(level, cfg), cfg, prog, idle_limit=10**7, max_cycles=10**9)
        got = prog.unpack(out)["y"]
        model = program.op_timing(cfg, "fwd", run)["compute_cycles"]
        per_batch = (t["compute_cycles"] or model) * batch // n
        rows.append(dict(mode=mode, n=n, commands=batch // n, measured=t["compute_cycles"], model=model,
                         per_batch=per_batch, explore=explore.get(mode, {}).get("fp"),
                         util=timing_util(layer, k, batch, P, per_batch), exact=bool(np.array_equal(got, want))))
    return rows


def timing_util(layer, k, batch, P, cycles) -> float:
    from pymtl_fp import timing

    shape = timing.ConvShape(n=batch, c=layer.C, k=k, h=layer.in_shape[1], w=layer.in_shape[2], r=layer.R, s=layer.S,
                             stride=layer.stride, pad=layer.pad)
    return timing.useful_macs("fwd", shape.fields(P)) / (P * P * cycles)


def main(args) -> int:
    from pymtl_fp.cli import validate
    from pymtl_fp.cli.errors import UserError
    from pymtl_fp.engine.config import PRESETS

    validate.integer(args.seed, "--seed", 0, 2**32 - 1)
    if not args.layer:
        given = [flag for flag, value, default in (("--array", args.array, 32), ("--engines", args.engines, 4))
                 if value != default]
        if given:
            raise UserError(f"{', '.join(given)}: option(s) of --layer (a zoo layer's share); the engine preset's "
                            "array is --config's")
    if args.layer:
        validate.integer(args.array, "--array", 2, 32)
        validate.integer(args.engines, "--engines", 1, 1024)
        batch = 128 if args.batch is None else args.batch
        validate.integer(batch, "--batch", 1, 4096)
        try:
            rows = measure_layer(args.layer, args.array, args.engines, batch, args.level or "cl", args.seed)
        except (ValueError, KeyError) as exc:
            raise UserError(f"bench modes --layer: {exc}") from None
        print(f"{args.layer}: one of {args.engines} engines' share, P = {args.array}, {batch} images, at "
              f"{args.level or 'cl'} (cycles of the forward pass per batch):")
        print(f"  {'mode':<8} {'images/cmd':>10} {'cmds':>5} {'cycles/cmd':>11} {'model':>9} {'per batch':>10} "
              f"{'explore':>10} {'util.':>7}  bits")
        for r in rows:
            meas = "-" if r["measured"] is None else f"{r['measured']:,}"
            ex = "-" if r["explore"] is None else f"{r['explore']:,}"
            print(f"  {r['mode']:<8} {r['n']:>10} {r['commands']:>5} {meas:>11} {r['model']:>9,} {r['per_batch']:>10,} "
                  f"{ex:>10} {100 * r['util']:6.1f}%  {'= golden' if r['exact'] else 'DIFFER'}")
        return 0 if all(r["exact"] for r in rows) else 1

    if args.config not in PRESETS:
        raise UserError(f"--config {args.config}: unknown preset; known: {', '.join(PRESETS)}")
    cfg = PRESETS[args.config]
    batch = cfg.P if args.batch is None else args.batch
    validate.integer(batch, "--batch", 1, 64)
    try:
        rows = measure(cfg, args.level or "verilator", batch, args.seed)
    except ValueError as exc:  # a case the preset's buffers cannot hold
        raise UserError(f"bench modes: {exc}") from None
    print(f"engine {args.config} (P = {cfg.P}), {batch} images, 3x3 pad 1, 5x5, at {args.level or 'verilator'}:")
    print(f"  {'layer':<14} {'mode':<8} {'C':>3} {'K':>3} {'cycles':>8} {'model':>8} {'util.':>7}  bits")
    for r in rows:
        meas = "-" if r["measured"] is None else f"{r['measured']:,}"
        print(f"  {r['layer']:<14} {r['mode']:<8} {r['c']:>3} {r['k']:>3} {meas:>8} {r['model']:>8,} "
              f"{100 * r['util']:6.1f}%  {'= golden' if r['exact'] else 'DIFFER'}")
    return 0 if all(r["exact"] for r in rows) else 1
