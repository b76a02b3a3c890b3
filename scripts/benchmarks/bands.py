"""``pymtl-fp bench bands``: what running a conv layer in row bands (FPDeep's fine-grained pipeline,
:mod:`pymtl_fp.golden.band`) costs and saves on one engine, measured on the simulated engine.

For every conv layer of a zoo net (one image, random operands at the net's formats) and every band
height of ``--heights`` (``all``: the whole map), each operation runs as one command per band at
``--level``:

* ``fwd`` over bands of ``y``'s rows and ``bwd_data`` over bands of ``dx``'s rows: the bands' results,
  side by side, must equal the whole map's, bit for bit (stochastic rounding: each band rounds as
  rows of the whole map), else the run fails;
* ``bwd_weight`` over bands of ``dy``'s rows with ``raw = 1``: the first band writes its un-rounded
  sums to B and each later one adds its own (``acc = 1``, the previous band's sums LOADed first, as
  a compiler would leave them in B); the last sums must equal the whole map's raw sums.

Printed per layer, operation and height: the bands' measured compute cycles (sum) against the whole
map's (each command pays the pipeline's fill and drain again), and the words of the largest input
window a band reads (its line buffer) against the whole input map's.  Figures only: nothing passes
or fails on time.
"""

from __future__ import annotations

import json

import numpy as np

from pymtl_fp.cli import validate
from pymtl_fp.cli.errors import UserError

HELP = "a conv layer in row bands: compute cycles and line-buffer words against the whole map (measured)"
OPS = ("fwd", "bwd_data", "bwd_weight")


def add_arguments(parser):
    parser.add_argument("--net", default="lenet-digits", metavar="NAME", help="zoo net (default lenet-digits)")
    parser.add_argument("--config", default="small", metavar="PRESET", help="engine preset (default small)")
    parser.add_argument("--level", default="cl", choices=("fl", "cl", "rtl", "verilator"),
                        help="engine level (default cl; fl has no cycles)")
    parser.add_argument("--heights", default="1,2,4,all", metavar="H1,H2,...",
                        help="band heights in result rows, 'all' = the whole map (default 1,2,4,all)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")


#: the tallest band (a map's side is at most net.MAX_SIDE rows)
MAX_HEIGHT = 4096


def _heights(text: str) -> list:
    out = []
    for part in text.split(","):
        part = part.strip()
        if part == "all":
            out.append(None)
            continue
        try:
            h = int(part)
        except ValueError:
            h = 0
        if not 1 <= h <= MAX_HEIGHT:
            raise UserError(f"--heights: {part!r} is not a band height (1..{MAX_HEIGHT} rows or 'all')")
        out.append(h)
    return out


def _deep_enough(cfg, net):
    """``cfg`` with its buffers deepened (powers of two) to hold every conv layer of ``net`` for one
    image, raw weight gradients in B included: the bench measures bands, not buffer limits."""
    from pymtl_fp.cluster.compiler.partition import layer_info
    from pymtl_fp.engine.msgs import tiles

    P, act, wts, bias = cfg.P, cfg.act_depth, cfg.weight_depth, cfg.bias_depth
    for li, layer in enumerate(net.layers):
        if type(layer).__name__ == "Conv":
            f = layer_info(net, li)
            ct, kt = tiles(f["c"], P), tiles(f["k"], P)
            act = max(act, ct * f["h"] * f["w"], kt * f["ho"] * f["wo"])
            wts = max(wts, kt * ct * f["r"] * f["s"])
            bias = max(bias, kt * ct * f["r"] * f["s"] * P + kt)
    up = lambda n: 1 << (int(n) - 1).bit_length()  # noqa: E731
    return cfg.replace(act_depth=up(act), weight_depth=up(wts), bias_depth=up(bias))


def _layer_cases(net, rng, cfg):
    """``(name, whole-map cases per op, input rows)`` of every conv layer (one image)."""
    from pymtl_fp.cluster.compiler.partition import layer_info

    for li, layer in enumerate(net.layers):
        if type(layer).__name__ != "Conv":
            continue
        f = layer_info(net, li)
        c, k, h, w, r, s = f["c"], f["k"], f["h"], f["w"], f["r"], f["s"]
        ho, wo = f["ho"], f["wo"]
        x = rng.integers(-(1 << (cfg.act_bits - 1)), 1 << (cfg.act_bits - 1), (1, c, h, w))
        wt = rng.integers(-(1 << (cfg.weight_bits - 1)), 1 << (cfg.weight_bits - 1), (k, c, r, s))
        dy = rng.integers(-(1 << (cfg.grad_bits - 1)), 1 << (cfg.grad_bits - 1), (1, k, ho, wo))
        geo = dict(stride=f["stride"], pad=f["pad"], mode="stochastic", seed=int(rng.integers(0, 2**32)), tensor_id=3)
        yield layer.name, {
            "fwd": dict(x=x, w=wt, b=np.zeros(k, np.int64), shift=10, relu=1, **geo),
            "bwd_data": dict(dy=dy, w=wt, x=x, shift=10, relu=1, **geo),
            "bwd_weight": dict(x=x, dy=dy, w_shape=np.array([k, c, r, s]), shift=10, bias_shift=4, raw=1, **geo),
        }


def _run_bands(cfg, level, op, whole, rows, height):
    """Run ``op`` band by band over its result's ``rows`` (``dy``'s for bwd_weight); return
    (commands, compute cycles, largest input window words, result)."""
    from pymtl_fp.engine.msgs import tiles
    from pymtl_fp.golden.band import bands
    from pymtl_fp.tb.engine_harness import run_op
    from pymtl_fp.tb.engine_strategies import band_case

    cycles, window, parts, sums, n_cmd = 0, 0, [], None, 0
    for lo, hi in bands(rows, height or rows):
        got = band_case(op, whole, lo, hi) if height else (dict(whole), (lo, hi))
        if got is None:  # no dy row reaches these dx rows: they are zero, no command
            parts.append(np.zeros((1, whole["x"].shape[1], hi - lo, whole["x"].shape[3]), np.int64))
            continue
        case = got[0]
        if op == "bwd_weight" and sums is not None:
            case.update(acc=1, acc_dw=sums["dw"], acc_db=sums["db"])
        res = run_op(level, cfg, op, **case)
        n_cmd += 1
        cycles += res.get("compute_cycles", 0)
        src = case["x"] if op != "bwd_data" else case["dy"]
        window = max(window, tiles(src.shape[1], cfg.P) * src.shape[2] * src.shape[3])
        if op == "bwd_weight":
            sums = {"dw": res["dw"], "db": res["db"]}
        else:
            parts.append(res["y" if op == "fwd" else "dx"])
    return n_cmd, cycles, window, sums if op == "bwd_weight" else np.concatenate(parts, axis=2)


def main(args) -> int:
    from pymtl_fp.engine.cases import CaseError, golden_op, validate_case
    from pymtl_fp.engine.config import preset
    from pymtl_fp.engine.msgs import tiles
    from pymtl_fp.net import NetError, load_net

    try:
        cfg = preset(args.config)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    heights = _heights(args.heights)
    out = validate.output_file(args.json, "--json", ".json")  # (before the work, not after it)
    try:
        net = load_net(args.net)
    except NetError as exc:
        raise UserError(f"--net {args.net}: {exc}") from None
    cfg = _deep_enough(cfg, net)
    rng = np.random.default_rng(2026)
    rows_out = []
    print(f"{net.name} conv layers in row bands, one image, on {args.config} ({cfg.P}x{cfg.P}; buffers X/D/O "
          f"{cfg.act_depth}, W/G {cfg.weight_depth}, B {cfg.bias_depth} words), level {args.level}; every banded "
          f"result checked against the whole map's")
    print(f"{'layer':<8} {'op':<10} {'band':>5} {'commands':>8} {'cycles':>8} {'vs whole':>9} "
          f"{'window words':>12} {'vs map':>7}")
    for name, cases in _layer_cases(net, rng, cfg):
        for op in OPS:
            whole = cases[op]
            try:
                want = golden_op(cfg, op, validate_case(cfg, op, whole))
            except CaseError as exc:
                print(f"{name:<8} {op:<10} skipped: {exc}")
                continue
            src = whole["x"] if op != "bwd_data" else whole["dy"]
            map_words = tiles(src.shape[1], cfg.P) * src.shape[2] * src.shape[3]
            base, rows = None, (whole["x"] if op == "bwd_data" else whole["dy"] if op == "bwd_weight"
                                else want["y"]).shape[2]
            shown = [h for h in heights if h is None or h < rows or None not in heights]
            for height in shown:
                n_cmd, cyc, window, result = _run_bands(cfg, args.level, op, whole, rows, height)
                if op == "bwd_weight":
                    ok = all(np.array_equal(result[k], want[k]) for k in ("dw", "db"))
                else:
                    ok = np.array_equal(result, want["y" if op == "fwd" else "dx"])
                if not ok:
                    raise UserError(f"{name} {op} in bands of {height} rows differs from the whole map: a bug")
                base = cyc if height is None else base
                rows_out.append(dict(layer=name, op=op, height=height or rows, commands=n_cmd, cycles=cyc,
                                     window_words=window, map_words=map_words))
            for row in rows_out[-len(shown):]:
                vs = f"{100 * row['cycles'] / base:.0f}%" if base else "-"
                print(f"{row['layer']:<8} {row['op']:<10} {row['height']:>5} {row['commands']:>8} {row['cycles']:>8} "
                      f"{vs:>9} {row['window_words']:>12} {100 * row['window_words'] / row['map_words']:>6.0f}%")
    if args.json:
        with open(out, "w") as fh:
            json.dump(dict(net=net.name, config=cfg.name, level=args.level, rows=rows_out), fh, indent=1)
    return 0
