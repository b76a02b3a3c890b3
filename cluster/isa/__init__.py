"""The node program ISA: what a node's router/DMA sequencer executes, as typed instructions and as
binary words (one definition for the compiler, :class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`,
:class:`~pymtl_fp.cluster.hw.RouterRTL.RouterRTL` and the documentation).

A node program is a list of :class:`Instr`; the sequencer holds one instruction at a time
(``pc``) and retires it as its kind says:

========  =============================================================  ==========================
kind      what it does                                                   retires
========  =============================================================  ==========================
``ENG``   push the engine command ``cmd`` (a compute command)            when ``cmd`` is accepted
``LOAD``  push the LOAD ``cmd``; the feeder then moves ``cmd.count``     when ``cmd`` is accepted
          elements from ``src`` (``fwd_in``, ``bwd_in``, the scratch
          FIFO or the host side channel ``host_in``) to ``din``
``STORE`` push the STORE ``cmd``; the drainer moves its ``cmd.count``    when ``cmd`` is accepted
          elements from ``dout`` to every destination in ``dmask``
          (``fwd_out``, ``bwd_out``, scratch, host side channel)
``MOVE``  pass ``cmd.count`` elements from link input ``src`` to link     after the last element
          output(s) and/or the scratch FIFO in ``dmask`` (a board
          forwarding traffic, keeping a copy of a broadcast)
``REDUCE``the adder: ``cmd.count`` times, take one element from link      after the last element
          input ``src`` and the scratch FIFO's head, and send their sum
          (modulo ``2**stream_bits``) to every destination in ``dmask``
          (link outputs, the scratch FIFO's tail): one hop of an
          all-reduce
``RELAY``  a middle member of an all-reduce: ``REDUCE fwd_in ->          after both streams' last
          fwd_out`` and ``MOVE bwd_in -> bwd_out + scratch`` at once,     element
          ``cmd.count`` elements each (the broadcast passes back while
          the reduce still runs; the FIFO pops own partial sums at its
          head and keeps the sums at its tail)
``REQUANT``the requantizer: the scratch FIFO holds ``count`` un-rounded   after ``count + 2`` cycles
          sums of a ``(k, c, r, s)`` tensor in the engine's layout of
          buffer ``cmd.target`` (G: ``P*P`` lanes a word; B: ``P``;
          ``P`` in ``cmd.pk``, tile counts in ``cmd.kt``/``cmd.ct``);
          replace each with ``saturate(requantize(v, shift), bits)``,
          rounding element ``(k, c, r, s)`` at its flat index (0 in
          padding lanes): what the engine's drain would have written
``BIAS``  the scalar unit: the scratch FIFO holds ``[b, db]`` (``count``  after ``count + 2``
          elements each); replace them with ``b - round(db >> shift)``    cycles
          saturated to ``bits`` (the golden ``sgd_update``)
``GATHER``the relayout unit: the scratch FIFO holds a tensor in one       after ``table`` entries'
          array side's layout (``count`` elements); replace it with the   lengths ``+ 2`` cycles
          runs listed by gather-table entries ``[tbase, tbase+tlen)``
``ADD``   the residual unit: the scratch FIFO holds ``[a, b]`` (``count`` after ``count + 2``
          elements each); replace them with ``saturate(a + b, bits)``,   cycles
          then ReLU if ``cmd.relu`` (a residual add, a fork's gradient
          sum)
``MASK``  the residual unit: the scratch FIFO holds ``[g, x]``          after ``count + 2``
          (``count`` elements each); replace them with ``g`` where      cycles
          ``x > 0``, else 0, saturated to ``bits`` (ReLU's derivative)
``GAP``   the residual unit: the scratch FIFO holds an ``(N, C, H, W)``  after ``count + 2``
          map in the engine's activation layout (``count`` elements);    cycles
          replace it with its global average pool (``N, C, 1, 1``):
          ``requantize(M * sum, F, bits)``
``GAPB``  the residual unit: the scratch FIFO holds the pool's output    after ``count + 2``
          gradient (and its input, with ``cmd.relu``); replace it with   cycles
          the input gradient (``count`` elements)
``NOP``   nothing (carries marks where no other instruction can)         after one cycle
``HALT``  the end of the program                                          never
========  =============================================================  ==========================

``MOVE``, ``REDUCE``, ``RELAY``, ``BIAS``, ``GATHER``, ``REQUANT``, ``ADD``, ``MASK``, ``GAP`` and ``GAPB`` start only
when every earlier LOAD and STORE has moved its last element (the feeder and drainer are idle);
``ENG``/``LOAD``/``STORE`` are offered to the engine at once, in order (the engine decides whether it may
overlap them).

Fields every instruction has (applied when the instruction becomes current, i.e. in the cycle
``pc`` reaches it, each loop iteration again):

* ``mark`` (0 = none): record the cycle (step and phase boundaries of the report);
* ``done`` (0 = none): record the cycle in which every LOAD/STORE issued before this instruction
  has moved its last element (an image leaving or arriving at a node);
* ``lend`` / ``lcount`` / ``ltarget``: this instruction ends a loop body that starts at
  ``ltarget`` and runs ``lcount`` times: after it retires, ``pc`` goes back to ``ltarget`` while
  iterations remain (the iteration counter counts the jumps).  One loop level: a training run is
  ``init; loop(steps){step}; final``;
* ``seedstep``: the engine command's (or BIAS's) rounding seed is ``seed + iteration`` (mod
  ``2**32``): the golden model's step seed is ``seed + step`` and every command's slice seed is
  linear in it (:func:`pymtl_fp.cluster.compiler.compile.slice_seed`), so one loop body serves every step.

Binary form: an instruction is one program-memory word of :data:`INSTR_BITS` bits, packed as the
PyMTL3 bitstruct :func:`instr_type` (first field in the most significant bits; the engine command
``cmd`` is the :func:`pymtl_fp.engine.msgs.cmd_type` struct).  ``BIAS`` reuses ``cmd``'s ``count``
(elements of ``b``), ``k`` (real channels), ``shift`` (right shift of ``db``), ``bshift`` (left
shift instead, for a learning rate above one), ``stoch``, ``seed`` and ``tid`` fields.
The residual kinds' fields and exact semantics: :mod:`pymtl_fp.cluster.isa.residual`.
A gather-table entry is a 32-bit word: ``zero`` (1 bit: the run is zero padding), ``length``
(8 bits, 1..255 elements), ``offset`` (23 bits, from the scratch head).

Endpoints: source ids :data:`SRC_FWD_IN`, :data:`SRC_BWD_IN`, :data:`SRC_SCRATCH`,
:data:`SRC_HOST`; destination mask bits :data:`DST_FWD_OUT`, :data:`DST_BWD_OUT`,
:data:`DST_SCRATCH`, :data:`DST_HOST`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pymtl_fp.cluster.isa import residual
from pymtl_fp.cost.latency import UNIT_PIPE_LATENCY
from pymtl_fp.engine import encoding

#: the engine command's fields, most significant first: (name, width); PyMTL3-free
CMD_FIELDS = [(f.name, f.bits) for f in encoding.FIELDS]

# ---- kinds and endpoints -----------------------------------------------------------------------

NOP, ENG, LOAD, STORE, MOVE, BIAS, GATHER, HALT, REDUCE, REQUANT, RELAY = range(11)
ADD, GAP, GAPB, MASK = residual.ADD, residual.GAP, residual.GAPB, residual.MASK
KIND_NAMES = {NOP: "nop", ENG: "eng", LOAD: "load", STORE: "store", MOVE: "move", BIAS: "bias",
              GATHER: "gather", HALT: "halt", REDUCE: "reduce", REQUANT: "requant", RELAY: "relay",
              ADD: "add", GAP: "gap", GAPB: "gapb", MASK: "mask"}
#: kinds run by the residual unit (:mod:`pymtl_fp.cluster.isa.residual`)
RES_KINDS = residual.RES_KINDS
#: kinds that start only when the feeder and the drainer are idle
QUIET_KINDS = (MOVE, BIAS, GATHER, REDUCE, REQUANT, RELAY) + RES_KINDS
#: kinds run by a scalar unit over the scratch FIFO (``count + 2`` cycles or a gather's runs)
UNIT_KINDS = (BIAS, GATHER, REQUANT) + RES_KINDS
#: kinds that stream link input elements to destinations (the sequencer waits for each)
STREAM_KINDS = (MOVE, REDUCE)

SRC_FWD_IN, SRC_BWD_IN, SRC_SCRATCH, SRC_HOST = range(4)
SRC_NAMES = {SRC_FWD_IN: "fwd_in", SRC_BWD_IN: "bwd_in", SRC_SCRATCH: "scratch", SRC_HOST: "host"}
DST_FWD_OUT, DST_BWD_OUT, DST_SCRATCH, DST_HOST = 1, 2, 4, 8
DST_NAMES = {DST_FWD_OUT: "fwd_out", DST_BWD_OUT: "bwd_out", DST_SCRATCH: "scratch", DST_HOST: "host"}

MARK_BITS = 8
DONE_BITS = 12
LCOUNT_BITS = 16
PC_BITS = 14
TABLE_ADDR_BITS = 16

#: instruction fields, in order (the first in the most significant bits): (name, width); ``cmd``
#: is the engine command struct (:data:`CMD_FIELDS`)
HEADER_FIELDS = [
    ("kind", 4), ("mark", MARK_BITS), ("done", DONE_BITS), ("lend", 1),
    ("lcount", LCOUNT_BITS), ("ltarget", PC_BITS), ("seedstep", 1), ("src", 2), ("dmask", 4), ("bits", 7),
    ("tbase", TABLE_ADDR_BITS), ("tlen", TABLE_ADDR_BITS),
]
CMD_BITS = encoding.CMD_BITS

#: kind -> (what it does, when it retires): the table of the module docstring, as data for the
#: generated ISA reference (:mod:`pymtl_fp.cluster.hw.ipkit`)
KIND_DOC = {
    NOP: ("nothing (carries marks where no other instruction can)", "after one cycle"),
    ENG: ("push the engine command `cmd` (a compute command)", "when `cmd` is accepted"),
    LOAD: ("push the LOAD `cmd`; the feeder then moves `cmd.count` elements from `src` to the engine's din",
           "when `cmd` is accepted"),
    STORE: ("push the STORE `cmd`; the drainer moves its `cmd.count` elements from dout to every destination "
            "in `dmask`", "when `cmd` is accepted"),
    MOVE: ("pass `cmd.count` elements from link input `src` to the link output and/or scratch FIFO in `dmask` "
           "(forwarding, keeping a copy)", "after the last element"),
    REDUCE: ("`cmd.count` times: link input `src` + the scratch FIFO's head (mod 2**stream_bits) to every "
             "destination in `dmask` (link outputs, the scratch FIFO's tail): an all-reduce hop",
             "after the last element"),
    RELAY: ("an all-reduce's middle member: REDUCE fwd_in + scratch -> fwd_out and MOVE bwd_in -> bwd_out + "
            "scratch at once, `cmd.count` elements each", "after both streams' last element"),
    REQUANT: ("requantizer: the scratch FIFO's `cmd.count` un-rounded sums of a (`k`, `c`, `r`, `s`) tensor in "
              "buffer `cmd.target`'s layout become saturate(requantize(v, `shift`), `bits`), element (k, c, r, s) "
              "rounded at its flat index (padding lanes 0); `cmd.rs` = r*s and `cmd.crs` = c*r*s give the index's "
              "strides", f"after `count` + 2 cycles (+ {UNIT_PIPE_LATENCY} with pipelined units)"),
    BIAS: ("scalar unit: the scratch FIFO holds [b, db] (`cmd.count` elements each); replace them with "
           "b - round(db >> `cmd.shift`) (or << `cmd.bshift`) saturated to `bits`",
           f"after `count` + 2 cycles (+ {UNIT_PIPE_LATENCY} with pipelined units)"),
    GATHER: ("relayout unit: replace the scratch FIFO's `cmd.count` elements with the runs of gather-table "
             "entries [`tbase`, `tbase` + `tlen`)", "after the runs' lengths + 2 cycles"),
    ADD: ("residual unit: the scratch FIFO holds [a, b] (`cmd.count` elements each); replace them with "
          "saturate(a + b, `bits`), then ReLU if `cmd.relu` (a residual add; a fork's gradient sum)",
          f"after `count` + 2 cycles (+ {UNIT_PIPE_LATENCY} with pipelined units)"),
    MASK: ("residual unit: the scratch FIFO holds [g, x] (`cmd.count` elements each); replace them with g where "
           "x > 0, else 0, saturated to `bits` (the ReLU derivative on an add's gradient into a skip)",
           f"after `count` + 2 cycles (+ {UNIT_PIPE_LATENCY} with pipelined units)"),
    GAP: ("residual unit: global average pool of the (n, c, A = `hw` pixels) map in the scratch FIFO "
          "(activation layout on P = `pk`, `ct` tiles, `cmd.count` elements): requantize(M * sum, F, `bits`), "
          "M in `cmd.rs`, F in `cmd.shift`, stochastic index n*c + c", f"after `count` + 2 cycles "
          f"(+ {UNIT_PIPE_LATENCY} with pipelined units)"),
    GAPB: ("residual unit: the pool's backward: the scratch FIFO holds dy (`cmd.crs` elements; then the pool's "
           "input x with `cmd.relu`); replace it with the `cmd.count` elements of dx = requantize(M * dy, F, "
           "`bits`) spread over A = `hw` pixels (0 where x <= 0 with `cmd.relu`)",
           f"after `count` + 2 cycles (+ {UNIT_PIPE_LATENCY} with pipelined units)"),
    HALT: ("the end of the program", "never"),
}
#: instruction header field -> meaning (the generated ISA reference)
HEADER_DOC = {
    "kind": "instruction kind (table below)",
    "mark": "0 = none; else record the cycle this instruction becomes current (step and phase boundaries)",
    "done": "0 = none; else record the cycle every LOAD/STORE issued before it has moved its last element",
    "lend": "1: this instruction ends a loop body that starts at `ltarget`",
    "lcount": "loop iterations (with `lend`)",
    "ltarget": "first instruction of the loop body (with `lend`)",
    "seedstep": "1: the rounding seed is `cmd.seed` + loop iteration (mod 2**32)",
    "src": "LOAD / MOVE / REDUCE source: 0 fwd_in, 1 bwd_in, 2 scratch FIFO, 3 host_in",
    "dmask": "STORE / MOVE / REDUCE destinations: bit 0 fwd_out, 1 bwd_out, 2 scratch FIFO, 3 host_out",
    "bits": "BIAS / REQUANT / ADD / MASK / GAP / GAPB: output width of the saturation",
    "tbase": "GATHER: first gather-table entry",
    "tlen": "GATHER: gather-table entries",
}
INSTR_FIELDS = HEADER_FIELDS + [("cmd", CMD_BITS)]
INSTR_BITS = sum(w for _, w in INSTR_FIELDS)

# gather-table entries
RUN_LEN_BITS = 8
RUN_OFF_BITS = 23
MAX_RUN = (1 << RUN_LEN_BITS) - 1


class IsaError(ValueError):
    """A program that the sequencer cannot hold or execute (raised by the compiler, before any
    simulation)."""


@dataclass(frozen=True)
class Instr:
    """One instruction (see the module docstring).  ``cmd`` is a dict of engine command fields
    (:data:`CMD_FIELDS`; missing fields are 0)."""

    kind: int
    cmd: dict = dataclasses.field(default_factory=dict, hash=False)
    src: int = 0
    dmask: int = 0
    bits: int = 0
    tbase: int = 0
    tlen: int = 0
    mark: int = 0
    done: int = 0
    lend: int = 0
    lcount: int = 0
    ltarget: int = 0
    seedstep: int = 0

    def field(self, name: str) -> int:
        return int(self.cmd.get(name, 0))

    @property
    def count(self) -> int:
        return self.field("count")

    @property
    def quiet(self) -> bool:
        return self.kind in QUIET_KINDS

    def with_(self, **changes) -> Instr:
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        k = KIND_NAMES[self.kind]
        if self.kind in (ENG, LOAD, STORE):
            op = encoding.OP_NAMES[self.field("op")]
            if self.kind == LOAD:
                return (f"load {encoding.BUF_NAMES[self.field('target')]}@{self.field('addr')} x{self.count} <- "
                        f"{SRC_NAMES[self.src]}")
            if self.kind == STORE:
                return (f"store {encoding.BUF_NAMES[self.field('target')]}@{self.field('addr')} x{self.count} -> "
                        + "+".join(n for b, n in DST_NAMES.items() if self.dmask & b))
            return op
        if self.kind in (MOVE, REDUCE):
            return f"{k} {SRC_NAMES[self.src]} -> " + "+".join(n for b, n in DST_NAMES.items() if self.dmask & b) \
                + f" x{self.count}"
        if self.kind == REQUANT:
            return f"requant x{self.count} ({encoding.BUF_NAMES[self.field('target')]} layout)"
        if self.kind == RELAY:
            return f"relay fwd_in+scratch -> fwd_out, bwd_in -> bwd_out+scratch x{self.count}"
        if self.kind == BIAS:
            return f"bias x{self.count}"
        if self.kind == GATHER:
            return f"gather x{self.count} table[{self.tbase}:{self.tbase + self.tlen}]"
        if self.kind in RES_KINDS:
            return residual.describe(self)
        return k


# ---- constructors ------------------------------------------------------------------------------

def eng(**fields) -> Instr:
    """An ENG instruction; the command's product fields (``encoding.PRODUCTS``) are filled in."""
    return Instr(ENG, _checked_cmd(_with_products(fields)))


def _with_products(fields: dict) -> dict:
    try:
        return encoding.products(fields)
    except ValueError as exc:
        raise IsaError(str(exc)) from None


def load(src: int, **fields) -> Instr:
    if src not in SRC_NAMES:
        raise IsaError(f"LOAD source {src!r}: one of {SRC_NAMES}")
    return Instr(LOAD, _checked_cmd(dict(fields, op=encoding.OP["load"])), src=src)


def store(dmask: int, **fields) -> Instr:
    if not 0 < dmask < 16:
        raise IsaError(f"STORE destination mask {dmask!r}: a non-empty set of {DST_NAMES}")
    return Instr(STORE, _checked_cmd(dict(fields, op=encoding.OP["store"])), dmask=dmask)


def move(src: int, dmask: int, n: int) -> Instr:
    """``dmask``: one link output, the scratch FIFO, or both."""
    if src not in (SRC_FWD_IN, SRC_BWD_IN) or dmask not in _STREAM_DMASKS:
        raise IsaError("MOVE passes one link input to one link output and/or the scratch FIFO")
    return Instr(MOVE, _checked_cmd(dict(count=n)), src=src, dmask=dmask)


_STREAM_DMASKS = (DST_FWD_OUT, DST_BWD_OUT, DST_SCRATCH, DST_FWD_OUT | DST_SCRATCH, DST_BWD_OUT | DST_SCRATCH)


def reduce_(src: int, dmask: int, n: int) -> Instr:
    """An all-reduce hop: link input ``src`` + the scratch FIFO's head, to ``dmask`` (one link
    output and/or the scratch FIFO)."""
    if src not in (SRC_FWD_IN, SRC_BWD_IN) or dmask not in _STREAM_DMASKS:
        raise IsaError("REDUCE adds one link input to the scratch FIFO, to one link output and/or the scratch FIFO")
    return Instr(REDUCE, _checked_cmd(dict(count=n)), src=src, dmask=dmask)


#: RELAY's fixed destinations (so its room check is the one of a stream to both link outputs)
RELAY_DMASK = DST_FWD_OUT | DST_BWD_OUT | DST_SCRATCH


def relay(n: int) -> Instr:
    """An all-reduce's middle member: the reduce forward and the broadcast back, concurrently."""
    if n < 1:
        raise IsaError("RELAY moves at least one element each way")
    return Instr(RELAY, _checked_cmd(dict(count=n)), src=SRC_FWD_IN, dmask=RELAY_DMASK)


def requant(n: int, layout: str, shape: tuple, P: int, shift: int, stoch: int, seed: int, tid: int,
            bits: int) -> Instr:
    """Round ``n`` un-rounded sums of a ``shape = (k, c, r, s)`` tensor laid out as buffer
    ``layout`` of a ``P x P`` engine (``"G"``: ``P*P`` lanes a word, or ``"B"``: ``P``, with
    ``c = r = s = 1``).  The instruction carries ``P`` in ``cmd.pk``, the tile counts in
    ``cmd.kt`` / ``cmd.ct`` and the strides of the flat index, ``cmd.rs = r*s`` and ``cmd.crs = c*r*s``
    (computed here, as an engine command's products: the unit walks the layout with counters and
    running sums)."""
    if layout not in ("G", "B"):
        raise IsaError(f"REQUANT layout {layout!r}: G or B")
    k, c, r, s = (int(v) for v in shape)
    if layout == "B" and (c, r, s) != (1, 1, 1):
        raise IsaError("REQUANT in B's layout rounds a vector: c = r = s = 1")
    kt, ct = -(-k // P), -(-c // P)
    want = kt * ct * r * s * P * P if layout == "G" else kt * P
    if n != want:
        raise IsaError(f"REQUANT of a {shape} tensor in {layout}'s layout on P = {P} holds {want} elements, not {n}")
    return Instr(REQUANT, _checked_cmd(dict(count=n, target=encoding.BUF[layout], k=k, c=c, r=r, s=s, kt=kt, ct=ct,
                                            rs=r * s, crs=c * r * s, pk=P, shift=shift, stoch=stoch, seed=seed,
                                            tid=tid)), bits=bits)


def requant_indices(ins: Instr):
    """The flat element index of each scratch position a REQUANT rounds (``-1``: padding)."""
    import numpy as np

    from pymtl_fp.engine.msgs import pack_bias, pack_weight

    k, c, r, s, P = (ins.field(f) for f in ("k", "c", "r", "s", "pk"))
    if ins.field("target") == encoding.BUF["B"]:
        return pack_bias(np.arange(1, k + 1), P).reshape(-1) - 1
    return pack_weight(np.arange(1, k * c * r * s + 1).reshape(k, c, r, s), P).reshape(-1) - 1


def apply_requant(values: list, ins: Instr, seed: int) -> list:
    """What REQUANT leaves in the scratch FIFO (``values``: its input, ``seed``: the rounding
    seed in effect): the engine's rounding of each sum at its flat index, saturated to ``bits``,
    0 in padding lanes."""
    import numpy as np

    from pymtl_fp.numerics import requantize

    idx = requant_indices(ins)  # (as many as values: the instruction's count, checked by its constructor)
    real = idx >= 0
    out = np.zeros(len(idx), dtype=np.int64)
    out[real] = requantize(np.asarray(values, dtype=np.int64)[real], ins.field("shift"), ins.bits,
                           "stochastic" if ins.field("stoch") else "nearest", seed=seed,
                           tensor_id=ins.field("tid"), index=idx[real])
    return [int(v) for v in out]


def unit_cycles(ins: Instr, table: list, latency: int = 0) -> int:
    """Cycles a scalar unit (BIAS, GATHER, REQUANT, ADD, MASK, GAP, GAPB) holds the sequencer; ``latency``:
    the cycles any of them but GATHER takes more on a router with pipelined units
    (``RouterConfig.unit_latency``)."""
    if ins.kind == GATHER:
        return gather_cycles(table[ins.tbase: ins.tbase + ins.tlen])
    return bias_cycles(ins.count) + latency  # (REQUANT and the residual kinds: one read an edge, as BIAS)


def bias(n: int, k: int, shift: int, stoch: int, seed: int, tid: int, bits: int) -> Instr:
    """``shift``: the learning-rate shift (negative: a left shift by ``-shift``, in ``bshift``)."""
    if shift < 0:
        return Instr(BIAS, _checked_cmd(dict(count=n, k=k, bshift=-shift, stoch=stoch, seed=seed, tid=tid)),
                     bits=bits)
    return Instr(BIAS, _checked_cmd(dict(count=n, k=k, shift=shift, stoch=stoch, seed=seed, tid=tid)),
                 bits=bits)


#: the residual kinds' constructors (:mod:`pymtl_fp.cluster.isa.residual`)
add, mask, gap, gapb = residual.add, residual.mask, residual.gap, residual.gapb


def gather(n_in: int, tbase: int, tlen: int) -> Instr:
    return Instr(GATHER, _checked_cmd(dict(count=n_in)), tbase=tbase, tlen=tlen)


def _checked_cmd(fields: dict) -> dict:
    widths = dict(CMD_FIELDS)
    for name, v in fields.items():
        if name not in widths:
            raise IsaError(f"unknown command field {name!r}")
        if not 0 <= int(v) < (1 << widths[name]):
            raise IsaError(f"command field {name}={v} does not fit in {widths[name]} bits")
    return {k: int(v) for k, v in fields.items()}


# ---- gather tables -----------------------------------------------------------------------------

def runs(indices) -> list:
    """Run-length form of a gather list: ``indices[i]`` is the scratch offset element ``i`` of the
    output is read from, or ``-1`` for zero padding -> ``[(zero, length, offset)]`` with runs of
    consecutive offsets (or of zeros) of at most :data:`MAX_RUN` elements."""
    out = []
    for v in indices:
        v = int(v)
        if out:
            zero, length, off = out[-1]
            if length < MAX_RUN and ((v < 0 and zero) or (v >= 0 and not zero and v == off + length)):
                out[-1] = (zero, length + 1, off)
                continue
        out.append((1, 1, 0) if v < 0 else (0, 1, v))
    return out


def run_word(zero: int, length: int, offset: int) -> int:
    if not (1 <= length <= MAX_RUN and 0 <= offset < (1 << RUN_OFF_BITS)):
        raise IsaError(f"gather run length {length} / offset {offset} out of range")
    return (int(zero) << (RUN_LEN_BITS + RUN_OFF_BITS)) | (int(length) << RUN_OFF_BITS) | int(offset)


def run_fields(word: int) -> tuple:
    return ((word >> (RUN_LEN_BITS + RUN_OFF_BITS)) & 1, (word >> RUN_OFF_BITS) & MAX_RUN,
            word & ((1 << RUN_OFF_BITS) - 1))


def apply_gather(values: list, table: list) -> list:
    """What GATHER leaves in the scratch FIFO (``values``: its input; ``table``: run words)."""
    out = []
    for w in table:
        zero, length, off = run_fields(w)
        out.extend([0] * length if zero else values[off:off + length])
    return out


def gather_cycles(table: list) -> int:
    """Cycles a GATHER holds the sequencer: one per output element, plus two."""
    return sum(run_fields(w)[1] for w in table) + 2


def bias_cycles(n: int) -> int:
    """Cycles a BIAS holds the sequencer: one per element, plus two."""
    return int(n) + 2


# ---- binary encoding ---------------------------------------------------------------------------

_INSTR_TYPE = None


def instr_type():
    """The instruction bitstruct (PyMTL3), the same for every configuration."""
    global _INSTR_TYPE
    if _INSTR_TYPE is None:
        from pymtl3 import mk_bits, mk_bitstruct

        from pymtl_fp.engine import msgs

        fields = {name: mk_bits(w) for name, w in HEADER_FIELDS}
        fields["cmd"] = msgs.cmd_type()
        _INSTR_TYPE = mk_bitstruct("RouterInstr", fields)
    return _INSTR_TYPE


def encode_cmd(fields: dict) -> int:
    """Engine command fields -> the command's bits as an int (first field most significant)."""
    v = 0
    for name, w in CMD_FIELDS:
        x = int(fields.get(name, 0))
        if not 0 <= x < (1 << w):
            raise IsaError(f"command field {name}={x} does not fit in {w} bits")
        v = (v << w) | x
    return v


def decode_cmd(value: int) -> dict:
    out = {}
    for name, w in reversed(CMD_FIELDS):
        out[name] = value & ((1 << w) - 1)
        value >>= w
    return dict(reversed(list(out.items())))


def encode(ins: Instr) -> int:
    """One instruction -> an :data:`INSTR_BITS`-bit int."""
    v = 0
    for name, w in HEADER_FIELDS:
        x = int(getattr(ins, name))
        if not 0 <= x < (1 << w):
            raise IsaError(f"instruction field {name}={x} does not fit in {w} bits ({ins.describe()})")
        v = (v << w) | x
    # an engine command carries its product fields (filled in if the Instr was built without them)
    cmd = _with_products(ins.cmd) if ins.kind == ENG else ins.cmd
    return (v << CMD_BITS) | encode_cmd(cmd)


def decode(value: int) -> Instr:
    cmd = decode_cmd(value & ((1 << CMD_BITS) - 1))
    value >>= CMD_BITS
    head = {}
    for name, w in reversed(HEADER_FIELDS):
        head[name] = value & ((1 << w) - 1)
        value >>= w
    cmd = {k: v for k, v in cmd.items() if v}
    return Instr(cmd=cmd, **head)


# ---- documentation -----------------------------------------------------------------------------

def field_table() -> list:
    """``[(field, msb, lsb)]`` of the instruction word (for documentation and C headers)."""
    out, pos = [], INSTR_BITS
    for name, w in HEADER_FIELDS:
        out.append((name, pos - 1, pos - w))
        pos -= w
    for name, w in CMD_FIELDS:
        out.append((f"cmd.{name}", pos - 1, pos - w))
        pos -= w
    return out
