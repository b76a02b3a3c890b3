"""Several engine operations back to back with overlap: double-buffered programs (host level).

:func:`build` turns a list of ``(op, case)`` into one engine program in which every command
carries ``ovl = 1`` and consecutive operations use alternate halves ("slots") of every buffer
they touch, so the LD unit loads operation ``i + 1``'s operands and the ST unit stores operation
``i - 1``'s results while the EX unit computes operation ``i`` -- the engine's hazard rule
(:mod:`pymtl_fp.engine.msgs`) holds a command back only where it would touch words a running
one uses, so the results are those of running the operations one at a time, in order.  This is
how a host keeps the MAC array busy on a stream of layers or images; the measure of it is
``program_util`` = useful MACs / (``P*P`` x cycles of the whole program), next to ``compute_util``
of the compute commands alone (``pymtl-fp bench engine --json``).

Each operation's program is :func:`pymtl_fp.engine.program.build`'s, relocated: slot ``i % 2`` of
buffer ``b`` starts at ``(i % 2) * span[b]``, ``span`` the most words any of the operations uses
in that buffer.  Where two slots do not fit, slot 1 is placed at the buffer's end,
``[depth - span, depth)``, overlapping slot 0 in the *shared* words ``[depth - span, span)``,
and every LOAD and STORE of that buffer is split at the shared words' edges: a STORE gives up
the shared words first and a LOAD fills the private words first, so the next operation waits
only for the shared words' transfer (a 36-word gradient in a 64-word G: 8 words, not 36).  The
hazard rule serializes the shared words' reuse; results are unchanged (:meth:`Stream.unpack`
puts every STORE's piece back where it belongs).

Commands are accepted in order and each unit takes one command at a time, so the order matters:
the wanted order is ``EX(i), STOREs(i - 1), LOADs(i + 1), EX(i + 1), ...`` (the stores and loads
queue behind the compute command that just started, and the next compute command finds its
operands loaded). :func:`schedule` reaches it by a list schedule that keeps every pair of
commands touching the same words (one of them writing) in program order, so the in-order results
-- what the hazard rule guarantees -- are those of the plain sequential program.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.cases import CaseError


@dataclass
class Stream:
    """One program of several operations: ``prog`` (commands and data in, in issue order),
    ``parts`` (each operation's own :class:`~pymtl_fp.engine.program.Program`) and ``order``
    (for every STORE of ``prog``, in issue order, the operation it belongs to), to unpack the
    data-out stream."""

    prog: program.Program
    parts: list
    order: list  #: per STORE of ``prog``: (operation, element offset in its own program's output, count)

    def unpack(self, elements) -> list:
        """The results of every operation (a dict each, as ``Program.unpack``)."""
        mine: list = [[0] * sum(st.words * st.lanes for st in p.stores) for p in self.parts]
        pos = 0
        for i, offset, count in self.order:
            mine[i][offset:offset + count] = elements[pos:pos + count]
            pos += count
        return [p.unpack(e) for p, e in zip(self.parts, mine)]


def _spans(cfg, prog) -> dict:
    """Buffer id -> words ``[0, end)`` the program touches."""
    span: dict = {}
    for m in prog.cmds:
        for b, _lo, hi, _w in msgs.access_ranges(msgs.cmd_fields(m), cfg):
            span[b] = max(span.get(b, 0), hi)
    return span


def _address_buffers(op_name: str) -> dict:
    """Compute command field -> buffer id, as :func:`program.build` places results (``dsel`` and
    ``amsel`` 0)."""
    return {fld: msgs.BUF_IDS[buf] for fld, (buf, _what) in msgs.OP_BUFFERS[op_name].items()}


def relocate(prog, base: dict, ovl: int = 1, drop=()) -> program.Program:
    """A copy of ``prog`` with every buffer address moved by ``base[buffer id]`` words, ``ovl``
    set on every command, and the LOADs into the buffers ``drop`` (with their data) left out."""
    out = program.Program(prog.op)
    pos = 0
    for m in prog.cmds:
        f = msgs.cmd_fields(m)
        op = f["op"]
        if op == msgs.OP_LOAD:
            data = prog.din[pos:pos + f["count"]]
            pos += f["count"]
            if f["target"] in drop:
                continue
            out.din.extend(data)
        if m is prog.cmds[prog.compute_index]:
            out.compute_index = len(out.cmds)
        if op in (msgs.OP_LOAD, msgs.OP_STORE):
            f["addr"] += base.get(f["target"], 0)
        else:
            for fld, b in _address_buffers(msgs.OP_NAMES[op]).items():
                f[fld] += base.get(b, 0)
        f["ovl"] = ovl
        out.cmds.append(msgs.make_cmd(**f))
    out.stores = [program.Store(s.name, s.buf, s.addr + base.get(s.buf, 0), s.words, s.lanes, s.unpack)
                  for s in prog.stores]
    return out


#: per operation: the buffers holding the layer's parameters and the case keys they come from
#: (kept on chip across a stream of images of one layer: ``same_weights``)
WEIGHT_BUFFERS = {"fwd": {msgs.BUF_W: "w", msgs.BUF_B: "b"}, "bwd_data": {msgs.BUF_W: "w"}}


def build(cfg, ops: list, same_weights: bool = False) -> Stream:
    """The double-buffered program of ``ops`` = ``[(op, validated case), ...]``.

    ``same_weights``: the operations are images of one layer (every ``fwd`` / ``bwd_data`` case
    has the same ``w`` (and ``b``), checked): its parameters are loaded once, by the first
    operation, and stay in slot 0.  A buffer without room for two slots keeps one (its reuse
    then waits for the operation before: correct, slower)."""
    if not ops:
        raise CaseError("a pipelined program needs at least one operation")
    keep: dict = {}
    if same_weights:
        first_op, first = ops[0]
        for op, case in ops:
            held = WEIGHT_BUFFERS.get(op, {})
            if op != first_op or not held:
                raise CaseError(f"same_weights: every operation must be the same fwd or bwd_data, got {op}")
            for key in held.values():
                if not np.array_equal(case[key], first[key]):
                    raise CaseError(f"same_weights: the cases' {key!r} differ")
        keep = WEIGHT_BUFFERS[first_op]
    progs = [program.build(cfg, op, case) for op, case in ops]
    span: dict = {}
    for p in progs:
        for b, hi in _spans(cfg, p).items():
            if b not in keep:
                span[b] = max(span.get(b, 0), hi)
    # a buffer without room for two slots keeps one: the hazard rule then serializes its reuse
    step, shared = {}, {}
    for b, words in span.items():
        depth = msgs.buffer_depth(b, cfg)
        step[b] = words if 2 * words <= depth else (depth - words if words < depth else 0)
        if 0 < step[b] < words:  # overlapping slots: words [depth - span, span) are shared
            shared[b] = (step[b], words)
    parts = [relocate(p, {b: (i % 2) * w for b, w in step.items()}, drop=keep if i else ())
             for i, p in enumerate(progs)]
    parts, offsets = zip(*(split_transfers(cfg, p, shared) for p in parts))
    cmds, din, order = schedule(cfg, parts, offsets)
    whole = program.Program("+".join(op for op, _ in ops), cmds=cmds, din=din)
    whole.compute_index = next(j for j, m in enumerate(cmds) if int(m.op) not in (msgs.OP_LOAD, msgs.OP_STORE))
    whole.stores = [s for p in parts for s in p.stores]
    return Stream(whole, parts, order)


def _pieces(lo: int, hi: int, cuts) -> list:
    """``[lo, hi)`` cut at the words ``cuts`` that fall inside it."""
    edges = [lo] + sorted(c for c in set(cuts) if lo < c < hi) + [hi]
    return list(pairwise(edges))


def split_transfers(cfg, prog, shared: dict) -> tuple:
    """``prog`` with every LOAD and STORE of a buffer in ``shared`` (buffer id -> shared words
    ``(lo, hi)``) split at ``lo`` and ``hi``: a STORE's shared piece first, a LOAD's last.
    Returns ``(program, offsets)``, ``offsets`` the element offset in ``prog``'s own output of
    each STORE of the new program, in command order."""
    out = program.Program(prog.op)
    out.stores = prog.stores
    pos = stored = 0
    offsets = []
    for j, m in enumerate(prog.cmds):
        f = msgs.cmd_fields(m)
        op = f["op"]
        if j == prog.compute_index:
            out.compute_index = len(out.cmds)
        if op not in (msgs.OP_LOAD, msgs.OP_STORE):
            out.cmds.append(m)
            continue
        data = prog.din[pos:pos + f["count"]] if op == msgs.OP_LOAD else None
        pos += f["count"] if op == msgs.OP_LOAD else 0
        lanes = msgs.buffer_lanes(f["target"], cfg.P)
        a = f["addr"]
        end = a + msgs.tiles(f["count"], lanes)
        pieces = _pieces(a, end, shared.get(f["target"], ()))
        lo, hi = shared.get(f["target"], (end, end))
        first = [pc for pc in pieces if (lo <= pc[0] < hi) == (op == msgs.OP_STORE)]
        for u, v in first + [pc for pc in pieces if pc not in first]:
            e0, e1 = (u - a) * lanes, min(f["count"], (v - a) * lanes)
            out.cmds.append(msgs.make_cmd(**dict(f, addr=u, count=e1 - e0)))
            if op == msgs.OP_LOAD:
                out.din.extend(data[e0:e1])
            else:
                offsets.append(stored + e0)
        stored += f["count"] if op == msgs.OP_STORE else 0
    return out, offsets


def _role(q, j) -> int:
    """0: LOAD, 1: the compute command, 2: STORE."""
    return 0 if j < q.compute_index else (1 if j == q.compute_index else 2)


def schedule(cfg, parts, offsets) -> tuple:
    """The issue order of the operations ``parts``: ``(commands, data in, store order)``;
    ``offsets[i]``: the element offset in operation ``i``'s output of each of its STOREs.

    Priority (smaller first) of operation ``i``'s commands: its LOADs ``(i - 1, 2)``, its compute
    command ``(i, 0)``, its STOREs ``(i + 1, 1)``; a command is issued only after every earlier
    command (in the sequential program) whose words it shares with a write on either side."""
    seq = []  # (priority, operation, command, its data, ranges) in sequential program order
    for i, q in enumerate(parts):
        pos = 0
        stores = iter(offsets[i])
        for j, m in enumerate(q.cmds):
            f = msgs.cmd_fields(m)
            data = []
            if f["op"] == msgs.OP_LOAD:
                data = q.din[pos:pos + f["count"]]
                pos += f["count"]
            role = _role(q, j)
            prio = (i - 1, 2) if role == 0 else ((i, 0) if role == 1 else (i + 1, 1))
            where = next(stores) if f["op"] == msgs.OP_STORE else None
            seq.append((prio, i, m, data, msgs.access_ranges(f, cfg), f, where))
    preds = [[k for k in range(n) if msgs.ranges_depend(seq[k][4], seq[n][4])] for n in range(len(seq))]
    done = [False] * len(seq)
    cmds, din, order = [], [], []
    for _ in range(len(seq)):
        ready = [n for n in range(len(seq)) if not done[n] and all(done[k] for k in preds[n])]
        n = min(ready, key=lambda x: (seq[x][0], x))
        done[n] = True
        _prio, i, m, data, _r, f, where = seq[n]
        cmds.append(m)
        din.extend(data)
        if f["op"] == msgs.OP_STORE:
            order.append((i, where, f["count"]))
    return cmds, din, order
