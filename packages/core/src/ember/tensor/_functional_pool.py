"""Pooling (max, average, adaptive average; 1-D and 2-D), re-exported by :mod:`ember.tensor.functional`. Layout
``[batch, channels, *spatial]``; output sizes are PyTorch's (``ceil`` in ``ceil_mode``), from
:mod:`ember.backend._module_geometry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import ShapeError
from .._kind import Float, Int
from ..backend import _module_geometry as geo
from ._core import wrap
from ._functional_checks import _LAYOUT, IntOrSeq, Ints, _call, _fits, _ints, _rank, _tensor

if TYPE_CHECKING:
    from ._tensor import Tensor

def _pool_args(op: str, nd: int, x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> tuple[Ints, Ints, Ints, Ints]:
    _tensor(op, "x", x)
    _rank(op, "x", x, nd + 2, _LAYOUT[nd])
    kernel = _ints(op, "kernel_size", kernel_size, nd, 1)
    st = kernel if stride is None else _ints(op, "stride", stride, nd, 1)
    pad = _ints(op, "padding", padding, nd, 0)
    dil = _ints(op, "dilation", dilation, nd, 1)
    if any(2 * p > k for p, k in zip(pad, kernel)):
        raise ValueError(f"{op}: padding {list(pad)} must be at most half of kernel_size {list(kernel)} "
                         "(PyTorch's rule: every window must hold an input element).")
    _fits(op, x, kernel, pad, dil)
    out = [geo.pool_out(s, k, a, p, d, ceil_mode) for s, k, a, p, d in zip(x.shape[2:], kernel, st, pad, dil)]
    if any(n < 1 for n in out):
        raise ShapeError(f"{op}: the output would have spatial size {out} for input {list(x.shape)}.")
    return kernel, st, pad, dil


def max_pool1d(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
               dilation: IntOrSeq = 1, ceil_mode: bool = False) -> Tensor:
    """1-D max pooling of ``[batch, channels, length]`` (Burn ``max_pool1d``, PyTorch
    ``F.max_pool1d``): ``stride`` defaults to ``kernel_size``; padding counts as ``-inf``."""
    op = "max_pool1d"
    k, s, p, d = _pool_args(op, 1, x, kernel_size, stride, padding, dilation, ceil_mode)
    return wrap(_call(op, lambda: x.ops.max_pool1d(x.primitive, k, s, p, d, bool(ceil_mode)), x), x, Float)


def max_pool1d_with_indices(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
                            dilation: IntOrSeq = 1, ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool1d` and the Int position of each maximum in its input row."""
    op = "max_pool1d_with_indices"
    k, s, p, d = _pool_args(op, 1, x, kernel_size, stride, padding, dilation, ceil_mode)
    v, i = _call(op, lambda: x.ops.max_pool1d_with_indices(x.primitive, k, s, p, d, bool(ceil_mode)), x)
    return wrap(v, x, Float), wrap(i, x, Int)


def max_pool2d(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
               dilation: IntOrSeq = 1, ceil_mode: bool = False) -> Tensor:
    """2-D max pooling: ``[batch, channels, height, width]`` -> ``[batch, channels, h_out, w_out]``
    (Burn ``max_pool2d``, PyTorch ``F.max_pool2d``). ``stride`` defaults to ``kernel_size``;
    padding counts as ``-inf``; NaN propagates."""
    op = "max_pool2d"
    k, s, p, d = _pool_args(op, 2, x, kernel_size, stride, padding, dilation, ceil_mode)
    return wrap(_call(op, lambda: x.ops.max_pool2d(x.primitive, k, s, p, d, bool(ceil_mode)), x), x, Float)


def max_pool2d_with_indices(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
                            dilation: IntOrSeq = 1, ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool2d` and Int indices ``row * width + column`` of each maximum in its input
    plane (PyTorch ``return_indices=True``); ties keep the first in window order."""
    op = "max_pool2d_with_indices"
    k, s, p, d = _pool_args(op, 2, x, kernel_size, stride, padding, dilation, ceil_mode)
    v, i = _call(op, lambda: x.ops.max_pool2d_with_indices(x.primitive, k, s, p, d, bool(ceil_mode)), x)
    return wrap(v, x, Float), wrap(i, x, Int)


def avg_pool1d(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
               count_include_pad: bool = True, ceil_mode: bool = False) -> Tensor:
    """1-D average pooling of ``[batch, channels, length]`` (Burn ``avg_pool1d``, PyTorch
    ``F.avg_pool1d``); see :func:`avg_pool2d` for the divisor."""
    op = "avg_pool1d"
    k, s, p, _ = _pool_args(op, 1, x, kernel_size, stride, padding, 1, ceil_mode)
    return wrap(_call(op, lambda: x.ops.avg_pool1d(x.primitive, k, s, p, bool(count_include_pad),
                                                   bool(ceil_mode)), x), x, Float)


def avg_pool2d(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
               count_include_pad: bool = True, ceil_mode: bool = False) -> Tensor:
    """2-D average pooling: ``[batch, channels, height, width]`` -> ``[batch, channels, h_out,
    w_out]`` (Burn ``avg_pool2d``, PyTorch ``F.avg_pool2d``). The divisor is the window clipped to
    the padded input when ``count_include_pad`` (PyTorch's default), else the number of input
    elements in the window."""
    op = "avg_pool2d"
    k, s, p, _ = _pool_args(op, 2, x, kernel_size, stride, padding, 1, ceil_mode)
    return wrap(_call(op, lambda: x.ops.avg_pool2d(x.primitive, k, s, p, bool(count_include_pad),
                                                   bool(ceil_mode)), x), x, Float)


def _adaptive(op: str, nd: int, x: Any, output_size: Any) -> Any:
    _tensor(op, "x", x)
    _rank(op, "x", x, nd + 2, _LAYOUT[nd])
    size = _ints(op, "output_size", output_size, nd, 1)
    return wrap(_call(op, lambda: getattr(x.ops, op)(x.primitive, size), x), x, Float)


def adaptive_avg_pool1d(x: Tensor, output_size: IntOrSeq) -> Tensor:
    """Adaptive average pooling ``[batch, channels, length]`` -> ``[batch, channels, output_size]``;
    output ``i`` averages ``[floor(i n / out), ceil((i + 1) n / out))`` (PyTorch, Burn)."""
    return _adaptive("adaptive_avg_pool1d", 1, x, output_size)


def adaptive_avg_pool2d(x: Tensor, output_size: IntOrSeq) -> Tensor:
    """Adaptive average pooling ``[batch, channels, height, width]`` -> ``[batch, channels,
    *output_size]`` (PyTorch ``F.adaptive_avg_pool2d``, Burn); ``output_size`` 1 gives global
    average pooling."""
    return _adaptive("adaptive_avg_pool2d", 2, x, output_size)


