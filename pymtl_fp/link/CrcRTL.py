"""Parallel CRC-32 generator/checker (RTL, combinational).

``out = CRC-32(in_)`` for an ``nbits``-wide input word, the IEEE 802.3 / zlib CRC-32 defined in
:mod:`pymtl_fp.link.crc` (reflected polynomial 0xEDB88320, init and final XOR 0xFFFFFFFF, the
word read as little-endian zero-padded bytes).  The CRC is an affine function of the input bits,
``out = c ^ XOR(in_[i] ? col[i] : 0)``, with the 32-bit columns ``col[i]`` and ``c`` derived at
elaboration from the bit-serial definition (:func:`pymtl_fp.link.crc.crc32_matrix`); synthesis
turns the unrolled loop into one XOR tree per output bit.  Synthesizable; elaboration parameter:
``nbits``.

Why this form: PyMTL3's Python ``reduce_xor`` loops over bits (the per-output-bit
"mask and parity" form simulated ~5x slower), and it translates ``reduce_xor(a & b)`` as
``^ a & b``, which Verilog parses as ``(^a) & b``.  The loop starts from a 32-bit constant so that
Verilator's ``-Wall`` does not flag the width of PyMTL3's loop variable.
"""

from pymtl3 import Bits32, Component, InPort, OutPort, Wire, b32, update

from pymtl_fp.link.crc import crc32_matrix


def crc32_columns(nbits: int) -> tuple[list[int], int]:
    """``(cols, const)``: the CRC of ``x`` is ``const ^ XOR of cols[i] for each set bit i``."""
    masks, const = crc32_matrix(nbits)
    cols = [sum(((masks[j] >> i) & 1) << j for j in range(32)) for i in range(nbits)]
    return cols, const


class CrcRTL(Component):
    def construct(s, nbits):
        if not (isinstance(nbits, int) and 1 <= nbits <= 1023):
            raise ValueError(f"CrcRTL: nbits must be an int in [1, 1023], got {nbits!r}")
        s.params = dict(nbits=nbits)
        cols, const = crc32_columns(nbits)
        s.in_ = InPort(nbits)
        s.out = OutPort(32)
        s.col = [Wire(32) for _ in range(nbits)]
        for i in range(nbits):
            s.col[i] //= Bits32(cols[i])
        CONST = Bits32(const)
        ZERO = b32(0)
        N = nbits

        @update
        def up_crc():
            acc = CONST
            for i in range(ZERO, N):
                if s.in_[i]:
                    acc = acc ^ s.col[i]
            s.out @= acc

    def line_trace(s):
        return f"crc{s.out}"
