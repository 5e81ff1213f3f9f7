"""Shape-only geometry of the module ops: output sizes, pooling divisors, interpolation matrices.

Shared by the core's validation (:mod:`ember.tensor.functional`), the contract's composite defaults
(:mod:`._ops_module`) and backends' kernels, so every backend agrees on the formulas. Everything
here depends on shapes and options only (never on tensor values); the arrays are float64 numpy
constants that a backend uploads once with ``from_numpy``.

Formulas are PyTorch's (``aten/src/ATen/native``: ``pooling_output_shape``,
``avg_pool2d`` divisor, ``area_pixel_compute_source_index``, ``upsample_bicubic2d``), which Burn
follows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "conv_out",
    "conv_transpose_out",
    "pool_out",
    "pool_pads",
    "avg_divisor",
    "adaptive_matrix",
    "interp_matrix",
    "CUBIC_A",
]

#: the bicubic convolution coefficient ``A`` (Keys 1981 with PyTorch's choice A = -0.75)
CUBIC_A = -0.75


def conv_out(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output size of a convolution: ``floor((size + 2 p - d (k - 1) - 1) / s) + 1`` (PyTorch)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv_transpose_out(size: int, kernel: int, stride: int, padding: int, output_padding: int,
                       dilation: int) -> int:
    """Output size of a transposed convolution:
    ``(size - 1) s - 2 p + d (k - 1) + output_padding + 1`` (PyTorch ``ConvTranspose2d``)."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1


def pool_out(size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool) -> int:
    """Output size of a pooling window (PyTorch ``pooling_output_shape``): the floor or ceil of
    ``(size + 2 p - d (k - 1) - 1) / s`` plus one; in ceil mode the last window must start inside
    the input or the left padding, else it is dropped."""
    num = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-num // stride) if ceil_mode else num // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def pool_pads(size: int, kernel: int, stride: int, padding: int, dilation: int, out: int) -> tuple[int, int]:
    """``(before, after)`` padding so that every one of the ``out`` windows lies inside the padded
    input (``after`` exceeds ``padding`` only in ceil mode)."""
    extent = (out - 1) * stride + dilation * (kernel - 1) + 1
    return padding, max(padding, extent - size - padding)


def avg_divisor(sizes: Sequence[int], kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                out: Sequence[int], count_include_pad: bool) -> np.ndarray:
    """Divisor of each average-pooling window, shape ``out`` (PyTorch ``avg_pool2d``): the window
    clipped to the padded input (``count_include_pad``), or to the input itself."""
    div = np.ones((), np.float64)
    for n, k, s, p, o in zip(sizes, kernel, stride, padding, out):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        if count_include_pad:
            cnt = end - start
        else:
            cnt = np.minimum(end, n) - np.maximum(start, 0)
        div = np.multiply.outer(div, cnt.astype(np.float64))
    return div


def adaptive_matrix(size: int, out: int) -> np.ndarray:
    """``[out, size]`` averaging matrix of adaptive average pooling: row ``i`` averages
    ``[floor(i size / out), ceil((i + 1) size / out))`` (PyTorch ``adaptive_avg_pool2d``)."""
    m = np.zeros((out, size), np.float64)
    for i in range(out):
        a = (i * size) // out
        b = -(-((i + 1) * size) // out)
        m[i, a:b] = 1.0 / (b - a)
    return m


def _source(out: int, size: int, align_corners: bool, cubic: bool) -> np.ndarray:
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        return dst * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    src = (dst + 0.5) * (size / out) - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _cubic_weights(t: np.ndarray) -> np.ndarray:
    """The four weights of offsets -1, 0, 1, 2 for fractional positions ``t`` (Keys 1981)."""
    a = CUBIC_A

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def interp_matrix(size: int, out: int, mode: str, align_corners: bool) -> np.ndarray:
    """``[out, size]`` matrix of 1-D interpolation along one axis; 2-D interpolation is separable
    (``y = A_h x A_w^T``), which is exact for all three modes.

    - ``nearest``: ``src = min(floor(dst * size / out), size - 1)`` (PyTorch ``nearest``;
      ``align_corners`` does not apply);
    - ``bilinear``: ``src = (dst + 0.5) size / out - 0.5`` clamped at 0, or
      ``dst (size - 1) / (out - 1)`` with ``align_corners``; weights ``1 - t``, ``t``;
    - ``bicubic``: the same source without the clamp, cubic convolution with ``A = -0.75`` on the
      four neighbours, indices clamped to the border (PyTorch ``upsample_bicubic2d``).
    """
    m = np.zeros((out, size), np.float64)
    rows = np.arange(out)
    if mode == "nearest":
        src = np.minimum((rows.astype(np.int64) * size) // out, size - 1)  # exact integer floor
        m[rows, src] = 1.0
        return m
    if mode == "bilinear":
        src = _source(out, size, align_corners, cubic=False)
        i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
        i1 = np.minimum(i0 + 1, size - 1)
        t = src - i0
        np.add.at(m, (rows, i0), 1.0 - t)
        np.add.at(m, (rows, i1), t)
        return m
    if mode == "bicubic":
        src = _source(out, size, align_corners, cubic=True)
        i = np.floor(src).astype(np.int64)
        w = _cubic_weights(src - i)
        for j in range(4):
            np.add.at(m, (rows, np.clip(i - 1 + j, 0, size - 1)), w[:, j])
        return m
    raise ValueError(f"unknown interpolation mode {mode!r}")


def prod(xs: Sequence[int]) -> int:
    return math.prod(xs)
