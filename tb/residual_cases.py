"""Test cases of the router's residual kinds (ADD, MASK, GAP, GAPB): a Hypothesis strategy drawing a case's
parameters, the case they make with its golden result (:mod:`pymtl_fp.golden.residual`, never the
implementation under test), and the node program that runs it.

A case is a residual add (``add``: main + skip in the activation format, optional ReLU), a fork's
gradient sum (``fork``: two contributions in the gradient format), an add's gradient masked by the
ReLU derivative of the skip's source (``mask``: ``golden.train``'s ``np.where(x > 0, g, 0)``), a
global average pool (``gap``) or
its backward (``gapb``, optionally masked by the pool's ReLU input), on an ``(N, C, H, W)`` map in the
engine's activation layout of a ``P``-lane array (:func:`pymtl_fp.engine.msgs.pack_act`: channels
padded to tiles, so padding lanes are exercised).  The program moves operand 0 from ``fwd_in`` and
operand 1 (if any) from ``bwd_in`` into the scratch FIFO, runs the instruction, and hands the result on:
to the engine's ``din`` (``LOAD``), or, with ``store``, through buffer X to ``fwd_out``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from pymtl_fp.cluster import isa
from pymtl_fp.engine import encoding
from pymtl_fp.engine.msgs import pack_act, to_word
from pymtl_fp.golden import residual as golden
from pymtl_fp.tb.engine_strategies import _vals

KINDS = ("add", "fork", "mask", "gap", "gapb")


def footprint(p: dict) -> int:
    """Scratch FIFO elements a case's instruction holds at its peak: its input and its result."""
    n, c, h, w = p["shape"]
    e = n * -(-c // p["P"]) * p["P"] * h * w  # the map's elements in the layout
    return {"add": 3 * e, "fork": 3 * e, "mask": 3 * e, "gap": e + e // (h * w),
            "gapb": e // (h * w) + (2 * e if p["relu"] else e)}[p["kind"]]


@st.composite
def residual_params(draw, lanes=(1, 2, 3, 4), bits=(8, 16), max_hw=3, max_c=5, max_n=2, scratch=256):
    """A case's parameters (JSON-able: the fuzz target's case files): the kind, the array side ``P``,
    the format's bits, the map's shape, the share of extreme values, the rounding, ReLU and the seed of
    the values, within a scratch FIFO of ``scratch`` elements; :func:`build_case` makes the case."""
    p = dict(kind=draw(st.sampled_from(KINDS)), P=draw(st.sampled_from(lanes)), bits=draw(st.sampled_from(bits)),
                shape=[draw(st.integers(1, max_n)), draw(st.integers(1, max_c)), draw(st.integers(1, max_hw)),
                       draw(st.integers(1, max_hw))],
                extremes=draw(st.sampled_from([0.0, 0.2, 1.0])), mode=draw(st.sampled_from(["nearest", "stochastic"])),
                seed=draw(st.integers(0, 2**32 - 1)), tid=draw(st.integers(0, 255)), relu=draw(st.booleans()),
                vseed=draw(st.integers(0, 2**32 - 1)))
    assume(footprint(p) <= scratch)
    return p


def residual_cases(**limits):
    """Cases (:func:`build_case`) of :func:`residual_params` drawn within ``limits``."""
    return residual_params(**limits).map(build_case)


def build_case(p: dict) -> dict:
    """``dict(kind, ins, operands, want, seed)``: the instruction, the operands' element lists (scratch
    order), the golden result's elements in the activation layout and the rounding seed."""
    rng = np.random.default_rng(p["vseed"])
    kind, P, b, extremes, mode, seed, tid, relu = (p[k] for k in ("kind", "P", "bits", "extremes", "mode", "seed",
                                                                  "tid", "relu"))
    n, c, h, w = p["shape"]
    rounding = dict(stoch=int(mode == "stochastic"), seed=seed, tid=tid)

    def flat(a):
        return [int(v) for v in pack_act(a, P).reshape(-1)]

    if kind == "mask":
        g, x = _vals(rng, (n, c, h, w), b, extremes), _vals(rng, (n, c, h, w), b, extremes)
        y = np.where(x > 0, g, 0)  # (golden.train.backward's mask of a rectified tensor's gradient)
        return dict(kind=kind, ins=isa.mask(len(flat(g)), b, name=kind), operands=[flat(g), flat(x)], want=flat(y),
                    seed=0)
    if kind in ("add", "fork"):
        a, s = _vals(rng, (n, c, h, w), b, extremes), _vals(rng, (n, c, h, w), b, extremes)
        if kind == "add":
            y = golden.add_fwd(a, s, bits=b, relu=relu)
        else:
            relu = False
            y = golden.fork_sum([a, s], bits=b)
        ins = isa.add(len(flat(a)), b, relu, name=kind)
        return dict(kind=kind, ins=ins, operands=[flat(a), flat(s)], want=flat(y), seed=0)
    x = _vals(rng, (n, c, h, w), b, extremes)
    if kind == "gap":
        y = golden.gap_fwd(x, out_bits=b, mode=mode, seed=seed, tensor_id=tid)
        return dict(kind=kind, ins=isa.gap((n, c, h, w), P, b, **rounding), operands=[flat(x)], want=flat(y),
                    seed=seed)
    dy = _vals(rng, (n, c, 1, 1), b, extremes)
    dx = golden.gap_bwd(dy, x, out_bits=b, relu=relu, mode=mode, seed=seed, tensor_id=tid)
    ops = [flat(dy), flat(x)] if relu else [flat(dy)]
    return dict(kind=kind, ins=isa.gapb((n, c, h, w), P, b, relu=relu, **rounding), operands=ops, want=flat(dx),
                seed=seed)


def case_program(case: dict, *, store: bool = False) -> list:
    """The program running ``case`` (module doc); ``store``: through buffer X to ``fwd_out``."""
    prog = [isa.move(src, isa.DST_SCRATCH, len(op))
            for src, op in zip((isa.SRC_FWD_IN, isa.SRC_BWD_IN), case["operands"])]
    out = len(case["want"])
    prog += [case["ins"], isa.load(isa.SRC_SCRATCH, count=out, target=encoding.BUF["X"])]
    if store:
        prog.append(isa.store(isa.DST_FWD_OUT, count=out, target=encoding.BUF["X"]))
    return prog + [isa.Instr(isa.HALT)]


def case_inputs(case: dict, bits: int) -> list:
    """The beats of ``fwd_in``, ``bwd_in`` and ``host_in`` (one element a beat, as unsigned words)."""
    ops = case["operands"] + [[]] * (3 - len(case["operands"]))
    return [[to_word(v, bits) for v in op] for op in ops]


def run_node_case(level: str, case: dict, stall, seed: int, *, scratch_depth: int, max_cycles: int = 5000):
    """Run ``case`` on a node of ``level`` (``fl``/``cl``; the ``tiny`` engine, a router with the residual
    unit) whose program runs the residual kind on link input and stores the result from buffer X to
    ``fwd_out``, with stalling sources and sinks; returns ``(node, the signed values fwd_out received)``."""
    from pymtl3 import Component, InPort, connect, mk_bits

    from pymtl_fp.cluster.hw.node import NODE_LEVELS
    from pymtl_fp.cluster.hw.router_config import RouterConfig
    from pymtl_fp.engine.config import PRESETS
    from pymtl_fp.engine.msgs import from_word
    from pymtl_fp.sim import build_sim
    from pymtl_fp.tb.stream import StallSink, StallSource

    ecfg = PRESETS["tiny"]
    node = NODE_LEVELS[level](ecfg, RouterConfig(scratch_depth=scratch_depth, out_depth=64, residual=True),
                              prog=case_program(case, store=True))
    T = mk_bits(ecfg.stream_bits)
    inputs = case_inputs(case, ecfg.stream_bits)

    class NodeBench(Component):
        def construct(s):
            s.node = node
            s.srcs = [StallSource(T, [T(v) for v in inputs[i]], stall, seed + i) for i in range(3)]
            for src, name in zip(s.srcs, ("fwd_in", "bwd_in", "host_in")):
                connect(src.send, getattr(node, name))
            s.sinks = [StallSink(T, None, stall, seed + 10 + i) for i in range(3)]
            for sink, name in zip(s.sinks, ("fwd_out", "bwd_out", "host_out")):
                connect(getattr(node, name), sink.recv)
            for name, bits in (("prog_we", 1), ("prog_sel", 1), ("prog_addr", 16), ("tab_data", 32)):
                setattr(s, name, InPort(bits))
                connect(getattr(node, name), getattr(s, name))
            s.prog_data = InPort(isa.instr_type())
            connect(node.prog_data, s.prog_data)

        def line_trace(s):
            return node.line_trace()

    bench = build_sim(NodeBench(), "cl")
    for _ in range(max_cycles):
        if node.router.is_done():
            break
        bench.sim_tick()
    return node, [from_word(int(v), ecfg.stream_bits) for v in bench.sinks[0].received]
