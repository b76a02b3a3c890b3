"""The node program ISA's residual kinds: the elementwise add (``ADD``), the ReLU derivative's mask
(``MASK``) and the global average pool forward (``GAP``) and backward (``GAPB``), run by the router's
residual unit over the scratch FIFO (:class:`~pymtl_fp.cluster.hw.RouterUnitResRTL.RouterUnitResRTL`; the
cycle-level router's twin in :mod:`pymtl_fp.cluster.hw.router_cl_units`).  This module builds their instructions, checks them
(one-line :class:`~pymtl_fp.cluster.isa.IsaError`\\ s naming the layer) and defines what they leave in
the scratch FIFO (:func:`apply_residual`), bit for bit as the RTL computes it, on Python ints.

Why the router: the operands of an add (the main branch's output and the skip) and of the fork's
gradient sum arrive over different paths (the engine's ``dout``, a link, a copy kept in the scratch
FIFO), and the router already joins those paths; the scratch FIFO holds both operands, and the
scalar units already walk it element by element with a requantizer (BIAS, REQUANT).  An engine
operation would first have to LOAD the skip into a buffer beside the main branch and would tie the
MAC array up for ``count`` cycles of one add each; in the router the add costs no engine cycles and
no buffer words.

Semantics (``bits``: the instruction's saturation width; every value is a signed ``stream_bits``
element; ``clamp(v, b)`` saturates to ``b`` bits)::

    ADD   scratch [a, b], count = n elements each     -> n results
          r[i] = clamp(clamp(a[i] + b[i], stream_bits), bits), then max(r, 0) if cmd.relu
    MASK  scratch [g, x], count = n elements each     -> n results
          r[i] = clamp(g[i], bits) where x[i] > 0, else 0      (an add's gradient into a skip
          whose source comes out of a ReLU: golden.train's mask)
    GAP   scratch x: an (N, C, H, W) map in the engine's activation layout (element [n, c, h, w]
          at ((n*CT + c//P)*A + h*W + w)*P + c % P, A = H*W), count = N*CT*A*P elements
                                                       -> the (N, C, 1, 1) map in that layout
          r[(n*CT + ct)*P + j] = clamp(requant(M * sum_hw x[...], F, index = n*C + c), bits)
                                 (c = ct*P + j; 0 where c >= C: padding lanes)
    GAPB  scratch [dy] (or [dy, x] with cmd.relu): dy the (N, C, 1, 1) map in the activation layout
          (``cmd.crs`` = N*CT*P elements), x the pool's (N, C, H, W) input; count = N*CT*A*P
                                                       -> dx, (N, C, H, W) in the activation layout
          r[pos(n, c, hw)] = clamp(requant(M * dy[n, c], F, index = (n*C + c)*A + hw), bits),
                             0 where c >= C, and (cmd.relu) 0 where x <= 0

``requant`` is the requantizer of the engine's write-back (:func:`~pymtl_fp.primitives.RequantRTL.requant_ref`
with ``out_bits = stream_bits``: half up, or stochastic with ``cmd.seed``/``cmd.tid`` at that index);
``(M, F)`` = :func:`~pymtl_fp.golden.residual.gap_reciprocal` ``(A)``.  For values in their formats
(``bits`` at most ``stream_bits``) these are :func:`~pymtl_fp.golden.residual.add_fwd`,
:func:`~pymtl_fp.golden.residual.fork_sum` (of two contributions; more: chain ADDs at ``bits =
stream_bits`` and saturate in the last one), :func:`~pymtl_fp.golden.residual.gap_fwd` and
:func:`~pymtl_fp.golden.residual.gap_bwd`.  The sums and products are exact for any element values
(the RTL's widths: ``stream_bits + 17`` for a sum, ``+ 35`` for ``M`` times it).

Instruction fields: ADD: ``count``, ``bits``, ``cmd.relu``; MASK: ``count``, ``bits``.  GAP / GAPB: ``count`` (the full map's
elements), ``cmd.n``, ``cmd.c`` (C), ``cmd.ct`` (CT), ``cmd.pk`` (P), ``cmd.hw`` (A), ``cmd.chw``
(C*A, GAPB's index stride), ``cmd.rs`` (M), ``cmd.shift`` (F), ``cmd.stoch``, ``cmd.seed``,
``cmd.tid``, ``bits``; GAPB: ``cmd.crs`` (dy's N*CT*P elements) and ``cmd.relu`` (mask by x).
Each reads one scratch element (pair) an edge: it retires ``count + 2`` edges after it starts
(``+ unit_latency`` with pipelined units), as BIAS and REQUANT.
"""

from __future__ import annotations

#: kind codes (the ISA's 4-bit ``kind``; :mod:`pymtl_fp.cluster.isa` re-exports them)
ADD, GAP, GAPB, MASK = 11, 12, 13, 14
RES_KINDS = (ADD, GAP, GAPB, MASK)
#: the kinds that read an element pair ``(a[i], b[i])`` of ``[a, b]``
PAIR_KINDS = (ADD, MASK)
#: the largest pooled area (the reciprocal's shift stays at most 32)
MAX_AREA = 1 << 16


def _isa():
    from pymtl_fp.cluster import isa

    return isa


def _check_bits(bits: int, name: str) -> int:
    if not isinstance(bits, int) or isinstance(bits, bool) or not 2 <= bits <= 64:
        raise _isa().IsaError(f"{name}: saturation width {bits!r} must be an int in [2, 64]")
    return bits


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _cmd(fields: dict, name: str):
    """The engine command with ``fields`` (:func:`isa._checked_cmd`), a field out of range refused
    naming the layer."""
    isa = _isa()
    try:
        return isa._checked_cmd(fields)
    except isa.IsaError as exc:
        raise isa.IsaError(f"{name}: {exc}") from None


def add(n: int, bits: int, relu: bool = False, *, name: str = "add", formats=None):
    """An ADD of two ``n``-element operands (``[a, b]`` in the scratch FIFO), saturated to ``bits``
    (then ReLU).  ``formats``: the operands' :class:`~pymtl_fp.numerics.QFormat`\\ s, which must share
    ``frac`` (the add aligns nothing) and fit ``bits``."""
    isa = _isa()
    _check_bits(bits, name)
    if not _is_count(n) or n < 1:
        raise isa.IsaError(f"{name}: an add needs at least one element, got {n!r}")
    if formats is not None:
        fa, fb = formats
        if fa.frac != fb.frac:
            raise isa.IsaError(f"{name}: the add's operands have different formats ({fa} and {fb}); both branches "
                               f"must end in one format")
        if max(fa.bits, fb.bits) > bits:
            raise isa.IsaError(f"{name}: operands of {max(fa.bits, fb.bits)} bits added into {bits}")
    return isa.Instr(ADD, _cmd(dict(count=n, relu=int(bool(relu))), name), bits=bits)


def mask(n: int, bits: int, *, name: str = "mask"):
    """A MASK of ``n`` gradient elements by ``n`` forward values (``[g, x]`` in the scratch FIFO): ``g``
    where ``x > 0``, else 0, saturated to ``bits``."""
    isa = _isa()
    _check_bits(bits, name)
    if not _is_count(n) or n < 1:
        raise isa.IsaError(f"{name}: a mask needs at least one element, got {n!r}")
    return isa.Instr(MASK, _cmd(dict(count=n), name), bits=bits)


def _gap_cmd(shape, P: int, bits: int, stoch: int, seed: int, tid: int, name: str) -> dict:
    from pymtl_fp.golden.residual import gap_reciprocal

    isa = _isa()
    _check_bits(bits, name)
    try:
        n, c, h, w = (int(v) for v in shape)
    except (TypeError, ValueError):
        raise isa.IsaError(f"{name}: the pooled map's shape must be (N, C, H, W), got {shape!r}") from None
    if min(n, c, h, w) < 1 or not _is_count(P) or not 1 <= P <= 255:
        raise isa.IsaError(f"{name}: shape {tuple(shape)} on P = {P}: every extent must be positive and "
                           f"P in [1, 255]")
    if h * w > MAX_AREA:
        raise isa.IsaError(f"{name}: average pool area {h * w} too large: at most {MAX_AREA}")
    m, f = gap_reciprocal(h * w)
    ct = -(-c // P)
    return dict(count=n * ct * h * w * P, n=n, c=c, ct=ct, pk=P, hw=h * w, chw=c * h * w, rs=m, shift=f,
                stoch=int(bool(stoch)), seed=seed, tid=tid)


def gap(shape, P: int, bits: int, *, stoch: int = 0, seed: int = 0, tid: int = 0, name: str = "gap"):
    """A GAP of the ``shape = (N, C, H, W)`` map in the scratch FIFO (the activation layout of a
    ``P x P`` engine) into ``bits``-bit means.  Rounding is nearest unless ``stoch`` (the golden
    model's forward default); :func:`gapb` rounds stochastically by default, as the golden backward."""
    isa = _isa()
    return isa.Instr(GAP, _cmd(_gap_cmd(shape, P, bits, stoch, seed, tid, name), name), bits=bits)


def gapb(shape, P: int, bits: int, *, relu: bool = False, stoch: int = 1, seed: int = 0, tid: int = 0,
         name: str = "gapb"):
    """A GAPB: the scratch FIFO holds the gradient of the pool's ``(N, C, 1, 1)`` output (and, with
    ``relu``, the pool's ``shape = (N, C, H, W)`` input after it); the result is the input gradient."""
    isa = _isa()
    f = _gap_cmd(shape, P, bits, stoch, seed, tid, name)
    f.update(crs=f["n"] * f["ct"] * P, relu=int(bool(relu)))
    return isa.Instr(GAPB, _cmd(f, name), bits=bits)


def inputs(ins) -> int:
    """Elements a residual instruction finds in the scratch FIFO (and drops when it retires)."""
    if ins.kind in PAIR_KINDS:
        return 2 * ins.count
    if ins.kind == GAP:
        return ins.count
    return ins.field("crs") + (ins.count if ins.field("relu") else 0)


def push_every(ins) -> int:
    """Reads per result: a GAP appends one mean per ``A`` elements, the others one per element."""
    return ins.field("hw") if ins.kind == GAP else 1


def describe(ins) -> str:
    k = {ADD: "add", GAP: "gap", GAPB: "gapb", MASK: "mask"}[ins.kind]
    if ins.kind == ADD:
        return f"add x{ins.count}" + (" relu" if ins.field("relu") else "")
    if ins.kind == MASK:
        return f"mask x{ins.count}"
    return f"{k} x{ins.count} (A = {ins.field('hw')}, C = {ins.field('c')}, P = {ins.field('pk')})"


def _clamp(v: int, b: int) -> int:
    lo, hi = -(1 << (b - 1)), (1 << (b - 1)) - 1
    return min(hi, max(lo, v))


def apply_residual(values: list, ins, seed: int, stream_bits: int) -> list:
    """What ADD / MASK / GAP / GAPB leave in the scratch FIFO (``values``: its input, :func:`inputs` elements;
    ``seed``: the rounding seed in effect), as the RTL computes it."""
    from pymtl_fp.primitives.RequantRTL import requant_ref

    bits = ins.bits
    if ins.kind == ADD:
        n = ins.count
        out = [_clamp(_clamp(a + b, stream_bits), bits) for a, b in zip(values[:n], values[n:2 * n])]
        return [max(v, 0) for v in out] if ins.field("relu") else out
    if ins.kind == MASK:
        n = ins.count
        return [_clamp(_clamp(g, stream_bits), bits) if x > 0 else 0 for g, x in zip(values[:n], values[n:2 * n])]
    P, ct_n, c_n, area = ins.field("pk"), ins.field("ct"), ins.field("c"), ins.field("hw")
    m, f, stoch, tid = ins.field("rs"), ins.field("shift"), bool(ins.field("stoch")), ins.field("tid")
    groups = ins.count // (area * P)

    def rq(acc, index):
        return _clamp(requant_ref(acc, f, stream_bits, stochastic=stoch, seed=seed, tensor_id=tid,
                                  index=index % 2**32), bits)

    out = []
    if ins.kind == GAP:
        for g in range(groups):
            n, ct = divmod(g, ct_n)
            for j in range(P):
                c = ct * P + j
                total = sum(values[(g * area + hw) * P + j] for hw in range(area))
                out.append(rq(m * total, n * c_n + c) if c < c_n else 0)
        return out
    dyn, relu = ins.field("crs"), ins.field("relu")
    for g in range(groups):
        n, ct = divmod(g, ct_n)
        for hw in range(area):
            for j in range(P):
                c, pos = ct * P + j, (g * area + hw) * P + j
                real = c < c_n and not (relu and values[dyn + pos] <= 0)
                out.append(rq(m * values[g * P + j], (n * c_n + c) * area + hw) if real else 0)
    return out
