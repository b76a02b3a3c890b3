"""Turn one operation with its tensors into an engine program (commands + data-in stream) and
turn the data-out stream back into result tensors.  Used by the test harness, the CLI and any
host model; it assumes a validated case (:func:`pymtl_fp.tb.engine_harness.validate_case`).

Placement: every operand starts at word 0 of its buffer (:data:`msgs.OP_BUFFERS`), except the
``pool_fwd`` argmax, which goes to the X buffer right after ``x``.  ``update`` writes the new
weights over the old ones in W.

A :class:`Program` holds *elements* (``din``, and the results :meth:`Program.unpack` takes);
:func:`din_beats` and :func:`dout_elements` turn them into the ``din``/``dout`` beats of an engine
with ``E = stream_lanes`` elements per beat and back (per LOAD / STORE command: beats never span
two commands), for every harness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pymtl_fp import timing
from pymtl_fp.engine import encoding, msgs
from pymtl_fp.engine.msgs import (
    BUF_B,
    BUF_D,
    BUF_G,
    BUF_O,
    BUF_W,
    BUF_X,
    OPS,
    make_cmd,
    pack_act,
    pack_act_bp,
    pack_bias,
    pack_weight,
    tiles,
    unpack_act,
    unpack_act_bp,
    unpack_bias,
    unpack_weight,
)


@dataclass
class Store:
    name: str
    buf: int
    addr: int
    words: int
    lanes: int
    unpack: object  # words (words, lanes) -> tensor


@dataclass
class Program:
    op: str
    cmds: list = field(default_factory=list)  #: command messages, in order
    din: list = field(default_factory=list)  #: signed elements for the data-in stream
    stores: list = field(default_factory=list)  #: what the data-out stream holds, in order
    compute_index: int = 0  #: position of the compute command in ``cmds``

    def out_count(self) -> int:
        return sum(s.words * s.lanes for s in self.stores)

    def unpack(self, elements) -> dict:
        out, pos = {}, 0
        for st in self.stores:
            n = st.words * st.lanes
            words = np.asarray(elements[pos:pos + n], dtype=np.int64).reshape(st.words, st.lanes)
            out[st.name] = st.unpack(words)
            pos += n
        return out


# ---- beats: E elements per din/dout handshake (layout: pymtl_fp.engine.encoding) ------------

def stream_counts(prog: Program, op: int) -> list:
    """The ``count`` (elements) of every LOAD (``op = msgs.OP_LOAD``) or STORE of ``prog``, in order."""
    out = []
    for m in prog.cmds:
        if int(m.op) == op:
            out.append(int(m.count))
    return out


def din_beats(prog: Program, cfg) -> list:
    """The ``din`` beats of ``prog`` for an engine of ``cfg`` (unsigned ints of
    ``stream_lanes * stream_bits`` bits): each LOAD's elements packed ``E`` per beat."""
    E, sb = cfg.stream_lanes, cfg.stream_bits
    if E == 1:
        return [int(v) & ((1 << sb) - 1) for v in prog.din]
    return encoding.stream_beats(stream_counts(prog, msgs.OP_LOAD), prog.din, E, sb)


def dout_beat_count(prog: Program, cfg) -> int:
    """How many ``dout`` beats ``prog``'s STOREs send (``ceil(count / E)`` each)."""
    return sum(timing.stream_beats(n, cfg.stream_lanes) for n in stream_counts(prog, msgs.OP_STORE))


def dout_elements(prog: Program, cfg, beats, *, strict: bool = True) -> list:
    """The signed elements of ``prog``'s STOREs from the ``dout`` beats (surplus lanes dropped;
    with ``strict``, ``ValueError`` if one is not zero)."""
    E, sb = cfg.stream_lanes, cfg.stream_bits
    if E == 1:
        return [msgs.from_word(w, sb) for w in beats]
    return encoding.stream_elements(stream_counts(prog, msgs.OP_STORE), list(beats), E, sb, strict=strict)


def _load(prog: Program, buf: int, addr: int, words: np.ndarray) -> None:
    prog.cmds.append(make_cmd(op=msgs.OP_LOAD, target=buf, addr=addr, count=words.size))
    prog.din.extend(int(v) for v in words.reshape(-1))


def _store(prog: Program, name, buf, addr, words, lanes, unpack) -> None:
    prog.cmds.append(make_cmd(op=msgs.OP_STORE, target=buf, addr=addr, count=words * lanes))
    prog.stores.append(Store(name, buf, addr, words, lanes, unpack))


def conv_dims(x_shape, w_shape, stride, pad):
    n, c, h, w = x_shape
    k, _, r, s = w_shape
    ho = (h + 2 * pad - r) // stride + 1
    wo = (w + 2 * pad - s) // stride + 1
    return n, c, h, w, k, r, s, ho, wo


def conv_geometry(P: int, op: str, case: dict) -> dict:
    """The geometry fields of a conv case's command, from its arrays' shapes (or anything with a
    ``shape``) and scalars: a whole map, or a row band when the case has ``pt`` / ``ho`` (fwd) /
    ``hi`` (:mod:`pymtl_fp.golden.band`; bwd_data and bwd_weight take ``ho`` from ``dy`` when the
    case has it)."""
    w_shape = case["w"].shape if op != "bwd_weight" else tuple(case["w_shape"])
    stride, pad = int(case["stride"]), int(case["pad"])
    n, c, h, w, k, r, s, ho, wo = conv_dims(case["x"].shape, w_shape, stride, pad)
    ho = int(case.get("ho", ho)) if op == "fwd" or case.get("dy") is None else int(case["dy"].shape[2])
    geo = dict(n=n, c=c, k=k, ct=tiles(c, P), kt=tiles(k, P), h=h, w=w, ho=ho, wo=wo, r=r, s=s,
               lgst=stride.bit_length() - 1, pad=pad)
    geo.update((key, int(case[key])) for key in ("pt", "hi") if key in case)
    return encoding.whole_map(op, geo)


def build(cfg, op: str, case: dict) -> Program:
    """The program of one operation; ``case`` holds validated NumPy arrays and Python scalars."""
    P = cfg.P
    prog = Program(op)
    common = dict(stoch=int(case.get("mode", "nearest") == "stochastic"), seed=case.get("seed", 0),
                  tid=case.get("tensor_id", 0))
    if op in ("fwd", "bwd_data", "bwd_weight"):
        x_shape = case["x"].shape
        w_shape = case["w"].shape if op != "bwd_weight" else tuple(case["w_shape"])
        geo = dict(conv_geometry(P, op, case), shift=case["shift"])
        n, c, k, h, w, ho, wo, r, s = (geo[f] for f in ("n", "c", "k", "h", "w", "ho", "wo", "r", "s"))
        if op == "fwd" and case.get("bp"):  # batch-parallel: x and y batch-innermost
            nt = tiles(n, P)
            _load(prog, BUF_X, 0, pack_act_bp(case["x"], P))
            _load(prog, BUF_W, 0, pack_weight(case["w"], P))
            _load(prog, BUF_B, 0, pack_bias(case["b"], P))
            prog.compute_index = len(prog.cmds)
            prog.cmds.append(make_cmd(op=OPS[op], relu=int(case["relu"]), bp=1, nt=nt, **geo, **common))
            shape = (n, k, ho, wo)
            _store(prog, "y", BUF_O, 0, nt * k * ho * wo, P, lambda a, sh=shape: unpack_act_bp(a, sh, P))
        elif op == "fwd":
            _load(prog, BUF_X, 0, pack_act(case["x"], P))
            _load(prog, BUF_W, 0, pack_weight(case["w"], P))
            _load(prog, BUF_B, 0, pack_bias(case["b"], P))
            prog.compute_index = len(prog.cmds)
            prog.cmds.append(make_cmd(op=OPS[op], relu=int(case["relu"]), **geo, **common))
            shape = (n, k, ho, wo)
            _store(prog, "y", BUF_O, 0, n * tiles(k, P) * ho * wo, P, lambda a, sh=shape: unpack_act(a, sh, P))
        elif op == "bwd_data":
            _load(prog, BUF_D, 0, pack_act(case["dy"], P))
            _load(prog, BUF_W, 0, pack_weight(case["w"], P))
            _load(prog, BUF_X, 0, pack_act(case["x"], P))
            prog.compute_index = len(prog.cmds)
            prog.cmds.append(make_cmd(op=OPS[op], relu=int(case["relu"]), **geo, **common))
            _store(prog, "dx", BUF_O, 0, n * tiles(c, P) * h * w, P,
                   lambda a, sh=x_shape: unpack_act(a, sh, P))
        else:
            _load(prog, BUF_X, 0, pack_act(case["x"], P))
            _load(prog, BUF_D, 0, pack_act(case["dy"], P))
            prog.compute_index = len(prog.cmds)
            btid = case.get("bias_tensor_id", common["tid"] + 1)
            nw = tiles(k, P) * tiles(c, P) * r * s
            if case.get("raw"):  # accumulator-wide dw rows at B word 0, db after them
                acc = int(case.get("acc", 0))
                if acc:  # the sums already there (LOADed before the command)
                    _load(prog, BUF_B, 0, np.concatenate([pack_weight(case["acc_dw"], P).reshape(-1),
                                                          pack_bias(case["acc_db"], P).reshape(-1)]))
                    prog.compute_index = len(prog.cmds)
                prog.cmds.append(make_cmd(op=OPS[op], bshift=case["bias_shift"], btid=btid, raw=1, acc=acc,
                                          d1=nw * P, **geo, **common))
                _store(prog, "dw", BUF_B, 0, nw * P, P,
                       lambda a, sh=w_shape: unpack_weight(np.asarray(a).reshape(-1, P * P), sh, P))
                _store(prog, "db", BUF_B, nw * P, tiles(k, P), P, lambda a, kk=k: unpack_bias(a, kk, P))
                return prog
            prog.cmds.append(make_cmd(op=OPS[op], bshift=case["bias_shift"], btid=btid, **geo, **common))
            _store(prog, "dw", BUF_G, 0, nw, P * P, lambda a, sh=w_shape: unpack_weight(a, sh, P))
            _store(prog, "db", BUF_B, 0, tiles(k, P), P, lambda a, kk=k: unpack_bias(a, kk, P))
    elif op in timing.POOL_OPS:
        pk = case["k"]
        src = case["x"] if op == "pool_fwd" else case["dy"]
        if op == "pool_fwd":
            n, c, h, w = src.shape
            ho, wo = h // pk, w // pk
        else:
            n, c, ho, wo = src.shape
            h, w = ho * pk, wo * pk
        ct = tiles(c, P)
        geo = dict(n=n, c=c, ct=ct, h=h, w=w, ho=ho, wo=wo, pk=pk)
        out_words = n * ct * ho * wo
        if op == "pool_fwd":
            xw = pack_act(src, P)
            _load(prog, BUF_X, 0, xw)
            prog.compute_index = len(prog.cmds)
            prog.cmds.append(make_cmd(op=OPS[op], d1=len(xw), **geo, **common))
            shape = (n, c, ho, wo)
            _store(prog, "y", BUF_O, 0, out_words, P, lambda a, sh=shape: unpack_act(a, sh, P))
            _store(prog, "argmax", BUF_X, len(xw), out_words, P, lambda a, sh=shape: unpack_act(a, sh, P))
        else:
            _load(prog, BUF_D, 0, pack_act(src, P))
            _load(prog, BUF_X, 0, pack_act(case["argmax"], P))
            prog.compute_index = len(prog.cmds)
            prog.cmds.append(make_cmd(op=OPS[op], **geo, **common))
            shape = (n, c, h, w)
            _store(prog, "dx", BUF_O, 0, n * ct * h * w, P, lambda a, sh=shape: unpack_act(a, sh, P))
    elif op == "update":
        w_shape = case["w"].shape
        k, c, r, s = w_shape
        geo = dict(k=k, c=c, kt=tiles(k, P), ct=tiles(c, P), r=r, s=s, shift=case["lr_shift"])
        ww = pack_weight(case["w"], P)
        _load(prog, BUF_W, 0, ww)
        _load(prog, BUF_G, 0, pack_weight(case["dw"], P))
        prog.compute_index = len(prog.cmds)
        prog.cmds.append(make_cmd(op=OPS[op], **geo, **common))
        _store(prog, "w", BUF_W, 0, len(ww), P * P, lambda a, sh=w_shape: unpack_weight(a, sh, P))
    else:
        raise ValueError(f"unknown operation {op!r}")
    return prog


def useful_macs(op: str, case: dict) -> int:
    """Multiply-accumulates the operation needs (no padding taps, no padded channels);
    the closed form is :func:`pymtl_fp.timing.useful_macs`."""
    if op not in ("fwd", "bwd_data", "bwd_weight"):
        return 0
    return timing.useful_macs(op, conv_geometry(1, op, case))


def compute_cycles(cfg, op: str, case: dict) -> int:
    """Cycles :class:`EngineRTL` spends on a compute command, from its acceptance until the engine
    is idle again, for a case given by its arrays (or anything with their ``shape``); with a
    command register (``cfg.pipelined_cmd``), from its handshake when offered to an idle engine.

    The closed forms live in :mod:`pymtl_fp.timing` (the one source of truth, also used by the
    CL model and the design-space tools); ``tests/test_engine_timing.py`` and
    ``tests/test_timing.py`` check them against the RTL."""
    P = cfg.P
    if op in ("fwd", "bwd_data", "bwd_weight"):
        f = dict(conv_geometry(P, op, case), raw=int(case.get("raw", 0)), acc=int(case.get("acc", 0)),
                 bp=int(case.get("bp", 0)))
    elif op in timing.POOL_OPS:
        pk = case["k"]
        src = case["x"] if op == "pool_fwd" else case["dy"]
        n, c = src.shape[:2]
        ho, wo = (src.shape[2] // pk, src.shape[3] // pk) if op == "pool_fwd" else src.shape[2:]
        f = dict(n=n, ct=timing.cdiv(c, P), ho=ho, wo=wo, pk=pk)
    else:
        k, c, r, s = case["w"].shape
        f = dict(kt=timing.cdiv(k, P), ct=timing.cdiv(c, P), r=r, s=s)
    return timing.compute_cycles(P, op, f, cfg.drain_rows, cfg.wb_latency, cfg.cmd_latency)


# ---- occupancy of commands and programs (closed forms of pymtl_fp.timing, per command) --------

def command_cycles(P: int, f: dict, E: int = 1, drain_rows: int = 1, wb_latency: int = 0) -> int:
    """Occupancy of any command (fields ``f`` as from :func:`pymtl_fp.engine.msgs.cmd_fields`) on
    an engine with ``E`` elements per stream beat whose ``bwd_weight`` drain writes ``drain_rows``
    rows per cycle and whose writes follow stage B by ``wb_latency`` cycles."""
    op = int(f["op"])
    if op == msgs.OP_LOAD:
        return timing.load_cycles(f["count"], E)
    if op == msgs.OP_STORE:
        return timing.store_cycles(f["count"], msgs.buffer_lanes(int(f["target"]), P), E)
    return timing.compute_cycles(P, msgs.OP_NAMES[op], f, drain_rows, wb_latency)


def program_cycles(P: int, prog: Program, E: int = 1, drain_rows: int = 1, wb_latency: int = 0,
                   cmd_latency: int = 0) -> dict:
    """Cycles of an engine program (``E`` elements per stream beat, ``drain_rows`` dw rows per
    drain cycle) when the command stream offers a command every cycle and no stream is stalled
    (with a command register, ``cmd_latency`` cycles: each command offered once the engine is
    idle, as :func:`pymtl_fp.tb.engine_harness.drive` does, so each takes that many more):

    * ``total_cycles``: the whole program (the sum of every command's occupancy);
    * ``compute_cycles``: the compute command's occupancy;
    * ``cycles``: compute command accepted -> last result element sent (compute + stores).
    """
    occ = [command_cycles(P, msgs.cmd_fields(m), E, drain_rows, wb_latency) + cmd_latency for m in prog.cmds]
    ci = prog.compute_index
    return dict(total_cycles=sum(occ), compute_cycles=occ[ci], cycles=sum(occ[ci:]))


def op_fields(cfg, op: str, case: dict) -> dict:
    """Command fields of the compute command of a validated case."""
    prog = build(cfg, op, case)
    return msgs.cmd_fields(prog.cmds[prog.compute_index])


def op_timing(cfg, op: str, case: dict) -> dict:
    """``total_cycles``, ``compute_cycles``, ``cycles`` and ``macs`` of a validated case run
    without stalls (what :func:`pymtl_fp.tb.engine_harness.run_op` measures on the RTL)."""
    prog = build(cfg, op, case)
    t = program_cycles(cfg.P, prog, cfg.stream_lanes, cfg.drain_rows, cfg.wb_latency, cfg.cmd_latency)
    t["macs"] = timing.useful_macs(op, msgs.cmd_fields(prog.cmds[prog.compute_index]))
    return t
