"""CRC-32 of the link, in plain Python: a bit-serial reference and the parallel (matrix) form
the RTL implements.

The link protects each message with **CRC-32 (IEEE 802.3 / zlib)**: reflected polynomial
``0xEDB88320`` (normal form ``0x04C11DB7``), initial value ``0xFFFFFFFF``, final XOR
``0xFFFFFFFF``.  The protected word is ``seq << msg_bits | msg`` (the message in the low bits, its
sequence number above), zero-padded to whole bytes and read as little-endian bytes, each byte LSB
first, so ``crc32_bits(v, n) == zlib.crc32(v.to_bytes(ceil(n/8), "little"))``.

:func:`crc32_bits` is a bit-serial shift register written from the definition (no table, no
``zlib``); :func:`crc32_matrix` derives from the same recurrence, run symbolically, the affine map
``crc = M x ^ c`` that :class:`~pymtl_fp.link.CrcRTL.CrcRTL` evaluates as one XOR tree per output
bit.  The tests check both against ``zlib.crc32``, an independent implementation.
"""

from __future__ import annotations

import functools

POLY_REFLECTED = 0xEDB88320
INIT = 0xFFFFFFFF
XOROUT = 0xFFFFFFFF


def _padded_bits(nbits: int) -> int:
    return -(-nbits // 8) * 8


def crc32_bits(value: int, nbits: int) -> int:
    """CRC-32 of the ``nbits``-bit word ``value`` (bit-serial reference)."""
    if nbits < 1 or value < 0 or value >> nbits:
        raise ValueError(f"value must fit in {nbits} bits")
    crc = INIT
    for i in range(_padded_bits(nbits)):
        bit = (value >> i) & 1
        lsb = (crc ^ bit) & 1
        crc = (crc >> 1) ^ (POLY_REFLECTED if lsb else 0)
    return crc ^ XOROUT


@functools.lru_cache(maxsize=64)
def crc32_matrix(nbits: int) -> tuple[tuple[int, ...], int]:
    """``(masks, const)``: output bit ``j`` of the CRC of an ``nbits`` word ``x`` is
    ``parity(x & masks[j]) ^ (const >> j & 1)``.

    Computed by running :func:`crc32_bits`'s recurrence on symbolic bits: each of the 32 state
    bits is kept as a bit set over the input bits plus one bit (position ``nbits``) for the
    constant 1."""
    if nbits < 1:
        raise ValueError("nbits must be >= 1")
    one = 1 << nbits
    state = [one if (INIT >> j) & 1 else 0 for j in range(32)]
    for i in range(_padded_bits(nbits)):
        fb = state[0] ^ ((1 << i) if i < nbits else 0)
        state = state[1:] + [0]
        for j in range(32):
            if (POLY_REFLECTED >> j) & 1:
                state[j] ^= fb
    for j in range(32):
        if (XOROUT >> j) & 1:
            state[j] ^= one
    masks = tuple(s & (one - 1) for s in state)
    const = sum(((s >> nbits) & 1) << j for j, s in enumerate(state))
    return masks, const


def crc32_by_matrix(value: int, nbits: int) -> int:
    """Evaluate the parallel form (what the RTL computes) in Python."""
    masks, const = crc32_matrix(nbits)
    out = 0
    for j, m in enumerate(masks):
        out |= ((value & m).bit_count() & 1) << j
    return out ^ const


def link_crc(msg: int, seq: int, msg_bits: int, seq_bits: int) -> int:
    """The CRC the link sends with message ``msg`` (``msg_bits`` wide) and sequence ``seq``."""
    return crc32_bits((seq << msg_bits) | msg, msg_bits + seq_bits)
