"""Fixed-point numerics shared by every level of the hardware (golden, FL, CL, RTL, Verilator).

What this module models
-----------------------
* **Values** are signed two's-complement fixed point, :class:`QFormat` ``(bits, frac)``: the raw
  integer ``q`` stands for the real number ``q / 2**frac``.  NumPy arrays of ``np.int64`` hold
  the raw integers.
* **Accumulation** is exact: products of raw integers are summed in a wide accumulator.  In this
  model the accumulator is an ``np.int64``; every function that produces one checks that it stays
  within ``|acc| < ACC_LIMIT = 2**62`` so that adding a rounding offset (``< 2**MAX_SHIFT``)
  can never overflow 64 bits.  Hardware accumulators may be narrower as long as they hold the
  values actually produced (two's-complement wrap-around of partial sums is harmless when the
  final sum fits).
* **Rounding** happens once, when a result is written back, by :func:`requantize`:

  - ``nearest``:    ``floor((acc + 2**(shift-1)) / 2**shift)`` (round half up; ``acc`` itself
    when ``shift == 0``), then saturate to ``bits``;
  - ``stochastic``: ``floor((acc + r) / 2**shift)``, ``r = stochastic_offset(seed, tensor_id,
    index, shift)`` uniform in ``[0, 2**shift)``, then saturate.  ``r`` is a pure function of its
    arguments, so every level and every tiling produce the same bits.

  ``floor(v / 2**shift)`` is the arithmetic right shift ``v >> shift``; no floating point is
  used anywhere in the integer path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: largest right shift :func:`requantize` accepts (the stochastic offset has 32 random bits)
MAX_SHIFT = 32
#: accumulators must satisfy ``|acc| < ACC_LIMIT`` (room for a rounding offset in int64)
ACC_LIMIT = 2**62
#: the supported range of ``bits`` for a format or a saturation width
MIN_BITS, MAX_BITS = 2, 64

ROUNDING_MODES = ("nearest", "stochastic")

_MASK32 = np.uint64(0xFFFFFFFF)
_SEED_MULT = np.uint64(0x9E3779B1)
_TENSOR_MULT = np.uint64(0x632BE5AB)
_FMIX_C1 = np.uint64(0x85EBCA6B)
_FMIX_C2 = np.uint64(0xC2B2AE35)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_bits(bits, what: str = "bits") -> int:
    """Validate a word width (``MIN_BITS..MAX_BITS``) and return it as an ``int``."""
    if not _is_int(bits):
        raise TypeError(f"{what} must be an integer, got {bits!r}")
    if not MIN_BITS <= bits <= MAX_BITS:
        raise ValueError(f"{what} must be in {MIN_BITS}..{MAX_BITS}, got {bits}")
    return int(bits)


def check_shift(shift, what: str = "shift") -> int:
    """Validate a right shift (``0..MAX_SHIFT``) and return it as an ``int``."""
    if not _is_int(shift):
        raise TypeError(f"{what} must be an integer, got {shift!r}")
    if not 0 <= shift <= MAX_SHIFT:
        raise ValueError(f"{what} must be in 0..{MAX_SHIFT}, got {shift}")
    return int(shift)


def check_mode(mode) -> str:
    if mode not in ROUNDING_MODES:
        raise ValueError(f"rounding mode must be one of {ROUNDING_MODES}, got {mode!r}")
    return mode


def as_int_array(x, what: str = "array") -> np.ndarray:
    """Return ``x`` as an ``np.int64`` array; ``TypeError`` unless it holds integers."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers (raw fixed-point values), got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{what} holds values that do not fit in int64")
    return arr.astype(np.int64, copy=False)


def int_range(bits: int) -> tuple[int, int]:
    """``(min, max)`` of a ``bits``-wide two's-complement integer, as Python ints."""
    bits = check_bits(bits)
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def max_abs(x: np.ndarray) -> int:
    """Largest magnitude in an int64 array, as an exact Python int (0 for an empty array)."""
    if x.size == 0:
        return 0
    return max(-int(x.min()), int(x.max()))


def check_in_bits(x: np.ndarray, bits, what: str) -> None:
    """``ValueError`` if an integer array has values outside a ``bits``-wide signed range."""
    if bits is None:
        return
    lo, hi = int_range(check_bits(bits, f"bits of {what}"))
    if x.size and (int(x.min()) < lo or int(x.max()) > hi):
        raise ValueError(
            f"{what} has values in [{int(x.min())}, {int(x.max())}], outside its "
            f"{bits}-bit format [{lo}, {hi}]"
        )


def check_acc(acc: np.ndarray, what: str = "accumulator") -> None:
    """``ValueError`` unless every accumulator value satisfies ``|acc| < ACC_LIMIT``."""
    if max_abs(acc) >= ACC_LIMIT:
        raise ValueError(f"{what} magnitude {max_abs(acc)} is not below 2**62 (ACC_LIMIT)")


def saturate(x, bits: int) -> np.ndarray:
    """Clamp integers to the ``bits``-wide two's-complement range ``[-2**(bits-1), 2**(bits-1)-1]``."""
    arr = as_int_array(x, "saturate input")
    lo, hi = int_range(bits)
    return np.clip(arr, lo, hi)


def wrap(x, bits: int) -> np.ndarray:
    """Integers modulo ``2**bits``, as ``bits``-wide two's complement (a register of that width:
    an exact sum of wrapped terms is exact whenever the true sum fits)."""
    arr = as_int_array(x, "wrap input")
    if bits >= 64:
        return arr
    half = np.int64(1) << np.int64(bits - 1)
    return ((arr + half) & ((half << np.int64(1)) - np.int64(1))) - half


def relu(x) -> np.ndarray:
    """``max(x, 0)`` elementwise (integers stay integers, floats stay floats)."""
    return np.maximum(np.asarray(x), 0)


@dataclass(frozen=True)
class QFormat:
    """Signed fixed-point format: ``bits`` total bits, ``frac`` of them fractional.

    The raw integer ``q`` (``min <= q <= max``) represents ``q / 2**frac``.
    """

    bits: int
    frac: int

    def __post_init__(self):
        check_bits(self.bits, "QFormat.bits")
        if not _is_int(self.frac):
            raise TypeError(f"QFormat.frac must be an integer, got {self.frac!r}")
        if not 0 <= self.frac < self.bits:
            raise ValueError(f"QFormat.frac must be in 0..bits-1 = 0..{self.bits - 1}, got {self.frac}")

    @property
    def min(self) -> int:
        return -(2 ** (self.bits - 1))

    @property
    def max(self) -> int:
        return 2 ** (self.bits - 1) - 1

    @property
    def lsb(self) -> float:
        """The real value of one raw unit, ``2**-frac``."""
        return 2.0**-self.frac

    def quantize(self, x) -> np.ndarray:
        """Real numbers -> raw integers: ``floor(x * 2**frac + 0.5)`` (half up), then saturate.

        Computed in float64: exact while ``|x * 2**frac| < 2**52``; ``NaN`` is refused and
        infinities saturate.
        """
        xf = np.asarray(x, dtype=np.float64)
        if np.isnan(xf).any():
            raise ValueError("cannot quantize NaN")
        q = np.floor(xf * 2.0**self.frac + 0.5)
        q = np.clip(q, float(self.min), float(self.max))
        too_big = q >= 2.0**63  # only possible for 64-bit formats: max is not a float64
        out = np.where(too_big, 0.0, q).astype(np.int64)
        return np.where(too_big, np.int64(self.max), out)

    def to_float(self, q) -> np.ndarray:
        """Raw integers -> real numbers (exact while ``|q| < 2**53``)."""
        return as_int_array(q, "QFormat.to_float input").astype(np.float64) * 2.0**-self.frac

    def contains(self, q) -> bool:
        """True when every raw value of ``q`` lies in ``[min, max]``."""
        arr = as_int_array(q)
        return arr.size == 0 or (int(arr.min()) >= self.min and int(arr.max()) <= self.max)

    def __str__(self) -> str:
        return f"Q{self.bits}.{self.frac}"


def _check_u32(value, what: str, hi: int = 2**32 - 1) -> int:
    if not _is_int(value):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    if not 0 <= value <= hi:
        raise ValueError(f"{what} must be in 0..{hi}, got {value}")
    return int(value)


def stochastic_offset(seed, tensor_id, index, shift) -> np.ndarray:
    """Counter-based pseudo-random rounding offset ``r`` in ``[0, 2**shift)``.

    Definition (all arithmetic on unsigned 32-bit words, i.e. modulo ``2**32``)::

        h  = seed * 0x9E3779B1 + tensor_id * 0x632BE5AB + index
        h ^= h >> 16
        h  = h * 0x85EBCA6B
        h ^= h >> 13
        h  = h * 0xC2B2AE35
        h ^= h >> 16                      # the murmur3 finalizer "fmix32"
        r  = h >> (32 - shift)  if shift >= 1 else 0     # the top `shift` bits of h

    ``seed`` in ``0..2**32-1`` (one per training step, say), ``tensor_id`` in ``0..255`` (which
    result tensor is being rounded), ``index`` in ``0..2**32-1`` (array: the flat C-order index of
    the element within the whole result tensor), ``shift`` in ``0..32``.

    Test vectors (seed, tensor_id, index, shift) -> r::

        (0, 0, 0, 32) -> 0                 fmix32(0) == 0
        (0, 0, 1, 32) -> 0x514E28B7        fmix32(1)
        (1, 0, 0, 32) -> 0x11FD02EB        fmix32(0x9E3779B1)
        (0, 1, 5, 4)  -> 0xB               fmix32(0x632BE5B0) = 0xB62258D3, top 4 bits
    """
    shift = check_shift(shift)
    seed = _check_u32(seed, "seed")
    tensor_id = _check_u32(tensor_id, "tensor_id", 255)
    idx = np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"index must hold integers, got dtype {idx.dtype}")
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) > 2**32 - 1):
        raise ValueError("index values must be in 0..2**32-1")
    if shift == 0:
        return np.zeros(idx.shape, dtype=np.int64)
    base = (np.uint64(seed) * _SEED_MULT + np.uint64(tensor_id) * _TENSOR_MULT) & _MASK32
    h = (idx.astype(np.uint64) + base) & _MASK32
    h ^= h >> np.uint64(16)
    h = (h * _FMIX_C1) & _MASK32
    h ^= h >> np.uint64(13)
    h = (h * _FMIX_C2) & _MASK32
    h ^= h >> np.uint64(16)
    return (h >> np.uint64(32 - shift)).astype(np.int64)


_SEED_MULT_INV = pow(int(_SEED_MULT), -1, 2**32)


def slice_seed(seed: int, offset: int) -> int:
    """The seed under which elements ``0..`` of a slice round like elements ``offset..`` of the
    whole tensor under ``seed``: ``h`` is linear in ``seed * 0x9E3779B1 + index`` and the multiplier
    is odd, so ``seed + offset * 0x9E3779B1**-1 (mod 2**32)`` shifts the index by ``offset``.
    Linear in ``seed`` too (a step loop may add its iteration to the result)."""
    return (int(seed) + int(offset) * _SEED_MULT_INV) % 2**32


def requantize(acc, shift, bits, mode="nearest", *, seed=0, tensor_id=0, index=None) -> np.ndarray:
    """Exact integer accumulator -> ``bits``-wide result, dividing by ``2**shift`` with rounding.

    ``nearest``: ``floor((acc + 2**(shift-1)) / 2**shift)`` (no offset when ``shift == 0``);
    ``stochastic``: ``floor((acc + r) / 2**shift)`` with
    ``r = stochastic_offset(seed, tensor_id, index, shift)``; ``index`` defaults to the flat
    C-order element index of ``acc``.  Either way the result is then clamped to
    ``[-2**(bits-1), 2**(bits-1)-1]``.  ``acc`` must hold integers with ``|acc| < 2**62``.
    """
    acc = as_int_array(acc, "accumulator")
    shift = check_shift(shift)
    lo, hi = int_range(check_bits(bits))
    check_mode(mode)
    check_acc(acc)
    if mode == "nearest":
        offset = np.int64(1 << (shift - 1)) if shift else np.int64(0)
    else:
        if index is None:
            index = np.arange(acc.size, dtype=np.int64).reshape(acc.shape)
        index = np.asarray(index)
        if index.shape != acc.shape:
            raise ValueError(f"index shape {index.shape} differs from accumulator shape {acc.shape}")
        offset = stochastic_offset(seed, tensor_id, index, shift)
    return np.clip((acc + offset) >> np.int64(shift), lo, hi)
