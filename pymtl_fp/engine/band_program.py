"""Engine programs of one row band *in place*: the band's command reads its window, and writes its
result rows, inside whole maps of several channel tiles and images kept in planes
(:data:`pymtl_fp.engine.encoding.PLANES`), as a node running FPDeep's fine-grained pipeline keeps
them.  Used by the tests and benchmarks of every engine level (the host side; no level of its own).

:func:`build` takes a whole-map case and the band's result rows ``[lo, hi)`` (fwd: ``y``'s,
bwd_data: ``dx``'s, bwd_weight: ``dy``'s, pool_fwd: the pooled rows, pool_bwd: the pooled ``dy``'s)
and returns a :class:`~pymtl_fp.engine.program.Program` that LOADs the whole operand maps, fills the
whole result maps with a known pattern, runs the one band command with the whole maps' strides, and
STOREs the whole result maps back: the band's rows must be the whole-map result's rows and every
other word the pattern (:func:`expected`).  A conv band's rounding fields (``pt``, ``hi``, the seed's
row offset) come from :func:`pymtl_fp.tb.engine_strategies.band_case`'s rule, :mod:`pymtl_fp.golden.band`.
"""

from __future__ import annotations

import numpy as np

from pymtl_fp.engine import encoding, msgs
from pymtl_fp.engine.msgs import BUF_B, BUF_D, BUF_O, BUF_W, BUF_X, OPS, make_cmd, pack_act, tiles, unpack_act
from pymtl_fp.engine.program import Program, _load, _store, conv_geometry
from pymtl_fp.engine.program import build as build_whole
from pymtl_fp.golden import band
from pymtl_fp.golden.geometry import conv_out_size
from pymtl_fp.numerics import slice_seed

#: the first word of each whole map (not 0, so a band's address is the map's plus its offset)
BASE = 3
#: the whole result maps' known pattern: a value no result takes at its row (see :func:`pattern`)
PATTERN_SEED = 12345


def pattern(shape, bits: int) -> np.ndarray:
    """The known values a whole result map holds before the band writes its rows."""
    lo = -(1 << (bits - 1))
    return np.random.default_rng(PATTERN_SEED).integers(lo, -lo, size=shape).astype(np.int64)


def n_words(shape, P):
    n, c, h, w = shape
    return n * tiles(c, P) * h * w


def build(cfg, op: str, case: dict, lo: int, hi: int) -> Program:
    """The in-place program of the band ``[lo, hi)`` of the whole-map ``case`` (validated)."""
    P, prog = cfg.P, Program(op)
    common = dict(stoch=int(case.get("mode", "nearest") == "stochastic"), tid=case.get("tensor_id", 0))
    seed = case.get("seed", 0)
    outs = []  # (name, buf, addr, shape)

    def result(name, buf, addr, shape, bits):
        _load(prog, buf, addr, pack_act(pattern(shape, bits), P))
        outs.append((name, buf, addr, shape))

    if op in encoding.CONV:
        x = np.asarray(case["x"])
        n, c, H, W = x.shape
        w_shape = tuple(case["w"].shape if op != "bwd_weight" else case["w_shape"])
        k, _, R, S = w_shape
        stride, pad = int(case["stride"]), int(case["pad"])
        Ho, Wo = conv_out_size(H, R, stride, pad), conv_out_size(W, S, stride, pad)
        xa, ya = BASE, BASE
        whole = dict(conv_geometry(P, op, case), shift=case["shift"])
        if op == "bwd_data":
            win = band.bwd_data_window(H, Ho, R, stride, pad, lo, hi)
            geo = dict(whole, h=hi - lo, ho=win.i1 - win.i0, pt=win.pt, hi=H, hp=H, hop=Ho)
            a0, a2, d0 = ya + win.i0 * Wo, xa + lo * W, BASE + lo * W
            seed = slice_seed(seed, lo * W)
        else:
            win = band.fwd_window(H, R, stride, pad, lo, hi)
            geo = dict(whole, h=win.i1 - win.i0, ho=hi - lo, pt=win.pt, hp=H, hop=Ho)
            a0 = xa + win.i0 * W
            if op == "fwd":
                geo["hi"], d0 = Ho, BASE + lo * Wo
                seed = slice_seed(seed, lo * Wo)
        if op == "fwd":
            _load(prog, BUF_X, xa, pack_act(x, P))
            _load(prog, BUF_W, 0, msgs.pack_weight(case["w"], P))
            _load(prog, BUF_B, 0, msgs.pack_bias(case["b"], P))
            result("y", BUF_O, BASE, (n, k, Ho, Wo), cfg.act_bits)
            fields = dict(geo, relu=int(case["relu"]), a0=a0, a1=0, a2=0, d0=d0)
        elif op == "bwd_data":
            _load(prog, BUF_D, ya, pack_act(case["dy"], P))
            _load(prog, BUF_W, 0, msgs.pack_weight(case["w"], P))
            _load(prog, BUF_X, xa, pack_act(x, P))
            result("dx", BUF_O, BASE, (n, c, H, W), cfg.grad_bits)
            fields = dict(geo, relu=int(case["relu"]), a0=a0, a1=0, a2=a2, d0=d0)
        else:  # bwd_weight: dw and db as a whole-map command leaves them (program.build's places)
            _load(prog, BUF_X, xa, pack_act(x, P))
            _load(prog, BUF_D, ya, pack_act(case["dy"], P))
            raw = int(case.get("raw", 0))
            nw = tiles(k, P) * tiles(c, P) * R * S
            btid = case.get("bias_tensor_id", common["tid"] + 1)
            fields = dict(geo, bshift=case["bias_shift"], btid=btid, a0=a0, a1=ya + lo * Wo, raw=raw,
                          d0=0, d1=nw * P if raw else 0)
            prog.compute_index = len(prog.cmds)
            prog.cmds.append(make_cmd(op=OPS[op], seed=seed, **fields, **common))
            ref = build_whole(cfg, op, dict(case, raw=raw))
            for st in ref.stores:
                _store(prog, st.name, st.buf, st.addr, st.words, st.lanes, st.unpack)
            return prog
    else:  # pooling: pooled rows [lo, hi) from map rows [lo*pk, hi*pk)
        pk = int(case["k"])
        if op == "pool_fwd":
            x = np.asarray(case["x"])
            n, c, H, W = x.shape
        else:
            n, c, Ho_, Wo_ = np.asarray(case["dy"]).shape
            H, W = Ho_ * pk, Wo_ * pk
        Ho, Wo, ct = H // pk, W // pk, tiles(c, P)
        geo = dict(n=n, c=c, ct=ct, h=(hi - lo) * pk, w=W, ho=hi - lo, wo=Wo, pk=pk, hp=H, hop=Ho)
        am = BASE + n_words((n, c, H, W), P)  # the argmax's whole map, in X after the input's
        if op == "pool_fwd":
            _load(prog, BUF_X, BASE, pack_act(x, P))
            result("y", BUF_O, BASE, (n, c, Ho, Wo), cfg.act_bits)
            result("argmax", BUF_X, am, (n, c, Ho, Wo), 3)
            fields = dict(geo, a0=BASE + lo * pk * W, d0=BASE + lo * Wo, d1=am + lo * Wo)
        else:
            _load(prog, BUF_D, BASE, pack_act(case["dy"], P))
            _load(prog, BUF_X, am, pack_act(case["argmax"], P))
            result("dx", BUF_O, BASE, (n, c, H, W), cfg.grad_bits)
            fields = dict(geo, a0=BASE + lo * Wo, a1=am + lo * Wo, d0=BASE + lo * pk * W)
    prog.compute_index = len(prog.cmds)
    prog.cmds.append(make_cmd(op=OPS[op], seed=seed, **fields, **common))
    for name, buf, addr, shape in outs:
        _store(prog, name, buf, addr, n_words(shape, P), P, lambda a, sh=shape: unpack_act(a, sh, P))
    return prog


def expected(cfg, op: str, case: dict, lo: int, hi: int, whole: dict, band_result: dict) -> dict:
    """What :func:`build`'s program must STORE: the whole result maps' pattern with the band's rows
    replaced by the whole-map result's (``whole``: the golden whole-map results); bwd_weight: the
    golden band's sums or gradients (``band_result``)."""
    if op == "bwd_weight":
        return dict(band_result)
    pk = int(case.get("k", 1)) if op in ("pool_fwd", "pool_bwd") else 1
    out = {}
    for name, val in whole.items():
        bits = 3 if name == "argmax" else cfg.act_bits if name == "y" else cfg.grad_bits
        a = pattern(val.shape, bits)
        r0, r1 = (lo * pk, hi * pk) if op == "pool_bwd" else (lo, hi)
        a[:, :, r0:r1] = val[:, :, r0:r1]
        out[name] = a
    return out
