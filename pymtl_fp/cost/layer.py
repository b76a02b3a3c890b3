"""Engine cycles of shape-level layers: the closed forms of :mod:`pymtl_fp.cost.engine` applied to a
layer record (:class:`pymtl_fp.explore.layers.Layer`: ``kind``, ``in_shape``, ``K``, ``C``, ``R``,
``S``, ``Ho``, ``Wo``, ``stride``, ``pad``, ``groups``, ...) far larger than a simulation can run, on
one ``P x P`` engine or on ``E`` of them (``arr``: anything with ``P`` and ``E``,
:class:`pymtl_fp.explore.fpga_model.EngineArray`).

An FPGA's ``E`` engines work on disjoint output-channel shares of a layer: a share of ``k`` output
channels is dealt out as ``ceil(k / E)`` channels per engine (:func:`engine_share`), and the layer
takes the cycles of the largest share (engines left without channels idle).  Pooling layers split
the same way.

The engine has no residual-addition operation; :func:`layer_cycles` costs an ``add`` layer (ResNets) as
one element per cycle per engine column lane (``E * P`` lanes) forward and nothing backward -- an
assumption, not an RTL-validated figure.  The chain ``explore partition`` runs on costs adds instead as
the simulated cluster's router runs them (:mod:`pymtl_fp.explore.chain_residual`).
"""

from __future__ import annotations

from functools import cache

from pymtl_fp.cost.engine import ConvShape, conv_cycles, mapped_conv_cycles, pool_cycles, tap_packing_pays


def engine_share(k: int, E: int) -> int:
    """Output channels of the busiest engine when ``k`` channels are dealt to ``E`` engines."""
    return -(-int(k) // int(E))


def layer_shape(layer) -> dict:
    """One group's :class:`~pymtl_fp.cost.engine.ConvShape` fields (but ``n`` and ``k``) of a conv or
    fc layer (an fc layer is a 1x1 conv over its flattened input)."""
    if layer.kind == "fc":
        return dict(c=layer.in_elems, h=1, w=1, r=1, s=1, stride=1, pad=0)
    return dict(c=layer.C // layer.groups, h=layer.in_shape[1], w=layer.in_shape[2], r=layer.R, s=layer.S,
                stride=layer.stride, pad=layer.pad)


def packs(layer, P: int, needs_dx: bool, batch: int = 1) -> bool:
    """Does a conv or fc ``layer`` run tap-packed on ``P x P`` engines?  A layer without
    ``bwd_data`` (the first), one group, where packing pays (:func:`~pymtl_fp.cost.engine.tap_packing_pays`)."""
    g = 1 if layer.kind == "fc" else layer.groups
    return not needs_dx and g == 1 and tap_packing_pays(P, ConvShape(n=batch, k=layer.K, **layer_shape(layer)))


def engine_layer_cycles(layer, P: int, needs_dx: bool = True, k: int | None = None, ho: int | None = None,
                        batch: int = 1, packed: bool | None = None, drain_rows: int = 1) -> dict:
    """Engine compute cycles per image of (a share of) one conv, fc or max-pool layer on a ``P x P``
    engine: ``{"fp":, "bp":, "wg":}`` (``fwd``, ``bwd_data``, ``bwd_weight`` for conv/fc layers;
    ``pool_fwd``/``pool_bwd`` for max-pool layers).

    ``batch`` images run in one command (``N = batch``; the result is divided by ``batch``):
    ``bwd_weight`` sums over the batch, so a small batch exposes its drain (``drain_rows`` dw rows
    per cycle: ``EngineConfig.drain_rows``).  ``k``: the share's
    output channels; ``ho``: its output rows (cycles scaled by ``ho/Ho``, exact up to the
    border taps).  Grouped convolutions run as one command per group.  A fully connected layer is
    a 1x1 conv over its flattened input.  The engine has no residual-add operation
    (``ValueError``).  ``packed``: run the layer tap-packed (:func:`~pymtl_fp.cost.engine.tap_packed_shape`;
    only a layer that ``needs_dx = False``, fed from off the engine); ``None`` (default): packed when
    that is the first layer's mapping that pays (:func:`packs`)."""
    if layer.kind in ("conv", "fc"):
        g = 1 if layer.kind == "fc" else layer.groups
        kk = layer.K if k is None else int(k)
        if kk <= 0 or (ho is not None and int(ho) <= 0):
            return {"fp": 0, "bp": 0, "wg": 0}
        shape = layer_shape(layer)
        per_group = layer.K // g
        parts = [per_group] * (kk // per_group) + ([kk % per_group] if kk % per_group else [])
        frac = 1.0 if ho is None or layer.kind == "fc" else int(ho) / layer.Ho
        if packed and needs_dx:
            raise ValueError(f"layer {layer.name!r}: only a layer without bwd_data can be tap-packed")
        if packed is None:
            packed = packs(layer, P, needs_dx, batch)
        out = {}
        for key, op in (("fp", "fwd"), ("bp", "bwd_data"), ("wg", "bwd_weight")):
            if op == "bwd_data" and not needs_dx:  # (a packed layer never needs it)
                out[key] = 0
                continue
            cyc = sum(mapped_conv_cycles(P, op, ConvShape(n=batch, k=kp, **shape), packed, drain_rows)
                      for kp in parts)
            out[key] = round(cyc * frac / batch)
        return out
    if layer.kind == "pool":
        frac = (1.0 if k is None else int(k) / layer.K) * (1.0 if ho is None else int(ho) / layer.Ho)
        cyc = pool_cycles(P, batch, layer.C, layer.Ho, layer.Wo, layer.R)
        return {"fp": round(cyc * frac / batch), "bp": round(cyc * frac / batch), "wg": 0}
    raise ValueError(f"layer {layer.name!r}: the engine has no {layer.kind!r} operation")


def layer_cycles(layer, arr, needs_dx: bool = True, k: int | None = None, ho: int | None = None,
                 batch: int = 1) -> dict:
    """FP, BP and WG cycles per image of (a share of) one layer on the ``arr.E`` engines of
    ``arr.P x arr.P``: ``{"fp":, "bp":, "wg":}``.  ``k`` / ``ho``: the share's output channels /
    rows (default: the whole layer); ``batch``: images per engine command."""
    kk = layer.K if k is None else int(k)
    if kk <= 0 or (ho is not None and int(ho) <= 0):
        return {"fp": 0, "bp": 0, "wg": 0}
    if layer.kind == "add":
        frac = kk / layer.K * (1.0 if ho is None else int(ho) / layer.Ho)
        return {"fp": -(-round(layer.out_elems * frac) // (arr.E * arr.P)), "bp": 0, "wg": 0}
    return engine_layer_cycles(layer, arr.P, needs_dx, engine_share(kk, arr.E), ho, batch)


def total_cycles(layer, arr, needs_dx=True, k=None, ho=None, batch=1) -> int:
    return sum(layer_cycles(layer, arr, needs_dx, k, ho, batch).values())


@cache
def _conv(P: int, op: str, shape: ConvShape) -> int:
    return conv_cycles(P, op, shape)


def tiled_layer_cycles(layer, arr, tk: int, tc: int, tb: int, batch_parallel: bool = False) -> dict:
    """FP, BP and WG cycles of ``tb`` images of a conv / fc layer processed in ``tk x tc``
    channel tiles (DarkFPGA-style tiling, :mod:`pymtl_fp.explore.design`): each tile is one command
    per engine with the tile's ``tk`` output channels dealt to the ``arr.E`` engines, so tiles
    smaller than the array waste lanes.  For an fc layer ``tc`` counts input channels of its
    ``C x H x W`` input.  ``{"fp":, "bp":, "wg":, "fp_batch":}``; a grouped conv runs group by
    group.  With ``batch_parallel`` the forward pass runs batch-parallel (the engine's ``bp``
    mode: the ``tb`` images on the array's columns) where that takes fewer cycles
    (``fp_batch``: it does)."""
    if layer.kind not in ("conv", "fc"):
        raise ValueError(f"layer {layer.name!r} ({layer.kind}) is not tiled; use layer_cycles")
    if min(tk, tc, tb) < 1:
        raise ValueError(f"tiles must be >= 1, not tk={tk}, tc={tc}, tb={tb}")
    if layer.kind == "fc":
        g, kg, cg = 1, layer.K, layer.in_elems
        tc = tc * layer.in_shape[1] * layer.in_shape[2]
        geo = {"h": 1, "w": 1, "r": 1, "s": 1, "stride": 1, "pad": 0}
    else:
        g, kg, cg = layer.groups, layer.K // layer.groups, layer.C // layer.groups
        geo = {"h": layer.in_shape[1], "w": layer.in_shape[2], "r": layer.R, "s": layer.S,
               "stride": layer.stride, "pad": layer.pad}
    tk, tc = min(int(tk), kg), min(int(tc), cg)
    kparts = [(tk, kg // tk)] + ([(kg % tk, 1)] if kg % tk else [])
    cparts = [(tc, cg // tc)] + ([(cg % tc, 1)] if cg % tc else [])

    def cycles(op, bp=False):
        return g * sum(nk * nc * _conv(arr.P, op, ConvShape(n=int(tb), c=c, k=engine_share(k, arr.E), bp=bp, **geo))
                       for k, nk in kparts for c, nc in cparts)

    out = {key: cycles(op) for key, op in (("fp", "fwd"), ("bp", "bwd_data"), ("wg", "bwd_weight"))}
    fp_bp = cycles("fwd", True) if batch_parallel else None
    out["fp_batch"] = fp_bp is not None and fp_bp < out["fp"]
    if out["fp_batch"]:
        out["fp"] = fp_bp
    return out
