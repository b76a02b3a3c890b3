"""Partition a sequential CNN over the nodes of a chain: FPDeep's workload balancing.

Objective (FPDeep): every node gets an equal share of the total FP + BP + WG work.  The work is
measured in **engine cycles** with the engine's closed-form timing model
(:func:`pymtl_fp.engine.program.compute_cycles`), per image: ``fwd`` (one image) + ``bwd_data``
(one image) + ``bwd_weight`` (the whole mini-batch, divided by its size) of every conv/fc layer,
``pool_fwd`` + ``pool_bwd`` of every pool.

Granularity: a conv/fc layer is cut into *tiles* of ``Q`` output channels, ``Q`` the least common
multiple of the nodes' array sides ``P`` (``Q = P`` when the nodes share it; :func:`grid_unit`).
A piece must start on a multiple of the ``P`` of *both* of its holders, so that it is a contiguous
block of the activation, weight and bias layouts of each (channel ``c`` sits in tile ``c // P``):
the first holder's piece ends, and the second holder's begins, on a whole tile of each, and the
second holder's copy of the first piece's weights starts at its own tile ``k0 // P``.  One grid for
the whole chain keeps the cut positions comparable across cut vectors; it is coarser than needed
when the neighbours of a cut have a smaller ``lcm``.  A position ``m`` is the number of tiles
before a cut; node ``i`` computes tiles ``[cuts[i], cuts[i+1])``.  The cut positions are chosen by
FPDeep's balancing rule, reusing :func:`nearest_positions` (shared with :mod:`pymtl_fp.explore`): node
``i``'s end cut is the position whose cumulative work (timing model of node 0's engine) is nearest
to the share of nodes ``0..i`` in the chain's MAC throughput (``P*P`` per node: equal shares when
the nodes share ``P``; a ``P = 4`` node gets about four times the share of a ``P = 2`` node).

Refinement: the nearest-share rule is greedy; on a coarse tile grid it can leave one node with
far more than ``1/N`` (lenet-digits on 4 nodes: max/mean 1.75).  :func:`partition` therefore also
searches every cut vector for the smallest maximum node work (the same objective, solved exactly,
as Zhang et al.'s DP does for asymmetric FPGAs; small nets only) and returns it when it is better
(``method`` then says so, with the rule's balance).  Node work is always measured with the node's
own engine (``ccfg.engines[j]``), so nodes of different speeds are balanced in cycles.

Hardware constraints the explore model does not have (so :func:`pymtl_fp.explore.partition.fpdeep`
is not called on an explore ``Chain`` directly: its cost model is the explore compute model, not the
engine's timing model, and it may choose row splits, which this cluster does not build):

* a layer is split by output channels over **at most two** neighbouring nodes (the second
  holder assembles the full output and computes the layer's whole data gradient with a full copy
  of the weights, refreshed once per step from the first holder);
* the data gradient of a split layer is charged to the second holder;
* a pool goes with the node that holds the last piece of the conv before it;
* every node gets at least one tile.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from pymtl_fp import timing
from pymtl_fp.cluster.config import ClusterError
from pymtl_fp.engine import program
from pymtl_fp.engine.msgs import tiles
from pymtl_fp.net import Add, Conv, Fc, GlobalAvgPool

#: ``--tap-pack``: pack the first layer's taps when it pays (auto), always when it can (on), never
TAP_PACK = ("auto", "on", "off")


def nearest_positions(curve: np.ndarray, targets) -> np.ndarray:
    """For each target fraction, the position whose ``curve`` value is nearest (ties: lower)."""
    targets = np.asarray(targets, dtype=float)
    j = np.clip(np.searchsorted(curve, targets), 1, len(curve) - 1)
    lower_better = np.abs(curve[j - 1] - targets) <= np.abs(curve[j] - targets)
    return np.where(lower_better, j - 1, j).astype(np.int64)


def _max_over_mean(values) -> float:
    """max / mean of per-node figures (1.0 = perfect balance, or nothing to balance)."""
    v = np.asarray(values, dtype=float)
    return float(v.max() / v.mean()) if v.mean() > 0 else 1.0


@dataclass(frozen=True)
class Item:
    """One unit of work on a node: layer ``layer`` (index in ``net.layers``), output channels
    ``[k0, k1)`` (pools: the whole layer, ``k0 = k1 = 0``)."""

    layer: int
    k0: int = 0
    k1: int = 0
    pool: bool = False


def grid_unit(ccfg) -> int:
    """Channels per partition tile: the least common multiple of the nodes' array sides."""
    return math.lcm(*(e.P for e in ccfg.engines))


@dataclass
class Partition:
    net: object
    P: int                         #: channels per tile (:func:`grid_unit`)
    batch: int
    cuts: list                     #: tile positions, ``N + 1`` of them
    nodes: list                    #: per node, its items in layer order
    work: list = field(default_factory=list)  #: per node, modelled cycles per image
    method: str = "fpdeep"
    packed: frozenset = frozenset()  #: layers run tap-packed (:func:`packed_layers`)

    @property
    def n(self) -> int:
        return len(self.nodes)

    @property
    def balance(self) -> float:
        """max / mean node work (1.0 = perfect)."""
        return _max_over_mean(self.work)

    @property
    def weights(self) -> list:
        """Per node, the weights and biases of its pieces (the parameters it updates)."""
        out = []
        for items in self.nodes:
            total = 0
            for it in items:
                if not it.pool:
                    _, C, R, S = self.net.conv_geometry(self.net.layers[it.layer])["w_shape"]
                    total += (it.k1 - it.k0) * (C * R * S + 1)
            out.append(total)
        return out

    @property
    def weight_balance(self) -> float:
        """max / mean node parameters (FPDeep balances the weights as well as the work)."""
        return _max_over_mean(self.weights)

    def split_layers(self) -> list:
        """Names of the layers shared by two nodes."""
        out = []
        for items in self.nodes:
            for it in items:
                if not it.pool and it.k0 > 0:
                    out.append(self.net.layers[it.layer].name)
        return out

    def describe(self) -> list:
        lines, weights = [], self.weights
        for j, items in enumerate(self.nodes):
            parts = []
            for it in items:
                layer = self.net.layers[it.layer]
                if it.pool:
                    parts.append(layer.name)
                else:
                    K = self.net.conv_geometry(layer)["w_shape"][0]
                    parts.append(layer.name if (it.k0, it.k1) == (0, K) else f"{layer.name}[{it.k0}:{it.k1}]")
            lines.append(f"node {j}: {' '.join(parts)}  ({self.work[j]:.0f} cycles/image, {weights[j]} weights)")
        return lines


# ---- work model -------------------------------------------------------------------------------

class _Shape:
    def __init__(self, *shape):
        self.shape = tuple(int(v) for v in shape)


def layer_info(net, li: int, packed: bool = False) -> dict:
    """Layer ``li``'s shape fields as the compiler names them (a fresh dict: callers may add to it);
    ``packed``: as the engine runs it tap-packed (:func:`pymtl_fp.timing.tap_packed_shape`: ``C*R*S``
    input channels on the ``Ho x Wo`` map, a ``1 x 1`` kernel, stride 1, no padding)."""
    info = dict(_layer_info(net, li))
    if packed:
        info.update(c=info["c"] * info["r"] * info["s"], h=info["ho"], w=info["wo"], r=1, s=1, stride=1, pad=0,
                    packed=True)
    return info


def packed_layers(net, ccfg, batch: int, pack: str = "auto") -> frozenset:
    """The layers the cluster runs tap-packed: at most the first layer, a conv fed by the host's
    images (its input is made off the engine and it needs no ``bwd_data``) with more than one tap;
    ``auto``: when :func:`pymtl_fp.timing.tap_packing_pays` on node 0's array, ``on``: always
    (refused where the first layer cannot be packed), ``off``: never."""
    if pack not in TAP_PACK:
        raise ClusterError(f"unknown --tap-pack {pack!r}; choose one of {', '.join(TAP_PACK)}")
    if pack == "off":
        return frozenset()
    layer = net.layers[0]
    f = _layer_info(net, 0)
    if not isinstance(layer, Conv) or f["r"] * f["s"] == 1:
        if pack == "on":
            raise ClusterError(f"--tap-pack on: the first layer of {net.name} ({layer.name}) is not a conv "
                               f"with more than one kernel tap; nothing to pack")
        return frozenset()
    shape = timing.ConvShape(n=batch, c=f["c"], k=f["k"], h=f["h"], w=f["w"], r=f["r"], s=f["s"],
                             stride=f["stride"], pad=f["pad"])
    if pack == "auto" and not timing.tap_packing_pays(ccfg.engines[0].P, shape):
        return frozenset()
    return frozenset({0})


def _layer_info(net, li: int) -> dict:
    """Layer ``li``'s shape fields, computed once per net object (kept in it beside its shapes: a
    cache keyed by the net itself would hash and compare the whole frozen net at every call, a
    quarter of a compile's time)."""
    cache = net.__dict__.get("_layer_infos")
    if cache is None:
        cache = {}
        object.__setattr__(net, "_layer_infos", cache)
    info = cache.get(li)
    if info is None:
        info = cache[li] = _compute_layer_info(net, li)
    return info


def _compute_layer_info(net, li: int) -> dict:
    layer = net.layers[li]
    c, h, w = net.shapes()[li]
    if isinstance(layer, Add) and layer.project:  # (the projection's conv reads the skip)
        c, h, w = net.shapes()[net.source_index(layer)]
    ko, ho, wo = net.shapes()[li + 1]
    info = dict(c=c, h=h, w=w, k=ko, ho=ho, wo=wo, pool=not _weighted(layer))
    if isinstance(layer, (Add, GlobalAvgPool)) and info["pool"]:  # (the router's residual unit runs it)
        info.update(res="add" if isinstance(layer, Add) else "gap")
    elif not info["pool"]:
        geo = net.conv_geometry(layer)
        _, _, R, S = geo["w_shape"]
        info.update(r=R, s=S, stride=geo["stride"], pad=geo["pad"],
                    p=[x.name for x in net.param_layers()].index(layer.name))
        if isinstance(layer, Add):  # (its input c, h, w: the skip's; its main branch: k, ho, wo)
            info.update(res="proj")
    else:
        info.update(pk=layer.k)
    return info


def op_cycles(ecfg, net, li: int, op: str, n: int = 1, k0: int = 0, k1: int | None = None,
              packed: bool = False) -> int:
    """Engine cycles (timing model) of one command on layer ``li``, channels ``[k0, k1)``
    (``packed``: tap-packed)."""
    f = layer_info(net, li, packed)
    if f["pool"]:
        if op == "pool_fwd":
            return program.compute_cycles(ecfg, op, dict(x=_Shape(n, f["c"], f["h"], f["w"]), k=f["pk"]))
        return program.compute_cycles(ecfg, op, dict(dy=_Shape(n, f["c"], f["ho"], f["wo"]), k=f["pk"]))
    k1 = f["k"] if k1 is None else k1
    kk = k1 - k0
    x = _Shape(n, f["c"], f["h"], f["w"])
    case = dict(x=x, stride=f["stride"], pad=f["pad"])
    if op == "bwd_weight":
        case["w_shape"] = (kk, f["c"], f["r"], f["s"])
    else:
        case["w"] = _Shape(kk, f["c"], f["r"], f["s"])
    return program.compute_cycles(ecfg, op, case)


def item_work(ecfg, net, it: Item, batch: int, packed: frozenset = frozenset()) -> float:
    """Modelled engine cycles per image of one item (FP + BP + WG, see the module docstring);
    ``packed``: the layers run tap-packed."""
    f = layer_info(net, it.layer)
    if f.get("res") in ("add", "gap"):  # (the router's residual unit: no engine cycles)
        return 0.0
    if it.pool:
        return op_cycles(ecfg, net, it.layer, "pool_fwd") + op_cycles(ecfg, net, it.layer, "pool_bwd")
    pk = it.layer in packed
    work = op_cycles(ecfg, net, it.layer, "fwd", 1, it.k0, it.k1, pk)
    work += op_cycles(ecfg, net, it.layer, "bwd_weight", batch, it.k0, it.k1, pk) / batch
    if it.k1 == f["k"] and f["p"] > 0:
        work += op_cycles(ecfg, net, it.layer, "bwd_data", 1)
    return work


# ---- partitioning -----------------------------------------------------------------------------

def _weighted(layer) -> bool:
    """A layer the engine runs with weights: conv, fc, an add's projection."""
    return isinstance(layer, (Conv, Fc)) or (isinstance(layer, Add) and layer.project)


def _param_layers(net) -> list:
    return [i for i, layer in enumerate(net.layers) if _weighted(layer)]


def _followers(net, li: int) -> list:
    """The layers without weights after layer ``li`` (max pools, identity adds, global average
    pools): they go with the node holding its last piece."""
    out, nxt = [], li + 1
    while nxt < len(net.layers) and not _weighted(net.layers[nxt]):
        out.append(nxt)
        nxt += 1
    return out


def items_from_cuts(net, P: int, cuts) -> list:
    """Per node, its items for tile-position cuts."""
    plist = _param_layers(net)
    starts, pos = [], 0
    for li in plist:
        starts.append(pos)
        pos += tiles(layer_info(net, li)["k"], P)
    total = pos
    cuts = [int(c) for c in cuts]
    if cuts[0] != 0 or cuts[-1] != total or any(b < a for a, b in itertools.pairwise(cuts)):
        raise ClusterError(f"cuts {cuts} must rise from 0 to {total} (tiles of {P} channels)")
    nodes = []
    for j in range(len(cuts) - 1):
        a, b = cuts[j], cuts[j + 1]
        items = []
        for q, li in enumerate(plist):
            K = layer_info(net, li)["k"]
            t0, t1 = starts[q], starts[q] + tiles(K, P)
            lo, hi = max(a, t0), min(b, t1)
            if lo >= hi:
                continue
            k0, k1 = (lo - t0) * P, min(K, (hi - t0) * P)
            items.append(Item(li, k0, k1))
            if k1 == K:  # the pools (and identity adds) after this layer go with its last piece
                items += [Item(nxt, pool=True) for nxt in _followers(net, li)]
        nodes.append(items)
    return nodes


def layer_ends(net, P: int) -> list:
    """The tile positions of the layer boundaries (tiles of ``P`` channels): 0, the end of every
    conv/fc layer (its pools and identity adds go with it).  A whole-layer partition's cuts are
    among them."""
    ends = [0]
    for li in _param_layers(net):
        ends.append(ends[-1] + tiles(layer_info(net, li)["k"], P))
    return ends


def max_nodes(net, P: int, split: bool = True) -> int:
    """Most nodes a pipeline of ``net`` can have on arrays of side ``P``: a node holds at least one
    tile of ``P`` output channels and a layer is shared by at most two neighbouring nodes, so every
    conv/fc layer of two tiles or more adds one cut inside it to the cuts between layers
    (``split=False``: layer boundaries only, one node per conv/fc layer)."""
    counts = [tiles(layer_info(net, li)["k"], P) for li in _param_layers(net)]
    return len(counts) + (sum(1 for t in counts if t >= 2) if split else 0)


def _check_nodes(net, nodes) -> None:
    holders = {}
    for j, items in enumerate(nodes):
        if not items:
            raise ClusterError(f"node {j} gets no work (too many nodes for {net.name} at this "
                               f"array size: give fewer nodes)")
        for it in items:
            if not it.pool:
                holders.setdefault(it.layer, []).append(j)
    for li, js in holders.items():
        if len(js) > 2:
            raise ClusterError(f"layer {net.layers[li].name} is split over nodes {js}; "
                               f"a layer may be shared by at most two neighbouring nodes")


def partition(net, ccfg, batch: int, *, split: bool = True, cuts=None, refine: bool = True,
              pack: str = "off") -> Partition:
    """FPDeep-balanced partition (see the module docstring); ``cuts`` forces tile positions (tiles of
    :func:`grid_unit` channels: the nodes' ``P`` when they share it),
    ``split=False`` cuts at layer boundaries only.  With ``refine`` (default), when FPDeep's
    nearest-share rule leaves a node with more work than the best cut vector (exhaustive min-max
    search, small nets only), the min-max partition is returned instead (``method`` says so)."""
    if net.layers and not _weighted(net.layers[0]):  # (a node runs a layer's pools after its last piece)
        raise ClusterError(f"{net.name} starts with a pool layer: the cluster's nodes run pools after a conv or fc "
                           "layer, so none would run it; begin the net with a conv or fc layer (the golden engine "
                           "trains it as it is)")
    P = grid_unit(ccfg)
    N = ccfg.n
    ecfg = ccfg.engines[0]
    plist = _param_layers(net)
    packed = packed_layers(net, ccfg, batch, pack)
    # per-tile work: the cumulative curve FPDeep balances
    tile_work = []
    layer_end = [0]
    for li in plist:
        K = layer_info(net, li)["k"]
        T = tiles(K, P)
        for t in range(T):
            k0, k1 = t * P, min(K, (t + 1) * P)
            pk = li in packed
            w = op_cycles(ecfg, net, li, "fwd", 1, k0, k1, pk)
            w += op_cycles(ecfg, net, li, "bwd_weight", batch, k0, k1, pk) / batch
            if t == T - 1:
                it = Item(li, 0, K)
                w += item_work(ecfg, net, it, batch, packed) - (
                    op_cycles(ecfg, net, li, "fwd", 1, packed=pk)
                    + op_cycles(ecfg, net, li, "bwd_weight", batch, packed=pk) / batch)
                for nxt in _followers(net, li):
                    w += item_work(ecfg, net, Item(nxt, pool=True), batch)
            tile_work.append(w)
        layer_end.append(layer_end[-1] + T)
    total_tiles = len(tile_work)
    method = "given"
    if cuts is not None and len(cuts) != N + 1:
        raise ClusterError(f"cuts {list(cuts)}: {len(cuts)} positions for {N} nodes; give {N + 1} "
                           f"(0, the {N - 1} inner cuts, {total_tiles} tiles of {P} channels)")
    if cuts is None:
        method = "fpdeep" if split else "fpdeep-layers"
        most = max_nodes(net, P, split)
        if N > most:
            raise ClusterError(f"{N} nodes but {net.name} can be spread over at most {most} nodes of {P}-channel "
                               f"tiles ({len(plist)} conv/fc layers" + (", each shared by at most two neighbouring "
                               "nodes" if split else ", cut at layer boundaries") + f"): give at most {most} nodes")
        curve = np.concatenate([[0.0], np.cumsum(tile_work)])
        curve = curve / curve[-1]
        allowed = np.arange(total_tiles + 1) if split else np.asarray(layer_end)
        if not split and N > len(plist):
            raise ClusterError(f"{N} nodes but {net.name} has {len(plist)} conv/fc layers: "
                               f"cutting at layer boundaries needs at most that many nodes")
        cap = np.asarray([e.macs_per_cycle for e in ccfg.engines], dtype=float)
        targets = np.cumsum(cap)[:-1] / cap.sum()   # equal shares when the nodes share P
        picks = nearest_positions(curve[allowed], targets) if N > 1 else np.zeros(0, dtype=int)
        cuts = [0] + [int(allowed[i]) for i in picks] + [total_tiles]
        # every node at least one position step, at most two holders per layer
        for i in range(1, N):
            lo = cuts[i - 1] + 1
            hi_room = total_tiles - (N - i)
            cands = [int(a) for a in allowed if lo <= a <= hi_room]
            if not cands:
                raise ClusterError(f"cannot give every one of {N} nodes work at this granularity")
            cuts[i] = min(cands, key=lambda a: (abs(a - cuts[i]), a)) if cuts[i] not in cands else cuts[i]
            # a middle-only node (both cuts inside one layer) would make a 3-way split: snap up
            for q in range(len(plist)):
                a, b = layer_end[q], layer_end[q + 1]
                if a < cuts[i - 1] < b and a < cuts[i] < b:
                    cuts[i] = b if b <= hi_room else cuts[i]
    nodes = items_from_cuts(net, P, cuts)
    try:
        _check_nodes(net, nodes)
    except ClusterError:  # the rule's cuts share a layer three ways: the exact search may find cuts that fit
        if not (method.startswith("fpdeep") and split):
            raise
        best = _min_max(net, ccfg, batch, total_tiles, packed)
        if best is not None:
            best.method = "min-max (FPDeep's rule shared a layer over three nodes)"
            return best
        cuts = _halving_cuts(layer_end, N)
        if cuts is None:
            raise
        method = "layers and halves (FPDeep's rule shared a layer over three nodes)"
        nodes = items_from_cuts(net, P, cuts)
        _check_nodes(net, nodes)
    work = [sum(item_work(ccfg.engines[j], net, it, batch, packed) for it in items) for j, items in enumerate(nodes)]
    result = Partition(net, P, batch, list(cuts), nodes, work, method, packed)
    if method == "fpdeep" and refine:
        best = _min_max(net, ccfg, batch, total_tiles, packed)
        if best is not None and max(best.work) < max(result.work):
            best.method = f"min-max (FPDeep's rule gave max/mean {result.balance:.3f})"
            return best
    return result


def _halving_cuts(layer_end: list, N: int) -> list | None:
    """A cut vector of ``N`` nodes that shares no layer three ways, when ``N`` is at least the number
    of conv/fc layers: a cut at every layer boundary, and one in the middle of each of the
    ``N - layers`` layers of most tiles (None when that cannot make ``N`` nodes)."""
    spans = list(itertools.pairwise(layer_end))
    extra = N - len(spans)
    halvable = sorted((q for q, (a, b) in enumerate(spans) if b - a >= 2), key=lambda q: -(spans[q][1] - spans[q][0]))
    if extra < 0 or extra > len(halvable):
        return None
    cuts = set(layer_end) | {(spans[q][0] + spans[q][1]) // 2 for q in halvable[:extra]}
    return sorted(cuts)


def _min_max(net, ccfg, batch, total_tiles, packed=frozenset(), limit=200_000):
    """The cut vector with the smallest maximum node work (exact search over tile positions; the
    asymmetric-FPGA objective of Zhang et al., here with the engine's timing model), or None when
    there are too many cut vectors to enumerate."""
    import itertools
    import math

    N = ccfg.n
    if N == 1 or math.comb(total_tiles - 1, N - 1) > limit:
        return None
    best, best_key = None, None
    cache = {}
    for inner in itertools.combinations(range(1, total_tiles), N - 1):
        cuts = [0, *inner, total_tiles]
        nodes = items_from_cuts(net, grid_unit(ccfg), cuts)
        try:
            _check_nodes(net, nodes)
        except ClusterError:
            continue
        work = []
        for j, items in enumerate(nodes):
            key = (j, tuple(items))
            if key not in cache:
                cache[key] = sum(item_work(ccfg.engines[j], net, it, batch, packed) for it in items)
            work.append(cache[key])
        k = (max(work), sum(w * w for w in work))
        if best_key is None or k < best_key:
            best_key, best = k, Partition(net, grid_unit(ccfg), batch, cuts, nodes, work, "min-max", packed)
    return best
