"""Fuzz target ``engine``: one engine operation at a level against the golden model, bit for bit.

A case is drawn PyH2-style, hardware first and small first, so that failures shrink to a small
layer on a small array:

1. the engine configuration (preset ``tiny`` 2x2 before ``small`` 4x4; ``verilator`` uses
   ``tiny`` only: one Verilator build per worker);
2. the operation (``fwd`` first; a ``fwd`` channel- or batch-parallel, ``bp``), then the layer
   shape (batch, channels, kernel, image size, stride, padding -- each shrinking towards 1 or 0);
3. the tensors, element by element (shrinking towards 0; biased to the format's extremes),
   the rounding mode, shifts, seeds;
4. the back-pressure: stall probabilities of the command, data-in and data-out streams and the
   stall seed.

The property runs the case like :func:`pymtl_fp.tb.engine_harness.run_op` (validate, build the program,
drive the three streams with the drawn stalls) on a fresh model, and the results must equal
:func:`pymtl_fp.tb.engine_harness.golden_op` exactly; a hang is caught by the harness's watchdog and
counts as a failure.  A failing case is written as a ``run-op`` case file
(``case.npz`` with the keys ``pymtl-fp run-op --case`` reads) next to the JSON case.

Mutations (``--inject-bug``, ``rtl`` level): ``addr-off-by-one`` (the address generator reads
the ``fwd`` input one word too far), ``round-half-down`` (the rounding constant of every
requantizer lane is ``2**(s-1) - 1``).
"""

from __future__ import annotations

import importlib

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pymtl_fp.levels import LEVELS
from pymtl_fp.sim_passes import default_passes
from pymtl_fp.tb.fuzz.mutate import Mutation
from pymtl_fp.tb.fuzz.targets import FuzzTarget, Reproducer
from pymtl_fp.timing import COMPUTE_OPS as OPS
from pymtl_fp.timing import POOL_OPS

STALLS = (0.0, 0.3, 0.7)


def _values(shape, bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return hnp.arrays(np.int64, shape, elements=st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi])))


@st.composite
def case_strategy(draw, level):
    from pymtl_fp.engine.config import preset

    cfg_name = "tiny" if level == "verilator" else draw(st.sampled_from(["tiny", "small"]))
    cfg = preset(cfg_name)
    P = cfg.P
    op = draw(st.sampled_from(OPS))
    bp = op == "fwd" and draw(st.booleans())  # batch-parallel: up to two image tiles and one more image
    n = draw(st.integers(1, 2 * P + 1 if bp else 2))
    c = draw(st.integers(1, P + 1))  # up to one partial tile beyond the array: tiling is exercised
    case = dict(mode=draw(st.sampled_from(["nearest", "stochastic"])), seed=draw(st.integers(0, 2**32 - 1)),
                tensor_id=draw(st.integers(0, 200)))
    if op in ("fwd", "bwd_data", "bwd_weight"):
        k = draw(st.integers(1, P + 1))
        r = draw(st.integers(1, 3))
        s = draw(st.integers(1, 3))
        stride = draw(st.sampled_from([1, 2]))
        pad = draw(st.integers(0, min(r, s) - 1))
        h = draw(st.integers(max(1, r - 2 * pad), 5))
        w = draw(st.integers(max(1, s - 2 * pad), 5))
        ho, wo = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
        assume(ho >= 1 and wo >= 1)
        case.update(stride=stride, pad=pad, shift=draw(st.integers(0, 12)))
        x = draw(_values((n, c, h, w), cfg.act_bits))
        if op == "fwd":
            case.update(x=x, w=draw(_values((k, c, r, s), cfg.weight_bits)),
                        b=draw(hnp.arrays(np.int64, (k,), elements=st.integers(-2000, 2000))),
                        relu=int(draw(st.booleans())))
            if bp:
                case["bp"] = 1
        elif op == "bwd_data":
            case.update(dy=draw(_values((n, k, ho, wo), cfg.grad_bits)), w=draw(_values((k, c, r, s), cfg.weight_bits)),
                        x=x, relu=int(draw(st.booleans())))
        else:
            case.update(x=x, dy=draw(_values((n, k, ho, wo), cfg.grad_bits)), w_shape=np.array([k, c, r, s]),
                        bias_shift=draw(st.integers(0, 8)))
    elif op in POOL_OPS:
        pk = draw(st.integers(1, 3))
        ho, wo = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        if op == "pool_fwd":
            case.update(x=draw(_values((n, c, ho * pk, wo * pk), cfg.act_bits)), k=pk)
        else:
            case.update(dy=draw(_values((n, c, ho, wo), cfg.grad_bits)),
                        argmax=draw(hnp.arrays(np.int64, (n, c, ho, wo), elements=st.integers(0, pk * pk - 1))),
                        k=pk)
    else:
        k, r, s = draw(st.integers(1, P + 1)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
        case.update(w=draw(_values((k, c, r, s), cfg.weight_bits)), dw=draw(_values((k, c, r, s), cfg.grad_bits)),
                    lr_shift=draw(st.integers(0, 6)))
    from pymtl_fp.engine.cases import CaseError, validate_case

    try:
        validate_case(cfg, op, case)
    except CaseError:
        assume(False)
    stall = [draw(st.sampled_from(STALLS)) for _ in range(3)]
    return dict(config=cfg_name, op=op, stall=stall, stall_seed=draw(st.integers(0, 1000)), case=case)


def strategy(level):
    return case_strategy(level)


#: ``rtl`` models built in this process, by engine class and configuration, with their power-on state
_RTL_MODELS: dict = {}


def _model(level, cfg):
    """A model in its power-on state for every example, so that no buffer contents leak from one
    example into the next and a shrunk failure replays on its own: at ``fl``/``cl`` a new one (their
    state is Python's), at ``rtl`` one per engine class and configuration, returned to its
    power-on state (:class:`pymtl_fp.power_on.PowerOnState`: every signal and memory word as a
    new elaboration leaves them; building anew costs as much as a small example's simulation).
    ``verilator`` reuses one build per process (the harness's cache): its buffers keep earlier
    contents, which only matters for bugs that read unwritten words."""
    if level == "verilator":
        from pymtl_fp.tb.engine_harness import get_model

        return get_model(level, cfg)
    from pymtl_fp.engine.registry import engine_class

    name = engine_class(level).__name__
    cls = getattr(importlib.import_module(f"pymtl_fp.engine.{name}"), name)  # looked up now: mutations
    key = (cls, cfg, _patched_classes())  # a mutant (--inject-bug) is another model
    if level == "rtl" and key in _RTL_MODELS:
        m, power = _RTL_MODELS[key]
        power.restore()
        return m
    m = cls(cfg)
    m.elaborate()
    m.apply(default_passes())
    if level == "rtl":
        from pymtl_fp.power_on import PowerOnState

        _RTL_MODELS[key] = (m, PowerOnState(m))
    return m


def _patched_classes() -> tuple:
    """The classes that the mutations of :data:`MUTATIONS` redirect, as they are now."""
    return tuple(getattr(importlib.import_module(mod), attr) for mut in MUTATIONS.values()
                 for mod, attr, _ in mut.patch)


def limits(case):
    """A replayed engine case: a preset, an operation, three stalls at most 0.95, and an operation
    case the engine's own check (``run-op --case``) accepts."""
    from pymtl_fp.engine.cases import CaseError, validate_case
    from pymtl_fp.engine.config import PRESETS, preset
    from pymtl_fp.tb.fuzz import case_limits as cl

    cfg = preset(cl.choice(case, "config", tuple(PRESETS)))
    op = cl.choice(case, "op", tuple(OPS))
    stall = cl.items(case, "stall")
    if len(stall) != 3:
        raise cl.CaseLimitError(f"stall must list 3 probabilities (command, data in, data out), got {len(stall)}")
    for i in range(3):
        cl.number({f"stall[{i}]": stall[i]}, f"stall[{i}]", 0.0, cl.MAX_STALL)
    cl.integer(case, "stall_seed", 0, cl.SEED_MAX)
    if not isinstance(case["case"], dict):
        raise cl.CaseLimitError(f"case must be a table of the operation's arrays, got {type(case['case']).__name__}")
    try:
        validate_case(cfg, op, case["case"])
    except CaseError as exc:
        raise cl.CaseLimitError(f"case: {exc}") from None


def check(case, level, ctx):
    """Run the case (the steps of :func:`pymtl_fp.tb.engine_harness.run_op`, on a fresh model) and compare
    every result array with the golden model."""
    from pymtl_fp.engine import program
    from pymtl_fp.engine.cases import golden_op, validate_case
    from pymtl_fp.engine.config import preset
    from pymtl_fp.tb.engine_harness import drive

    cfg, op = preset(case["config"]), case["op"]
    c = validate_case(cfg, op, case["case"])
    prog = program.build(cfg, op, c)
    elements, _ = drive(_model(level, cfg), cfg, prog, stall=tuple(case["stall"]), seed=case["stall_seed"])
    got = prog.unpack(elements)
    for key, want in golden_op(cfg, op, c).items():
        g = got[key]
        if g.shape != want.shape:
            raise AssertionError(f"{level} {op} {key}: shape {g.shape}, golden model {want.shape}")
        bad = np.argwhere(g != want)
        if len(bad):
            i = tuple(int(v) for v in bad[0])
            raise AssertionError(f"{level} {op} {key} differs from the golden model at {len(bad)} element(s), "
                                 f"first {i}: got {int(g[i])}, want {int(want[i])}")


def _shape(a):
    return "x".join(str(d) for d in np.shape(a))


def coverage(case):
    c = case["case"]
    main = {"fwd": "x", "bwd_data": "dy", "bwd_weight": "x", "pool_fwd": "x", "pool_bwd": "dy",
            "update": "w"}[case["op"]]
    kern = c.get("w", c.get("w_shape"))
    extra = f" w{_shape(kern) if 'w' in c else 'x'.join(map(str, c['w_shape']))}" if kern is not None else ""
    geo = f" st{c['stride']} p{c['pad']}" if "stride" in c else (f" k{c['k']}" if "k" in c else "")
    return f"{case['config']} {case['op']} {main}{_shape(c[main])}{extra}{geo}"


def describe(case):
    c = case["case"]
    arrays = {k: (v.tolist() if v.size <= 16 else f"array{list(v.shape)}") for k, v in c.items()
              if isinstance(v, np.ndarray)}
    scalars = {k: v for k, v in c.items() if not isinstance(v, np.ndarray)}
    return (f"config={case['config']} op={case['op']} stall={case['stall']} stall_seed={case['stall_seed']} "
            f"{scalars} {arrays}")


def reproducer(case, level, out_dir, inject_bug=None):
    """``case.npz`` for ``pymtl-fp run-op`` (case keys as arrays) and its command line (with the
    campaign's ``--inject-bug``, so that run-op runs the same mutant copy of the RTL)."""
    c = case["case"]
    path = out_dir / "case.npz"
    np.savez(path, **{k: (v if isinstance(v, np.ndarray) else np.asarray(v)) for k, v in c.items()})
    out = out_dir / "result.npz"
    lvl = level if level != "cl" else "fl"
    stall = " ".join(str(p) for p in case["stall"])
    cmd = (f"pymtl-fp run-op --level {lvl} --config {case['config']} --op {case['op']} "
           f"--case {path} --out {out} --stall {stall} --stall-seed {case['stall_seed']} --check"
           + (f" --inject-bug {inject_bug}" if inject_bug else ""))
    return Reproducer([path], [cmd],
                      notes="run-op runs the case (same stall pattern) and compares with the golden model"
                            + ("; drop --inject-bug to run it on the real RTL" if inject_bug else ""))


MUTATIONS = {
    "addr-off-by-one": Mutation(
        name="addr-off-by-one",
        description="address generator: the fwd input address is one word too far (x[..., w+1] is read for x[..., w])",
        module="pymtl_fp.engine.AddrRoutesRTL",
        replacements=(("s.rd_base[RB_X] @= s.A0 + s.ksum[AU_MAP]  # fwd: x[n, ct, hh, ww]\n",
                       "s.rd_base[RB_X] @= s.A0 + s.ksum[AU_MAP] + B32(1)  # fwd: x[n, ct, hh, ww]\n"),),
        patch=(("pymtl_fp.engine.AddrGenRTL", "AddrRoutesRTL", "AddrRoutesRTL"),),
        levels=("rtl",),
    ),
    "round-half-down": Mutation(
        name="round-half-down",
        description="every requantizer lane adds 2**(s-1) - 1 instead of 2**(s-1): ties round down",
        module="pymtl_fp.primitives.RequantRTL",
        replacements=(("s.rnd @= ONE << (s.shw - ONE)", "s.rnd @= (ONE << (s.shw - ONE)) - ONE"),),
        patch=(("pymtl_fp.engine.RequantBankRTL", "RequantRTL", "RequantRTL"),),
        levels=("rtl",),
    ),
}

TARGET = FuzzTarget(
    name="engine",
    description="one engine operation (fwd, bwd_data, bwd_weight, pool, update) vs the golden model",
    levels=LEVELS,
    strategy=strategy,
    check=check,
    coverage=coverage,
    reproducer=reproducer,
    mutations=MUTATIONS,
    case_keys=("config", "op", "stall", "stall_seed", "case"),
    limits=limits,
    describe=describe,
)
