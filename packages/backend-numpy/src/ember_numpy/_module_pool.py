"""2-D pooling kernels of the numpy backend.

Each kernel loops over the kernel taps (``k_h * k_w`` iterations, 4 for a 2x2 pool), each one
vectorized over the whole ``[N, C, h_out, w_out]`` output through a strided slice of the padded
input: never a loop over pixels. Geometry (output sizes, ceil-mode padding, divisors) comes from
:mod:`ember.backend.contract`, shared with every backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend.contract import avg_divisor, pool_out, pool_pads

Ints = tuple[int, ...]


def _geometry(shape: Ints, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
              ceil_mode: bool) -> tuple[Ints, tuple[tuple[int, int], ...]]:
    sp = shape[2:]
    out = tuple(pool_out(s, k, st, p, d, ceil_mode) for s, k, st, p, d in zip(sp, kernel, stride, padding,
                                                                                 dilation))
    pads = tuple(pool_pads(s, k, st, p, d, o) for s, k, st, p, d, o in zip(sp, kernel, stride, padding,
                                                                               dilation, out))
    return out, pads


def _tap(tap: Ints, stride: Ints, dilation: Ints, out: Ints) -> tuple[slice, ...]:
    return (slice(None), slice(None)) + tuple(
        slice(t * d, t * d + s * (o - 1) + 1, s) for t, s, d, o in zip(tap, stride, dilation, out))


def _padded(x: np.ndarray, pads: tuple[tuple[int, int], ...], value: float) -> np.ndarray:
    if not any(a or b for a, b in pads):
        return x
    return np.pad(x, ((0, 0), (0, 0)) + pads, constant_values=value)


def max_pool2d(x: np.ndarray, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool,
               index_dtype: Any = None) -> Any:
    """Max pooling (NaN propagates) and, if ``index_dtype`` is given, flat indices ``h * W + w`` of
    the first maximum in row-major window order (of the last NaN in a window holding NaN, as
    PyTorch).

    The maximum is a running ``np.maximum`` over the taps. The indices come from a second pass
    recording, as a small-int tap number, the first tap equal to the maximum (boolean and uint8
    arithmetic only: masked stores of int64 are several times slower), then one table look-up
    turns tap numbers into offsets."""
    out, pads = _geometry(x.shape, kernel, stride, padding, dilation, ceil_mode)
    xp = _padded(x, pads, -np.inf)
    taps = list(np.ndindex(*kernel))
    views = [xp[_tap(tap, stride, dilation, out)] for tap in taps]
    best = views[0].copy()
    for v in views[1:]:
        np.maximum(best, v, out=best)  # propagates NaN
    if index_dtype is None:
        return best
    tdt = np.uint8 if len(taps) < 256 else np.int32
    tap_no = np.zeros(best.shape, tdt)
    found = views[0] == best
    for t in range(1, len(taps)):
        first = np.greater(views[t] == best, found)  # equal to the maximum here and not before
        found |= first
        tap_no += first.view(np.uint8).astype(tdt, copy=False) * tdt(t)
    if np.isnan(best).any():  # NaN windows: the last NaN wins, as in PyTorch
        for t in range(len(taps)):
            np.copyto(tap_no, tdt(t), where=np.isnan(views[t]))
    w = x.shape[3]
    table = np.array([a * dilation[0] * w + b * dilation[1] for a, b in taps], index_dtype)
    idx = table[tap_no]
    idx += np.add.outer((np.arange(out[0]) * stride[0] - padding[0]) * w,
                        np.arange(out[1]) * stride[1] - padding[1]).astype(index_dtype)
    return best, idx


def max_pool2d_backward(grad: np.ndarray, indices: np.ndarray, x_shape: Ints, overlap: bool) -> np.ndarray:
    """``grad`` added at the flat plane ``indices``: one ``bincount`` over all planes when windows
    overlap (an input can be the maximum of several windows), else a plain scatter store."""
    n, c = x_shape[:2]
    plane = x_shape[2] * x_shape[3]
    flat = (indices + (np.arange(n * c, dtype=indices.dtype) * plane).reshape(n, c, 1, 1)).ravel()
    if overlap:
        r = np.bincount(flat, weights=grad.ravel(), minlength=n * c * plane)
        return r.reshape(x_shape).astype(grad.dtype, copy=False)
    dx = np.zeros(n * c * plane, grad.dtype)
    dx[flat] = grad.ravel()
    return dx.reshape(x_shape)


def _avg_geometry(shape: Ints, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                  ceil_mode: bool) -> tuple[Ints, tuple[tuple[int, int], ...], np.ndarray]:
    ones = (1,) * len(kernel)
    out, pads = _geometry(shape, kernel, stride, padding, ones, ceil_mode)
    div = avg_divisor(shape[2:], kernel, stride, padding, out, count_include_pad)
    return out, pads, div


def avg_pool2d(x: np.ndarray, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
               ceil_mode: bool) -> np.ndarray:
    """Average pooling: the sum over the taps of zero-padded slices, over the PyTorch divisor."""
    out, pads, div = _avg_geometry(x.shape, kernel, stride, padding, count_include_pad, ceil_mode)
    xp = _padded(x, pads, 0.0)
    ones = (1,) * len(kernel)
    acc = np.zeros(x.shape[:2] + out, np.float32 if x.dtype == np.float16 else x.dtype)
    for tap in np.ndindex(*kernel):
        acc += xp[_tap(tap, stride, ones, out)]
    acc /= div
    return acc.astype(x.dtype, copy=False)


def avg_pool2d_backward(grad: np.ndarray, x_shape: Ints, kernel: Ints, stride: Ints, padding: Ints,
                        count_include_pad: bool, ceil_mode: bool) -> np.ndarray:
    """Each output's gradient over its divisor, added back to every tap of its window."""
    out, pads, div = _avg_geometry(x_shape, kernel, stride, padding, count_include_pad, ceil_mode)
    wt = np.float32 if grad.dtype == np.float16 else grad.dtype
    g = grad.astype(wt) / div.astype(wt)
    ones = (1,) * len(kernel)
    ps = x_shape[:2] + tuple(a + s + b for (a, b), s in zip(pads, x_shape[2:]))
    acc = np.zeros(ps, wt)
    for tap in np.ndindex(*kernel):
        acc[_tap(tap, stride, ones, out)] += g
    crop = (slice(None), slice(None)) + tuple(slice(a, a + s) for (a, _), s in zip(pads, x_shape[2:]))
    return np.ascontiguousarray(acc[crop], dtype=grad.dtype)
