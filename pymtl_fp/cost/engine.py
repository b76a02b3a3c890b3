"""Closed-form cycle counts of the engine's commands, per operation and per dataflow (one source of truth).

Every function here is a closed form of :class:`~pymtl_fp.engine.EngineRTL.EngineRTL`'s timing,
from the elaboration parameters (the array side ``P``; for ``bwd_weight`` also ``drain_rows``
``DR``, the dw rows drained per cycle, default 1) and the runtime command fields; the
cycle-level model (:class:`~pymtl_fp.engine.EngineCL.EngineCL`) releases its results at these
cycles, the design-space tools can use them for layers far larger than RTL simulation can run,
and ``tests/test_timing.py`` checks them against the RTL's own cycle counts, operation by
operation, over random shapes.

Occupancy of one command = cycles from the cycle it is accepted on ``cmd`` until the first cycle
the engine is idle again (``busy`` low, the next command can be accepted), when its stream is
never stalled and it runs alone (``ovl = 0``, or nothing else running: the same unit, the same
cycles; overlapped commands (``ovl = 1``) keep their occupancies, but a program's total is then
no longer their sum):

* ``LOAD count``: ``ceil(count / E) + 1`` (the command cycle, then one beat of ``E`` elements per
  cycle; ``E`` = the engine's ``stream_lanes``, 1 by default); 1 when ``count = 0``;
* ``STORE count`` from a buffer of ``L`` lanes per word: ``1 + ceil(count / E) + ceil(count / L)``
  (the command cycle; per word one buffer-read cycle, then one beat of ``E`` elements per cycle:
  ``L / E`` beats per word, ``E`` divides ``L``); 1 when ``count = 0``;
* compute: ``steps + 3`` (+ drain for ``bwd_weight``), where ``steps`` is the number of steps of
  the operation's loop nest (one per cycle) and the 3 cycles are the command register, the
  MAC/requantize stage B and the return to idle.  Steps per operation (``CT = ceil(C/P)``,
  ``KT = ceil(K/P)``; ``V(size, out, kern)`` = number of (output, tap) pairs of one axis whose
  input lies inside the map, ``= sum_tap outs(tap)``)::

      fwd         N*KT*CT * V(H,Ho,R) * V(W,Wo,S)         (no cycle on padding taps)
      bwd_data    N*CT*KT * T(H,Ho,R) * T(W,Wo,S)         T = V + inputs that no tap reaches
                                                          (each still takes one step)
      bwd_weight  tiles (kt, ct, r, s), tile length L(r,s) = N * max(1,outs_h(r)) * max(1,outs_w(s));
                  the P x P tile drains DR rows per cycle (P/DR cycles, P/DR + 1 when the tile
                  ends a db sum: ct == 0 and (r, s) the last tap) while the next tile
                  accumulates, and a tile's last step waits for the previous drain:
                  steps = L_0 + sum_{i>0} max(L_i, drain_{i-1}); total = steps + 3 + drain_last
      fwd, bp=1   tiles (nt, kt, oh, ow), tile length L = C * taps_h(oh) * taps_w(ow) (valid taps, at
                  least 1 each); the P x P tile drains one output channel a cycle (P cycles) while
                  the next accumulates: steps = L_0 + sum_{i>0} max(L_i, P); total = steps + 3 + P
      pool_*      N*CT*Ho*Wo * k*k
      update      KT*CT*R*S * P                           (one weight row per cycle)

With stalls on ``din`` (``dout``) a LOAD (STORE) lasts one more cycle per cycle its beat is
not offered (not accepted); compute commands never touch the streams, so their occupancy does
not depend on stalls.

Useful MACs (:func:`useful_macs`) count only real channels and taps inside the input:
``N*K*C*V(H,Ho,R)*V(W,Wo,S)`` for every conv operation; utilization is useful MACs over
``P*P*compute cycles``.

Every function that can time a ``bwd_weight`` takes ``drain_rows`` (keyword, default 1: the
engine's ``EngineConfig.drain_rows``); only ``bwd_weight`` depends on it.

The pipelines an engine may be built with (:data:`pymtl_fp.cost.latency.PIPELINE_LATENCY`) add
``wb_latency`` cycles to every compute command, and a command register ``cmd_latency`` more when each
command is offered to an idle engine (:func:`compute_cycles`); the fixed overhead ``3`` above is
:data:`~pymtl_fp.cost.latency.PIPE`.  :mod:`pymtl_fp.timing` is this module under the name the engine,
its test benches and the CLI import; :mod:`pymtl_fp.cost.layer` applies it to shape-level layers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pymtl_fp.cost.latency import PIPE

#: the engine's operations, defined once (the command encoding numbers them in this order)
COMPUTE_OPS = ("fwd", "bwd_data", "bwd_weight", "pool_fwd", "pool_bwd", "update")
CONV_OPS = ("fwd", "bwd_data", "bwd_weight")
POOL_OPS = ("pool_fwd", "pool_bwd")
OPS = ("load", "store") + COMPUTE_OPS


def cdiv(a: int, b: int) -> int:
    return -(-int(a) // int(b))


# ---- one axis of a convolution ---------------------------------------------------------------

def outs(size: int, out: int, tap: int, stride: int, pad: int) -> int:
    """Outputs ``o`` in ``0..out-1`` whose input ``o*stride + tap - pad`` lies in ``0..size-1``."""
    lo = max(0, cdiv(pad - tap, stride))
    hi = min(out - 1, (size - 1 + pad - tap) // stride)
    return max(0, hi - lo + 1)


def valid_pairs(size: int, out: int, kern: int, stride: int, pad: int) -> int:
    """``V``: (output, tap) pairs of one axis whose input lies inside the map."""
    return sum(outs(size, out, t, stride, pad) for t in range(kern))


def covered_inputs(size: int, out: int, kern: int, stride: int, pad: int) -> int:
    """Inputs of one axis reached by at least one (output, tap) pair."""
    if kern >= stride:  # windows touch or overlap: one run from input 0
        return max(0, min(size, (out - 1) * stride - pad + kern))
    return valid_pairs(size, out, kern, stride, pad)  # disjoint windows


def bwd_data_taps(size: int, out: int, kern: int, stride: int, pad: int) -> int:
    """``T``: steps of one axis of ``bwd_data``: every reaching tap, and one step for an input
    that no tap reaches."""
    return valid_pairs(size, out, kern, stride, pad) + size - covered_inputs(size, out, kern, stride, pad)


# ---- the fields of a command -------------------------------------------------------------------

@dataclass(frozen=True)
class ConvShape:
    """Runtime fields of a conv operation (the command fields the timing depends on)."""

    n: int
    c: int
    k: int
    h: int
    w: int
    r: int
    s: int
    stride: int = 1
    pad: int = 0
    bp: bool = False  #: a batch-parallel fwd (images on the array's columns, maps batch-innermost)

    @property
    def ho(self) -> int:
        return (self.h + 2 * self.pad - self.r) // self.stride + 1

    @property
    def wo(self) -> int:
        return (self.w + 2 * self.pad - self.s) // self.stride + 1

    def fields(self, P: int) -> dict:
        f = dict(n=self.n, c=self.c, k=self.k, ct=cdiv(self.c, P), kt=cdiv(self.k, P), h=self.h,
                 w=self.w, ho=self.ho, wo=self.wo, r=self.r, s=self.s,
                 lgst=self.stride.bit_length() - 1, pad=self.pad, pt=self.pad)
        if self.bp:
            f.update(bp=1, nt=cdiv(self.n, P))
        return f


def _geo(f: dict):
    """The conv geometry of command fields ``f``, ending ``stride, pt, pad``: the rows' padding
    above the input window is ``pt`` (``pad`` for a whole map, when ``f`` has no ``pt``; a row
    band, :mod:`pymtl_fp.golden.band`), the columns' is ``pad``."""
    st = 1 << int(f.get("lgst", 0))
    pad = int(f["pad"])
    return (int(f["n"]), int(f["c"]), int(f["k"]), int(f["ct"]), int(f["kt"]), int(f["h"]), int(f["w"]),
            int(f["ho"]), int(f["wo"]), int(f["r"]), int(f["s"]), st, int(f.get("pt", pad)), pad)


def conv_steps(P: int, op: str, f: dict) -> int:
    """Loop-nest steps of a conv operation (``fwd``, ``bwd_data``) from its command fields."""
    n, _c, _k, ct, kt, h, w, ho, wo, r, s, st, pt, pad = _geo(f)
    if op == "fwd":
        return n * kt * ct * valid_pairs(h, ho, r, st, pt) * valid_pairs(w, wo, s, st, pad)
    if op == "bwd_data":
        return n * ct * kt * bwd_data_taps(h, ho, r, st, pt) * bwd_data_taps(w, wo, s, st, pad)
    raise ValueError(f"conv_steps: {op!r} is not fwd or bwd_data")


def bwd_weight_tile_lengths(f: dict) -> list:
    """``L[r][s]``: accumulation steps of the ``bwd_weight`` tile of tap ``(r, s)`` (the same for
    every ``(kt, ct)`` group): ``N * max(1, outs_h(r)) * max(1, outs_w(s))``."""
    n, _c, _k, _ct, _kt, h, w, ho, wo, r, s, st, pt, pad = _geo(f)
    return [[n * max(1, outs(h, ho, i, st, pt)) * max(1, outs(w, wo, j, st, pad)) for j in range(s)]
            for i in range(r)]


def drain_cycles(P: int, drain_rows: int = 1) -> int:
    """Cycles the ``bwd_weight`` drain takes for the ``P`` dw rows of a tile, ``DR`` rows a cycle
    (``P / DR``; a tile that ends a db sum drains one more cycle)."""
    P, dr = int(P), int(drain_rows)
    if not 1 <= dr <= P or P % dr:
        raise ValueError(f"drain_rows must divide the array side P = {P} (1..{P}), got {drain_rows}")
    return P // dr


def bwd_weight_cycles(P: int, f: dict, drain_rows: int = 1) -> int:
    """Compute cycles of ``bwd_weight`` (closed form over the ``R*S`` taps, not the tiles) on a
    ``P x P`` engine draining ``drain_rows`` dw rows per cycle."""
    _n, _c, _k, ct, kt, _h, _w, _ho, _wo, r, s, _st, _pt, _pad = _geo(f)
    D = drain_cycles(P, drain_rows)
    L = bwd_weight_tile_lengths(f)
    groups = kt * ct  # tile groups (kt, ct), each of R*S tiles
    inner = sum(max(L[i][j], D) for i in range(r) for j in range(s) if (i, j) != (0, 0))
    # the first tile of a group follows the previous group's last tile, which ends a db sum
    # (drains D + 1 cycles) when that group has ct == 0
    after_db = (groups - 1) if ct == 1 else kt  # groups g >= 1 whose predecessor has ct == 0
    after_db = min(after_db, groups - 1)
    plain = groups - 1 - after_db
    steps = L[0][0] + after_db * max(L[0][0], D + 1) + plain * max(L[0][0], D) + groups * inner
    drain_last = D + 1 if ct == 1 else D
    return steps + PIPE + drain_last


def fwd_taps(size: int, out: int, kern: int, stride: int, pad: int) -> list:
    """Per output of one axis, the steps ``fwd`` spends on it: its taps whose input lies inside the
    map, at least one (an output with none still takes a step)."""
    return [max(1, min(kern, size + pad - o * stride) - max(0, pad - o * stride)) for o in range(out)]


def bp_fwd_cycles(P: int, f: dict) -> int:
    """Compute cycles of a batch-parallel ``fwd`` (``bp = 1``): tiles ``(nt, kt, oh, ow)`` of ``P``
    images x ``P`` output channels, each accumulating over its ``C`` channels and valid taps
    (``L = C * taps_h(oh) * taps_w(ow)`` steps), then draining one output channel (``P`` images) a
    cycle, ``P`` cycles, while the next tile accumulates; a tile's last step waits for the previous
    drain, as ``bwd_weight``'s with ``raw``: ``steps = L_0 + sum_{i>0} max(L_i, P)``, total ``steps +
    3 + P``."""
    n, c, _k, _ct, kt, h, w, ho, wo, r, s, st, pt, pad = _geo(f)
    rows = Counter(fwd_taps(h, ho, r, st, pt))
    cols = Counter(fwd_taps(w, wo, s, st, pad))
    per_pixel = sum(nr * nc * max(c * a * b, P) for a, nr in rows.items() for b, nc in cols.items())
    first = c * fwd_taps(h, ho, r, st, pt)[0] * fwd_taps(w, wo, s, st, pad)[0]
    steps = first + cdiv(n, P) * kt * per_pixel - max(first, P)
    return steps + PIPE + P


def compute_cycles(P: int, op: str, f: dict, drain_rows: int = 1, wb_latency: int = 0, cmd_latency: int = 0) -> int:
    """Occupancy of a compute command ``op`` with command fields ``f`` on a ``P x P`` engine
    (``drain_rows``: its ``bwd_weight`` drain's rows per cycle; ``wb_latency``: cycles its writes
    follow stage B, ``EngineConfig.wb_latency``, all added once at the end; ``cmd_latency``: its
    command register's cycles, ``EngineConfig.cmd_latency``, paid when the command is offered to an
    idle engine, as a test bench's drive and the partitioner's work model count it; a node's router
    offers the next command while one runs, and the compiler counts from acceptance: 0)."""
    return _compute_cycles(P, op, f, drain_rows) + wb_latency + cmd_latency


def engine_compute_cycles(ecfg, op: str, f: dict) -> int:
    """:func:`compute_cycles` of ``op`` on the engine built as ``ecfg`` (its ``P``, ``drain_rows`` and
    ``wb_latency``: an :class:`~pymtl_fp.engine.config.EngineConfig`), counted from the command's
    acceptance: what a node's router sees of it (its trace and energy activity)."""
    return compute_cycles(ecfg.P, op, f, ecfg.drain_rows, ecfg.wb_latency)


def _compute_cycles(P: int, op: str, f: dict, drain_rows: int) -> int:
    if op == "fwd" and int(f.get("bp", 0)):
        return bp_fwd_cycles(P, f)
    if op in ("fwd", "bwd_data"):
        return conv_steps(P, op, f) + PIPE
    if op == "bwd_weight":  # raw (un-rounded, into B's one write port): one dw row a cycle; adding
        # to B's sums (acc) reads each word a cycle before writing it: one cycle more
        raw = int(f.get("raw", 0))
        return bwd_weight_cycles(P, f, 1 if raw else drain_rows) + (raw & int(f.get("acc", 0)))
    if op in POOL_OPS:
        pk = int(f["pk"])
        return int(f["n"]) * int(f["ct"]) * int(f["ho"]) * int(f["wo"]) * pk * pk + PIPE
    if op == "update":
        return int(f["kt"]) * int(f["ct"]) * int(f["r"]) * int(f["s"]) * P + PIPE
    raise ValueError(f"unknown compute operation {op!r}")


def stream_beats(count: int, E: int = 1) -> int:
    """Beats (cycles at full rate) of ``count`` elements on a stream of ``E`` elements per beat."""
    return cdiv(count, E)


def load_cycles(count: int, E: int = 1) -> int:
    """Occupancy of ``LOAD count`` (elements) without stalls on ``din``, ``E`` elements per beat."""
    return stream_beats(count, E) + 1 if count else 1


def store_cycles(count: int, lanes: int, E: int = 1) -> int:
    """Occupancy of ``STORE count`` (elements) from a buffer of ``lanes`` lanes, without stalls on
    ``dout``, ``E`` elements per beat (``E`` divides ``lanes``)."""
    return 1 + stream_beats(count, E) + cdiv(count, lanes) if count else 1


def useful_macs(op: str, f: dict) -> int:
    """Multiply-accumulates the operation needs (real channels, taps inside the input only)."""
    if op not in CONV_OPS:
        return 0
    n, c, k, _ct, _kt, h, w, ho, wo, r, s, st, pt, pad = _geo(f)
    return n * k * c * valid_pairs(h, ho, r, st, pt) * valid_pairs(w, wo, s, st, pad)


def utilization(P: int, op: str, f: dict, drain_rows: int = 1) -> float:
    """Useful MACs / (P*P * compute cycles) of one compute command (0 for non-MAC operations)."""
    return useful_macs(op, f) / (P * P * compute_cycles(P, op, f, drain_rows))


def conv_cycles(P: int, op: str, shape: ConvShape, drain_rows: int = 1) -> int:
    """Compute cycles of a conv operation on a layer of any size (no buffer or field limits)."""
    return compute_cycles(P, op, shape.fields(P), drain_rows)


def conv_utilization(P: int, op: str, shape: ConvShape, drain_rows: int = 1) -> float:
    f = shape.fields(P)
    return useful_macs(op, f) / (P * P * compute_cycles(P, op, f, drain_rows))


def pool_cycles(P: int, n: int, c: int, ho: int, wo: int, k: int) -> int:
    """Compute cycles of ``pool_fwd``/``pool_bwd`` (``k x k`` windows, ``ho x wo`` pooled map)."""
    return compute_cycles(P, "pool_fwd", dict(n=n, ct=cdiv(c, P), ho=ho, wo=wo, pk=k))


def update_cycles(P: int, k: int, c: int, r: int, s: int) -> int:
    """Compute cycles of ``update`` (SGD) of a ``(K, C, R, S)`` weight tensor."""
    return compute_cycles(P, "update", dict(kt=cdiv(k, P), ct=cdiv(c, P), r=r, s=s))


# ---- tap packing: layers with few input channels ------------------------------------------------

def tap_packed_shape(shape: ConvShape) -> ConvShape:
    """The ``1 x 1`` conv a tap-packed layer runs (:mod:`pymtl_fp.engine.packing`): input channel
    ``(c*R + r)*S + s`` of the packed input holds channel ``c`` at tap ``(r, s)`` of every output
    position, so the engine's input lanes carry ``C*R*S`` channels instead of ``C`` over an
    ``Ho x Wo`` map, stride 1, no padding (the padding taps are zeros of the packed input)."""
    return ConvShape(n=shape.n, c=shape.c * shape.r * shape.s, k=shape.k, h=shape.ho, w=shape.wo, r=1, s=1)


def tap_packing_pays(P: int, shape: ConvShape) -> bool:
    """Does tap packing shorten the layer's training work (``fwd`` + ``bwd_weight`` compute
    cycles) on a ``P x P`` engine?  Only a layer fed from off the engine (the first layer) can be
    packed: its ``bwd_data`` is not needed and the packed input is made by the host."""
    if shape.r * shape.s == 1:
        return False
    packed = tap_packed_shape(shape)
    return sum(conv_cycles(P, op, packed) for op in ("fwd", "bwd_weight")) < \
        sum(conv_cycles(P, op, shape) for op in ("fwd", "bwd_weight"))


def mapped_conv_cycles(P: int, op: str, shape: ConvShape, packed: bool, drain_rows: int = 1) -> int:
    """Compute cycles of ``op`` on the layer as mapped: tap-packed (``fwd``, ``bwd_weight``) or
    channel-parallel; its useful MACs are always those of ``shape``."""
    if packed:
        if op == "bwd_data":
            raise ValueError("a tap-packed layer has no bwd_data (it is the first layer)")
        return conv_cycles(P, op, tap_packed_shape(shape), drain_rows)
    return conv_cycles(P, op, shape, drain_rows)


def conv_program_cycles(P: int, op: str, shape: ConvShape, E: int = 1, drain_rows: int = 1) -> dict:
    """Whole-program cycles of a conv operation at any size, as :mod:`pymtl_fp.engine.program`
    builds it (load the operands, compute, store the results; ``E`` elements per stream beat and
    cycle, channels padded to whole words): ``total_cycles``, ``compute_cycles``, ``cycles``
    (compute + stores), ``load_cycles``, ``store_cycles``."""
    f = shape.fields(P)
    n, ct, kt, h, w, ho, wo, r, s = (f[x] for x in ("n", "ct", "kt", "h", "w", "ho", "wo", "r", "s"))
    act_x, act_y = n * ct * h * w * P, n * kt * ho * wo * P
    if f.get("bp"):  # batch-innermost maps: image tiles x channels words
        act_x, act_y = f["nt"] * shape.c * h * w * P, f["nt"] * shape.k * ho * wo * P
    wts = kt * ct * r * s * P * P
    if op == "fwd":
        loads, stores = [act_x, wts, kt * P], [(act_y, P)]
    elif op == "bwd_data":
        loads, stores = [act_y, wts, act_x], [(act_x, P)]
    elif op == "bwd_weight":
        loads, stores = [act_x, act_y], [(wts, P * P), (kt * P, P)]
    else:
        raise ValueError(f"conv_program_cycles: {op!r} is not a conv operation")
    ld = sum(load_cycles(x, E) for x in loads)
    sto = sum(store_cycles(x, lanes, E) for x, lanes in stores)
    comp = compute_cycles(P, op, f, drain_rows)
    return dict(total_cycles=ld + comp + sto, compute_cycles=comp, cycles=comp + sto, load_cycles=ld,
                store_cycles=sto)
