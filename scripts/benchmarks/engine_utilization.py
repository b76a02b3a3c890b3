"""MAC utilization of the engine per operation and layer: of the compute command, of one
operation's whole program, and of a stream of operations with overlap (for ``pymtl-fp bench
engine --json``).

* ``compute_util`` = useful MACs / (``P*P`` x compute cycles) of the compute command;
* ``program_util_serial`` = useful MACs / (``P*P`` x cycles of one operation's whole program:
  LOADs, compute, STOREs, one after the other);
* ``program_util`` = useful MACs / (``P*P`` x cycles of a stream of ``M`` such operations run
  with overlap, :mod:`pymtl_fp.engine.pipelined`: the next operation's LOADs and the previous
  one's STOREs while one computes; fwd / bwd_data are ``M`` images of one layer, its weights
  loaded once; bwd_weight ``M`` independent weight gradients).

Measured on the given level (Verilator by default: the RTL) and every result checked against the
golden model.  ``mapping`` says how the layer is laid on the array: ``channels`` (input channels
on the input lanes) or ``taps`` (:mod:`pymtl_fp.engine.packing`, a first layer with ``C < P``).
:func:`closed_form_layers` gives the closed forms of full-size layers (VGG-16) beyond simulation.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp import timing

#: name -> (n, c, k, h, w, r, s, stride, pad): the measured layers (fit the presets' buffers)
LAYERS = {
    "first": (1, 1, 6, 8, 8, 5, 5, 1, 2),        # a LeNet-5-style first layer (1 channel, 5x5): tap-packed
    "vgg-like": (1, 8, 8, 8, 8, 3, 3, 1, 1),     # 3x3, pad 1, channels a multiple of the array
    "fc": (2, 8, 8, 4, 4, 4, 4, 1, 0),           # fully connected: the kernel covers the input
}

MEASURED_OPS = ("fwd", "bwd_data", "bwd_weight")


def _shape(dims) -> timing.ConvShape:
    n, c, k, h, w, r, s, stride, pad = dims
    return timing.ConvShape(n=n, c=c, k=k, h=h, w=w, r=r, s=s, stride=stride, pad=pad)


def _mapping(P, op, dims, first: bool) -> str:
    if first and op != "bwd_data" and timing.tap_packing_pays(P, _shape(dims)):
        return "taps"
    return "channels"


def measure(cfg, level: str = "verilator", stream: int = 8, seed: int = 2024, layers=None) -> dict:
    """``{layer: {op: figures}}`` measured on ``level`` (see the module docstring)."""
    from pymtl_fp.engine import packing, pipelined, program
    from pymtl_fp.engine.cases import golden_op, validate_case
    from pymtl_fp.tb import engine_harness as eh

    P2 = cfg.P * cfg.P
    model = eh.get_model(level, cfg)
    rng = np.random.default_rng(seed)
    out: dict = {}
    for name in layers or LAYERS:
        dims = LAYERS[name]
        n, c, k, h, w, r, s, stride, pad = dims
        first = name == "first"
        out[name] = {}
        for op in MEASURED_OPS:
            if first and op == "bwd_data":
                continue  # a first layer has no input gradient to compute
            mapping = _mapping(cfg.P, op, dims, first)
            cases = [eh.random_case(cfg, op, rng, n=n, c=c, k=k, h=h, w=w, r=r, s=s, stride=stride, pad=pad,
                                    mode="stochastic") for _ in range(stream)]
            for key in pipelined.WEIGHT_BUFFERS.get(op, {}).values():  # images of one layer
                for cs in cases[1:]:
                    cs[key] = cases[0][key]
            wants = [golden_op(cfg, op, validate_case(cfg, op, cs)) for cs in cases]
            if mapping == "taps":
                cases = [packing.pack_case(op, cs) for cs in cases]
            cases = [validate_case(cfg, op, cs) for cs in cases]
            macs = timing.useful_macs(op, _shape(dims).fields(cfg.P))
            single = program.build(cfg, op, cases[0])
            _, t1 = eh.drive(model, cfg, single)
            st = pipelined.build(cfg, [(op, cs) for cs in cases], same_weights=op in pipelined.WEIGHT_BUFFERS)
            got, t = eh.drive(model, cfg, st.prog)
            results = st.unpack(got)
            if mapping == "taps":
                results = [packing.unpack_results(op, res, dict(w_shape=np.array([k, c, r, s])))
                           for res in results]
            for res, want in zip(results, wants):
                for key, val in want.items():
                    if not np.array_equal(res[key], val):
                        raise AssertionError(f"{level} {name} {op}: {key} differs from the golden model")
            out[name][op] = dict(
                mapping=mapping, macs=macs, compute_cycles=t1["compute_cycles"],
                compute_util=macs / (P2 * t1["compute_cycles"]),
                program_cycles_serial=t1["total_cycles"], program_util_serial=macs / (P2 * t1["total_cycles"]),
                stream=stream, program_cycles=t["total_cycles"],
                program_util=stream * macs / (P2 * t["total_cycles"]))
    return out


def closed_form_layers(P: int, batch_fc: int = 32) -> dict:
    """Closed-form compute cycles and utilization of every VGG-16 conv layer (the explore zoo's,
    batch 1; conv1_1 tap-packed, as a first layer) and fc7 at ``batch_fc`` on a ``P x P`` engine."""
    from pymtl_fp.explore.zoo import get_network

    convs = [ly for ly in get_network("vgg16").layers if ly.kind == "conv"]
    out = {}
    for ly in convs:
        first = ly is convs[0]
        dims = (1, ly.C, ly.K, ly.in_shape[1], ly.in_shape[2], ly.R, ly.S, ly.stride, ly.pad)
        sh = _shape(dims)
        macs = timing.useful_macs("fwd", sh.fields(P))
        row = {}
        for op in MEASURED_OPS:
            if first and op == "bwd_data":
                continue
            mapping = _mapping(P, op, dims, first)
            cyc = timing.mapped_conv_cycles(P, op, sh, mapping == "taps")
            row[op] = dict(mapping=mapping, compute_cycles=cyc, compute_util=macs / (P * P * cyc))
        out[ly.name] = row
    fc = timing.ConvShape(n=batch_fc, c=4096, k=4096, h=1, w=1, r=1, s=1)
    macs = timing.useful_macs("fwd", fc.fields(P))
    row = {}
    for op in MEASURED_OPS:
        cyc = timing.conv_cycles(P, op, fc)
        row[op] = dict(mapping="channels", compute_cycles=cyc, compute_util=macs / (P * P * cyc))
    out[f"fc7_b{batch_fc}"] = row
    return out
