"""Ports, message types and the on-chip data layout of the engine (shared by every level).

Ports of every engine level (FL, RTL, Verilator)::

    cmd   : RecvIfcRTL(CmdMsg)              commands, val/rdy
    din   : RecvIfcRTL(Bits<E*stream_bits>) data in (LOAD payloads), val/rdy
    dout  : SendIfcRTL(Bits<E*stream_bits>) data out (STORE payloads), val/rdy
    busy  : OutPort(1)                      a command is being executed

Commands take effect in order.  ``LOAD target, addr, count`` takes ``count`` elements
from ``din`` and writes element ``e`` to word ``addr + e // L``, lane ``e % L`` of buffer
``target`` (``L`` lanes per word).  ``STORE`` streams elements out in the same order.  ``count``
is in elements.  A beat carries ``E`` elements (``E`` = ``stream_lanes``, dividing ``P``): beat
``b`` of a command carries its elements ``b*E .. b*E + E - 1``, element ``b*E + i`` in lane ``i``
(bits ``[i*stream_bits, (i+1)*stream_bits)``, sign-extended); a LOAD takes ``ceil(count / E)``
beats and ignores the surplus lanes of its last beat, a STORE sends ``ceil(count / E)`` beats
with the surplus lanes of its last beat zero (:func:`pymtl_fp.engine.encoding.to_beats`,
:func:`~pymtl_fp.engine.encoding.from_beats`).  Since ``E`` divides ``L``, a beat never crosses
a word.  Compute commands read their operands from buffers and write
their results to buffers (buffer roles per operation: :data:`OP_BUFFERS`).

Overlap (field ``ovl``).  Three units execute commands: LD (LOADs), ST (STOREs) and EX (compute
commands), each one command at a time; commands are accepted in order (a command that cannot be
accepted holds the ones behind it).  A command with ``ovl = 0`` is accepted only when all three
units are idle (the serial engine, cycle for cycle).  A command ``C`` with ``ovl = 1`` is accepted
while other units are busy when its own unit is idle and, for every busy unit ``U``, no range of
:func:`access_ranges` of ``C`` conflicts with one of ``U`` (:func:`ranges_conflict`): on the same
buffer, either both read or both write (every buffer has one read and one write port, so they
would need the same port), or one reads and the other writes intersecting word ranges (RAW, WAR;
WAW is already a port conflict).  The busy units' ranges are captured at acceptance.  Therefore
every word a running command reads or writes is untouched by the commands accepted after it
until it finishes, and every port has one user: the results are those of executing the
commands one at a time, in order.

Buffers (``P`` = array side)::

    X  P lanes  x act_depth      activations x (and pool argmax)
    D  P lanes  x act_depth      gradients dy
    O  P lanes  x act_depth      results y / dx / pooled y
    W  P*P lanes x weight_depth  weights
    G  P*P lanes x weight_depth  weight gradients dw
    B  P lanes  x bias_depth     bias b (accumulator units) / db

Layouts (channels padded with zeros to a multiple of ``P``, ``CT = ceil(C/P)``, ``KT = ...``):
an activation ``(N, C, H, W)`` element ``[n, c, h, w]`` is lane ``c % P`` of word
``((n*CT + c//P)*H + h)*W + w``; a weight ``(K, C, R, S)`` element ``[k, c, r, s]`` is lane
``(k % P)*P + c % P`` of word ``((k//P*CT + c//P)*R + r)*S + s``; a bias ``[k]`` is lane ``k % P``
of word ``k // P``.  A batch-parallel ``fwd`` (``bp = 1``) keeps its ``x`` and ``y`` *batch-innermost*
(:func:`pack_act_bp`): element ``[n, c, h, w]`` is lane ``n % P`` of word ``((n//P*C + c)*H + h)*W + w``
(``NT = ceil(N/P)`` image tiles; channels not padded), and writes only the ``N x K`` outputs (the
lanes of images past ``N`` keep their values).

A compute command's maps may be kept in *planes* (:data:`pymtl_fp.engine.encoding.PLANES`): the
command walks ``h`` rows of each channel tile of a map whose channel tiles are ``hp*w`` words apart
(images ``ct*hp*w``), so a row band reads its window, and writes its rows, inside a whole map in
place.  The strides are the command's product fields (``hw``, ``cthw``, ``howo``, ...); the
element ``[n, c, h, w]`` of such a map is lane ``c % P`` of word ``a + n*cthw + (c//P)*hw + h*w_ + w``
(``w_`` the width) from the command's address ``a`` (:func:`map_words`).
"""

from __future__ import annotations

import numpy as np
from pymtl3 import mk_bits, mk_bitstruct

from pymtl_fp import timing
from pymtl_fp.engine import encoding

# operation codes
OP_LOAD, OP_STORE, OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT, OP_POOL_FWD, OP_POOL_BWD, OP_UPDATE = range(8)
#: compute operation name -> op code (the names: :data:`pymtl_fp.timing.COMPUTE_OPS`, in code order)
OPS = {name: code for code, name in enumerate(timing.COMPUTE_OPS, OP_FWD)}
OP_NAMES = {v: k for k, v in OPS.items()} | {OP_LOAD: "load", OP_STORE: "store"}

# buffer ids
BUF_X, BUF_D, BUF_O, BUF_W, BUF_G, BUF_B = range(6)
BUF_NAMES = {BUF_X: "X", BUF_D: "D", BUF_O: "O", BUF_W: "W", BUF_G: "G", BUF_B: "B"}
BUF_IDS = {name: i for i, name in BUF_NAMES.items()}

#: ``dsel``: the buffer a compute command's ``d0`` result goes to (fwd, bwd_data, pool_fwd and
#: pool_bwd; 0 for every other command).  O is the default; X and D let a layer write its output
#: where the next layer reads it (forward: its input in X; backward: its output gradient in D), so
#: no copy through the streams is needed.  :func:`check_cmd` refuses what the datapath cannot do.
DSEL_O, DSEL_X, DSEL_D = 0, 1, 2
DSEL_BUF = {DSEL_O: BUF_O, DSEL_X: BUF_X, DSEL_D: BUF_D}
DSEL_OPS = (OP_FWD, OP_BWD_DATA, OP_POOL_FWD, OP_POOL_BWD)
#: ``amsel``: where pool_fwd writes its argmax (``d1``) and pool_bwd reads it (``a1``): X (0, the
#: default) or O (1).  With the argmax in O, pool_fwd may write its pooled result into X, where
#: the next layer reads it.
AMSEL_BUF = {0: BUF_X, 1: BUF_O}

#: per operation: which buffer each of the address fields a0, a1, a2, d0, d1 refers to (d0: with
#: ``dsel = 0``; ``dsel`` 1 / 2 put it in X / D instead)
OP_BUFFERS = {
    "fwd": dict(a0=("X", "x"), a1=("W", "w"), a2=("B", "b"), d0=("O", "y")),
    "bwd_data": dict(a0=("D", "dy"), a1=("W", "w"), a2=("X", "x (ReLU mask)"), d0=("O", "dx")),
    "bwd_weight": dict(a0=("X", "x"), a1=("D", "dy"), d0=("G", "dw"), d1=("B", "db")),
    "pool_fwd": dict(a0=("X", "x"), d0=("O", "y"), d1=("X", "argmax")),
    "pool_bwd": dict(a0=("D", "dy"), a1=("X", "argmax"), d0=("O", "dx")),
    "update": dict(a0=("W", "w"), a1=("G", "dw"), d0=("W", "w (new)")),
}

DIM_BITS = encoding.FIELD["n"].bits
ADDR_BITS = encoding.FIELD["addr"].bits
COUNT_BITS = encoding.FIELD["count"].bits

#: command fields, in order: (name, width) -- defined once, without PyMTL3, in
#: :mod:`pymtl_fp.engine.encoding` (which also emits the SystemVerilog package and C header)
CMD_FIELDS = [(f.name, f.bits) for f in encoding.FIELDS]
assert OP_NAMES == encoding.OP_NAMES and BUF_NAMES == encoding.BUF_NAMES

_CMD_TYPE = None


def cmd_type():
    """The command bitstruct (the same for every configuration)."""
    global _CMD_TYPE
    if _CMD_TYPE is None:
        _CMD_TYPE = mk_bitstruct("EngineCmd", {name: mk_bits(bits) for name, bits in CMD_FIELDS})
    return _CMD_TYPE


def data_type(cfg):
    """The ``din``/``dout`` message: ``stream_lanes`` elements of ``stream_bits`` bits."""
    return mk_bits(cfg.beat_bits)


def make_cmd(**fields):
    """A command message; unspecified fields are 0 and the products of geometry fields
    (:data:`encoding.PRODUCTS`) are filled in, counting the plane rows ``hp`` / ``hop`` where given
    (:data:`encoding.PLANES`: a map kept in planes).  Values are checked against field widths."""
    Cmd = cmd_type()
    widths = dict(CMD_FIELDS)
    unknown = set(fields) - set(widths) - set(encoding.PLANES)
    if unknown:
        raise ValueError(f"unknown command fields {sorted(unknown)}; known: {sorted(widths)}")
    fields = encoding.products(fields)
    args = []
    for name, bits in CMD_FIELDS:
        v = int(fields.get(name, 0))
        if not 0 <= v < (1 << bits):
            raise ValueError(f"command field {name}={v} does not fit in {bits} bits")
        args.append(mk_bits(bits)(v))
    return Cmd(*args)


def cmd_fields(msg) -> dict:
    """A command message as a dict of Python ints."""
    return {name: int(getattr(msg, name)) for name, _ in CMD_FIELDS}


# ---- address ranges and overlap hazards ----------------------------------------------------

UNIT_LD, UNIT_ST, UNIT_EX = range(3)


def unit_of(op: int) -> int:
    """The unit executing op code ``op``."""
    return UNIT_LD if op == OP_LOAD else UNIT_ST if op == OP_STORE else UNIT_EX


def buffer_lanes(buf: int, P: int) -> int:
    return P * P if buf in (BUF_W, BUF_G) else P


def buffer_depth(buf: int, cfg) -> int:
    """Words of buffer ``buf`` in an engine of ``cfg``."""
    if buf in (BUF_W, BUF_G):
        return cfg.weight_depth
    return cfg.bias_depth if buf == BUF_B else cfg.act_depth


def access_ranges(f: dict, cfg) -> list:
    """The buffer words a command touches: ``[(buffer id, first word, end word, is_write)]``
    (``end`` exclusive; the extents :class:`~pymtl_fp.engine.EngineFL.EngineFL` reads and
    writes; a map in planes spans from its first word to past its last, the gaps between its
    planes included).  ``f`` is a dict of command fields (:func:`cmd_fields`).  LOAD writes and STORE
    reads words ``[addr, addr + ceil(count / lanes))`` of ``target``.  The RTL computes the same
    ranges with 32-bit arithmetic (exact for every command whose ranges fit the buffers)."""
    P = cfg.P if hasattr(cfg, "P") else int(cfg)
    op = f["op"]
    if op in (OP_LOAD, OP_STORE):
        t = f["target"]
        return [(t, f["addr"], f["addr"] + tiles(f["count"], buffer_lanes(t, P)), op == OP_LOAD)]
    if "sz_x" not in f:  # the spans (a dict of free fields only)
        f = encoding.products(f)
    kt, xin, dout_, wts, pool_out = f["kt"], f["sz_x"], f["sz_dy"], f["sz_w"], f["sz_pool"]
    a0, a1, a2, d0, d1 = (f[k] for k in ("a0", "a1", "a2", "d0", "d1"))
    OD = DSEL_BUF.get(f.get("dsel", 0), BUF_O)  # where d0 goes (check_cmd refuses dsel = 3)
    AM = AMSEL_BUF[f.get("amsel", 0) & 1]       # the pool argmax
    if op == OP_FWD:
        rng = [(BUF_X, a0, xin, 0), (BUF_W, a1, wts, 0), (BUF_B, a2, kt, 0), (OD, d0, dout_, 1)]
    elif op == OP_BWD_DATA:
        rng = [(BUF_D, a0, dout_, 0), (BUF_W, a1, wts, 0), (BUF_X, a2, xin, 0), (OD, d0, xin, 1)]
    elif op == OP_BWD_WEIGHT:
        if f.get("raw", 0):  # dw rows accumulator-wide in B: P words per tile
            rng = [(BUF_X, a0, xin, 0), (BUF_D, a1, dout_, 0), (BUF_B, d0, wts * P, 1), (BUF_B, d1, kt, 1)]
            if f.get("acc", 0):  # adds to them: reads dw and db (db right after dw) in B
                rng.insert(2, (BUF_B, d0, wts * P + kt, 0))
        else:
            rng = [(BUF_X, a0, xin, 0), (BUF_D, a1, dout_, 0), (BUF_G, d0, wts, 1), (BUF_B, d1, kt, 1)]
    elif op == OP_POOL_FWD:
        rng = [(BUF_X, a0, xin, 0), (OD, d0, pool_out, 1), (AM, d1, pool_out, 1)]
    elif op == OP_POOL_BWD:
        rng = [(BUF_D, a0, pool_out, 0), (AM, a1, pool_out, 0), (OD, d0, xin, 1)]
    elif op == OP_UPDATE:
        rng = [(BUF_W, a0, wts, 0), (BUF_G, a1, wts, 0), (BUF_W, d0, wts, 1)]
    else:
        return []
    return [(b, a, a + size, bool(wr)) for b, a, size, wr in rng]


def check_cmd(f: dict, cfg) -> None:
    """Refuse, with a ``ValueError`` naming the field, a compute command the datapath cannot
    execute as the in-order semantics say: a ``dsel`` other than O / X / D or on an operation
    without a ``d0`` activation result, an ``amsel`` on an operation without an argmax, a
    pool_fwd whose result and argmax would need the same buffer's write port in the same cycles
    (``dsel = 1`` with the argmax in X, or ``dsel = 0`` with it in O), and, with a non-default
    ``dsel`` / ``amsel``, a result that overlaps words the same command reads (the RTL writes
    results while it still reads operands; FL writes them after); a conv's ``pt`` as tall as its
    kernel; ``raw`` off ``bwd_weight``, its ``dw`` and ``db`` overlapping, and ``acc`` without ``raw``
    or with ``db`` not right after ``dw``.  Compilers call it before any simulation; the engines
    assume it holds."""
    op, dsel, amsel = f["op"], f.get("dsel", 0), f.get("amsel", 0)
    if f.get("bp", 0) or f.get("nt", 0):
        P = cfg.P if hasattr(cfg, "P") else int(cfg)
        if op != OP_FWD:
            raise ValueError(f"{OP_NAMES.get(op, op)}: bp=1 (batch-parallel) and nt are only for fwd")
        if not f.get("bp", 0) or f.get("nt", 0) != tiles(f.get("n", 0), P):
            raise ValueError(f"fwd bp=1: nt={f.get('nt', 0)} must be the image tiles ceil(n / P) = "
                             f"{tiles(f.get('n', 0), P)}")
    if dsel not in DSEL_BUF:
        raise ValueError(f"command field dsel={dsel}: 0 (O), 1 (X) or 2 (D)")
    if amsel not in AMSEL_BUF:
        raise ValueError(f"command field amsel={amsel}: 0 (X) or 1 (O)")
    name = OP_NAMES.get(op, str(op))
    if op in (OP_FWD, OP_BWD_DATA, OP_BWD_WEIGHT) and not f.get("pt", 0) < max(1, f.get("r", 0)):
        raise ValueError(f"{name}: pt={f.get('pt', 0)} zero rows above the window must be fewer than the "
                         f"kernel's {f.get('r', 0)} rows")
    if f.get("raw", 0):
        if op != OP_BWD_WEIGHT:
            raise ValueError(f"{name}: raw=1 is only for bwd_weight (un-rounded dw and db in B)")
        (_, lo0, hi0, _), (_, lo1, hi1, _) = access_ranges(f, cfg)[-2:]
        if _intersect(lo0, hi0, lo1, hi1):
            raise ValueError(f"bwd_weight raw: dw [{lo0}, {hi0}) and db [{lo1}, {hi1}) overlap in B")
        if f.get("acc", 0) and lo1 != hi0:
            raise ValueError(f"bwd_weight raw acc: db (d1={lo1}) must follow dw, at d0 + its {hi0 - lo0} words "
                             f"= {hi0}")
    elif f.get("acc", 0):
        raise ValueError(f"{name}: acc=1 is only for bwd_weight with raw=1 (adds the un-rounded sums in B)")
    if dsel == DSEL_O and amsel == 0:
        return
    if dsel != DSEL_O and op not in DSEL_OPS:
        raise ValueError(f"{name}: dsel={dsel} is only for fwd, bwd_data, pool_fwd and pool_bwd results")
    if amsel and op not in (OP_POOL_FWD, OP_POOL_BWD):
        raise ValueError(f"{name}: amsel={amsel} is only for pool_fwd and pool_bwd (the argmax)")
    if op == OP_POOL_FWD and DSEL_BUF[dsel] == AMSEL_BUF[amsel]:
        b = BUF_NAMES[AMSEL_BUF[amsel]]
        raise ValueError(f"pool_fwd: dsel={dsel} puts the result in {b}, where the argmax (d1, "
                         f"amsel={amsel}) takes {b}'s write port in the same cycles; put them in "
                         f"different buffers")
    rng = access_ranges(f, cfg)
    for wb, wlo, whi, ww in rng:
        if not ww:
            continue
        for b, lo, hi, wr in rng:
            if not wr and b == wb and _intersect(lo, hi, wlo, whi):
                raise ValueError(f"{name}: its result [{wlo}, {whi}) in {BUF_NAMES[b]} overlaps "
                                 f"words [{lo}, {hi}) it reads")


def _intersect(a0, e0, a1, e1) -> bool:
    return a0 < e0 and a1 < e1 and a0 < e1 and a1 < e0


def ranges_conflict(ra: list, rb: list) -> bool:
    """Whether two commands' :func:`access_ranges` may not run concurrently: on one buffer both
    read or both write (one port each), or one writes words the other reads."""
    return any(ba == bb and (wa == wb or _intersect(fa, ea, fb, eb))
               for ba, fa, ea, wa in ra for bb, fb, eb, wb in rb)


def ranges_depend(ra: list, rb: list) -> bool:
    """Whether two commands' :func:`access_ranges` share words one of them writes (their program
    order decides the results; unlike :func:`ranges_conflict`, ports do not matter)."""
    return any(ba == bb and (wa or wb) and _intersect(fa, ea, fb, eb)
               for ba, fa, ea, wa in ra for bb, fb, eb, wb in rb)


# ---- data layout ---------------------------------------------------------------------------

def tiles(n: int, p: int) -> int:
    return -(-int(n) // p)


def pack_act(x: np.ndarray, P: int) -> np.ndarray:
    """(N, C, H, W) -> (N*CT*H*W, P) buffer words."""
    n, c, h, w = x.shape
    ct = tiles(c, P)
    xp = np.zeros((n, ct * P, h, w), dtype=np.int64)
    xp[:, :c] = x
    return xp.reshape(n, ct, P, h, w).transpose(0, 1, 3, 4, 2).reshape(-1, P)


def pack_act_bp(x: np.ndarray, P: int) -> np.ndarray:
    """(N, C, H, W) -> (NT*C*H*W, P) buffer words of the batch-innermost layout (``bp=1``):
    element ``[n, c, h, w]`` is lane ``n % P`` of word ``((n//P*C + c)*H + h)*W + w``; the images of
    the last tile past ``N`` are zero."""
    n, c, h, w = x.shape
    nt = tiles(n, P)
    xp = np.zeros((nt * P, c, h, w), dtype=np.int64)
    xp[:n] = x
    return xp.reshape(nt, P, c, h, w).transpose(0, 2, 3, 4, 1).reshape(-1, P)


def unpack_act_bp(words: np.ndarray, shape, P: int) -> np.ndarray:
    """The inverse of :func:`pack_act_bp` (the first ``NT*C*H*W`` words; images past ``N`` dropped)."""
    n, c, h, w = shape
    nt = tiles(n, P)
    a = np.asarray(words, dtype=np.int64)[: nt * c * h * w].reshape(nt, c, h, w, P)
    return a.transpose(0, 4, 1, 2, 3).reshape(nt * P, c, h, w)[:n].copy()


def map_words(n: int, t: int, h: int, w: int, tile_stride: int, image_stride: int) -> np.ndarray:
    """The word offsets of a map of ``n`` images, ``t`` channel tiles, ``h x w`` pixels whose tiles
    are ``tile_stride`` words apart and images ``image_stride`` (dense: ``h*w`` and ``t*h*w``), in the
    dense layout's order."""
    i = np.arange(n)[:, None, None, None] * image_stride + np.arange(t)[None, :, None, None] * tile_stride
    return (i + np.arange(h * w).reshape(1, 1, h, w)).reshape(-1)


def unpack_act(words: np.ndarray, shape, P: int) -> np.ndarray:
    n, c, h, w = shape
    ct = tiles(c, P)
    a = np.asarray(words, dtype=np.int64)[: n * ct * h * w].reshape(n, ct, h, w, P)
    return a.transpose(0, 1, 4, 2, 3).reshape(n, ct * P, h, w)[:, :c].copy()


def pack_weight(w: np.ndarray, P: int) -> np.ndarray:
    """(K, C, R, S) -> (KT*CT*R*S, P*P) buffer words."""
    k, c, r, s = w.shape
    kt, ct = tiles(k, P), tiles(c, P)
    wp = np.zeros((kt * P, ct * P, r, s), dtype=np.int64)
    wp[:k, :c] = w
    return wp.reshape(kt, P, ct, P, r, s).transpose(0, 2, 4, 5, 1, 3).reshape(-1, P * P)


def unpack_weight(words: np.ndarray, shape, P: int) -> np.ndarray:
    k, c, r, s = shape
    kt, ct = tiles(k, P), tiles(c, P)
    a = np.asarray(words, dtype=np.int64)[: kt * ct * r * s].reshape(kt, ct, r, s, P, P)
    return a.transpose(0, 4, 1, 5, 2, 3).reshape(kt * P, ct * P, r, s)[:k, :c].copy()


def pack_bias(b: np.ndarray, P: int) -> np.ndarray:
    k = b.shape[0]
    bp = np.zeros(tiles(k, P) * P, dtype=np.int64)
    bp[:k] = b
    return bp.reshape(-1, P)


def unpack_bias(words: np.ndarray, k: int, P: int) -> np.ndarray:
    return np.asarray(words, dtype=np.int64).reshape(-1)[:k].copy()


def to_word(value: int, bits: int) -> int:
    """A signed element as an unsigned ``bits``-wide word (two's complement)."""
    return int(value) & ((1 << bits) - 1)


def from_word(word: int, bits: int) -> int:
    """An unsigned ``bits``-wide word as a signed integer."""
    word = int(word) & ((1 << bits) - 1)
    return word - (1 << bits) if word >> (bits - 1) else word
