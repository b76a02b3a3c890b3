"""The arithmetic, buffer and cycle sections of the engine's command reference (``T.md``).

:func:`pymtl_fp.engine.ipkit.reference` writes these sections after the command word, so that a
team holding only the emitted kit can write its own golden model and its own timing model:

* :func:`arithmetic`: every operation's result as formulas on integers (the accumulator and its
  width, the bias, the requantizer's two rounding modes with the stochastic hash and each result's
  element index, saturation, ReLU and its mask, the max-pool tie rule, the SGD update);
* :func:`buffers`: each buffer's words, lanes and element width, what a LOAD keeps of an element,
  and what an address beyond a buffer does;
* :func:`cycles`: the closed forms of :mod:`pymtl_fp.cost.engine` (the timing model the RTL is
  checked against, cycle for cycle, in ``tests/test_timing.py``), and ``WB_LATENCY`` /
  ``CMD_LATENCY``.

The definitions are those of :mod:`pymtl_fp.numerics` and :mod:`pymtl_fp.golden`;
``tests/test_engine_kitref.py`` checks the Verilated engine against a model written from this
text alone (``tests/data/kit_model.py``, NumPy only).
"""

from __future__ import annotations

from pymtl_fp.cost.latency import PIPE, PIPELINE_LATENCY


def arithmetic(cfg) -> list:
    """Markdown lines: the arithmetic of every operation on an engine of ``cfg``."""
    stoch = ("" if cfg.stochastic else
             "  This configuration was built without stochastic rounding (STOCHASTIC = 0): `stoch` must be 0.")
    return [
        "## Arithmetic", "",
        "Every value is a signed two's-complement integer (a fixed-point number's raw integer; the binary point is "
        "the host's business: the shifts move it).  Widths: activations ACT_BITS = "
        f"{cfg.act_bits}, weights WEIGHT_BITS = {cfg.weight_bits}, gradients GRAD_BITS = {cfg.grad_bits}, "
        f"accumulators and biases ACC_BITS = {cfg.acc_bits}.  `floor` is rounding towards minus infinity "
        "(an arithmetic right shift: `floor(v / 2**s) = v >> s`); `/` between integers below is exact.", "",
        "```",
        "sat(v, b)  = min(max(v, -2**(b-1)), 2**(b-1) - 1)              # saturation to b bits",
        "wrap(v, b) = ((v + 2**(b-1)) mod 2**b) - 2**(b-1)              # a b-bit register",
        "stride     = 2**lgst",
        "```", "",
        "**Accumulator.** A conv operation sums its products exactly in an ACC_BITS-bit register: the result "
        "is `wrap(true sum, ACC_BITS)`, equal to the true sum whenever that fits ACC_BITS bits (partial sums "
        "may wrap on the way).  The host keeps it in range: the Python case check refuses a case whose bound "
        "`(terms) * max|a| * max|b| (+ max|bias|)` reaches `2**(ACC_BITS-1)`.", "",
        "**Requantizer** `Q(a, shift, bits, tensor, idx)`: the one rounding of a result, from an accumulator "
        "value `a` to `bits` bits (`shift` in 0..32; `stoch`, `seed` from the command):", "",
        "```",
        "if shift == 0:      rnd = 0",
        "elif stoch == 0:    rnd = 2**(shift-1)                         # round half up",
        "else:               rnd = H(seed, tensor, idx) >> (32 - shift) # the top `shift` bits of H",
        "Q = sat(floor((a + rnd) / 2**shift), bits)                     # a + rnd formed exactly"
        " (max(ACC_BITS, 33) + 1 bits)",
        "```", "",
        "**The stochastic-rounding hash** `H` (murmur3's fmix32 of a mixed index); every operation below is on "
        "unsigned 32-bit words, modulo 2**32, and `>>` is a logical shift:", "",
        "```",
        "h = seed * 0x9E3779B1 + tensor * 0x632BE5AB + idx              # mod 2**32; tensor in 0..255",
        "h = h ^ (h >> 16)",
        "h = h * 0x85EBCA6B",
        "h = h ^ (h >> 13)",
        "h = h * 0xC2B2AE35",
        "h = h ^ (h >> 16)                                              # H(seed, tensor, idx) = h",
        "```", "",
        "Test vectors `(seed, tensor, idx) -> H`: `(0, 0, 0) -> 0`, `(0, 0, 1) -> 0x514E28B7`, "
        "`(1, 0, 0) -> 0x11FD02EB`, `(0, 1, 5) -> 0xB62258D3`.  `idx` is the element's flat index in its whole "
        "result tensor (given per operation below, taken mod 2**32), so the rounding does not depend on the "
        "loop order, the tiling or the row band.  A row band counts its result rows from 0 in `idx` (in a map "
        "of `hi` rows); to round them as rows `y0, y0+1, ...` of the whole map, the host sends "
        "`seed = (seed_map + y0*width*0x0E8B2F51) mod 2**32` (`0x0E8B2F51` is the inverse of `0x9E3779B1` mod "
        "2**32; `width` is `wo` for fwd, `w` for bwd_data)." + stoch, "",
        "**Operands.** `x`, `dy`, `w`, `b`, ... below are the tensors the command's address fields name "
        "(table *Operations*; layouts in *Data layout*), with the command's sizes `n, c, k, h, w, ho, wo, r, s` "
        "(the input map is `h x w`, the output map `ho x wo`).  Input rows are padded by `pt` zero rows above "
        "(`pt = pad` for a whole map; a row band sets it) and zero rows below; columns by `pad` zero columns on "
        "each side.  With `X(n, c, i, j) = x[n, c, i, j]` for `0 <= i < h` and `0 <= j < w`, else 0:", "",
        "Upper-case `N, C, K, R, S` are the command's sizes `n, c, k, r, s` where the lower-case letter is an index.", "",
        "**fwd** (for every `n < N, k < K, oh < ho, ow < wo`):", "",
        "```",
        "A = wrap(b[k] + sum over c, r, s of X(n, c, oh*stride + r - pt, ow*stride + s - pad) * w[k, c, r, s], ACC_BITS)",
        "y[n, k, oh, ow] = Q(A, shift, ACT_BITS, tid, ((n*K + k)*hi + oh)*wo + ow)",
        "if relu: y[n, k, oh, ow] = max(y[n, k, oh, ow], 0)             # ReLU after rounding and saturation",
        "```", "",
        "`b[k]` is in accumulator units (the product's binary point), added before the shift; `hi` the rows"
        " of the whole output map (`ho` for a whole map, a row band's map's otherwise).  With "
        "`bp = 1` the same values, with `x` and `y` batch-innermost (*Data layout*).", "",
        "**bwd_data** (for every `n < N, c < C, i < h, j < w`):", "",
        "```",
        "A = wrap(sum over k, r, s, oh < ho, ow < wo with oh*stride + r - pt == i and ow*stride + s - pad =="
        " j of dy[n, k, oh, ow] * w[k, c, r, s], ACC_BITS)",
        "dx[n, c, i, j] = Q(A, shift, GRAD_BITS, tid, ((n*C + c)*hi + i)*w + j)",
        "if relu and x[n, c, i, j] <= 0: dx[n, c, i, j] = 0             # the ReLU mask: x from a2, after rounding",
        "```", "",
        "`hi` is the rows of the whole `dx` map (`h` for a whole map).", "",
        "**bwd_weight** (for every `k < K, c < C, r < R, s < S`):", "",
        "```",
        "Aw = wrap(sum over n, oh < ho, ow < wo of X(n, c, oh*stride + r - pt, ow*stride + s - pad) * dy[n,"
        " k, oh, ow], ACC_BITS)",
        "Ab = wrap(sum over n, oh < ho, ow < wo of dy[n, k, oh, ow], ACC_BITS)",
        "dw[k, c, r, s] = Q(Aw, shift, GRAD_BITS, tid, ((k*C + c)*R + r)*S + s)",
        "db[k] = Q(Ab, bshift, GRAD_BITS, btid, k)                      # stored in B sign-extended to ACC_BITS",
        "```", "",
        "With `raw = 1` nothing is rounded: `dw` and `db` are `Aw` and `Ab` (ACC_BITS wide, in B); with `acc = 1` "
        "too, the values already in those B words are added: `wrap(old + A, ACC_BITS)`.", "",
        "**pool_fwd** (`pk x pk` windows, stride `pk`; `ho = h / pk`, `wo = w / pk`): no arithmetic, no rounding:", "",
        "```",
        "y[n, c, oh, ow] = max over dr, dc < pk of x[n, c, oh*pk + dr, ow*pk + dc]",
        "argmax[n, c, oh, ow] = the smallest dr*pk + dc whose element equals that maximum   # ties: the"
        " first in row-major order",
        "```", "",
        "The argmax is stored as an element (value `0 .. pk*pk - 1`) in the layout of `y`, in X (`amsel = 0`) or O "
        "(`amsel = 1`) from word `d1`.", "",
        "**pool_bwd**:", "",
        "```",
        "dx[n, c, oh*pk + dr, ow*pk + dc] = dy[n, c, oh, ow] if argmax[n, c, oh, ow] == dr*pk + dc else 0",
        "```", "",
        "**update** (SGD; `shift` is the learning-rate shift; for every `k, c, r, s` of the `(K, C, R, S)` "
        "weights):", "",
        "```",
        "if shift == 0:      rnd = 0",
        "elif stoch == 0:    rnd = 2**(shift-1)",
        "else:               rnd = H(seed, tid, ((k*C + c)*R + r)*S + s) >> (32 - shift)",
        "w_new[k, c, r, s] = sat(w[k, c, r, s] - floor((dw[k, c, r, s] + rnd) / 2**shift), WEIGHT_BITS)",
        "```", "",
        "(The step `floor((dw + rnd) / 2**shift)` is not saturated: it fits GRAD_BITS.)  "
        "No momentum: the host updates biases.", "",
        "Channels are zero-padded to whole tiles of P in the buffers (*Data layout*); the host loads zeros "
        "there, and the padded lanes of a result are then 0.", "",
    ]


def buffers(cfg) -> list:
    """Markdown lines: each buffer's size and element width, and what an address past it does."""
    P, D, A = cfg.P, cfg.data_bits, cfg.acc_bits
    rows = [("X", P, cfg.act_depth, D), ("D", P, cfg.act_depth, D), ("O", P, cfg.act_depth, D),
            ("W", P * P, cfg.weight_depth, D), ("G", P * P, cfg.weight_depth, D), ("B", P, cfg.bias_depth, A)]

    def wraps(depth):
        pow2 = depth & (depth - 1) == 0
        return "wraps to word 0 (power of two)" if pow2 else \
            f"addresses {depth}..{(1 << max(1, (depth - 1).bit_length())) - 1} ignored on write, read as 0"

    out = ["## Buffer sizes and overflow", "",
           "| buffer | words | lanes per word | element bits | past the last word |", "|---|---|---|---|---|"]
    out += [f"| {b} | {depth} | {lanes} | {bits} | {wraps(depth)} |" for b, lanes, depth, bits in rows]
    out += ["",
            f"An element in X, D, O, W and G is DATA_BITS = max(ACT_BITS, WEIGHT_BITS, GRAD_BITS) = {D} bits, in B "
            f"ACC_BITS = {A}.  A LOAD writes the low element bits of each STREAM_BITS-wide element (no check, no "
            "saturation); a STORE sends each element sign-extended to STREAM_BITS.",
            "",
            "**Overflow.** The engine itself checks no address: a buffer word address is the low `ceil(log2(words))` "
            "bits of the 16-bit address the command walks, so a LOAD, STORE or compute command that runs past "
            "its buffer's last word continues at word 0 (a power-of-two depth) or, for a depth that is not a "
            "power of two, writes nothing and reads 0 past it.  `T_cmd_check()` in `T.h` refuses such a command "
            "before it is sent (and every other field the Python command check refuses); the `T_axi` wrapper "
            "drops a LOAD or STORE past its buffer and flags it (`cmd_err`), the engine and `T_axis` do not.",
            ""]
    return out


def cycles(cfg) -> list:
    """Markdown lines: the closed-form cycles of every command (:mod:`pymtl_fp.cost.engine`)."""
    P, DR = cfg.P, cfg.drain_rows
    return [
        "## Cycles per command", "",
        "Occupancy of one command = cycles from the cycle it is accepted on `cmd` to the first cycle the engine "
        "is idle again (`busy` low), with its stream never stalled and no other command running.  These are the "
        "closed forms of the timing model the RTL is checked against cycle for cycle "
        "(`pymtl_fp/cost/engine.py`); `cdiv(a, b) = ceil(a / b)`, `E = STREAM_LANES`, `L` the lanes of the "
        f"buffer (P = {P}, or P*P for W and G), `DR = DRAIN_ROWS = {DR}`, `PIPE = {PIPE}` (the command register, "
        "the MAC/requantize stage and the return to idle).", "",
        "```",
        "LOAD count:   cdiv(count, E) + 1                (1 when count = 0)",
        "STORE count:  1 + cdiv(count, E) + cdiv(count, L)   (1 when count = 0)",
        "fwd:          n*kt*ct * V(h, ho, r, stride, pt) * V(w, wo, s, stride, pad) + PIPE + WB_LATENCY",
        "bwd_data:     n*ct*kt * T(h, ho, r, stride, pt) * T(w, wo, s, stride, pad) + PIPE + WB_LATENCY",
        "pool_fwd, pool_bwd:  n*ct*ho*wo*pk*pk + PIPE + WB_LATENCY",
        "update:       kt*ct*r*s*P + PIPE + WB_LATENCY",
        "```", "",
        "One axis of a conv (`size` inputs, `out` outputs, `kern` taps, padding `p` before the first input):", "",
        "```",
        "outs(t) = max(0, min(out - 1, floor((size - 1 + p - t) / stride)) - max(0, cdiv(p - t, stride)) + 1)",
        "V       = sum over t < kern of outs(t)              # (output, tap) pairs inside the map: no cycle on padding",
        "cov     = max(0, min(size, (out - 1)*stride - p + kern)) if kern >= stride else V   # inputs some tap reaches",
        "T       = V + size - cov                            # bwd_data: one step also for an input no tap reaches",
        "```", "",
        "**bwd_weight**: one P x P tile per `(kt, ct, r, s)` (kernel taps innermost); tile `(r, s)` accumulates "
        "`L(r, s) = n * max(1, outs_h(r)) * max(1, outs_w(s))` steps, then drains `D = P / DR` cycles "
        "(`D + 1` when it ends a `db` sum: `ct` tile 0 and the last tap) while the next tile accumulates; a tile's "
        "last step waits for the previous drain:", "",
        "```",
        "G     = kt*ct                                                    # tile groups, r*s tiles each",
        "inner = sum over taps (r, s) != (0, 0) of max(L(r, s), D)",
        "a     = min(G - 1 if ct == 1 else kt, G - 1)                     # groups after one that ends a db sum",
        "steps = L(0,0) + a*max(L(0,0), D + 1) + (G - 1 - a)*max(L(0,0), D) + G*inner",
        "bwd_weight = steps + PIPE + (D + 1 if ct == 1 else D) + WB_LATENCY",
        "```", "",
        "With `raw = 1` the drain writes one row a cycle (`D = P`), and `acc = 1` adds one cycle.  A batch-"
        "parallel `fwd` (`bp = 1`): tiles `(nt, kt, oh, ow)`, each `C * taps_h(oh) * taps_w(ow)` steps "
        "(`taps(o) = max(1, min(kern, size + p - o*stride) - max(0, p - o*stride))`), drained one output "
        "channel a cycle (P cycles) while the next accumulates: `steps = L_0 + sum over later tiles of "
        "max(L_i, P)`, total `steps + PIPE + P + WB_LATENCY`.", "",
        "A compute command never touches the streams, so stalls do not change it; a LOAD (STORE) takes one "
        "cycle more per cycle its beat is not offered (not accepted).  With `ovl = 1` commands of different "
        "units overlap (rule in *Interface*), each keeping its occupancy.", "",
        f"**WB_LATENCY** = {cfg.wb_latency}: cycles each compute command's writes follow its last step in an "
        f"engine built with the pipelines for 200 MHz (requantizer {PIPELINE_LATENCY['requant']}, MAC array "
        f"{PIPELINE_LATENCY['mac']}, address stage {PIPELINE_LATENCY['addr']}: their sum over those built); the "
        "engine stays busy until the last write, so every compute command takes WB_LATENCY cycles more.  "
        f"**CMD_LATENCY** = {cfg.cmd_latency}: with the command register (1), a command starts a cycle after "
        "its handshake at the earliest, so a command offered to an idle engine takes 1 cycle more from the "
        "offer (counted from its acceptance, the forms above hold); `cmd_tready` then depends on registers only.", "",
    ]
