"""Storage per FPGA of a chain partition (:class:`~pymtl_fp.explore.chain.Chain`), as range functions
in bits.

**Storage** per FPGA: conv weights and their gradient accumulators (fc weights stay in DRAM,
as in FPDeep, and are charged as DRAM traffic per mini-batch instead); the fine-grained pipeline keeps
``R + stride`` rows of each input / output-gradient map (line buffers) plus the inputs the
weight gradient needs for 2 images (the image being back-propagated and the one behind it);
whole-map buffering keeps double-buffered whole maps for FP and BP and the WG inputs of every
image in flight between this stage's FP and its BP (``2(N-i)-1`` images at stage ``i``).
The simulated cluster's storage (:meth:`~pymtl_fp.explore.chain.Chain.cluster_bits`; :mod:`pymtl_fp.explore.node_storage`'s
terms, without the one-image terms of split layers and node 0's unused O slot) under 1F1B with
per-image weight gradients and overlap (``train --wgrad image``) keeps on chip, fc layers
included: the weights, their rounded gradient, the un-rounded per-image sums and the biases (bias,
gradient and sum), sums and biases accumulator-wide; per image in flight (``N-i+2`` at stage ``i``,
at most the batch) each MAC layer's input (also its ReLU mask) and each max pool's argmax, in full
words; two images of each MAC layer's output gradient and one of each pool's input and output
gradient; and two O slots per direction for what crosses the FPGA's cuts.  Channel counts are
rounded up to the engines' side ``P`` (``storage(P)``: maps to ``t(C) P H W``, weights to
``t(K) t(C) P^2 R S``), and the first layer is tap-packed where the cycles pack it (the cluster's
``--tap-pack auto``).  A residual net's adds, global average pools and skips (held, passing through,
their gradient shares) are :mod:`~pymtl_fp.explore.chain_residual`'s, and a skip crossing a cut takes
no O slot.  Cut at layer boundaries, that is the cluster's words to the bit
(``tests/test_explore_scaling.py``, ``tests/test_explore_residual_costs.py``).  Not modelled: on a layer
shared by two FPGAs the cluster's second holder keeps the whole layer's weights, output gradient and
output (one image each), and the first holder's O slots hold its own part where the line counts all that crosses the cut;
node 0's O slot for the data gradient its first layer (unless tap-packed) never sends.  A
``rows`` share (the cluster splits by output channels only) keeps whole weights and its rows of
every map.
"""

from __future__ import annotations

import math

from pymtl_fp.cost.engine import cdiv
from pymtl_fp.explore.ranges import RangeFunc


def pad(n: int, P: int) -> int:
    """``n`` channels rounded up to whole ``P``-lane words."""
    return cdiv(n, P) * P


def fpdeep_storage(chain) -> dict:
    """FPDeep's range functions of :meth:`~pymtl_fp.explore.chain.Chain.storage`: ``weights``, ``linebuf``,
    ``stash1``, ``mapbuf`` and ``fc_dram``."""
    prec = chain.precision

    def weights(u, lo, hi):
        unit = chain.units[u]
        if unit.mac.kind == "fc":     # fc weights live in DRAM (see fc_dram)
            return 0.0
        share = 1.0 if unit.axis == "rows" else (hi - lo) / unit.extent
        return unit.mac.params * share * (prec.weight_bits + prec.acc_bits)

    def fc_dram(u, lo, hi):
        unit = chain.units[u]
        if unit.mac.kind != "fc":
            return 0.0
        share = (hi - lo) / unit.extent
        per_batch = 3 * prec.weight_bits + prec.acc_bits
        return unit.mac.params * share * per_batch / chain.batch

    def linebuf(u, lo, hi):
        unit = chain.units[u]
        frac = (hi - lo) / unit.extent
        bits = 0.0
        for ly in unit.members:
            if ly.kind == "fc":
                bits += ly.in_elems * prec.act_bits + ly.K * frac * prec.grad_bits
                continue
            rows = ly.R + ly.stride
            kshare = ly.K * (frac if unit.axis == "channels" else 1.0)
            c_in = ly.C
            if ly.kind == "add":
                rows, c_in = 1, ly.C * (len(ly.inputs))
            bits += rows * ly.in_shape[2] * c_in * prec.act_bits        # FP input rows
            bits += rows * ly.Wo * kshare * prec.grad_bits              # BP dy rows
        return bits

    def stash1(u, lo, hi):
        unit = chain.units[u]
        frac = (hi - lo) / unit.extent
        mac = unit.mac
        x_share = mac.in_elems * (frac if unit.axis == "rows" else 1.0)
        bits = x_share * prec.act_bits
        for ly in unit.members:   # ReLU masks and pooling argmax, per output element
            out_share = ly.out_elems * frac
            if ly.relu:
                bits += out_share
            if ly.kind == "pool" and ly.pool_op == "max":
                bits += out_share * max(1, math.ceil(math.log2(ly.R * ly.S)))
        return bits

    def mapbuf(u, lo, hi):
        unit = chain.units[u]
        frac = (hi - lo) / unit.extent
        xf = frac if unit.axis == "rows" else 1.0
        bits = 0.0
        for ly in unit.members:
            bits += 2 * (ly.in_elems * xf + ly.out_elems * frac) * prec.act_bits
            bits += 2 * (ly.in_elems * xf + ly.out_elems * frac) * prec.grad_bits
        return bits

    return {name: RangeFunc(chain, fn) for name, fn in
            (("weights", weights), ("linebuf", linebuf), ("stash1", stash1),
             ("mapbuf", mapbuf), ("fc_dram", fc_dram))}


def cluster_storage(chain, P: int) -> dict:
    """The simulated cluster's range functions of :meth:`~pymtl_fp.explore.chain.Chain.storage`
    (``cluster_weights``, ``cluster_stash``, ``cluster_maps``), channels padded to ``P``."""
    prec = chain.precision
    dy_slots = min(chain.batch, 2)   # overlap: the image in its backward pass and the next
    res = chain.residuals
    packed = [chain.tap_packed(u, P) for u in range(len(chain.units))]

    def share(u, lo, hi):
        """``(padded output channels of a member, share of its map's rows)``."""
        unit = chain.units[u]
        frac = (hi - lo) / unit.extent
        if unit.axis == "rows":
            return (lambda ly: pad(ly.K, P)), frac
        return (lambda ly: pad(hi - lo, P) if ly.K == unit.mac.K else pad(ly.K, P) * frac), 1.0

    def cluster_weights(u, lo, hi):
        # W, G (its rounded gradient) and B (the un-rounded per-image sums, accumulator-wide;
        # biases, their gradients and sums), fc layers included
        mac = chain.units[u].mac
        ch, _ = share(u, lo, hi)
        if mac.kind == "fc":
            per_k = pad(mac.C, P) * mac.in_shape[1] * mac.in_shape[2]
        elif packed[u]:
            per_k = pad(mac.C * mac.R * mac.S, P)
        else:
            per_k = pad(mac.C // mac.groups, P) * mac.R * mac.S
        bits = ch(mac) * per_k * (2 * prec.weight_bits + prec.acc_bits)
        return bits + (3 * ch(mac) * prec.acc_bits if mac.bias else 0.0)

    def cluster_stash(u, lo, hi):
        # one image in flight: the MAC layer's input (also its ReLU mask) and the max pools'
        # argmaxes (full words)
        mac = chain.units[u].mac
        ch, rf = share(u, lo, hi)
        if packed[u]:
            x = pad(mac.C * mac.R * mac.S, P) * mac.Ho * mac.Wo
        else:
            x = pad(mac.C, P) * mac.in_shape[1] * mac.in_shape[2]
        bits = x * rf * prec.act_bits
        for ly in chain.units[u].members:
            if ly.kind == "pool" and ly.pool_op == "max":
                bits += ch(ly) * ly.Ho * ly.Wo * rf * prec.act_bits
        return bits

    def cluster_maps(u, lo, hi):
        # one image each: the output-gradient slots, the pools' inputs and output gradients
        mac = chain.units[u].mac
        ch, rf = share(u, lo, hi)
        bits = dy_slots * ch(mac) * mac.Ho * mac.Wo * rf * prec.grad_bits
        for ly in chain.units[u].members:
            if ly.kind == "pool" and res.index[ly.name] not in res.kind:  # (a global average pool: skip_bits)
                bits += ch(ly) * rf * (ly.in_shape[1] * ly.in_shape[2] * prec.act_bits
                                       + ly.Ho * ly.Wo * prec.grad_bits)
        return bits

    return {name: RangeFunc(chain, fn) for name, fn in
            (("cluster_weights", cluster_weights), ("cluster_stash", cluster_stash),
             ("cluster_maps", cluster_maps))}
