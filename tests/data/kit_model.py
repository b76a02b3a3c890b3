"""A golden model of the engine written from its kit's command reference (``T.md``, section
*Arithmetic*) alone, as an outside team would: NumPy and Python integers, nothing from pymtl_fp.

Every function takes the tensors an operation's address fields name and the command's fields
(a dict, names as in the reference) and the configuration's widths (``ACT_BITS``, ... as in the
reference's configuration table).  :data:`QUOTES` are the reference's formula lines this model
implements; the test checks that each appears, verbatim, in the generated reference.
"""

import numpy as np

#: the formula lines of the reference implemented below (each must appear in T.md as written)
QUOTES = (
    "sat(v, b)  = min(max(v, -2**(b-1)), 2**(b-1) - 1)",
    "wrap(v, b) = ((v + 2**(b-1)) mod 2**b) - 2**(b-1)",
    "stride     = 2**lgst",
    "elif stoch == 0:    rnd = 2**(shift-1)",
    "else:               rnd = H(seed, tensor, idx) >> (32 - shift)",
    "Q = sat(floor((a + rnd) / 2**shift), bits)",
    "h = seed * 0x9E3779B1 + tensor * 0x632BE5AB + idx",
    "h = h ^ (h >> 16)",
    "h = h * 0x85EBCA6B",
    "h = h ^ (h >> 13)",
    "h = h * 0xC2B2AE35",
    "A = wrap(b[k] + sum over c, r, s of X(n, c, oh*stride + r - pt, ow*stride + s - pad) * w[k, c, r, s], ACC_BITS)",
    "y[n, k, oh, ow] = Q(A, shift, ACT_BITS, tid, ((n*K + k)*hi + oh)*wo + ow)",
    "if relu: y[n, k, oh, ow] = max(y[n, k, oh, ow], 0)",
    "A = wrap(sum over k, r, s, oh < ho, ow < wo with oh*stride + r - pt == i and ow*stride + s - pad == j "
    "of dy[n, k, oh, ow] * w[k, c, r, s], ACC_BITS)",
    "dx[n, c, i, j] = Q(A, shift, GRAD_BITS, tid, ((n*C + c)*hi + i)*w + j)",
    "if relu and x[n, c, i, j] <= 0: dx[n, c, i, j] = 0",
    "Aw = wrap(sum over n, oh < ho, ow < wo of X(n, c, oh*stride + r - pt, ow*stride + s - pad) * dy[n,"
    " k, oh, ow], ACC_BITS)",
    "Ab = wrap(sum over n, oh < ho, ow < wo of dy[n, k, oh, ow], ACC_BITS)",
    "dw[k, c, r, s] = Q(Aw, shift, GRAD_BITS, tid, ((k*C + c)*R + r)*S + s)",
    "db[k] = Q(Ab, bshift, GRAD_BITS, btid, k)",
    "With `raw = 1` nothing is rounded: `dw` and `db` are `Aw` and `Ab` (ACC_BITS wide, in B); with `acc = 1` "
    "too, the values already in those B words are added: `wrap(old + A, ACC_BITS)`.",
    "y[n, c, oh, ow] = max over dr, dc < pk of x[n, c, oh*pk + dr, ow*pk + dc]",
    "argmax[n, c, oh, ow] = the smallest dr*pk + dc whose element equals that maximum",
    "dx[n, c, oh*pk + dr, ow*pk + dc] = dy[n, c, oh, ow] if argmax[n, c, oh, ow] == dr*pk + dc else 0",
    "else:               rnd = H(seed, tid, ((k*C + c)*R + r)*S + s) >> (32 - shift)",
    "w_new[k, c, r, s] = sat(w[k, c, r, s] - floor((dw[k, c, r, s] + rnd) / 2**shift), WEIGHT_BITS)",
)

M32 = 0xFFFFFFFF


def sat(v, b):
    return min(max(v, -2 ** (b - 1)), 2 ** (b - 1) - 1)


def wrap(v, b):
    return ((v + 2 ** (b - 1)) % 2 ** b) - 2 ** (b - 1)


def H(seed, tensor, idx):
    h = (seed * 0x9E3779B1 + tensor * 0x632BE5AB + idx) & M32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return h


def Q(a, shift, bits, tensor, idx, f):
    if shift == 0:
        rnd = 0
    elif f["stoch"] == 0:
        rnd = 2 ** (shift - 1)
    else:
        rnd = H(f["seed"], tensor, idx & M32) >> (32 - shift)
    return sat((a + rnd) >> shift, bits)  # Python's >> on ints is floor division by 2**shift


def _X(x, n, c, i, j):
    return int(x[n, c, i, j]) if 0 <= i < x.shape[2] and 0 <= j < x.shape[3] else 0


def fwd(x, w, b, f, cfg):
    N, C, K, R, S = f["n"], f["c"], f["k"], f["r"], f["s"]
    st, pt, pad, ho, wo, hi = 2 ** f["lgst"], f["pt"], f["pad"], f["ho"], f["wo"], f["hi"]
    y = np.zeros((N, K, ho, wo), dtype=np.int64)
    for n in range(N):
        for k in range(K):
            for oh in range(ho):
                for ow in range(wo):
                    a = int(b[k]) + sum(_X(x, n, c, oh * st + r - pt, ow * st + s - pad) * int(w[k, c, r, s])
                                        for c in range(C) for r in range(R) for s in range(S))
                    v = Q(wrap(a, cfg["ACC_BITS"]), f["shift"], cfg["ACT_BITS"], f["tid"],
                          ((n * K + k) * hi + oh) * wo + ow, f)
                    y[n, k, oh, ow] = max(v, 0) if f["relu"] else v
    return y


def bwd_data(dy, w, x, f, cfg):
    N, C, K, R, S = f["n"], f["c"], f["k"], f["r"], f["s"]
    st, pt, pad, ho, wo, hi, H_, W_ = 2 ** f["lgst"], f["pt"], f["pad"], f["ho"], f["wo"], f["hi"], f["h"], f["w"]
    acc = np.zeros((N, C, H_, W_), dtype=object)
    acc[...] = 0
    for n in range(N):
        for c in range(C):
            for k in range(K):
                for r in range(R):
                    for s in range(S):
                        for oh in range(ho):
                            for ow in range(wo):
                                i, j = oh * st + r - pt, ow * st + s - pad
                                if 0 <= i < H_ and 0 <= j < W_:
                                    acc[n, c, i, j] += int(dy[n, k, oh, ow]) * int(w[k, c, r, s])
    dx = np.zeros((N, C, H_, W_), dtype=np.int64)
    for n in range(N):
        for c in range(C):
            for i in range(H_):
                for j in range(W_):
                    v = Q(wrap(acc[n, c, i, j], cfg["ACC_BITS"]), f["shift"], cfg["GRAD_BITS"], f["tid"],
                          ((n * C + c) * hi + i) * W_ + j, f)
                    dx[n, c, i, j] = 0 if f["relu"] and x[n, c, i, j] <= 0 else v
    return dx


def bwd_weight(x, dy, f, cfg, old_dw=None, old_db=None):
    """With ``raw``: the un-rounded sums (plus, with ``acc``, the values ``old_dw``, ``old_db`` in B)."""
    N, C, K, R, S = f["n"], f["c"], f["k"], f["r"], f["s"]
    st, pt, pad, ho, wo, AB = 2 ** f["lgst"], f["pt"], f["pad"], f["ho"], f["wo"], cfg["ACC_BITS"]
    dw = np.zeros((K, C, R, S), dtype=np.int64)
    db = np.zeros(K, dtype=np.int64)
    for k in range(K):
        for c in range(C):
            for r in range(R):
                for s in range(S):
                    a = sum(_X(x, n, c, oh * st + r - pt, ow * st + s - pad) * int(dy[n, k, oh, ow])
                            for n in range(N) for oh in range(ho) for ow in range(wo))
                    if f["raw"]:
                        dw[k, c, r, s] = wrap((int(old_dw[k, c, r, s]) if f["acc"] else 0) + a, AB)
                    else:
                        dw[k, c, r, s] = Q(wrap(a, AB), f["shift"], cfg["GRAD_BITS"], f["tid"],
                                           ((k * C + c) * R + r) * S + s, f)
        ab = sum(int(dy[n, k, oh, ow]) for n in range(N) for oh in range(ho) for ow in range(wo))
        if f["raw"]:
            db[k] = wrap((int(old_db[k]) if f["acc"] else 0) + ab, AB)
        else:
            db[k] = Q(wrap(ab, AB), f["bshift"], cfg["GRAD_BITS"], f["btid"], k, f)
    return dw, db


def pool_fwd(x, f):
    pk = f["pk"]
    N, C, H_, W_ = x.shape
    y = np.zeros((N, C, H_ // pk, W_ // pk), dtype=np.int64)
    am = np.zeros_like(y)
    for n, c, oh, ow in np.ndindex(y.shape):
        best, arg = None, None
        for dr in range(pk):
            for dc in range(pk):
                v = int(x[n, c, oh * pk + dr, ow * pk + dc])
                if best is None or v > best:  # the first maximum in row-major order
                    best, arg = v, dr * pk + dc
        y[n, c, oh, ow], am[n, c, oh, ow] = best, arg
    return y, am


def pool_bwd(dy, am, f):
    pk = f["pk"]
    N, C, ho, wo = dy.shape
    dx = np.zeros((N, C, ho * pk, wo * pk), dtype=np.int64)
    for n, c, oh, ow in np.ndindex(dy.shape):
        for dr in range(pk):
            for dc in range(pk):
                dx[n, c, oh * pk + dr, ow * pk + dc] = dy[n, c, oh, ow] if am[n, c, oh, ow] == dr * pk + dc else 0
    return dx


def update(w, dw, f, cfg):
    _, C, R, S = w.shape
    out = np.zeros_like(w)
    shift = f["shift"]
    for k, c, r, s in np.ndindex(w.shape):
        if shift == 0:
            rnd = 0
        elif f["stoch"] == 0:
            rnd = 2 ** (shift - 1)
        else:
            rnd = H(f["seed"], f["tid"], ((k * C + c) * R + r) * S + s) >> (32 - shift)
        out[k, c, r, s] = sat(int(w[k, c, r, s]) - ((int(dw[k, c, r, s]) + rnd) >> shift), cfg["WEIGHT_BITS"])
    return out


# ---- cycles (the reference's *Cycles per command*) ---------------------------------------------

TIMING_QUOTES = (
    "fwd:          n*kt*ct * V(h, ho, r, stride, pt) * V(w, wo, s, stride, pad) + PIPE + WB_LATENCY",
    "bwd_data:     n*ct*kt * T(h, ho, r, stride, pt) * T(w, wo, s, stride, pad) + PIPE + WB_LATENCY",
    "pool_fwd, pool_bwd:  n*ct*ho*wo*pk*pk + PIPE + WB_LATENCY",
    "update:       kt*ct*r*s*P + PIPE + WB_LATENCY",
    "outs(t) = max(0, min(out - 1, floor((size - 1 + p - t) / stride)) - max(0, cdiv(p - t, stride)) + 1)",
    "cov     = max(0, min(size, (out - 1)*stride - p + kern)) if kern >= stride else V",
    "T       = V + size - cov",
    "G     = kt*ct",
    "inner = sum over taps (r, s) != (0, 0) of max(L(r, s), D)",
    "a     = min(G - 1 if ct == 1 else kt, G - 1)",
    "steps = L(0,0) + a*max(L(0,0), D + 1) + (G - 1 - a)*max(L(0,0), D) + G*inner",
    "bwd_weight = steps + PIPE + (D + 1 if ct == 1 else D) + WB_LATENCY",
    "`L(r, s) = n * max(1, outs_h(r)) * max(1, outs_w(s))` steps, then drains `D = P / DR` cycles",
    "With `raw = 1` the drain writes one row a cycle (`D = P`), and `acc = 1` adds one cycle.",
)


def cdiv(a, b):
    return -(-a // b)


def V(size, out, kern, stride, p):
    return sum(max(0, min(out - 1, (size - 1 + p - t) // stride) - max(0, cdiv(p - t, stride)) + 1)
               for t in range(kern))


def T(size, out, kern, stride, p):
    v = V(size, out, kern, stride, p)
    cov = max(0, min(size, (out - 1) * stride - p + kern)) if kern >= stride else v
    return v + size - cov


def outs(size, out, t, stride, p):
    return max(0, min(out - 1, (size - 1 + p - t) // stride) - max(0, cdiv(p - t, stride)) + 1)


def compute_cycles(op, f, cfg):
    """The occupancy of a compute command by the reference (not a batch-parallel fwd)."""
    PIPE, WB, P = cfg["PIPE"], cfg["WB_LATENCY"], cfg["P"]
    st = 2 ** f["lgst"]
    if op == "bwd_weight":
        D = P if f["raw"] else P // cfg["DRAIN_ROWS"]
        L = [[f["n"] * max(1, outs(f["h"], f["ho"], r, st, f["pt"])) * max(1, outs(f["w"], f["wo"], s, st, f["pad"]))
              for s in range(f["s"])] for r in range(f["r"])]
        G, ct = f["kt"] * f["ct"], f["ct"]
        inner = sum(max(L[r][s], D) for r in range(f["r"]) for s in range(f["s"]) if (r, s) != (0, 0))
        a = min(G - 1 if ct == 1 else f["kt"], G - 1)
        steps = L[0][0] + a * max(L[0][0], D + 1) + (G - 1 - a) * max(L[0][0], D) + G * inner
        return steps + PIPE + (D + 1 if ct == 1 else D) + WB + (1 if f["raw"] and f["acc"] else 0)
    if op == "fwd":
        rows, cols = V(f["h"], f["ho"], f["r"], st, f["pt"]), V(f["w"], f["wo"], f["s"], st, f["pad"])
        steps = f["n"] * f["kt"] * f["ct"] * rows * cols
    elif op == "bwd_data":
        rows, cols = T(f["h"], f["ho"], f["r"], st, f["pt"]), T(f["w"], f["wo"], f["s"], st, f["pad"])
        steps = f["n"] * f["ct"] * f["kt"] * rows * cols
    elif op in ("pool_fwd", "pool_bwd"):
        steps = f["n"] * f["ct"] * f["ho"] * f["wo"] * f["pk"] * f["pk"]
    else:
        steps = f["kt"] * f["ct"] * f["r"] * f["s"] * P
    return steps + PIPE + WB
