"""Independent float64 references of the module ops, for the ``test_module_*`` conformance tests.

Each reference is a naive loop over output positions written straight from the op's
definition (PyTorch's documentation): slow but obviously correct, and sharing no code with
the kernels or the contract's defaults (``ember.backend._module_geometry`` included). Tests keep
shapes tiny.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember import Float, Tensor

Ints = Sequence[int]


def _out(size: int, k: int, s: int, p: int, d: int, ceil: bool = False) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    o = (math.ceil(span / s) if ceil else span // s) + 1
    if ceil and (o - 1) * s >= size + p:  # the last window must start inside input or left padding
        o -= 1
    return o


def conv_ref(x: np.ndarray, w: np.ndarray, b: Any, stride: Ints, padding: Ints, dilation: Ints,
             groups: int) -> np.ndarray:
    """``y[n, o, pos] = b[o] + sum_{c, k} xpad[n, g Cg + c, pos s + k d] w[o, c, k]``, ``g = o // Og``."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, c = x.shape[:2]
    o, cg, kernel = w.shape[0], w.shape[1], w.shape[2:]
    og = o // groups
    out = [_out(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nd)]
    y = np.zeros([n, o] + out)
    for bi, oi in itertools.product(range(n), range(o)):
        g = oi // og
        for pos in np.ndindex(*out):
            acc = 0.0 if b is None else float(b[oi])
            for ci in range(cg):
                for k in np.ndindex(*kernel):
                    idx = tuple(pos[i] * stride[i] + k[i] * dilation[i] for i in range(nd))
                    acc += xp[(bi, g * cg + ci) + idx] * w[(oi, ci) + k]
            y[(bi, oi) + pos] = acc
    return y


def conv_backward_ref(x: np.ndarray, w: np.ndarray, gy: np.ndarray, stride: Ints, padding: Ints, dilation: Ints,
                      groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gradients ``(gx, gw, gb)`` of ``sum(conv_ref(x, w, b, ...) * gy)``: every product
    ``xpad[n, g Cg + c, pos s + k d] w[o, c, k]`` of :func:`conv_ref` sends ``gy[n, o, pos]`` times the other
    factor to each factor's gradient; ``gb[o]`` is ``gy`` summed over batch and positions."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    n = x.shape[0]
    o, cg, kernel = w.shape[0], w.shape[1], w.shape[2:]
    og = o // groups
    for bi, oi in itertools.product(range(n), range(o)):
        g = oi // og
        for pos in np.ndindex(*gy.shape[2:]):
            go = gy[(bi, oi) + pos]
            for ci in range(cg):
                for k in np.ndindex(*kernel):
                    idx = (bi, g * cg + ci) + tuple(pos[i] * stride[i] + k[i] * dilation[i] for i in range(nd))
                    gxp[idx] += go * w[(oi, ci) + k]
                    gw[(oi, ci) + k] += go * xp[idx]
    inner = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, x.shape[2:]))
    return gxp[inner], gw, gy.sum(axis=(0,) + tuple(range(2, gy.ndim)))


def conv_transpose_ref(x: np.ndarray, w: np.ndarray, b: Any, stride: Ints, padding: Ints, padding_out: Ints,
                       dilation: Ints, groups: int) -> np.ndarray:
    """Scatter form: every input ``x[n, ci, pos]`` adds ``x * w[ci, o, k]`` at output position
    ``pos s + k d - p`` of channel ``g Og + o``; then ``padding_out`` extra positions at the end."""
    nd = x.ndim - 2
    n, cin = x.shape[:2]
    og, kernel = w.shape[1], w.shape[2:]
    cg = cin // groups
    out = [(x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + padding_out[i] + 1
           for i in range(nd)]
    big = [out[i] + 2 * padding[i] + dilation[i] * (kernel[i] - 1) + stride[i] for i in range(nd)]
    y = np.zeros([n, og * groups] + big)
    for bi, ci in itertools.product(range(n), range(cin)):
        g = ci // cg
        for pos in np.ndindex(*x.shape[2:]):
            for oi in range(og):
                for k in np.ndindex(*kernel):
                    idx = tuple(pos[i] * stride[i] + k[i] * dilation[i] for i in range(nd))
                    y[(bi, g * og + oi) + idx] += x[(bi, ci) + pos] * w[(ci, oi) + k]
    y = y[(slice(None), slice(None)) + tuple(slice(padding[i], padding[i] + out[i]) for i in range(nd))]
    if b is not None:
        y = y + np.asarray(b).reshape((1, -1) + (1,) * nd)
    return y


def max_pool2d_ref(x: np.ndarray, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
                   ceil: bool) -> tuple[np.ndarray, np.ndarray]:
    """Max over the in-bounds window elements (padding never wins); index ``h W + w`` of the
    first maximum in row-major window order."""
    n, c, h, w = x.shape
    oh = _out(h, kernel[0], stride[0], padding[0], dilation[0], ceil)
    ow = _out(w, kernel[1], stride[1], padding[1], dilation[1], ceil)
    v = np.zeros((n, c, oh, ow))
    ix = np.zeros((n, c, oh, ow), np.int64)
    for bi, ci, i, j in itertools.product(range(n), range(c), range(oh), range(ow)):
        best, arg = -np.inf, -1
        for ki, kj in itertools.product(range(kernel[0]), range(kernel[1])):
            r = i * stride[0] - padding[0] + ki * dilation[0]
            q = j * stride[1] - padding[1] + kj * dilation[1]
            if 0 <= r < h and 0 <= q < w and x[bi, ci, r, q] > best:
                best, arg = x[bi, ci, r, q], r * w + q
        v[bi, ci, i, j], ix[bi, ci, i, j] = best, arg
    return v, ix


def avg_pool2d_ref(x: np.ndarray, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                   ceil: bool) -> np.ndarray:
    """Sum of the in-bounds elements over the divisor: the window clipped to the padded input
    (``count_include_pad``) or the number of in-bounds elements (PyTorch's definition)."""
    n, c, h, w = x.shape
    oh = _out(h, kernel[0], stride[0], padding[0], 1, ceil)
    ow = _out(w, kernel[1], stride[1], padding[1], 1, ceil)
    y = np.zeros((n, c, oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        r0, q0 = i * stride[0] - padding[0], j * stride[1] - padding[1]
        r1, q1 = min(r0 + kernel[0], h + padding[0]), min(q0 + kernel[1], w + padding[1])
        size = (r1 - r0) * (q1 - q0)
        r0c, q0c, r1c, q1c = max(r0, 0), max(q0, 0), min(r1, h), min(q1, w)
        s = x[:, :, r0c:r1c, q0c:q1c].sum(axis=(2, 3))
        y[:, :, i, j] = s / (size if count_include_pad else (r1c - r0c) * (q1c - q0c))
    return y


def adaptive_avg_pool2d_ref(x: np.ndarray, out: Ints) -> np.ndarray:
    h, w = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for i, j in itertools.product(range(out[0]), range(out[1])):
        r0, r1 = (i * h) // out[0], math.ceil((i + 1) * h / out[0])
        q0, q1 = (j * w) // out[1], math.ceil((j + 1) * w / out[1])
        y[:, :, i, j] = x[:, :, r0:r1, q0:q1].mean(axis=(2, 3))
    return y


def _cubic(t: float, a: float = -0.75) -> float:
    t = abs(t)
    if t <= 1:
        return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
    if t < 2:
        return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
    return 0.0


def _src(dst: int, size: int, out: int, align: bool) -> float:
    if align:
        return dst * (size - 1) / (out - 1) if out > 1 else 0.0
    return (dst + 0.5) * size / out - 0.5


def interpolate_ref(x: np.ndarray, out: Ints, mode: str, align: bool) -> np.ndarray:
    """Per output pixel, from PyTorch's definitions: nearest ``floor(dst * in / out)``; bilinear
    from the 4 neighbours of the source point (clamped at 0, ``align_corners`` per PyTorch);
    bicubic from the 4x4 neighbours with Keys' kernel ``A = -0.75``, indices clamped to the border."""
    h, w = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for i, j in itertools.product(range(out[0]), range(out[1])):
        if mode == "nearest":
            r, q = min(int(math.floor(i * h / out[0])), h - 1), min(int(math.floor(j * w / out[1])), w - 1)
            y[:, :, i, j] = x[:, :, r, q]
        elif mode == "bilinear":
            sy, sx = max(_src(i, h, out[0], align), 0.0), max(_src(j, w, out[1], align), 0.0)
            y0, x0 = int(math.floor(sy)), int(math.floor(sx))
            ty, tx = sy - y0, sx - x0
            y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
            y[:, :, i, j] = ((1 - ty) * (1 - tx) * x[:, :, y0, x0] + (1 - ty) * tx * x[:, :, y0, x1]
                             + ty * (1 - tx) * x[:, :, y1, x0] + ty * tx * x[:, :, y1, x1])
        else:
            sy, sx = _src(i, h, out[0], align), _src(j, w, out[1], align)
            y0, x0 = int(math.floor(sy)), int(math.floor(sx))
            acc: Any = 0.0
            for a, b in itertools.product(range(-1, 3), range(-1, 3)):
                wt = _cubic(sy - (y0 + a)) * _cubic(sx - (x0 + b))
                acc = acc + wt * x[:, :, min(max(y0 + a, 0), h - 1), min(max(x0 + b, 0), w - 1)]
            y[:, :, i, j] = acc
    return y


def unfold4d_ref(x: np.ndarray, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> np.ndarray:
    n, c, h, w = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2])
    oh = _out(h, kernel[0], stride[0], padding[0], dilation[0])
    ow = _out(w, kernel[1], stride[1], padding[1], dilation[1])
    y = np.zeros((n, c * kernel[0] * kernel[1], oh * ow))
    for ci, ki, kj, i, j in itertools.product(range(c), range(kernel[0]), range(kernel[1]), range(oh), range(ow)):
        row = (ci * kernel[0] + ki) * kernel[1] + kj
        y[:, row, i * ow + j] = xp[:, ci, i * stride[0] + ki * dilation[0], j * stride[1] + kj * dilation[1]]
    return y


# ---------------------------------------------------------------------------- tensors
def ftensor(a: np.ndarray, device: Any) -> Tensor:
    return Tensor.from_data(np.asarray(a, np.float64), device, Float)


def held(t: Tensor) -> np.ndarray:
    """The values a tensor really holds (after rounding to its dtype), as float64."""
    return np.asarray(t.to_numpy(), dtype=np.float64)


def low_precision(device: Any) -> bool:
    return device.backend.float_dtype.value in ("float16", "bfloat16")


def away(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Distinct values, at least 0.02 apart (no ties for max pooling, gradients well defined)."""
    n = int(np.prod(shape))
    vals = (np.arange(n) - n / 2) * 0.05
    rng.shuffle(vals)
    return vals.reshape(shape)
