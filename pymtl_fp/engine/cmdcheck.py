"""The engine command check with one error code per rule, in Python and as C for the kit's header.

:func:`check` refuses a command (a dict of :mod:`pymtl_fp.engine.encoding` fields) that an engine of
a configuration cannot execute as the reference says: what :func:`pymtl_fp.engine.cases.validate_case`
refuses of a case and can be seen in its command (sizes, tiles, padding, row-band fields, pooling,
stochastic rounding on an engine without it, every operand inside its buffer, for any addresses),
:func:`pymtl_fp.engine.msgs.check_cmd`'s rules (``dsel``, ``amsel``, ``raw``/``acc``, ``bp``/``nt``,
results over words the command reads) and :func:`pymtl_fp.engine.encoding.products`' (a product
field that is not its factors' product, for the map's plane rows), plus a LOAD or STORE running past
its buffer.  It returns 0 or the code of the first rule broken (:data:`RULES`, in the order checked).
What needs the data is not a command's to check: the accumulator's range (the case check's bound).

:func:`c_code` emits the same check as ``T_cmd_check()`` with an enum of the codes and
``T_cmd_error_str()``, and ``T_cmd_derive()``, which fills every field the host derives (``ct``,
``kt``, ``ho``, ``wo``, ``lgst``, ``pt``, ``hi``, ``nt`` and the products) from a whole-map layer's
free fields and the stride, as :mod:`pymtl_fp.engine.program` does.  ``tests/test_engine_cmdcheck.py``
compiles them and holds them to the Python.

PyMTL3-free (imports :mod:`pymtl_fp.engine.encoding` only).
"""

from __future__ import annotations

from pymtl_fp.engine import encoding as enc

#: (enum name, what it refuses), code = position + 1; checked in this order
RULES = (
    ("OP", "op is not an operation code (0..7)"),
    ("FIELD_WIDTH", "a field's value does not fit its bits"),
    ("TARGET", "LOAD/STORE target is not a buffer id (0..5)"),
    ("STREAM_RANGE", "LOAD/STORE words addr .. addr + ceil(count / lanes) - 1 run past the target buffer"),
    ("STOCH", "stoch = 1 on an engine built without stochastic rounding"),
    ("SHIFT", "shift or bshift above 32"),
    ("ZERO_DIM", "a size the operation uses is 0 (n, c, k, h, w, ho, wo, r, s)"),
    ("TILES", "ct is not ceil(c / P) or kt not ceil(k / P)"),
    ("PAD", "pad is not below min(r, s)"),
    ("PT", "pt (zero rows above the window) is not below r"),
    ("WO", "wo is not (w + 2*pad - s) / stride + 1 (or the kernel is wider than the padded map)"),
    ("HI", "hi below the result's rows (fwd: ho, bwd_data: h), or a whole map beyond the 24-bit index"),
    ("POOL_K", "pk is 0 or above 8, or its argmax pk*pk - 1 does not fit ACT_BITS"),
    ("POOL_SHAPE", "h or w is not a multiple of pk, or ho, wo are not h / pk, w / pk"),
    ("BP", "bp or nt on an operation other than fwd, or nt is not ceil(n / P)"),
    ("DSEL", "dsel is 3, or not 0 on an operation without a d0 activation result"),
    ("AMSEL", "amsel = 1 on an operation other than pool_fwd / pool_bwd"),
    ("RAW", "raw on an operation other than bwd_weight, or acc without raw"),
    ("POOL_SAME_BUF", "pool_fwd's result and argmax in one buffer (one write port)"),
    ("PRODUCT", "a product field is not its factors' product (hw = h*w, ...; for a map in planes of hp rows)"),
    ("RAW_LAYOUT", "raw: dw and db overlap in B, or with acc db does not start right after dw"),
    ("RANGE", "an operand or result runs past its buffer's last word"),
    ("SELF_OVERLAP", "with dsel or amsel not 0, a result overlaps words the same command reads"),
    ("STRIDE", "T_cmd_derive: the stride is not a power of two in 1..128"),
)
CODE = {name: i + 1 for i, (name, _) in enumerate(RULES)}

CONV = (2, 3, 4)
POOL = (5, 6)
_X, _D, _O, _W, _G, _B = range(6)
_DSEL_BUF = {0: _O, 1: _X, 2: _D}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _depth(cfg, buf: int) -> int:
    return cfg.weight_depth if buf in (_W, _G) else cfg.bias_depth if buf == _B else cfg.act_depth


def _plane_rows(f: dict) -> tuple:
    """``hp``, ``hop`` as :func:`encoding.products` infers them from the command's strides."""
    out = []
    for rows, stride, width in (("h", "hw", "w"), ("ho", "howo", "wo")):
        st, wd, r = f[stride], f[width], f[rows]
        out.append(st // wd if wd and st % wd == 0 and st // wd > r else r)
    return tuple(out)


def _products(f: dict, hp: int, hop: int) -> dict:
    g = dict(f, hp=hp, hop=hop)
    bpg = dict(g, n=g["nt"], ct=g["c"], kt=g["k"]) if f["bp"] else g
    out = {}
    for name, (factors, _, _) in enc.PRODUCTS.items():
        v = bpg if name in enc.BP_MAPS else g
        if name in enc._SPANS:
            n, t, rows, width, plane = (v[x] for x in enc._SPANS[name])
            out[name] = ((n * t - 1) * plane + rows) * width if n * t else 0
        else:
            p = 1
            for x in factors:
                p *= v[x]
            out[name] = p
    return out


def ranges(f: dict, P: int) -> list:
    """``[(buffer, first, end, is_write)]`` of a compute command (as :func:`msgs.access_ranges`)."""
    op, kt = f["op"], f["kt"]
    xin, dout, wts, pool = f["sz_x"], f["sz_dy"], f["sz_w"], f["sz_pool"]
    a0, a1, a2, d0, d1 = f["a0"], f["a1"], f["a2"], f["d0"], f["d1"]
    od, am = _DSEL_BUF.get(f["dsel"], _O), _O if f["amsel"] else _X
    if op == 2:
        r = [(_X, a0, xin, 0), (_W, a1, wts, 0), (_B, a2, kt, 0), (od, d0, dout, 1)]
    elif op == 3:
        r = [(_D, a0, dout, 0), (_W, a1, wts, 0), (_X, a2, xin, 0), (od, d0, xin, 1)]
    elif op == 4 and f["raw"]:
        r = [(_X, a0, xin, 0), (_D, a1, dout, 0), (_B, d0, wts * P, 1), (_B, d1, kt, 1)]
        if f["acc"]:
            r.insert(2, (_B, d0, wts * P + kt, 0))
    elif op == 4:
        r = [(_X, a0, xin, 0), (_D, a1, dout, 0), (_G, d0, wts, 1), (_B, d1, kt, 1)]
    elif op == 5:
        r = [(_X, a0, xin, 0), (od, d0, pool, 1), (am, d1, pool, 1)]
    elif op == 6:
        r = [(_D, a0, pool, 0), (am, a1, pool, 0), (od, d0, xin, 1)]
    elif op == 7:
        r = [(_W, a0, wts, 0), (_G, a1, wts, 0), (_W, d0, wts, 1)]
    else:
        return []
    return [(b, a, a + n, bool(wr)) for b, a, n, wr in r]


def _meets(a0, e0, a1, e1) -> bool:
    return a0 < e0 and a1 < e1 and a0 < e1 and a1 < e0


def check(fields: dict, cfg) -> int:
    """0, or the code (:data:`CODE`) of the first rule the command ``fields`` (missing fields 0)
    breaks on an engine of ``cfg``."""
    f = {x.name: int(fields.get(x.name, 0)) for x in enc.FIELDS}
    P, op = cfg.P, f["op"]
    if not 0 <= op <= 7:
        return CODE["OP"]
    if any(not 0 <= f[x.name] < 1 << x.bits for x in enc.FIELDS):
        return CODE["FIELD_WIDTH"]
    if op in (0, 1):
        if f["target"] > 5:
            return CODE["TARGET"]
        lanes = P * P if f["target"] in (_W, _G) else P
        return CODE["STREAM_RANGE"] if f["addr"] + _cdiv(f["count"], lanes) > _depth(cfg, f["target"]) else 0
    conv, pool, upd = op in CONV, op in POOL, op == 7
    if f["stoch"] and not cfg.stochastic:
        return CODE["STOCH"]
    if f["shift"] > 32 or f["bshift"] > 32:
        return CODE["SHIFT"]
    dims = ("n", "c", "k", "h", "w", "ho", "wo", "r", "s") if conv else \
        ("n", "c", "h", "w", "ho", "wo") if pool else ("k", "c", "r", "s")
    if any(f[d] == 0 for d in dims):
        return CODE["ZERO_DIM"]
    if f["ct"] != _cdiv(f["c"], P) or ((conv or upd) and f["kt"] != _cdiv(f["k"], P)):
        return CODE["TILES"]
    if conv:
        st = 1 << f["lgst"]
        if f["pad"] >= min(f["r"], f["s"]):
            return CODE["PAD"]
        if f["pt"] >= f["r"]:
            return CODE["PT"]
        if f["w"] + 2 * f["pad"] < f["s"] or f["wo"] != (f["w"] + 2 * f["pad"] - f["s"]) // st + 1:
            return CODE["WO"]
        if op in (2, 3):
            rows, plane = (f["ho"], f["k"] * f["wo"]) if op == 2 else (f["h"], f["c"] * f["w"])
            if f["hi"] < rows or plane * f["hi"] >= 1 << 24:
                return CODE["HI"]
    if pool:
        pk = f["pk"]
        if not 1 <= pk <= 8 or pk * pk - 1 > (1 << (cfg.act_bits - 1)) - 1:
            return CODE["POOL_K"]
        if f["h"] % pk or f["w"] % pk or f["ho"] != f["h"] // pk or f["wo"] != f["w"] // pk:
            return CODE["POOL_SHAPE"]
    if f["bp"] or f["nt"]:
        if op != 2 or not f["bp"] or f["nt"] != _cdiv(f["n"], P):
            return CODE["BP"]
    if f["dsel"] == 3 or (f["dsel"] and op not in (2, 3, 5, 6)):
        return CODE["DSEL"]
    if f["amsel"] and not pool:
        return CODE["AMSEL"]
    if (f["raw"] and op != 4) or (f["acc"] and not f["raw"]):
        return CODE["RAW"]
    if op == 5 and _DSEL_BUF[f["dsel"]] == (_O if f["amsel"] else _X):
        return CODE["POOL_SAME_BUF"]
    hp, hop = _plane_rows(f)
    if any(f[name] != v for name, v in _products(f, hp, hop).items()):
        return CODE["PRODUCT"]
    rng = ranges(f, P)
    if f["raw"]:
        (_, lo0, hi0, _), (_, lo1, hi1, _) = rng[-2:]
        if _meets(lo0, hi0, lo1, hi1) or (f["acc"] and lo1 != hi0):
            return CODE["RAW_LAYOUT"]
    if any(end > _depth(cfg, b) for b, _, end, _ in rng):
        return CODE["RANGE"]
    if f["dsel"] or f["amsel"]:
        for wb, wlo, whi, ww in rng:
            if ww and any(not wr and b == wb and _meets(lo, hi, wlo, whi) for b, lo, hi, wr in rng):
                return CODE["SELF_OVERLAP"]
    return 0


# ---- C -------------------------------------------------------------------------------------------

#: per compute op code: the ranges of :func:`ranges` as C (buffer, address, size, is_write); ``od`` is
#: where ``d0`` goes (``dsel``), ``am`` the argmax buffer (``amsel``); bwd_weight's raw ranges apart
_C_RANGES = {
    2: [("0", "c->a0", "xin", 0), ("3", "c->a1", "wts", 0), ("5", "c->a2", "kt", 0), ("od", "c->d0", "dout", 1)],
    3: [("1", "c->a0", "dout", 0), ("3", "c->a1", "wts", 0), ("0", "c->a2", "xin", 0), ("od", "c->d0", "xin", 1)],
    5: [("0", "c->a0", "xin", 0), ("od", "c->d0", "pool", 1), ("am", "c->d1", "pool", 1)],
    6: [("1", "c->a0", "pool", 0), ("am", "c->a1", "pool", 0), ("od", "c->d0", "xin", 1)],
    7: [("3", "c->a0", "wts", 0), ("4", "c->a1", "wts", 0), ("3", "c->d0", "wts", 1)],
}


def _c_cases(pre: str) -> list:
    def calls(rows, indent):
        return [f"{indent}{pre}rng(r, &n, {b}, {a}, {size}, {wr});" for b, a, size, wr in rows]

    out = []
    for op, rows in _C_RANGES.items():
        out += [f"  case {op}:"] + calls(rows, "    ") + ["    break;"]
        if op == 3:
            out += ["  case 4:", "    if (c->raw) {"]
            out += calls([("0", "c->a0", "xin", 0), ("1", "c->a1", "dout", 0)], "      ")
            out += ["      if (c->acc)"] + calls([("5", "c->d0", "wts * P + kt", 0)], "        ")
            out += calls([("5", "c->d0", "wts * P", 1), ("5", "c->d1", "kt", 1)], "      ")
            out += ["    } else {"]
            out += calls([("0", "c->a0", "xin", 0), ("1", "c->a1", "dout", 0), ("4", "c->d0", "wts", 1),
                          ("5", "c->d1", "kt", 1)], "      ")
            out += ["    }", "    break;"]
    return out


def c_code(top: str, cfg) -> list:
    """C lines for the header ``<top>.h`` (after ``<top>_cmd_products``): the error enum,
    ``<top>_cmd_error_str()``, ``<top>_cmd_check()`` and ``<top>_cmd_derive()``."""
    T = top
    out = [f"/* Error codes of {T}_cmd_check() and {T}_cmd_derive(): 0, or the first rule broken. */",
           "typedef enum {", f"  {T}_CMD_OK = 0,"]
    out += [f"  {T}_CMD_E_{name} = {i + 1},  /* {what} */" for i, (name, what) in enumerate(RULES)]
    out += [f"}} {T}_cmd_error_t;", "",
            f"static inline const char *{T}_cmd_error_str(int code) {{", "  switch (code) {",
            f'  case {T}_CMD_OK: return "ok";']
    out += [f'  case {T}_CMD_E_{name}: return "{name}: {what}";' for name, what in RULES]
    out += ['  default: return "unknown error code";', "  }", "}", ""]
    pre = f"{T}_chk_"
    out += [
        f"static inline uint64_t {pre}cdiv(uint64_t a, uint64_t b) {{ return (a + b - 1) / b; }}",
        f"static inline uint64_t {pre}depth(uint32_t buf) {{",
        f"  return (buf == 3 || buf == 4) ? {T}_WEIGHT_DEPTH : buf == 5 ? {T}_BIAS_DEPTH : {T}_ACT_DEPTH;", "}",
        f"static inline int {pre}meets(uint64_t a0, uint64_t e0, uint64_t a1, uint64_t e1) {{",
        "  return a0 < e0 && a1 < e1 && a0 < e1 && a1 < e0;", "}",
        f"static inline uint32_t {pre}dsel_buf(uint32_t dsel) {{ return dsel == 1 ? 0 : dsel == 2 ? 1 : 2; }}",
        f"typedef struct {{ uint32_t buf; uint64_t lo, hi; int wr; }} {T}_range_t;",
        f"static inline void {pre}rng({T}_range_t *r, int *n, uint32_t b, uint64_t a, uint64_t size, int wr) {{",
        "  r[*n].buf = b; r[*n].lo = a; r[*n].hi = a + size; r[*n].wr = wr; ++*n;", "}",
        "/* The buffer words a compute command reads and writes (up to 5 ranges; returns how many). */",
        f"static inline int {T}_cmd_ranges(const {T}_cmd_t *c, {T}_range_t r[5]) {{",
        "  uint64_t xin = c->sz_x, dout = c->sz_dy, wts = c->sz_w, pool = c->sz_pool, kt = c->kt, P = " + f"{T}_P;",
        f"  uint32_t od = {pre}dsel_buf(c->dsel), am = c->amsel ? 2 : 0;", "  int n = 0;",
        "  switch (c->op) {",
        *_c_cases(pre),
        "  default: break;", "  }", "  return n;", "}", "",
        f"/* The product fields a command must hold: those of {T}_cmd_products_in_planes() with the plane rows",
        "   its strides show (hw = hp*w with hp > h: a map in planes of hp rows), as the Python check infers them. */",
        f"static inline int {pre}products_ok(const {T}_cmd_t *c) {{",
        f"  {T}_cmd_t d = *c;",
        "  uint32_t hp = (c->w && c->hw % c->w == 0 && c->hw / c->w > c->h) ? c->hw / c->w : c->h;",
        "  uint32_t hop = (c->wo && c->howo % c->wo == 0 && c->howo / c->wo > c->ho) ? c->howo / c->wo : c->ho;",
        f"  {T}_cmd_products_in_planes(&d, hp, hop);",
        "  return " + " && ".join(f"d.{p} == c->{p}" for p in enc.PRODUCTS) + ";", "}", "",
        f"/* 0 if an engine of this configuration executes the command as {T}.md says, else the code of the",
        "   first rule it breaks (the same rules, in the same order, as pymtl_fp.engine.cmdcheck.check). */",
        f"static inline int {T}_cmd_check(const {T}_cmd_t *c) {{",
        f"  {T}_range_t r[5];",
        "  int n, i, j, conv = c->op >= 2 && c->op <= 4, pool = c->op == 5 || c->op == 6, upd = c->op == 7;",
        "  uint64_t st, rows, plane, P = " + f"{T}_P;",
        f"  if (c->op > 7) return {T}_CMD_E_OP;",
        "  if (" + "\n      || ".join(
            " || ".join(f"(c->{x.name} >> {x.bits})" for x in enc.FIELDS[i:i + 6] if x.bits < 32)
            for i in range(0, len(enc.FIELDS), 6) if any(x.bits < 32 for x in enc.FIELDS[i:i + 6])) + ")",
        f"    return {T}_CMD_E_FIELD_WIDTH;",
        "  if (c->op <= 1) {",
        f"    if (c->target > 5) return {T}_CMD_E_TARGET;",
        f"    return (uint64_t)c->addr + {pre}cdiv(c->count, (c->target == 3 || c->target == 4) ? P * P : P)",
        f"           > {pre}depth(c->target) ? {T}_CMD_E_STREAM_RANGE : {T}_CMD_OK;", "  }",
        f"  if (c->stoch && !{T}_STOCHASTIC) return {T}_CMD_E_STOCH;",
        f"  if (c->shift > 32 || c->bshift > 32) return {T}_CMD_E_SHIFT;",
        "  if (conv ? !(c->n && c->c && c->k && c->h && c->w && c->ho && c->wo && c->r && c->s)",
        "      : pool ? !(c->n && c->c && c->h && c->w && c->ho && c->wo) : !(c->k && c->c && c->r && c->s))",
        f"    return {T}_CMD_E_ZERO_DIM;",
        f"  if (c->ct != {pre}cdiv(c->c, P) || ((conv || upd) && c->kt != {pre}cdiv(c->k, P))) return {T}_CMD_E_TILES;",
        "  if (conv) {", "    st = (uint64_t)1 << c->lgst;",
        f"    if (c->pad >= (c->r < c->s ? c->r : c->s)) return {T}_CMD_E_PAD;",
        f"    if (c->pt >= c->r) return {T}_CMD_E_PT;",
        "    if ((uint64_t)c->w + 2 * c->pad < c->s || c->wo != ((uint64_t)c->w + 2 * c->pad - c->s) / st + 1)",
        f"      return {T}_CMD_E_WO;",
        "    if (c->op != 4) {",
        "      rows = c->op == 2 ? c->ho : c->h;",
        "      plane = c->op == 2 ? (uint64_t)c->k * c->wo : (uint64_t)c->c * c->w;",
        f"      if (c->hi < rows || plane * c->hi >= ((uint64_t)1 << 24)) return {T}_CMD_E_HI;", "    }", "  }",
        "  if (pool) {",
        f"    if (c->pk < 1 || c->pk > 8 || c->pk * c->pk - 1 > (1u << ({T}_ACT_BITS - 1)) - 1) return {T}_CMD_E_POOL_K;",
        "    if (c->h % c->pk || c->w % c->pk || c->ho != c->h / c->pk || c->wo != c->w / c->pk)",
        f"      return {T}_CMD_E_POOL_SHAPE;", "  }",
        f"  if ((c->bp || c->nt) && (c->op != 2 || !c->bp || c->nt != {pre}cdiv(c->n, P))) return {T}_CMD_E_BP;",
        f"  if (c->dsel == 3 || (c->dsel && !(c->op == 2 || c->op == 3 || pool))) return {T}_CMD_E_DSEL;",
        f"  if (c->amsel && !pool) return {T}_CMD_E_AMSEL;",
        f"  if ((c->raw && c->op != 4) || (c->acc && !c->raw)) return {T}_CMD_E_RAW;",
        f"  if (c->op == 5 && {pre}dsel_buf(c->dsel) == (c->amsel ? 2u : 0u)) return {T}_CMD_E_POOL_SAME_BUF;",
        f"  if (!{pre}products_ok(c)) return {T}_CMD_E_PRODUCT;",
        f"  n = {T}_cmd_ranges(c, r);",
        f"  if (c->raw && ({pre}meets(r[n-2].lo, r[n-2].hi, r[n-1].lo, r[n-1].hi)",
        "                 || (c->acc && r[n-1].lo != r[n-2].hi)))",
        f"    return {T}_CMD_E_RAW_LAYOUT;",
        "  for (i = 0; i < n; ++i)",
        f"    if (r[i].hi > {pre}depth(r[i].buf)) return {T}_CMD_E_RANGE;",
        "  if (c->dsel || c->amsel)",
        "    for (i = 0; i < n; ++i)",
        "      for (j = 0; j < n; ++j)",
        f"        if (r[i].wr && !r[j].wr && r[i].buf == r[j].buf && {pre}meets(r[j].lo, r[j].hi, r[i].lo, r[i].hi))",
        f"          return {T}_CMD_E_SELF_OVERLAP;",
        f"  return {T}_CMD_OK;", "}", "",
        "/* Fill every field the host derives, for a whole map, from the free fields already set (op, n, c, k,",
        "   h, w, r, s, pad, pk, bp) and the stride: ct = ceil(c/P), kt = ceil(k/P); conv: ho, wo, lgst = log2(stride),",
        "   pt = pad, hi = ho (fwd) or h (bwd_data); pool: ho = h/pk, wo = w/pk; fwd with bp = 1: nt = ceil(n/P); then",
        f"   the products ({T}_cmd_products).  A row band then sets its own pt, ho, hi and calls {T}_cmd_products().",
        f"   Returns 0, {T}_CMD_E_STRIDE for a stride that is not a power of two in 1..128, {T}_CMD_E_WO (a kernel",
        f"   larger than the padded map) or {T}_CMD_E_POOL_K / _POOL_SHAPE; check the result with {T}_cmd_check(). */",
        f"static inline int {T}_cmd_derive({T}_cmd_t *c, uint32_t stride) {{",
        "  uint32_t lg = 0, P = " + f"{T}_P;",
        "  int conv = c->op >= 2 && c->op <= 4, pool = c->op == 5 || c->op == 6, upd = c->op == 7;",
        "  if (c->op <= 1) return 0;",
        f"  c->ct = (uint32_t){pre}cdiv(c->c, P);",
        f"  c->kt = (conv || upd) ? (uint32_t){pre}cdiv(c->k, P) : 0;",
        "  if (conv) {",
        f"    if (stride == 0 || stride > 128 || (stride & (stride - 1))) return {T}_CMD_E_STRIDE;",
        "    while ((1u << lg) < stride) ++lg;",
        f"    if (c->h + 2 * c->pad < c->r || c->w + 2 * c->pad < c->s) return {T}_CMD_E_WO;",
        "    c->lgst = lg;",
        "    c->ho = (c->h + 2 * c->pad - c->r) / stride + 1;",
        "    c->wo = (c->w + 2 * c->pad - c->s) / stride + 1;",
        "    c->pt = c->pad;",
        "    c->hi = c->op == 2 ? c->ho : c->op == 3 ? c->h : 0;",
        f"    c->nt = (c->op == 2 && c->bp) ? (uint32_t){pre}cdiv(c->n, P) : 0;", "  }",
        "  if (pool) {",
        f"    if (c->pk < 1 || c->pk > 8) return {T}_CMD_E_POOL_K;",
        f"    if (c->h % c->pk || c->w % c->pk) return {T}_CMD_E_POOL_SHAPE;",
        "    c->ho = c->h / c->pk;", "    c->wo = c->w / c->pk;", "  }",
        f"  {T}_cmd_products(c);", "  return 0;", "}", ""]
    return out
