"""Module primitives (Burn's ``ModuleOps``): convolution, pooling, embedding, interpolation.

Layouts are Burn's and PyTorch's: inputs ``[batch, channels, *spatial]`` (NCL, NCHW, NCDHW);
convolution weights ``[channels_out, channels_in / groups, *kernel]``; transposed-convolution
weights ``[channels_in, channels_out / groups, *kernel]``; bias ``[channels_out]`` or ``None``.

The core (:mod:`ember.tensor.functional`) validates and normalizes every argument: ``stride``,
``padding``, ``dilation``, ``kernel`` ... arrive as tuples of ints with one entry per spatial dim,
ranks and channel counts fit, kernels fit in the padded input. Backends never re-check.

Every op has a composite default written with other primitives, so a new backend works
unchanged and overrides only what it has a faster kernel for. The minimal fast set is:

- ``conv2d``/``conv3d`` and their ``*_backward_input`` / ``*_backward_weight`` (the transposed
  convolutions, ``conv1d`` and ``unfold4d`` are built on them); ``conv2d_backward`` / ``conv3d_backward``
  (all three gradients in one call, what the ``Autodiff`` rule calls) default to those two and a sum;
- ``max_pool2d_with_indices``, ``max_pool2d`` and ``max_pool2d_backward``;
- ``avg_pool2d`` and ``avg_pool2d_backward``.

``adaptive_avg_pool2d`` and ``interpolate`` (and their backwards) are two matrix products with
constant matrices from :mod:`._module_geometry`, ``embedding`` is ``select`` / ``select_add``; these
defaults are already vectorized everywhere. The 1-D ops are the 2-D ones on a unit height.

Backward primitives (``*_backward*``) exist so that ``ember.autodiff`` rules call one inner-backend
op per gradient, which a backend may replace by a native kernel (``torch.nn.grad``, aten's
``*_backward``, ``jax.vjp`` of ``lax.conv_general_dilated``).

Under ``ember.autodiff.Autodiff``, ``conv2d``/``conv3d``, ``conv_transpose2d``/``conv_transpose3d``,
``max_pool2d_with_indices``, ``avg_pool2d``, ``adaptive_avg_pool2d``, ``embedding`` and
``interpolate`` have backward rules (:mod:`ember.autodiff._rules_module`); every other op here is
differentiated through its default.

Max-pooling indices are Int (the backend's ``int_dtype``) flat positions ``h * width + w`` in each
input plane, as PyTorch's ``return_indices`` and Burn's ``max_pool2d_with_indices``.

The defaults loop over kernel taps (at most ``prod(kernel)`` vectorized ops each, never over
pixels).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from . import _module_geometry as geo

Ints = tuple[int, ...]


def _sl(n: int) -> slice:
    return slice(0, n, 1)


def _taps(kernel: Ints) -> list[Ints]:
    return list(itertools.product(*[range(k) for k in kernel]))


def _tap_slices(shape: Ints, tap: Ints, stride: Ints, dilation: Ints, out: Ints) -> tuple[slice, ...]:
    """Slices of a padded ``[N, C, *spatial]`` array seen by kernel tap ``tap`` at every output."""
    sp = tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, s, d, o in zip(tap, stride, dilation, out))
    return (_sl(shape[0]), _sl(shape[1])) + sp


class ModuleOps:
    """Convolution, pooling, embedding and interpolation primitives (Burn's ``ModuleOps``).

    The defaults call primitives of the other op groups through ``B = self`` typed ``Any`` (the
    mixin only ever runs as part of a :class:`~ember.backend.Backend`).
    """

    # ------------------------------------------------------------------ helpers of the defaults
    def _const(self, array: np.ndarray, like: Any) -> Any:
        """A shape-only float64 constant as a primitive of ``like``'s dtype and device."""
        B: Any = self
        return B.from_numpy(array, B.dtype(like), B.device_handle(like))

    def _padn(self, x: Any, pads: tuple[tuple[int, int], ...], value: float) -> Any:
        B: Any = self
        if not any(a or b for a, b in pads):
            return x
        return B.pad(x, ((0, 0), (0, 0)) + pads, value)

    def _unpadn(self, xp: Any, shape: Ints, before: Ints) -> Any:
        B: Any = self
        if not any(before) and tuple(B.shape(xp)) == tuple(shape):
            return xp
        sl = (_sl(shape[0]), _sl(shape[1])) + tuple(slice(b, b + n, 1) for b, n in zip(before, shape[2:]))
        return B.slice(xp, sl)

    def _cols(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, groups: int,
              out: Ints | None = None) -> Any:
        """im2col: ``[N, G, Cg * prod(kernel), L]`` from ``x`` ``[N, C, *spatial]`` (channel-major,
        then taps, as the weight's layout)."""
        B: Any = self
        shape = tuple(B.shape(x))
        n, c = shape[0], shape[1]
        out = out or tuple(geo.conv_out(s, k, st, p, d)
                           for s, k, st, p, d in zip(shape[2:], kernel, stride, padding, dilation))
        xp = self._padn(x, tuple((p, p) for p in padding), 0.0)
        ps = tuple(B.shape(xp))
        taps = [B.slice(xp, _tap_slices(ps, t, stride, dilation, out)) for t in _taps(kernel)]
        cols = B.stack(taps, 2)  # [N, C, KK, *out]
        return B.reshape(cols, (n, groups, (c // groups) * len(taps), math.prod(out))), out

    def _conv_nd(self, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints,
                 groups: int) -> Any:
        B: Any = self
        ws = tuple(B.shape(weight))
        o, kernel = ws[0], ws[2:]
        cols, out = self._cols(x, kernel, stride, padding, dilation, groups)
        n = B.shape(cols)[0]
        w = B.reshape(weight, (1, groups, o // groups, math.prod(ws[1:])))
        y = B.reshape(B.matmul(w, cols), (n, o) + out)
        if bias is not None:
            y = B.add(y, B.reshape(bias, (1, o) + (1,) * len(out)))
        return y

    def _conv_nd_backward_input(self, grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints,
                                dilation: Ints, groups: int) -> Any:
        B: Any = self
        ws = tuple(B.shape(weight))
        gs = tuple(B.shape(grad))
        o, cg, kernel = ws[0], ws[1], ws[2:]
        n, out = gs[0], gs[2:]
        kk = math.prod(kernel)
        w = B.reshape(weight, (1, groups, o // groups, cg * kk))
        g = B.reshape(grad, (n, groups, o // groups, math.prod(out)))
        cols = B.matmul(self._swap_last(w), g)  # [N, G, Cg*KK, L]
        cols = B.reshape(cols, (n, groups * cg, kk) + out)
        pshape = (n, x_shape[1]) + tuple(s + 2 * p for s, p in zip(x_shape[2:], padding))
        acc = B.zeros(pshape, B.dtype(grad), B.device_handle(grad))
        for i, tap in enumerate(_taps(kernel)):
            sl = _tap_slices(pshape, tap, stride, dilation, out)
            piece = B.slice(cols, (_sl(n), _sl(groups * cg), slice(i, i + 1, 1)) + tuple(_sl(q) for q in out))
            piece = B.reshape(piece, (n, groups * cg) + out)
            acc = B.slice_assign(acc, sl, B.add(B.slice(acc, sl), piece))
        return self._unpadn(acc, x_shape, padding)

    def _conv_nd_backward_weight(self, x: Any, grad: Any, weight_shape: Ints, stride: Ints, padding: Ints,
                                 dilation: Ints, groups: int) -> Any:
        B: Any = self
        o, kernel = weight_shape[0], weight_shape[2:]
        gs = tuple(B.shape(grad))
        cols, _ = self._cols(x, kernel, stride, padding, dilation, groups, gs[2:])  # [N, G, CgKK, L]
        g = B.reshape(grad, (gs[0], groups, o // groups, math.prod(gs[2:])))
        dw = B.sum_dim(B.matmul(g, self._swap_last(cols)), 0)
        return B.reshape(dw, weight_shape)

    def _swap_last(self, a: Any) -> Any:
        """``a`` with its last two dims swapped."""
        B: Any = self
        r = len(B.shape(a))
        return B.permute(a, tuple(range(r - 2)) + (r - 1, r - 2))

    # ------------------------------------------------------------------ convolution
    def conv1d(self, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints,
               groups: int) -> Any:
        """1-D convolution: ``x`` ``[batch, channels_in, length]``, ``weight``
        ``[channels_out, channels_in / groups, kernel]`` -> ``[batch, channels_out, length_out]``.
        Default: :meth:`conv2d` on a unit height."""
        B: Any = self
        n, c, length = B.shape(x)
        o, cg, k = B.shape(weight)
        y = self.conv2d(B.reshape(x, (n, c, 1, length)), B.reshape(weight, (o, cg, 1, k)), bias,
                        (1,) + stride, (0,) + padding, (1,) + dilation, groups)
        ys = B.shape(y)
        return B.reshape(y, (ys[0], ys[1], ys[3]))

    def conv2d(self, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints,
               groups: int) -> Any:
        """2-D convolution (cross-correlation, as Burn and PyTorch): ``x`` ``[batch, channels_in,
        height, width]``, ``weight`` ``[channels_out, channels_in / groups, kernel_h, kernel_w]``,
        ``bias`` ``[channels_out]`` or ``None``; zero ``padding`` on both sides of each spatial dim.
        Default: im2col with kernel-tap slices and one batched ``matmul``."""
        return self._conv_nd(x, weight, bias, stride, padding, dilation, groups)

    def conv3d(self, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints,
               groups: int) -> Any:
        """3-D convolution: ``x`` ``[batch, channels_in, depth, height, width]``, ``weight``
        ``[channels_out, channels_in / groups, k_d, k_h, k_w]``."""
        return self._conv_nd(x, weight, bias, stride, padding, dilation, groups)

    def conv2d_backward_input(self, grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints,
                              dilation: Ints, groups: int) -> Any:
        """Gradient of :meth:`conv2d` with respect to its input of shape ``x_shape``, given the output
        gradient ``grad`` ``[batch, channels_out, h_out, w_out]`` (torch.nn.grad.conv2d_input).
        Positions of the input no window reaches get zero."""
        return self._conv_nd_backward_input(grad, weight, x_shape, stride, padding, dilation, groups)

    def conv2d_backward_weight(self, x: Any, grad: Any, weight_shape: Ints, stride: Ints, padding: Ints,
                               dilation: Ints, groups: int) -> Any:
        """Gradient of :meth:`conv2d` with respect to the weight (``weight_shape``), given the input
        ``x`` and the output gradient ``grad`` (torch.nn.grad.conv2d_weight)."""
        return self._conv_nd_backward_weight(x, grad, weight_shape, stride, padding, dilation, groups)

    def conv3d_backward_input(self, grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints,
                              dilation: Ints, groups: int) -> Any:
        """:meth:`conv2d_backward_input` for :meth:`conv3d`."""
        return self._conv_nd_backward_input(grad, weight, x_shape, stride, padding, dilation, groups)

    def conv3d_backward_weight(self, x: Any, grad: Any, weight_shape: Ints, stride: Ints, padding: Ints,
                               dilation: Ints, groups: int) -> Any:
        """:meth:`conv2d_backward_weight` for :meth:`conv3d`."""
        return self._conv_nd_backward_weight(x, grad, weight_shape, stride, padding, dilation, groups)

    def conv2d_backward(self, grad: Any, x: Any, weight: Any, stride: Ints, padding: Ints, dilation: Ints,
                        groups: int, mask: tuple[bool, bool, bool]) -> tuple[Any, Any, Any]:
        """Gradients of :meth:`conv2d` with respect to its input, weight and bias in one call:
        ``(grad_x, grad_weight, grad_bias)``, each computed only where ``mask`` (three bools) is true
        and ``None`` elsewhere (PyTorch's ``aten.convolution_backward`` and its ``output_mask``).

        ``grad`` is the output gradient ``[batch, channels_out, h_out, w_out]`` of ``conv2d(x, weight, bias,
        stride, padding, dilation, groups)``; ``grad_x`` has ``x``'s shape ``[batch, channels_in, height,
        width]``, ``grad_weight`` ``weight``'s ``[channels_out, channels_in / groups, kernel_h, kernel_w]``,
        ``grad_bias`` is ``[channels_out]`` (``grad`` summed over batch and space); all of ``grad``'s dtype.
        The bias itself is not an argument: no gradient reads it.

        Default: :meth:`conv2d_backward_input`, :meth:`conv2d_backward_weight` and the sum. A backend with
        one native kernel for the three (torch) overrides it: the ``Autodiff`` rule of ``conv2d`` calls it.
        """
        return self._conv_nd_backward(grad, x, weight, stride, padding, dilation, groups, mask,
                                      self.conv2d_backward_input, self.conv2d_backward_weight)

    def conv3d_backward(self, grad: Any, x: Any, weight: Any, stride: Ints, padding: Ints, dilation: Ints,
                        groups: int, mask: tuple[bool, bool, bool]) -> tuple[Any, Any, Any]:
        """:meth:`conv2d_backward` for :meth:`conv3d` (``[batch, channels, depth, height, width]`` inputs,
        ``[channels_out, channels_in / groups, k_d, k_h, k_w]`` weights)."""
        return self._conv_nd_backward(grad, x, weight, stride, padding, dilation, groups, mask,
                                      self.conv3d_backward_input, self.conv3d_backward_weight)

    def _conv_nd_backward(self, grad: Any, x: Any, weight: Any, stride: Ints, padding: Ints, dilation: Ints,
                          groups: int, mask: tuple[bool, bool, bool], back_input: Any,
                          back_weight: Any) -> tuple[Any, Any, Any]:
        B: Any = self
        gx = back_input(grad, weight, tuple(B.shape(x)), stride, padding, dilation, groups) if mask[0] else None
        gw = back_weight(x, grad, tuple(B.shape(weight)), stride, padding, dilation, groups) if mask[1] else None
        return gx, gw, self._bias_grad(grad) if mask[2] else None

    def _bias_grad(self, grad: Any) -> Any:
        """``grad`` ``[batch, channels, *spatial]`` summed to ``[channels]``: a convolution's bias gradient."""
        B: Any = self
        gs = tuple(B.shape(grad))
        r = B.sum_dim(B.reshape(grad, (gs[0], gs[1], math.prod(gs[2:]))), 2)
        return B.reshape(B.sum_dim(r, 0), (gs[1],))

    # ------------------------------------------------------------------ transposed convolution
    def _conv_transpose_nd(self, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints,
                           output_padding: Ints, dilation: Ints, groups: int, backward_input: Any) -> Any:
        # the transposed convolution is the input-gradient of the convolution whose weight it shares
        B: Any = self
        xs, ws = tuple(B.shape(x)), tuple(B.shape(weight))
        out = tuple(geo.conv_transpose_out(s, k, st, p, op, d)
                    for s, k, st, p, op, d in zip(xs[2:], ws[2:], stride, padding, output_padding, dilation))
        co = ws[1] * groups
        y = backward_input(x, weight, (xs[0], co) + out, stride, padding, dilation, groups)
        if bias is not None:
            y = B.add(y, B.reshape(bias, (1, co) + (1,) * len(out)))
        return y

    def conv_transpose1d(self, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, output_padding: Ints,
                         dilation: Ints, groups: int) -> Any:
        """1-D transposed convolution: ``x`` ``[batch, channels_in, length]``, ``weight``
        ``[channels_in, channels_out / groups, kernel]``. Default: :meth:`conv_transpose2d` on a
        unit height."""
        B: Any = self
        n, c, length = B.shape(x)
        ci, cog, k = B.shape(weight)
        y = self.conv_transpose2d(B.reshape(x, (n, c, 1, length)), B.reshape(weight, (ci, cog, 1, k)), bias,
                                  (1,) + stride, (0,) + padding, (0,) + output_padding, (1,) + dilation, groups)
        ys = B.shape(y)
        return B.reshape(y, (ys[0], ys[1], ys[3]))

    def conv_transpose2d(self, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, output_padding: Ints,
                         dilation: Ints, groups: int) -> Any:
        """2-D transposed convolution (the adjoint of :meth:`conv2d`): ``x`` ``[batch, channels_in,
        h, w]``, ``weight`` ``[channels_in, channels_out / groups, k_h, k_w]`` -> ``[batch,
        channels_out, (h - 1) s - 2 p + d (k - 1) + output_padding + 1, ...]``.
        Default: :meth:`conv2d_backward_input` plus the bias."""
        return self._conv_transpose_nd(x, weight, bias, stride, padding, output_padding, dilation, groups,
                                       self.conv2d_backward_input)

    def conv_transpose3d(self, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, output_padding: Ints,
                         dilation: Ints, groups: int) -> Any:
        """3-D transposed convolution; weight ``[channels_in, channels_out / groups, k_d, k_h, k_w]``."""
        return self._conv_transpose_nd(x, weight, bias, stride, padding, output_padding, dilation, groups,
                                       self.conv3d_backward_input)

    def unfold4d(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Any:
        """im2col (Burn's ``unfold4d``, torch ``F.unfold``): ``x`` ``[batch, channels, h, w]`` ->
        ``[batch, channels * k_h * k_w, blocks]``, rows channel-major then kernel row, column.
        Default: :meth:`conv2d` with a one-hot weight and ``groups = channels`` (as Burn)."""
        B: Any = self
        n, c = B.shape(x)[:2]
        kk = math.prod(kernel)
        eye = np.eye(kk, dtype=np.float64).reshape((kk, 1) + tuple(kernel))
        w = self._const(np.tile(eye, (c, 1, 1, 1)), x)
        y = self.conv2d(x, w, None, stride, padding, dilation, c)
        ys = B.shape(y)
        return B.reshape(y, (n, c * kk, ys[2] * ys[3]))

    # ------------------------------------------------------------------ max pooling
    def max_pool1d(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool) -> Any:
        """1-D max pooling, ``[batch, channels, length]``; default: :meth:`max_pool2d` on a unit height."""
        return self._as_1d(x, lambda y: self.max_pool2d(y, (1,) + kernel, (1,) + stride, (0,) + padding,
                                                        (1,) + dilation, ceil_mode))

    def max_pool1d_with_indices(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
                                ceil_mode: bool) -> tuple[Any, Any]:
        """1-D max pooling with Int indices into each input row (PyTorch ``return_indices``)."""
        B: Any = self
        n, c, length = B.shape(x)
        v, i = self.max_pool2d_with_indices(B.reshape(x, (n, c, 1, length)), (1,) + kernel, (1,) + stride,
                                            (0,) + padding, (1,) + dilation, ceil_mode)
        vs = B.shape(v)
        return B.reshape(v, (n, c, vs[3])), B.reshape(i, (n, c, vs[3]))

    def _as_1d(self, x: Any, fn: Any) -> Any:
        B: Any = self
        n, c, length = B.shape(x)
        y = fn(B.reshape(x, (n, c, 1, length)))
        ys = B.shape(y)
        return B.reshape(y, (ys[0], ys[1], ys[3]))

    def max_pool2d(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool) -> Any:
        """2-D max pooling, ``[batch, channels, h, w]`` -> ``[batch, channels, h_out, w_out]``;
        padding counts as ``-inf`` (PyTorch). NaN propagates. Default: the values of
        :meth:`max_pool2d_with_indices`."""
        return self.max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode)[0]

    def max_pool2d_with_indices(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
                                ceil_mode: bool) -> tuple[Any, Any]:
        """Max pooling values and Int indices ``h * width + w`` into each input plane (PyTorch's
        ``return_indices``, Burn's ``max_pool2d_with_indices``); ties keep the first maximum in
        row-major window order; a NaN wins (the last one, as in PyTorch). Default: a loop over the kernel taps."""
        B: Any = self
        shape = tuple(B.shape(x))
        h, w = shape[2:]
        out = tuple(geo.pool_out(s, k, st, p, d, ceil_mode) for s, k, st, p, d in zip(shape[2:], kernel, stride,
                                                                                     padding, dilation))
        pads = tuple(geo.pool_pads(s, k, st, p, d, o) for s, k, st, p, d, o in zip(shape[2:], kernel, stride,
                                                                                   padding, dilation, out))
        xp = self._padn(x, pads, -math.inf)
        ps = tuple(B.shape(xp))
        handle = B.device_handle(x)
        best = best_off = None
        for tap in _taps(kernel):
            v = B.slice(xp, _tap_slices(ps, tap, stride, dilation, out))
            off = tap[0] * dilation[0] * w + tap[1] * dilation[1]
            if best is None:
                best, best_off = v, B.full(shape[:2] + out, off, B.int_dtype, handle)
                continue
            # a larger value, or any NaN (so the last NaN, as PyTorch), takes the window
            m = B.logical_or(B.greater(v, best), B.not_equal(v, v))
            best = B.mask_where(best, m, v)
            best_off = B.mask_fill(best_off, m, off)
        base = np.add.outer((np.arange(out[0]) * stride[0] - padding[0]) * w,
                            np.arange(out[1]) * stride[1] - padding[1])
        base_p = B.from_numpy(base, B.int_dtype, handle)
        return best, B.add(best_off, base_p)

    def max_pool2d_backward(self, grad: Any, indices: Any, x_shape: Ints, kernel: Ints, stride: Ints, padding: Ints,
                            dilation: Ints, ceil_mode: bool) -> Any:
        """Gradient of max pooling (Burn's ``max_pool2d_with_indices_backward``): ``grad``
        ``[batch, channels, h_out, w_out]`` added at ``indices`` (from
        :meth:`max_pool2d_with_indices`) into zeros of ``x_shape``. The pooling options let a
        backend pick a faster kernel (e.g. a plain store when windows do not overlap); the default
        ignores them."""
        B: Any = self
        n, c = x_shape[:2]
        gs = tuple(B.shape(grad))
        plane = math.prod(x_shape[2:])
        lo = math.prod(gs[2:])
        r = B.zeros_scatter_add((n, c, plane), 2, B.reshape(indices, (n, c, lo)), B.reshape(grad, (n, c, lo)))
        return B.reshape(r, x_shape)

    # ------------------------------------------------------------------ average pooling
    def avg_pool1d(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                   ceil_mode: bool) -> Any:
        """1-D average pooling, ``[batch, channels, length]``; default: :meth:`avg_pool2d`."""
        return self._as_1d(x, lambda y: self.avg_pool2d(y, (1,) + kernel, (1,) + stride, (0,) + padding,
                                                        count_include_pad, ceil_mode))

    def _avg_geometry(self, shape: Ints, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                      ceil_mode: bool) -> tuple[Ints, tuple[tuple[int, int], ...], np.ndarray]:
        sp = shape[2:]
        out = tuple(geo.pool_out(s, k, st, p, 1, ceil_mode) for s, k, st, p in zip(sp, kernel, stride, padding))
        pads = tuple(geo.pool_pads(s, k, st, p, 1, o) for s, k, st, p, o in zip(sp, kernel, stride, padding, out))
        inv = 1.0 / geo.avg_divisor(sp, kernel, stride, padding, out, count_include_pad)
        return out, pads, inv

    def avg_pool2d(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                   ceil_mode: bool) -> Any:
        """2-D average pooling, ``[batch, channels, h, w]``; the divisor is the window clipped to the
        padded input (``count_include_pad``) or to the input (PyTorch ``avg_pool2d``).
        Default: a loop over the kernel taps."""
        B: Any = self
        shape = tuple(B.shape(x))
        out, pads, inv = self._avg_geometry(shape, kernel, stride, padding, count_include_pad, ceil_mode)
        xp = self._padn(x, pads, 0.0)
        ps = tuple(B.shape(xp))
        acc = None
        for tap in _taps(kernel):
            v = B.slice(xp, _tap_slices(ps, tap, stride, (1,) * len(kernel), out))
            acc = v if acc is None else B.add(acc, v)
        return B.mul(acc, self._const(inv, x))

    def avg_pool2d_backward(self, grad: Any, x_shape: Ints, kernel: Ints, stride: Ints, padding: Ints,
                            count_include_pad: bool, ceil_mode: bool) -> Any:
        """Gradient of :meth:`avg_pool2d` with respect to its input of shape ``x_shape``."""
        B: Any = self
        out, pads, inv = self._avg_geometry(x_shape, kernel, stride, padding, count_include_pad, ceil_mode)
        g = B.mul(grad, self._const(inv, grad))
        pshape = x_shape[:2] + tuple(a + s + b for (a, b), s in zip(pads, x_shape[2:]))
        acc = B.zeros(pshape, B.dtype(grad), B.device_handle(grad))
        for tap in _taps(kernel):
            sl = _tap_slices(pshape, tap, stride, (1,) * len(kernel), out)
            acc = B.slice_assign(acc, sl, B.add(B.slice(acc, sl), g))
        return self._unpadn(acc, x_shape, tuple(p for p, _ in pads))

    # ------------------------------------------------------------------ adaptive average pooling
    def adaptive_avg_pool1d(self, x: Any, output_size: Ints) -> Any:
        """Adaptive 1-D average pooling ``[batch, channels, length]`` -> ``[batch, channels, out]``."""
        return self._as_1d(x, lambda y: self.adaptive_avg_pool2d(y, (1,) + output_size))

    def adaptive_avg_pool2d(self, x: Any, output_size: Ints) -> Any:
        """Adaptive average pooling to ``output_size = (h_out, w_out)``: output ``(i, j)`` averages
        rows ``[floor(i h / h_out), ceil((i + 1) h / h_out))`` and likewise columns (PyTorch).
        Default: ``P_h x P_w^T`` with constant averaging matrices."""
        B: Any = self
        s = tuple(B.shape(x))
        ph = self._const(geo.adaptive_matrix(s[2], output_size[0]), x)
        pw = self._const(geo.adaptive_matrix(s[3], output_size[1]).T, x)
        return B.matmul(B.matmul(ph, x), pw)

    def adaptive_avg_pool2d_backward(self, grad: Any, x_shape: Ints) -> Any:
        """Gradient of :meth:`adaptive_avg_pool2d` with respect to its input of shape ``x_shape``."""
        B: Any = self
        gs = tuple(B.shape(grad))
        ph = self._const(geo.adaptive_matrix(x_shape[2], gs[2]).T, grad)
        pw = self._const(geo.adaptive_matrix(x_shape[3], gs[3]), grad)
        return B.matmul(B.matmul(ph, grad), pw)

    # ------------------------------------------------------------------ embedding
    def embedding(self, weights: Any, indices: Any) -> Any:
        """Rows of ``weights`` ``[num_embeddings, dim]`` at Int ``indices`` of any shape ->
        ``[*indices.shape, dim]`` (Burn's ``embedding``). Default: ``select`` on dim 0."""
        B: Any = self
        ishape = tuple(B.shape(indices))
        d = B.shape(weights)[1]
        flat = B.reshape(indices, (math.prod(ishape),))
        return B.reshape(B.select(weights, 0, flat), ishape + (d,))

    def embedding_backward(self, grad: Any, indices: Any, weights_shape: Ints) -> Any:
        """Gradient of :meth:`embedding` with respect to the weights: rows of ``grad`` added at
        ``indices`` (repeated indices accumulate). Default: ``zeros_select_add``."""
        B: Any = self
        n = math.prod(tuple(B.shape(indices)))
        g = B.reshape(grad, (n, weights_shape[1]))
        return B.zeros_select_add(tuple(weights_shape), 0, B.reshape(indices, (n,)), g)

    # ------------------------------------------------------------------ interpolation
    def interpolate(self, x: Any, output_size: Ints, mode: str, align_corners: bool) -> Any:
        """Resize ``[batch, channels, h, w]`` to ``[batch, channels, *output_size]``; ``mode`` is
        ``"nearest"``, ``"bilinear"`` or ``"bicubic"`` (formulas:
        :func:`ember.backend._module_geometry.interp_matrix`). Default: ``A_h x A_w^T``."""
        B: Any = self
        s = tuple(B.shape(x))
        ah = self._const(geo.interp_matrix(s[2], output_size[0], mode, align_corners), x)
        aw = self._const(geo.interp_matrix(s[3], output_size[1], mode, align_corners).T, x)
        return B.matmul(B.matmul(ah, x), aw)

    def interpolate_backward(self, grad: Any, x_shape: Ints, output_size: Ints, mode: str,
                             align_corners: bool) -> Any:
        """Gradient of :meth:`interpolate` with respect to its input of shape ``x_shape``."""
        B: Any = self
        ah = self._const(geo.interp_matrix(x_shape[2], output_size[0], mode, align_corners).T, grad)
        aw = self._const(geo.interp_matrix(x_shape[3], output_size[1], mode, align_corners), grad)
        return B.matmul(B.matmul(ah, grad), aw)
