"""The engine's command word, defined once and without PyMTL3: fields, op codes, buffer ids.

A hardware team builds commands with this module alone (``pack(op=OP["fwd"], n=1, ...)``
gives the command as an integer, bit 0 = the LSB of the Verilog port ``cmd__msg``), and the
IP-kit writer (:mod:`pymtl_fp.engine.ipkit`) turns the same definition into the SystemVerilog
package, the C header and the Markdown command reference that ``pymtl-fp translate`` emits.
:mod:`pymtl_fp.engine.msgs` builds PyMTL3's command bitstruct from :data:`FIELDS` (the first
field is the most significant, as in a packed struct).

The data beats of ``din``/``dout`` (``E = stream_lanes`` elements per beat, per LOAD / STORE
command) are defined here too (:func:`to_beats`, :func:`from_beats`, :func:`stream_beats`,
:func:`stream_elements`), so the cocotb bench packs them without PyMTL3.

This file imports nothing from PyMTL3 or NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

#: operation name -> op code (LOAD and STORE stream data; the others compute)
OP = {"load": 0, "store": 1, "fwd": 2, "bwd_data": 3, "bwd_weight": 4, "pool_fwd": 5, "pool_bwd": 6,
      "update": 7}
#: buffer name -> id (``target`` of LOAD / STORE)
BUF = {"X": 0, "D": 1, "O": 2, "W": 3, "G": 4, "B": 5}
#: op code -> operation name, buffer id -> buffer name
OP_NAMES = {v: k for k, v in OP.items()}
BUF_NAMES = {v: k for k, v in BUF.items()}
#: what each buffer holds (``P`` = array side; a word holds P lanes, or P*P for W and G)
BUF_ROLES = {
    "X": "activations x (and the pool argmax); P lanes per word",
    "D": "gradients dy; P lanes per word",
    "O": "results y / dx / pooled y (and the argmax with amsel=1); P lanes per word",
    "W": "weights; P*P lanes per word",
    "G": "weight gradients dw; P*P lanes per word",
    "B": "bias b / bias gradient db; P lanes per word",
}

CONV = ("fwd", "bwd_data", "bwd_weight")
POOL = ("pool_fwd", "pool_bwd")
STREAM = ("load", "store")
COMPUTE = CONV + POOL + ("update",)
ALL = STREAM + COMPUTE

#: which buffer each address field names, per compute op (``d0`` moves with ``dsel``; the
#: argmax with ``amsel``)
ADDRESS_ROLES = {
    "fwd": dict(a0="X: x", a1="W: w", a2="B: b", d0="O: y"),
    "bwd_data": dict(a0="D: dy", a1="W: w", a2="X: x (ReLU mask)", d0="O: dx"),
    "bwd_weight": dict(a0="X: x", a1="D: dy", d0="G: dw (B with raw=1)", d1="B: db"),
    "pool_fwd": dict(a0="X: x", d0="O: y", d1="X: argmax"),
    "pool_bwd": dict(a0="D: dy", a1="X: argmax", d0="O: dx"),
    "update": dict(a0="W: w", a1="G: dw", d0="W: w (new)"),
}


@dataclass(frozen=True)
class Field:
    name: str
    bits: int
    ops: tuple  #: the operations that read it (others must leave it 0)
    meaning: str  #: what it holds and in which unit
    derived: str = ""  #: how the host computes it from other fields, if it is not a free choice


_D, _A = 16, 16  # dimension and buffer-address widths

#: the command fields, most significant first
FIELDS = (
    Field("op", 4, ALL, "operation code (table below)"),
    Field("target", 3, STREAM, "buffer id (table below)"),
    Field("addr", _A, STREAM, "first buffer word (words, not elements)"),
    Field("count", 24, STREAM, "elements streamed (not words): element e is lane e % L of word "
          "addr + e // L, L lanes per word of the target; each stream beat carries one element, "
          "sign-extended"),
    Field("n", _D, CONV + POOL, "images in the batch"),
    Field("c", _D, CONV + POOL + ("update",), "input channels"),
    Field("k", _D, CONV + ("update",), "output channels"),
    Field("ct", _D, CONV + POOL + ("update",), "input channel tiles", "ceil(c / P)"),
    Field("kt", _D, CONV + ("update",), "output channel tiles", "ceil(k / P)"),
    Field("h", _D, CONV + POOL, "input height (pixels)"),
    Field("w", _D, CONV + POOL, "input width (pixels)"),
    Field("ho", _D, CONV + POOL, "output height (pixels)",
          "conv: (h + 2*pad - r) / stride + 1; pool: h / pk"),
    Field("wo", _D, CONV + POOL, "output width (pixels)",
          "conv: (w + 2*pad - s) / stride + 1; pool: w / pk"),
    Field("r", _D, CONV + ("update",), "kernel height"),
    Field("s", _D, CONV + ("update",), "kernel width"),
    Field("lgst", 3, CONV, "log2 of the stride (strides are powers of two)", "log2(stride)"),
    Field("pad", 8, CONV, "zero padding on each side (pixels)"),
    Field("pk", 8, POOL, "max-pool window and stride"),
    Field("shift", 6, CONV + ("update",), "conv ops: right shift of the accumulator before "
          "rounding to the output width; update: the learning-rate shift (w -= dw >> shift, rounded)"),
    Field("bshift", 6, ("bwd_weight",), "right shift of the bias-gradient accumulator"),
    Field("relu", 1, ("fwd", "bwd_data"), "fwd: apply ReLU to y; bwd_data: mask dx where x <= 0"),
    Field("stoch", 1, CONV + ("update",), "rounding: 0 nearest, 1 stochastic (counter hash)"),
    Field("seed", 32, CONV + ("update",), "stochastic rounding: seed"),
    Field("tid", 8, CONV + ("update",), "stochastic rounding: tensor id of the result"),
    Field("btid", 8, ("bwd_weight",), "stochastic rounding: tensor id of db"),
    Field("a0", _A, COMPUTE, "first word of operand 0 (buffer per op, table below)"),
    Field("a1", _A, CONV + ("pool_bwd", "update"), "first word of operand 1"),
    Field("a2", _A, ("fwd", "bwd_data"), "first word of operand 2"),
    Field("d0", _A, COMPUTE, "first word of result 0"),
    Field("d1", _A, ("bwd_weight", "pool_fwd"), "first word of result 1"),
    Field("ovl", 1, ALL, "1: may start while other units run (no range conflict); 0: waits for all "
          "units to be idle"),
    Field("dsel", 2, ("fwd", "bwd_data", "pool_fwd", "pool_bwd"), "buffer of result d0: 0 O, 1 X, 2 D"),
    Field("amsel", 1, POOL, "buffer of the pool argmax (d1 of pool_fwd, a1 of pool_bwd): 0 X, 1 O"),
    Field("raw", 1, ("bwd_weight",), "1: dw and db leave un-rounded, accumulator-wide, in B (dw tile t's "
          "row i at B word d0 + t*P + i: the G layout's element order; db at d1), one row per drain "
          "cycle; shift, bshift, stoch, seed, tid and btid are unused (a data-parallel replica's "
          "partial sums, all-reduced and rounded once outside the engine)"),
    Field("pt", 8, CONV, "zero rows above the input window (the rows' padding: input row oh*stride + r - pt; "
          "rows below the window are zero too); pad pads the columns", "pad (a whole map); a row band: "
          "golden.band"),
    Field("hi", _D, ("fwd", "bwd_data"), "rows of the whole result map (y: Ho, dx: H), for the stochastic-"
          "rounding index only", "ho (fwd) or h (bwd_data) for a whole map; a row band: the map's"),
    Field("acc", 1, ("bwd_weight",), "with raw=1: add the un-rounded dw and db sums to those already in B "
          "(d1 = d0 + P words per dw tile: db right after dw), wrapping at the accumulator width: "
          "a weight gradient summed over row bands or images, rounded once outside the engine"),
    Field("bp", 1, ("fwd",), "1: batch-parallel -- the array's lanes carry P images of the batch (its columns) "
          "and P output channels (its rows), every MAC accumulating its own output over c, r, s; x and y "
          "are kept batch-innermost (msgs.pack_act_bp: image tiles, then channels, rows, columns; a word "
          "holds one element of P images), and each finished P x P tile drains one output channel a cycle"),
    Field("nt", _D, ("fwd",), "image tiles of a batch-parallel command (bp=1)", "ceil(n / P)"),
)

#: The products of geometry fields that address a compute command's tensors and bound its
#: hazard ranges, computed by the host (:func:`products`; :func:`pack` fills them): the engine
#: then multiplies no two command fields together.  name -> (factor fields, what it is).  Word
#: strides and sizes fit 17 bits (a tensor of a command fits its buffer, at most 2**16 words),
#: element strides (``c``, ``k`` not rounded up to tiles; ``hi``: the rows of the whole map, of which
#: a row-band command computes a band) 24 bits.
#:
#: The map strides and spans count *plane rows* (:data:`PLANES`): a map whose channel tiles are
#: planes of ``hp`` rows (input side) or ``hop`` rows (output side), of which the command walks the
#: first ``h`` (``ho``) from its address, so a row band reads its window and writes its rows in place
#: inside a whole map of several channel tiles.  For a dense map (``hp = h``, ``hop = ho``, the
#: default) every one is the product of its factors.
PRODUCTS = {
    "hw": (("hp", "w"), 17, "words between two input channel tiles of one image (x, dx): h*w, or hp*w "
           "for a map in planes of hp rows"),
    "howo": (("hop", "wo"), 17, "words between two output channel tiles of one image (y, dy, pooled): "
             "ho*wo, or hop*wo in planes"),
    "rs": (("r", "s"), 17, "taps of one kernel"),
    "cthw": (("ct", "hp", "w"), 17, "words between two input images (x, dx)"),
    "chw": (("c", "hi", "w"), 24, "elements of one whole input image (dx's flat index)"),
    "kthowo": (("kt", "hop", "wo"), 17, "words between two output images (y, dy)"),
    "cthowo": (("ct", "hop", "wo"), 17, "words between two pooled images"),
    "khowo": (("k", "hi", "wo"), 24, "elements of one whole output image (y's flat index)"),
    "ihowo": (("hi", "wo"), 24, "elements of one whole output channel (y's flat index)"),
    "ihw": (("hi", "w"), 24, "elements of one whole input channel (dx's flat index)"),
    "ctrs": (("ct", "r", "s"), 17, "W words of one output channel tile"),
    "crs": (("c", "r", "s"), 24, "weights of one output channel (dw's flat index)"),
    "sz_x": (("n", "ct", "h", "w"), 17, "words from the input map's first to past its last (x / dx, hazard "
             "range): n*ct*h*w, or ((n*ct - 1)*hp + h)*w in planes"),
    "sz_dy": (("n", "kt", "ho", "wo"), 17, "words of the output map y / dy (hazard range): n*kt*ho*wo, or "
              "((n*kt - 1)*hop + ho)*wo in planes"),
    "sz_w": (("kt", "ct", "r", "s"), 17, "W / G words of the weights (hazard range)"),
    "sz_pool": (("n", "ct", "ho", "wo"), 17, "words of the pooled map (hazard range): n*ct*ho*wo, or "
                "((n*ct - 1)*hop + ho)*wo in planes"),
}
#: the host-side layout of a command's maps (not command fields: they enter only through the
#: :data:`PRODUCTS`): plane rows -> the rows they default to.  ``hp``: rows of a plane of the
#: input-side map (x, dx, the pool's input), ``hop``: of the output-side map (y, dy, the pooled map
#: and its argmax); at least ``h`` / ``ho``.
PLANES = {"hp": "h", "hop": "ho"}
#: the products that lay out a map: with ``bp=1`` (batch-innermost maps) their ``n`` counts image
#: tiles (``nt``) and their ``ct`` / ``kt`` channels (``c`` / ``k``): ``cthw = c*hp*w`` words
#: between two image tiles, ``sz_x = nt*c*h*w`` words, ... (the pooled map's two, which a ``fwd``
#: does not use, likewise: so they fit their fields whenever the maps fit the buffers)
BP_MAPS = ("cthw", "kthowo", "sz_x", "sz_dy", "cthowo", "sz_pool")
#: plane rows -> the stride that shows them in a command, and the width it multiplies
_PLANE_STRIDES = {"hp": ("hw", "w"), "hop": ("howo", "wo")}
#: the spans: product -> (images, tiles, rows, width, plane rows): ``((n*t - 1)*plane + rows)*width``
_SPANS = {"sz_x": ("n", "ct", "h", "w", "hp"), "sz_dy": ("n", "kt", "ho", "wo", "hop"),
          "sz_pool": ("n", "ct", "ho", "wo", "hop")}


def _product_field(name: str) -> Field:
    factors, bits, meaning = PRODUCTS[name]
    dense = tuple(PLANES.get(x, x) for x in factors)
    ops = tuple(op for op in ALL if all(op in next(f for f in FIELDS if f.name == x).ops for x in dense))
    derived = "*".join(dense)
    if name in _SPANS:
        n, t, rows, width, plane = _SPANS[name]
        derived += f" (in planes: (({n}*{t} - 1)*{plane} + {rows})*{width})"
    elif dense != factors:
        derived += f" (in planes: {'*'.join(factors)})"
    return Field(name, bits, ops, meaning, derived)


FIELDS = FIELDS + tuple(_product_field(name) for name in PRODUCTS)
#: the geometry fields the products multiply (``nt``: a batch-parallel map's, :data:`BP_MAPS`)
FACTORS = frozenset(PLANES.get(x, x) for factors, _, _ in PRODUCTS.values() for x in factors) | {"nt"}
#: a batch-parallel map's factors in place of the channel-parallel ones (:data:`BP_MAPS`)
BP_FACTORS = {"n": "nt", "ct": "c", "kt": "k"}

FIELD = {f.name: f for f in FIELDS}
CMD_BITS = sum(f.bits for f in FIELDS)


def _lsbs() -> dict:
    lsb, out = CMD_BITS, {}
    for f in FIELDS:
        lsb -= f.bits
        out[f.name] = lsb
    return out


#: field name -> position of its least significant bit in the command word
LSB = _lsbs()


def products(fields: dict) -> dict:
    """``fields`` with the :data:`PRODUCTS` filled from their factors (missing fields count as 0).
    ``fields`` may hold the layout's plane rows (:data:`PLANES`, ``hp`` / ``hop``; not in the
    result): the map strides and spans then count them.  A product given in ``fields`` must equal
    its value (``ValueError`` naming it), and plane rows must not be fewer than the rows."""
    out = {k: v for k, v in fields.items() if k not in PLANES}
    geo = {x: int(fields.get(x, 0)) for x in FACTORS}
    for plane, rows in PLANES.items():
        stride, width = _PLANE_STRIDES[plane]
        given = int(fields.get(plane) or 0)
        st = int(fields.get(stride) or 0)
        if not given and geo[width] and st % geo[width] == 0 and st // geo[width] > geo[rows]:
            given = st // geo[width]  # a command's own strides: a map in planes
        geo[plane] = given or geo[rows]
        if geo[plane] < geo[rows]:
            raise ValueError(f"layout {plane}={geo[plane]}: a plane must hold the command's {rows}={geo[rows]} rows")
    # batch-parallel (bp=1): a map's "images" are its image tiles and its "tiles" its channels
    bp_geo = dict(geo, **{x: geo[y] for x, y in BP_FACTORS.items()}) if fields.get("bp") else geo
    for name, (factors, _, _) in PRODUCTS.items():
        g = bp_geo if name in BP_MAPS else geo
        if name in _SPANS:
            n, t, rows, width, plane = (g[x] for x in _SPANS[name])
            value = ((n * t - 1) * plane + rows) * width if n * t else 0
        else:
            value = 1
            for x in factors:
                value *= g[x]
        if name in fields and int(fields[name]) != value:
            dense = "*".join(PLANES.get(x, x) for x in factors)
            planes = f" with plane rows {geo['hp']}, {geo['hop']}" if dense != "*".join(factors) else ""
            raise ValueError(f"command field {name}={int(fields[name])} must be {dense} = {value}{planes} "
                             f"(or left out: it is filled in)")
        out[name] = value
    return out


def whole_map(op: str, fields: dict) -> dict:
    """``fields`` of a ``op`` command over whole maps, with its row-band fields filled where not
    given: ``pt = pad`` (the rows padded like the columns) and ``hi`` = the result's rows (``ho``
    for fwd, ``h`` for bwd_data).  A row band sets them itself (:mod:`pymtl_fp.golden.band`)."""
    out = dict(fields)
    if op in CONV:
        out.setdefault("pt", out.get("pad", 0))
    if op in ("fwd", "bwd_data"):
        out.setdefault("hi", out.get("ho" if op == "fwd" else "h", 0))
    return out


def pack(**fields: int) -> int:
    """The command with these fields (others 0) as an integer, the :data:`PRODUCTS` filled in;
    refuses unknown fields, values that do not fit and wrong products (``ValueError`` naming the
    field)."""
    unknown = set(fields) - set(FIELD) - set(PLANES)
    if unknown:
        raise ValueError(f"unknown command fields {sorted(unknown)}; known: {[f.name for f in FIELDS]}")
    fields = products(fields)
    word = 0
    for name, value in fields.items():
        bits, v = FIELD[name].bits, int(value)
        if not 0 <= v < (1 << bits):
            raise ValueError(f"command field {name}={v} does not fit in {bits} bits")
        word |= v << LSB[name]
    return word


def unpack(word: int) -> dict:
    """A command integer as ``{field: value}``."""
    word = int(word)
    if not 0 <= word < (1 << CMD_BITS):
        raise ValueError(f"a command is {CMD_BITS} bits wide")
    return {f.name: (word >> LSB[f.name]) & ((1 << f.bits) - 1) for f in FIELDS}


def words32(word: int) -> list:
    """The command as 32-bit words, least significant first (Verilator's layout of a wide port)."""
    return [(int(word) >> (32 * i)) & 0xFFFFFFFF for i in range(-(-CMD_BITS // 32))]


# ---- data beats: E elements per din/dout beat ---------------------------------------------------
#
# A LOAD or STORE of ``count`` elements moves ``ceil(count / E)`` beats of ``E * bits`` bits
# (``E`` = the engine's ``stream_lanes``, ``bits`` = its ``stream_bits``): beat ``b`` carries
# elements ``b*E .. b*E + E - 1`` of the command, element ``b*E + i`` in lane ``i`` = bits
# ``[i*bits, (i+1)*bits)``, two's complement.  The surplus lanes of a command's last beat are
# ignored by a LOAD and zero in a STORE.  Beats never span two commands.

def pack_beat(elements, bits: int) -> int:
    """Up to ``E`` signed elements as one beat (element ``i`` in lane ``i``; missing lanes zero)."""
    mask, word = (1 << bits) - 1, 0
    for i, v in enumerate(elements):
        word |= (int(v) & mask) << (i * bits)
    return word


def unpack_beat(word: int, lanes: int, bits: int) -> list:
    """The ``lanes`` signed elements of one beat."""
    word, mask, sign = int(word), (1 << bits) - 1, 1 << (bits - 1)
    out = []
    for i in range(lanes):
        v = (word >> (i * bits)) & mask
        out.append(v - (1 << bits) if v & sign else v)
    return out


def to_beats(elements, lanes: int, bits: int) -> list:
    """The elements of one LOAD (or STORE) as its beats (surplus lanes of the last beat zero)."""
    elements = list(elements)
    return [pack_beat(elements[b:b + lanes], bits) for b in range(0, len(elements), lanes)]


def from_beats(beats, count: int, lanes: int, bits: int, *, strict: bool = True) -> list:
    """The first ``count`` elements of the beats of one STORE (``ceil(count / lanes)`` beats);
    with ``strict``, ``ValueError`` if a surplus lane of the last beat is not zero."""
    beats = list(beats)
    if len(beats) != -(-int(count) // lanes):
        raise ValueError(f"{count} elements in {lanes}-element beats need {-(-int(count) // lanes)} beats, "
                         f"got {len(beats)}")
    out = []
    for word in beats:
        out.extend(unpack_beat(word, lanes, bits))
    if strict and any(out[count:]):
        raise ValueError(f"the last beat of a {count}-element STORE has non-zero surplus lanes: {out[count:]}")
    return out[:count]


def stream_beats(counts, elements, lanes: int, bits: int) -> list:
    """The beats of a sequence of LOADs with element ``counts``, from their ``elements`` (in order)."""
    out, pos = [], 0
    for n in counts:
        out.extend(to_beats(elements[pos:pos + n], lanes, bits))
        pos += n
    if pos != len(elements):
        raise ValueError(f"the LOADs take {pos} elements, the data-in stream has {len(elements)}")
    return out


def stream_elements(counts, beats, lanes: int, bits: int, *, strict: bool = True) -> list:
    """The elements of a sequence of STOREs with element ``counts``, from their ``beats``."""
    out, pos = [], 0
    for n in counts:
        k = -(-int(n) // lanes)
        out.extend(from_beats(beats[pos:pos + k], n, lanes, bits, strict=strict))
        pos += k
    if pos != len(beats):
        raise ValueError(f"the STOREs send {pos} beats, got {len(beats)}")
    return out
