"""Turn one operation with its tensors into an engine program (commands + data-in stream) and
turn the data-out stream back into result tensors.  Used by the test harness, the CLI and any
host model; it assumes a validated case (:func:`tb.engine_harness.validate_case`).

Placement: every operand starts at word 0 of its buffer (:data:`msgs.OP_BUFFERS`), except the
``pool_fwd`` argmax, which goes to the X buffer right after ``x``.  ``update`` writes the new
weights over the old ones in W.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pymtl_fp.engine import msgs
from pymtl_fp.engine.msgs import (
    BUF_B, BUF_D, BUF_G, BUF_O, BUF_W, BUF_X, OPS, make_cmd, pack_act, pack_bias, pack_weight,
    tiles, unpack_act, unpack_bias, unpack_weight,
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


def build(cfg, op: str, case: dict) -> Program:
    """The program of one operation; ``case`` holds validated NumPy arrays and Python scalars."""
    P = cfg.P
    prog = Program(op)
    common = dict(stoch=int(case.get("mode", "nearest") == "stochastic"), seed=case.get("seed", 0),
                  tid=case.get("tensor_id", 0))
    if op in ("fwd", "bwd_data", "bwd_weight"):
        x_shape = case["x"].shape
        w_shape = case["w"].shape if op != "bwd_weight" else tuple(case["w_shape"])
        stride, pad = case["stride"], case["pad"]
        n, c, h, w, k, r, s, ho, wo = conv_dims(x_shape, w_shape, stride, pad)
        geo = dict(n=n, c=c, k=k, ct=tiles(c, P), kt=tiles(k, P), h=h, w=w, ho=ho, wo=wo, r=r, s=s,
                   lgst=stride.bit_length() - 1, pad=pad, shift=case["shift"])
        if op == "fwd":
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
            prog.cmds.append(make_cmd(op=OPS[op], bshift=case["bias_shift"], btid=btid, **geo, **common))
            nw = tiles(k, P) * tiles(c, P) * r * s
            _store(prog, "dw", BUF_G, 0, nw, P * P, lambda a, sh=w_shape: unpack_weight(a, sh, P))
            _store(prog, "db", BUF_B, 0, tiles(k, P), P, lambda a, kk=k: unpack_bias(a, kk, P))
    elif op in ("pool_fwd", "pool_bwd"):
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
    """Multiply-accumulates the operation needs (no padding taps, no padded channels)."""
    if op not in ("fwd", "bwd_data", "bwd_weight"):
        return 0
    w_shape = case["w"].shape if op != "bwd_weight" else tuple(case["w_shape"])
    n, c, h, w, k, r, s, ho, wo = conv_dims(case["x"].shape, w_shape, case["stride"], case["pad"])
    st, pad = case["stride"], case["pad"]
    # valid (output position, tap) pairs along each axis
    vh = sum(1 for o in range(ho) for i in range(r) if 0 <= o * st + i - pad < h)
    vw = sum(1 for o in range(wo) for j in range(s) if 0 <= o * st + j - pad < w)
    return n * k * c * vh * vw


def compute_cycles(cfg, op: str, case: dict) -> int:
    """Cycles :class:`EngineRTL` spends on a compute command, from its acceptance until the engine
    is idle again (closed form; ``tests/test_engine_timing.py`` checks it against the RTL).

    One loop-nest step per cycle, plus 3 cycles (command register, stage B, return to idle);
    ``bwd_weight`` adds its last tile's drain (``P`` dw rows, plus a db row when the tile
    completes a db sum) and holds a tile's last step while the previous tile's drain is still
    in progress (tiles of fewer than ``P`` or ``P + 1`` steps).
    """
    P = cfg.P
    if op in ("fwd", "bwd_data", "bwd_weight"):
        w_shape = case["w"].shape if op != "bwd_weight" else tuple(case["w_shape"])
        n, c, h, w, k, r, s, ho, wo = conv_dims(case["x"].shape, w_shape, case["stride"], case["pad"])
        ct, kt, st, pad = tiles(c, P), tiles(k, P), case["stride"], case["pad"]
        if op == "fwd":  # taps inside the input only
            def valid(size, out, kern):
                return sum(min(kern, size + pad - o * st) - max(0, pad - o * st) for o in range(out))
            return n * kt * ct * valid(h, ho, r) * valid(w, wo, s) + 3
        if op == "bwd_data":  # taps that hit an output only; at least one step per output
            def taps(size, out, kern):
                total = 0
                for i in range(size):
                    q, r0 = (i + pad) // st, (i + pad) % st
                    lo = max(0, q - out + 1)  # oh = q - m < out
                    hi = min(q, (kern - 1 - r0) // st) if r0 <= kern - 1 else -1  # oh >= 0, r < kern
                    total += max(1, hi - lo + 1)
                return total
            return n * ct * kt * taps(h, ho, r) * taps(w, wo, s) + 3

        def outs(size, out, tap):  # outputs o whose input row o*st + tap - pad is inside the map
            return sum(1 for o in range(out) if 0 <= o * st + tap - pad < size)

        tiles_ = [(n * max(1, outs(h, ho, i)) * max(1, outs(w, wo, j)), cc == 0 and i == r - 1 and j == s - 1)
                  for _ in range(kt) for cc in range(ct) for i in range(r) for j in range(s)]
        drain = [P + 1 if db_end else P for _, db_end in tiles_]  # P dw rows (+ the db row)
        steps = tiles_[0][0] + sum(max(L, drain[i - 1]) for i, (L, _) in enumerate(tiles_) if i)
        return steps + 3 + drain[-1]
    if op in ("pool_fwd", "pool_bwd"):
        pk = case["k"]
        src = case["x"] if op == "pool_fwd" else case["dy"]
        n, c = src.shape[:2]
        ho, wo = (src.shape[2] // pk, src.shape[3] // pk) if op == "pool_fwd" else src.shape[2:]
        return n * tiles(c, P) * ho * wo * pk * pk + 3
    k, c, r, s = case["w"].shape
    return tiles(k, P) * tiles(c, P) * r * s * P + 3
