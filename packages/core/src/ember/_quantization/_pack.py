"""int4 packing: two 4-bit values per byte, the first in the low nibble (ONNX's int4 layout,
https://onnx.ai/onnx/technical/int4.html; Burn packs the same nibbles into u32 words).

The values are flattened in row-major order; an odd count is padded with one zero nibble. Written with Tensor
ops (``%``, ``//``, ``*``), so it runs on every backend and inside compiled steps.
"""

from __future__ import annotations

from ..tensor._base import TensorT

__all__ = ["pack_int4", "unpack_int4", "packed_size"]


def packed_size(n: int) -> int:
    """Bytes holding ``n`` int4 values: ``ceil(n / 2)``."""
    return (n + 1) // 2


def pack_int4(q: TensorT) -> TensorT:
    """Int tensor of values in ``[-8, 7]`` (any shape) -> 1-D uint8 tensor of ``ceil(n / 2)`` bytes; element
    ``2i`` in the low nibble of byte ``i``, element ``2i + 1`` in the high nibble, two's complement."""
    flat = q.int().cast("int32").reshape((-1,))
    n = flat.shape[0]
    if n % 2:
        flat = flat.cat([flat, flat.zeros_like()[:1]], 0)
    nib = (flat % 16).reshape((packed_size(n), 2))
    lo, hi = nib[:, 0], nib[:, 1]
    return (lo + hi * 16).cast("uint8")


def unpack_int4(packed: TensorT, shape: tuple[int, ...]) -> TensorT:
    """The int8 tensor of ``shape`` whose values :func:`pack_int4` packed into ``packed``."""
    n = 1
    for s in shape:
        n *= s
    p = packed.cast("int32")
    lo, hi = p % 16, p // 16
    both = p.stack([lo, hi], 1).reshape((-1,))
    if both.shape[0] != n:
        both = both[:n]
    signed = both - ((both + 8) // 16) * 16
    return signed.cast("int8").reshape(shape)
