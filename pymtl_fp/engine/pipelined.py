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
in that buffer (one slot where two do not fit: the hazard rule then serializes that buffer's
reuse); operation ``i + 1``'s first LOAD is issued before operation ``i``'s compute command and
its other LOADs before operation ``i``'s STOREs (commands are accepted in order: a LOAD behind a
STORE that waits for its result could not start).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymtl_fp.engine import msgs, program
from pymtl_fp.engine.cases import CaseError

_BUF_IDS = {name: i for i, name in msgs.BUF_NAMES.items()}


@dataclass
class Stream:
    """One program of several operations: ``prog`` (commands, data in, every result's store, in
    order) and ``parts`` (each operation's own :class:`~pymtl_fp.engine.program.Program`, to
    unpack its share of the data-out stream)."""

    prog: program.Program
    parts: list

    def unpack(self, elements) -> list:
        """The results of every operation (a dict each, as ``Program.unpack``)."""
        out, pos = [], 0
        for p in self.parts:
            n = p.out_count()
            out.append(p.unpack(elements[pos:pos + n]))
            pos += n
        return out


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
    return {fld: _BUF_IDS[buf] for fld, (buf, _what) in msgs.OP_BUFFERS[op_name].items()}


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
    depth = {msgs.BUF_X: cfg.act_depth, msgs.BUF_D: cfg.act_depth, msgs.BUF_O: cfg.act_depth,
             msgs.BUF_W: cfg.weight_depth, msgs.BUF_G: cfg.weight_depth, msgs.BUF_B: cfg.bias_depth}
    # a buffer without room for two slots keeps one: the hazard rule then serializes its reuse
    step = {b: words if 2 * words <= depth[b] else 0 for b, words in span.items()}
    parts = [relocate(p, {b: (i % 2) * w for b, w in step.items()}, drop=keep if i else ())
             for i, p in enumerate(progs)]
    # software pipeline (commands are accepted in order, the LD unit takes one LOAD at a time):
    # operation i + 1's first LOAD is issued before operation i's compute command, its other
    # LOADs after it, then operation i's STOREs -- so they all run while operation i computes.
    # Only LOADs whose words operation i no longer touches move ahead of it (a single-slot
    # buffer's LOAD stays behind), in their own order (the data-in stream follows it).
    whole = program.Program("+".join(op for op, _ in ops))
    _emit(whole, parts[0], parts[0].cmds[:parts[0].compute_index], data=True)
    for i, q in enumerate(parts):
        rest = q.cmds[q.compute_index:]
        early, late = _hoistable(cfg, parts[i + 1], rest) if i + 1 < len(parts) else ([], [])
        if early:
            _emit(whole, parts[i + 1], early[:1], data=True)
        if i == 0:
            whole.compute_index = len(whole.cmds)
        _emit(whole, q, rest[:1])
        _emit(whole, q, early[1:])
        _emit(whole, q, rest[1:])
        whole.stores.extend(q.stores)
        if late:
            _emit(whole, parts[i + 1], late, data=not early)
    return Stream(whole, parts)


def _hoistable(cfg, nxt, rest) -> tuple:
    """Split ``nxt``'s LOADs into the longest prefix that may run ahead of the commands ``rest``
    (no word it writes is one they read or write) and the others."""
    busy = [r for m in rest for r in msgs.access_ranges(msgs.cmd_fields(m), cfg)]
    loads = nxt.cmds[:nxt.compute_index]
    for j, m in enumerate(loads):
        mine = msgs.access_ranges(msgs.cmd_fields(m), cfg)
        if any(b == b2 and lo < hi2 and lo2 < hi for b, lo, hi, _ in mine for b2, lo2, hi2, _ in busy):
            return loads[:j], loads[j:]
    return loads, []


def _emit(whole, q, cmds, data: bool = False) -> None:
    """Append ``cmds`` (of ``q``), with all of ``q``'s data-in stream when ``data``."""
    if data:
        whole.din.extend(q.din)
    whole.cmds.extend(cmds)
