"""Engine, functional level: the same ports as :class:`EngineRTL`, results from the golden model.

Commands run one at a time.  A LOAD takes its elements from ``din`` (``E`` = ``stream_lanes`` per
handshake), a STORE sends its elements on ``dout`` (``E`` per beat, surplus lanes of the last beat
zero; layout: :mod:`pymtl_fp.engine.msgs`); a compute command reads its operands from the (Python) buffers
in the layout of :mod:`pymtl_fp.engine.msgs` (maps with the command's strides: a map may be kept in
planes, :data:`pymtl_fp.engine.encoding.PLANES`), calls :mod:`pymtl_fp.golden` (the conv operations
through :mod:`pymtl_fp.golden.band`: a command's rows are a band, padded by ``pt`` above, of a
map of ``hi`` rows, which for a whole map gives the whole-map functions' bits) and writes the
results back, all in the cycle it is accepted.  No timing is modelled (``busy`` is high only
while a LOAD/STORE is moving data).  The ``ovl`` field is accepted and ignored: FL executes
commands one at a time, in order, which is the semantics the timed levels' overlap preserves
(their hazard check lets a command run early only when that cannot change any result; see
:mod:`pymtl_fp.engine.msgs`), so FL is the reference for overlapped programs too.
"""

from __future__ import annotations

import numpy as np
from pymtl3 import Component, OutPort, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp import golden
from pymtl_fp.direct import QUIET_FOREVER
from pymtl_fp.engine import msgs
from pymtl_fp.engine.encoding import pack_beat, unpack_beat
from pymtl_fp.engine.msgs import (
    cmd_fields,
    cmd_type,
    data_type,
    from_word,
    map_words,
    pack_act,
    pack_act_bp,
    pack_bias,
    pack_weight,
    tiles,
    to_word,
    unpack_act,
    unpack_act_bp,
    unpack_bias,
    unpack_weight,
)
from pymtl_fp.golden import band
from pymtl_fp.numerics import wrap

MODES = ("nearest", "stochastic")


class EngineFL(Component):
    def _ports_and_buffers(s, cfg):
        """The engine's ports (shared by every level) and its buffers as NumPy arrays."""
        s.cfg = cfg
        s.params = cfg.params()
        P = cfg.P
        s.cmd = RecvIfcRTL(cmd_type())
        s.din = RecvIfcRTL(data_type(cfg))
        s.dout = SendIfcRTL(data_type(cfg))
        s.busy = OutPort()
        s.DataT = data_type(cfg)
        s.E, s.SB = cfg.stream_lanes, cfg.stream_bits
        s.lanes = {b: msgs.buffer_lanes(b, P) for b in msgs.BUF_NAMES}
        s.bufs = {b: np.zeros((msgs.buffer_depth(b, cfg), s.lanes[b]), dtype=np.int64) for b in s.lanes}

    def construct(s, cfg):
        s._ports_and_buffers(cfg)
        s.cur = None  # the LOAD/STORE in progress: dict(fields, e=elements done)
        s.ops_done = 0

        @update_ff
        def up_fl():
            if s.reset:
                s.cur = None
            else:
                s._edge(bool(s.cmd.val & s.cmd.rdy), s.cmd.msg, bool(s.din.val & s.din.rdy), s.din.msg,
                        bool(s.dout.val & s.dout.rdy))
            cmd_rdy, din_rdy, busy, dval, dword = s._drive()
            if s.reset:
                cmd_rdy = 0
            s.cmd.rdy <<= cmd_rdy
            s.din.rdy <<= din_rdy
            s.dout.val <<= dval
            if dval:
                s.dout.msg <<= s.DataT(dword)
            s.busy <<= busy

    # ---- one clock edge (shared by the PyMTL3 block and the direct scheduler) ---------------
    def _edge(s, cmd_fire, cmd_msg, din_fire, din_msg, dout_fire):
        if cmd_fire:
            f = cmd_fields(cmd_msg)
            if f["op"] in (msgs.OP_LOAD, msgs.OP_STORE):
                s.cur = dict(f, e=0)
                if f["count"] == 0:
                    s.cur = None
            else:
                s._compute(f)
                s.ops_done += 1
        elif s.cur is not None and s.cur["op"] == msgs.OP_LOAD and din_fire:
            s._put_beat(s.cur, din_msg)
        elif s.cur is not None and s.cur["op"] == msgs.OP_STORE and dout_fire:
            s.cur["e"] += s.E
            if s.cur["e"] >= s.cur["count"]:
                s.cur = None

    def _drive(s) -> tuple:
        """The registered outputs after the edge: (cmd.rdy, din.rdy, busy, dout.val, dout word)."""
        cur = s.cur
        if cur is None:
            return 1, 0, 0, 0, 0
        if cur["op"] == msgs.OP_STORE:
            return 0, 0, 1, 1, s._get_beat(cur)
        return 0, 1 if cur["op"] == msgs.OP_LOAD else 0, 1, 0, 0

    # ---- the direct protocol (pymtl_fp.direct) -------------------------------------------
    DIRECT_PORTS = (("cmd", "recv"), ("din", "recv"), ("dout", "send"), ("busy", "out"))

    def direct_bind(s, ch):
        s._dc = (ch["cmd"], ch["din"], ch["dout"], ch["busy"])

    def direct_reset(s):
        s.cur = None
        cmd, din, dout, busy = s._dc
        cmd.rdy = din.rdy = dout.val = busy.value = 0

    def direct_edge(s):
        cmd, din, dout, _ = s._dc
        s._edge(cmd.val and cmd.rdy, cmd.msg, din.val and din.rdy, din.msg, dout.val and dout.rdy)

    def direct_drive(s):
        cmd, din, dout, busy = s._dc
        cmd.rdy, din.rdy, busy.value, dout.val, w = s._drive()
        if dout.val:
            dout.msg = w

    def direct_quiet(s):
        cmd = s._dc[0]  # (idle: cmd.rdy high, as every edge drives it; low only after reset)
        return 0 if s.cur is not None or not cmd.rdy or cmd.val else QUIET_FOREVER

    def direct_skip(s, n):
        pass

    # ---- buffers -------------------------------------------------------------------------
    def _loc(s, cur):
        L = s.lanes[cur["target"]]
        return cur["addr"] + cur["e"] // L, cur["e"] % L

    def _put(s, cur, value):
        a, lane = s._loc(cur)
        s.bufs[cur["target"]][a, lane] = value
        cur["e"] += 1
        if cur["e"] == cur["count"]:
            s.cur = None

    def _get(s, cur):
        a, lane = s._loc(cur)
        return int(s.bufs[cur["target"]][a, lane])

    def _put_beat(s, cur, word):
        """One ``din`` beat: its first ``min(E, elements left)`` lanes, in order."""
        if s.E == 1:
            s._put(cur, from_word(int(word), s.SB))
            return
        for v in unpack_beat(int(word), s.E, s.SB)[:cur["count"] - cur["e"]]:
            s._put(cur, v)

    def _get_beat(s, cur):
        """The next ``dout`` beat: up to ``E`` elements of one word, surplus lanes zero."""
        if s.E == 1:
            return to_word(s._get(cur), s.SB)
        a, lane = s._loc(cur)
        n = min(s.E, cur["count"] - cur["e"])
        return pack_beat(s.bufs[cur["target"]][a, lane:lane + n], s.SB)

    def _rd(s, buf, addr, nwords):
        return s.bufs[buf][addr:addr + nwords]

    def _wr(s, buf, addr, words):
        s.bufs[buf][addr:addr + len(words)] = words

    def _rd_map(s, buf, addr, f, side, shape, bp=False):
        """An activation map of ``shape`` (N, C, H, W) read with the command's strides (a map in
        planes: :data:`pymtl_fp.engine.encoding.PLANES`): ``side`` "x" (input side: ``hw``,
        ``cthw``), "y" (conv output side: ``howo``, ``kthowo``) or "p" (pooled: ``howo``, ``cthowo``).
        The words from its first to past its last are read (its access range); ``bp``: kept
        batch-innermost (:func:`pymtl_fp.engine.msgs.pack_act_bp`)."""
        at, span = s._map_at(f, side, shape, bp)
        return (unpack_act_bp if bp else unpack_act)(s._rd(buf, addr, span)[at], shape, s.cfg.P)

    def _wr_map(s, buf, addr, f, side, a):
        """Write activation map ``a`` with the command's strides (:meth:`_rd_map`); the words
        between its planes keep their values."""
        at, span = s._map_at(f, side, a.shape)
        region = np.array(s.bufs[buf][addr:addr + span])  # (not read by the command: no _rd)
        region[at] = pack_act(a, s.cfg.P)
        s._wr(buf, addr, region)

    def _map_at(s, f, side, shape, bp=False):
        """The word offsets of a map of ``shape`` with the command's strides of ``side``, in the
        dense layout's order, and its span (past its last word); ``bp``: a batch-innermost map
        (image tiles ``cthw`` / ``kthowo`` words apart, channels ``hw`` / ``howo``)."""
        n, c, h, w = shape
        P = s.cfg.P
        at = map_words(*((tiles(n, P), c) if bp else (n, tiles(c, P))), h, w, *s._strides(f, side))
        return at, (int(at[-1]) + 1 if at.size else 0)

    def _wr_map_bp(s, buf, addr, f, side, a):
        """Write the ``N`` images of ``a`` batch-innermost; the lanes of images past ``N`` keep
        their values (the RTL does not write them)."""
        P = s.cfg.P
        n, c, h, w = a.shape
        at, span = s._map_at(f, side, a.shape, bp=True)
        region = np.array(s.bufs[buf][addr:addr + span])
        full = unpack_act_bp(region[at], (tiles(n, P) * P, c, h, w), P)
        full[:n] = a
        region[at] = pack_act_bp(full, P)
        s._wr(buf, addr, region)

    @staticmethod
    def _strides(f, side):
        return {"x": (f["hw"], f["cthw"]), "y": (f["howo"], f["kthowo"]), "p": (f["howo"], f["cthowo"])}[side]

    # ---- compute -------------------------------------------------------------------------
    def _compute(s, f):
        cfg, P = s.cfg, s.cfg.P
        op = msgs.OP_NAMES[f["op"]]
        mode = MODES[f["stoch"]]
        rnd = dict(mode=mode, seed=f["seed"], tensor_id=f["tid"])
        n, c, k, ct, kt = f["n"], f["c"], f["k"], f["ct"], f["kt"]
        h, w, ho, wo, r, sw = f["h"], f["w"], f["ho"], f["wo"], f["r"], f["s"]
        stride, pad = 1 << f["lgst"], f["pad"]
        X, D, W, G, B = (msgs.BUF_X, msgs.BUF_D, msgs.BUF_W, msgs.BUF_G, msgs.BUF_B)
        if f["dsel"] or f["amsel"] or f["bp"]:
            msgs.check_cmd(f, cfg)
        OB = msgs.DSEL_BUF[f["dsel"]]  # where d0 goes: O, or X / D (field dsel)
        AM = msgs.AMSEL_BUF[f["amsel"]]  # the pool argmax: X, or O (field amsel)
        if op == "fwd":  # bp: batch-parallel, x and y batch-innermost (msgs.pack_act_bp)
            x = s._rd_map(X, f["a0"], f, "x", (n, c, h, w), bool(f["bp"]))
            wt = unpack_weight(s._rd(W, f["a1"], kt * ct * r * sw), (k, c, r, sw), P)
            b = unpack_bias(s._rd(B, f["a2"], kt), k, P)
            y = band.conv_fwd_band(x, wt, b, stride=stride, pad=pad, pt=f["pt"], ho=ho, hi=f["hi"],
                                   shift=f["shift"], relu=bool(f["relu"]), out_bits=cfg.act_bits, **rnd)
            (s._wr_map_bp if f["bp"] else s._wr_map)(OB, f["d0"], f, "y", y)
        elif op == "bwd_data":
            dy = s._rd_map(D, f["a0"], f, "y", (n, k, ho, wo))
            wt = unpack_weight(s._rd(W, f["a1"], kt * ct * r * sw), (k, c, r, sw), P)
            x = s._rd_map(X, f["a2"], f, "x", (n, c, h, w))
            dx = band.conv_bwd_data_band(dy, wt, x, stride=stride, pad=pad, pt=f["pt"], hi=f["hi"],
                                         shift=f["shift"], relu=bool(f["relu"]), out_bits=cfg.grad_bits, **rnd)
            s._wr_map(OB, f["d0"], f, "x", dx)
        elif op == "bwd_weight":
            x = s._rd_map(X, f["a0"], f, "x", (n, c, h, w))
            dy = s._rd_map(D, f["a1"], f, "y", (n, k, ho, wo))
            if f.get("raw", 0):  # un-rounded, accumulator-wide, in B (a row of the G layout per word)
                dw, db = band.band_bwd_weight_acc(x, dy, (k, c, r, sw), stride=stride, pad=pad, pt=f["pt"])
                dw, db = pack_weight(dw, P).reshape(-1, P), pack_bias(db, P)
                if f["acc"]:  # added to the sums already in B
                    dw, db = dw + s._rd(B, f["d0"], len(dw)), db + s._rd(B, f["d1"], len(db))
                s._wr(B, f["d0"], wrap(dw, cfg.acc_bits))
                s._wr(B, f["d1"], wrap(db, cfg.acc_bits))
                return
            dw, db = band.conv_bwd_weight_band(x, dy, (k, c, r, sw), stride=stride, pad=pad, pt=f["pt"],
                                               shift=f["shift"], bias_shift=f["bshift"],
                                               out_bits=cfg.grad_bits, bias_tensor_id=f["btid"], **rnd)
            s._wr(G, f["d0"], pack_weight(dw, P))
            s._wr(B, f["d1"], pack_bias(db, P))
        elif op == "pool_fwd":
            x = s._rd_map(X, f["a0"], f, "x", (n, c, h, w))
            y, am = golden.pool_fwd(x, k=f["pk"])
            s._wr_map(OB, f["d0"], f, "p", y)
            s._wr_map(AM, f["d1"], f, "p", am)
        elif op == "pool_bwd":
            dy = s._rd_map(D, f["a0"], f, "p", (n, c, ho, wo))
            am = s._rd_map(AM, f["a1"], f, "p", (n, c, ho, wo))
            dx = golden.pool_bwd(dy, am, k=f["pk"])
            s._wr_map(OB, f["d0"], f, "x", dx)
        elif op == "update":
            nw = kt * ct * r * sw
            wt = unpack_weight(s._rd(W, f["a0"], nw), (k, c, r, sw), P)
            dw = unpack_weight(s._rd(G, f["a1"], nw), (k, c, r, sw), P)
            wn = golden.sgd_update(wt, dw, lr_shift=f["shift"], bits=cfg.weight_bits, **rnd)
            s._wr(W, f["d0"], pack_weight(wn, P))
        else:
            raise ValueError(f"EngineFL: unknown op code {f['op']}")

    def line_trace(s):
        cur = "idle" if s.cur is None else f"{msgs.OP_NAMES[s.cur['op']]} {s.cur['e']}/{s.cur['count']}"
        return f"{s.cmd}|{s.din}|{s.dout} {cur}"
