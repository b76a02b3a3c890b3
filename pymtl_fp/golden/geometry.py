"""Shape rules of the golden model's operations (shared with the network description).

A convolution with kernel ``R x S``, stride ``stride`` and zero padding ``pad`` on every side maps
an ``H x W`` input to ``Ho x Wo`` with ``Ho = (H + 2*pad - R) // stride + 1`` (the same for ``W``).
Supported: ``stride >= 1`` and ``0 <= pad < min(R, S)`` (a pad as large as the kernel would only
add outputs that see nothing but padding).  Max pooling uses ``k x k`` windows with stride ``k``
and needs ``H`` and ``W`` divisible by ``k``.
"""

from __future__ import annotations

from pymtl_fp.numerics import _is_int


def check_positive_int(value, what: str) -> int:
    if not _is_int(value):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{what} must be >= 1, got {value}")
    return int(value)


def check_stride_pad(stride, pad, kernel: tuple[int, int]) -> tuple[int, int]:
    """Validate a conv's stride and padding for a kernel ``(R, S)``; return them as ints."""
    stride = check_positive_int(stride, "stride")
    if not _is_int(pad):
        raise TypeError(f"pad must be an integer, got {pad!r}")
    if not 0 <= pad < min(kernel):
        raise ValueError(
            f"unsupported padding {pad} for a {kernel[0]}x{kernel[1]} kernel: "
            f"need 0 <= pad < {min(kernel)}"
        )
    return stride, int(pad)


def conv_out_size(size: int, kernel: int, stride: int, pad: int, what: str = "input") -> int:
    """Output length of a conv along one axis; ``ValueError`` if the kernel does not fit."""
    padded = size + 2 * pad
    if padded < kernel:
        raise ValueError(
            f"kernel {kernel} does not fit the {what} of size {size} with padding {pad}"
        )
    return (padded - kernel) // stride + 1


def pool_out_size(size: int, k: int, what: str = "input") -> int:
    """Output length of a ``k``-window, stride-``k`` max pool; ``size`` must be divisible by ``k``."""
    if size % k:
        raise ValueError(f"max pool k={k} needs the {what} size {size} to be divisible by {k}")
    return size // k
