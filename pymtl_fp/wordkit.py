"""Emitters for a packed control word -- the engine's command, the node's program instruction --
defined once in Python as named fields: SystemVerilog packed-struct members, and a C block of
``LSB``/``WIDTH`` macros, a struct of one ``uint32_t`` per field, a field table and a pack
function into 32-bit words (least significant first: a Verilated wide port's ``VlWide`` layout).

Used by :mod:`pymtl_fp.engine.ipkit` and :mod:`pymtl_fp.cluster.hw.ipkit`; every C name is
prefixed by the top module, so the headers of two designs can be included together.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WordField:
    name: str  #: a C and SystemVerilog identifier
    lsb: int
    bits: int

    @property
    def range(self) -> str:
        return f"[{self.lsb + self.bits - 1}:{self.lsb}]" if self.bits > 1 else f"[{self.lsb}]"


def layout(fields, total: int | None = None) -> list:
    """``[(name, bits)]``, most significant first -> :class:`WordField` list with bit positions."""
    fields = list(fields)
    lsb = sum(b for _, b in fields) if total is None else total
    out = []
    for name, bits in fields:
        lsb -= bits
        out.append(WordField(name, lsb, bits))
    return out


def words32(bits: int) -> int:
    """32-bit words holding ``bits``."""
    return -(-bits // 32)


def tdata_bytes(bits: int) -> int:
    """Bytes of an AXI4-Stream ``tdata`` carrying ``bits`` (AXI4-Stream: a whole number of bytes)."""
    return -(-bits // 8)


def sv_last_word_pad(signal: str, used_bits: int, what: str) -> str:
    """SystemVerilog declaring the bits of the last 32-bit word of ``signal`` above ``used_bits``
    (the word's ``what``) as ignored, lint-waived; empty when the words end exactly."""
    top_bits = 32 * words32(used_bits) - used_bits
    if not top_bits:
        return ""
    return (f"  /* verilator lint_off UNUSEDSIGNAL */\n  logic [{top_bits - 1}:0] last_word_pad;  // the last word's bits "
            f"above {what}: ignored\n  assign last_word_pad = {signal}[31:{32 - top_bits}];\n"
            "  /* verilator lint_on UNUSEDSIGNAL */\n")


def c_common(top: str) -> list:
    """The field-table type and the bit-placing helper every packer of this header uses."""
    return ["typedef struct { const char *name; unsigned lsb, width; } " + f"{top}_field_t;", "",
            "/* Put the low `width` bits of v at bit `lsb` of w (32-bit words, LSB first). */",
            f"static inline void {top}_put_bits(uint32_t *w, unsigned lsb, unsigned width, uint32_t v) {{",
            "  for (unsigned i = 0; i < width; ++i)",
            "    if ((v >> i) & 1u) w[(lsb + i) / 32] |= 1u << ((lsb + i) % 32);",
            "}", ""]


def c_word(top: str, word: str, fields: list, total: int) -> list:
    """C for one word kind ``word`` (``cmd``, ``instr``): ``<top>_<WORD>_BITS/_WORDS``,
    ``<top>_<WORD>_<FIELD>_LSB/_WIDTH``, ``<top>_<word>_t``, ``<top>_<word>_fields`` and
    ``<top>_<word>_pack()``, which returns 0, or 1 + the index of the first field whose value does
    not fit.  Needs :func:`c_common` earlier in the header."""
    W, n = word.upper(), words32(total)
    out = [f"#define {top}_{W}_BITS {total}", f"#define {top}_{W}_WORDS {n}"]
    for f in fields:
        out += [f"#define {top}_{W}_{f.name.upper()}_LSB {f.lsb}", f"#define {top}_{W}_{f.name.upper()}_WIDTH {f.bits}"]
    out += ["", "typedef struct {"] + [f"  uint32_t {f.name};" for f in fields] + [f"}} {top}_{word}_t;", ""]
    out += [f"#define {top}_{W}_NFIELDS {len(fields)}",
            f"static const {top}_field_t {top}_{word}_fields[{top}_{W}_NFIELDS] = {{"]
    out += [f'  {{"{f.name}", {f.lsb}, {f.bits}}},' for f in fields] + ["};", ""]
    out += [f"static inline int {top}_{word}_pack(const {top}_{word}_t *c, uint32_t w[{top}_{W}_WORDS]) {{",
            f"  for (unsigned i = 0; i < {top}_{W}_WORDS; ++i) w[i] = 0;"]
    for i, f in enumerate(fields):
        if f.bits < 32:
            out.append(f"  if (c->{f.name} >> {f.bits}) return {i + 1};")
        out.append(f"  {top}_put_bits(w, {f.lsb}, {f.bits}, c->{f.name});")
    out += ["  return 0;", "}", ""]
    return out


def sv_members(fields: list, comments: dict | None = None) -> list:
    """Packed-struct member lines, most significant first, each with its bit range."""
    comments = comments or {}
    return [f"    logic [{f.bits - 1}:0] {f.name};  // {f.range} {comments.get(f.name, '')}".rstrip() for f in fields]
