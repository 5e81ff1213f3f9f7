"""N-d convolution kernels of the numpy backend: im2col through a strided view + BLAS matmul.

``x`` ``[N, C, *S]`` is zero-padded and viewed as windows ``[N, C, *out, *K]`` with
``np.lib.stride_tricks.as_strided`` (stride and dilation become strides of the view: no copy).
The batch is processed in chunks whose column matrix fits in the CPU's L2 cache (about 1 MiB):
a few whole images, or for large images one image and a block of output rows. The columns are
written and read back from cache instead of RAM, which made the MNIST-sized convolutions 2-3x and
the ResNet-sized ones 1.3x faster than one whole-batch im2col on this machine. Per chunk:

- forward: ``y[b, G, Og, L] = W[G, Og, Cg K] @ cols[b, G, Cg K, L]``; with fewer than
  :data:`MERGE_BELOW` outputs per image (the deep layers of a ResNet), the chunk's images side by side instead,
  ``y[G, Og, b L] = W @ cols[G, Cg K, b L]``: one gemm per group reads the (large) weight once per chunk, where a
  gemm per image re-read it from memory for a handful of columns (5x faster at 512 channels, 2x2 outputs);
- input gradient: with stride 1 and at least 4 input channels per group, the forward kernel on
  ``grad`` with the flipped, transposed weight ("full" convolution); otherwise
  ``dcols = W^T @ g`` and col2im adds each kernel tap's slab back into the padded input
  (``prod(K)`` strided vectorized adds: 9 for 3x3);
- weight gradient: ``dW += sum_b g[b, G, Og, L] @ cols[b, G, L, Cg K]``, or with the images side by side
  ``dW += g[G, Og, b L] @ cols[G, b L, Cg K]``.

The loops run over batch chunks and kernel taps, never over pixels. float16 is computed in
float32 (numpy has no float16 BLAS) and rounded once.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember.backend.contract import conv_out

__all__ = ["conv_forward", "conv_backward_input", "conv_backward_weight", "windows"]

Ints = tuple[int, ...]
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
#: target size of one chunk's column matrix (fits the L2 cache of current x86 cores)
CHUNK_BYTES = 1 << 20
#: below this many outputs per image, a chunk's images go side by side in one gemm (see the module docstring)
MERGE_BELOW = 128


def _work(*arrays: np.ndarray) -> list[np.ndarray]:
    return [a.astype(_F32) if a.dtype == _F16 else a for a in arrays]


def _pad(x: np.ndarray, padding: Ints) -> np.ndarray:
    if not any(padding):
        return x
    return np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))


def windows(xp: np.ndarray, kernel: Ints, stride: Ints, dilation: Ints, out: Ints) -> np.ndarray:
    """Read-only view ``[N, C, *out, *kernel]`` of the padded input ``xp`` ``[N, C, *S]``."""
    st = xp.strides
    sp = st[2:]
    strides = st[:2] + tuple(a * s for a, s in zip(sp, stride)) + tuple(a * d for a, d in zip(sp, dilation))
    return as_strided(xp, xp.shape[:2] + tuple(out) + tuple(kernel), strides, writeable=False)


class _Cols:
    """The im2col of one convolution, produced chunk by chunk (``out``: the first outputs only).

    A chunk is ``b`` whole images when one image's columns fit in :data:`CHUNK_BYTES`, else one
    image and a block of rows of the first spatial output dim. :meth:`get` returns the chunk's
    columns; :meth:`part` selects the same chunk of an output-shaped
    array ``[N, G, Og, *out]``.
    """

    def __init__(self, x: np.ndarray, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
                 groups: int, out: Ints | None = None) -> None:
        n, c = x.shape[:2]
        nd = len(kernel)
        self.out = out or tuple(conv_out(s, k, st, p, d)
                                for s, k, st, p, d in zip(x.shape[2:], kernel, stride, padding, dilation))
        self.win = windows(_pad(x, padding), kernel, stride, dilation, self.out)
        self.l = math.prod(self.out)
        self.merge = self.l < MERGE_BELOW
        taps, outs = tuple(range(2 + nd, 2 + 2 * nd)), tuple(range(2, 2 + nd))
        self.perm = (1, *taps, 0, *outs) if self.merge else (0, 1, *taps, *outs)  # [C, *K, N, *out] / [N, C, *K, *out]
        self.rows = (c // groups) * math.prod(kernel)
        self.groups = groups
        per_image = c * math.prod(kernel) * self.l * x.itemsize
        if per_image <= CHUNK_BYTES:
            b = max(1, min(n, CHUNK_BYTES // max(per_image, 1)))
            self.chunks = [(n0, min(n0 + b, n), 0, self.out[0]) for n0 in range(0, n, b)]
        else:
            r = max(1, CHUNK_BYTES * self.out[0] // per_image)
            o0 = self.out[0]
            self.chunks = [(i, i + 1, r0, min(r0 + r, o0)) for i in range(n) for r0 in range(0, o0, r)]

    def get(self, chunk: tuple[int, int, int, int]) -> np.ndarray:
        """The chunk's columns: ``[b, G, Cg K, L_chunk]``, or ``[G, Cg K, b L_chunk]`` with ``merge``."""
        n0, n1, r0, r1 = chunk
        w = np.ascontiguousarray(self.win[n0:n1, :, r0:r1].transpose(self.perm))
        return w.reshape(self.groups, self.rows, -1) if self.merge else w.reshape(n1 - n0, self.groups, self.rows, -1)

    def images_last(self, a: np.ndarray, chunk: tuple[int, int, int, int]) -> np.ndarray:
        """The chunk of an output-shaped ``[N, G, Og, *out]`` array as ``[G, Og, b L_chunk]`` (a copy)."""
        part = self.part(a, chunk)
        b, g, og = part.shape[:3]
        return np.ascontiguousarray(part.reshape(b, g, og, -1).transpose(1, 2, 0, 3)).reshape(g, og, -1)

    def part(self, a: np.ndarray, chunk: tuple[int, int, int, int]) -> np.ndarray:
        n0, n1, r0, r1 = chunk
        return a[n0:n1, :, :, r0:r1]


def conv_forward(x: np.ndarray, weight: np.ndarray, bias: Any, stride: Ints, padding: Ints, dilation: Ints,
                 groups: int) -> np.ndarray:
    """Convolution of ``x`` ``[N, C, *S]`` with ``weight`` ``[O, C / groups, *K]`` plus ``bias``."""
    dt = x.dtype
    x, weight = _work(x, weight)
    o, kernel = weight.shape[0], weight.shape[2:]
    n = x.shape[0]
    cols = _Cols(x, kernel, stride, padding, dilation, groups)
    w = weight.reshape(groups, o // groups, -1)
    y = np.empty((n, groups, o // groups) + cols.out, x.dtype)
    for ch in cols.chunks:
        dst = cols.part(y, ch)
        c = cols.get(ch)
        if cols.merge:  # [G, Og, b L] -> [b, G, Og, L]
            r = np.matmul(w, c).reshape(w.shape[0], w.shape[1], dst.shape[0], -1)
            dst[...] = r.transpose(2, 0, 1, 3).reshape(dst.shape)
        elif dst.flags.c_contiguous:  # whole images: the gemm writes into y
            np.matmul(w, c, out=dst.reshape(c.shape[:2] + (w.shape[1], c.shape[3])))
        else:
            dst[...] = np.matmul(w, c).reshape(dst.shape)  # [b, G, Og, L_chunk]
    y = y.reshape((n, o) + cols.out)
    if bias is not None:
        y += bias.reshape((1, o) + (1,) * len(cols.out))
    return y.astype(dt, copy=False)


def conv_backward_input(grad: np.ndarray, weight: np.ndarray, x_shape: Ints, stride: Ints, padding: Ints,
                        dilation: Ints, groups: int) -> np.ndarray:
    """Gradient with respect to the input (of shape ``x_shape``) of :func:`conv_forward`.

    With stride 1 (and ``padding <= dilation (k - 1)``) and at least 4 input channels per group
    it is the forward convolution of ``grad`` with the flipped, transposed weight and padding
    ``dilation (k - 1) - padding`` (a gemm with ``channels_in / groups`` rows: measured 2x faster
    than col2im for 8 channels, slower for 1); otherwise col2im."""
    k = weight.shape[2:]
    o, cg = weight.shape[:2]
    if cg >= 4 and all(s == 1 for s in stride) and all(p <= d * (q - 1) for p, d, q in zip(padding, dilation, k)):
        nd = len(k)
        wf = weight.reshape((groups, o // groups, cg) + k).swapaxes(1, 2).reshape((groups * cg, o // groups) + k)
        wf = wf[(slice(None), slice(None)) + (slice(None, None, -1),) * nd]
        full = tuple(d * (q - 1) - p for p, d, q in zip(padding, dilation, k))
        # an input longer than the outputs cover (a transposed conv's padding_out) sees the
        # gradient of the missing trailing outputs as zeros
        extra = tuple(n - (o + 2 * f - d * (q - 1))
                      for n, o, f, d, q in zip(x_shape[2:], grad.shape[2:], full, dilation, k))
        if any(extra):
            grad = np.pad(grad, ((0, 0), (0, 0)) + tuple((0, e) for e in extra))
        return conv_forward(grad, wf, None, stride, full, dilation, groups)
    dt = grad.dtype
    grad, weight = _work(grad, weight)
    o, cg, kernel = weight.shape[0], weight.shape[1], weight.shape[2:]
    n, out = grad.shape[0], grad.shape[2:]
    c = groups * cg
    lo = math.prod(out)
    wt = weight.reshape(groups, o // groups, -1).transpose(0, 2, 1)  # [G, Cg K, Og]
    g = grad.reshape(n, groups, o // groups, lo)
    ps = tuple(s + 2 * p for s, p in zip(x_shape[2:], padding))
    dxp = np.zeros((n, c) + ps, grad.dtype)
    per_image = c * math.prod(kernel) * lo * grad.itemsize
    b = max(1, min(n, CHUNK_BYTES // max(per_image, 1)))
    taps = [(tap, tuple(slice(t * d, t * d + s * (q - 1) + 1, s) for t, s, d, q in zip(tap, stride, dilation, out)))
            for tap in np.ndindex(*kernel)]
    for n0 in range(0, n, b):
        dc = np.matmul(wt, g[n0:n0 + b])  # [b, G, Cg K, L]
        dc = dc.reshape((dc.shape[0], c) + tuple(kernel) + tuple(out))
        dst = dxp[n0:n0 + b]
        for tap, sl in taps:  # prod(kernel) strided adds
            dst[(slice(None), slice(None)) + sl] += dc[(slice(None), slice(None)) + tap]
    if any(padding):
        dxp = dxp[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, x_shape[2:]))]
    return np.ascontiguousarray(dxp, dtype=dt)


def conv_backward_weight(x: np.ndarray, grad: np.ndarray, weight_shape: Ints, stride: Ints, padding: Ints,
                         dilation: Ints, groups: int) -> np.ndarray:
    """Gradient with respect to the weight (of shape ``weight_shape``) of :func:`conv_forward`."""
    dt = grad.dtype
    x, grad = _work(x, grad)
    o, kernel = weight_shape[0], weight_shape[2:]
    # the gradient's size, not the input's, sets the outputs: a transposed conv's padding_out
    # gives an input longer than its outputs cover
    cols = _Cols(x, kernel, stride, padding, dilation, groups, tuple(grad.shape[2:]))
    g = grad.reshape((grad.shape[0], groups, o // groups) + cols.out)
    dw = np.zeros((groups, o // groups, cols.rows), np.float64 if x.dtype == np.float64 else _F32)
    for ch in cols.chunks:
        if cols.merge:  # [G, Og, b L] @ [G, b L, Cg K]: one gemm per group and chunk
            dw += np.matmul(cols.images_last(g, ch), cols.get(ch).swapaxes(-1, -2))
        else:
            gc = cols.part(g, ch)
            gc = np.ascontiguousarray(gc).reshape(gc.shape[:3] + (-1,))
            dw += np.matmul(gc, cols.get(ch).swapaxes(-1, -2)).sum(0)  # [b, G, Og, Cg K] summed
    return dw.reshape(weight_shape).astype(dt, copy=False)
