"""Module ops of the numpy backend (Burn's ``ModuleOps``): the fast kernels of the contract's
minimal set (convolution forward and backward, max and average pooling). The other module ops use
the contract's defaults, which are already vectorized (matrix products for ``interpolate`` and
``adaptive_avg_pool2d``, ``select`` for ``embedding``, a one-hot convolution for ``unfold4d``).
"""

from __future__ import annotations

from typing import Any

from . import _module_conv as conv
from . import _module_pool as pool

Ints = tuple[int, ...]


class NumpyModuleOps:
    @staticmethod
    def conv2d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int) -> Any:
        return conv.conv_forward(x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def conv3d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int) -> Any:
        return conv.conv_forward(x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def conv2d_backward_input(grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                              groups: int) -> Any:
        return conv.conv_backward_input(grad, weight, x_shape, stride, padding, dilation, groups)

    @staticmethod
    def conv3d_backward_input(grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                              groups: int) -> Any:
        return conv.conv_backward_input(grad, weight, x_shape, stride, padding, dilation, groups)

    @staticmethod
    def conv2d_backward_weight(x: Any, grad: Any, weight_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                               groups: int) -> Any:
        return conv.conv_backward_weight(x, grad, weight_shape, stride, padding, dilation, groups)

    @staticmethod
    def conv3d_backward_weight(x: Any, grad: Any, weight_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                               groups: int) -> Any:
        return conv.conv_backward_weight(x, grad, weight_shape, stride, padding, dilation, groups)

    @staticmethod
    def max_pool2d(x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool) -> Any:
        return pool.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)

    def max_pool2d_with_indices(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
                                ceil_mode: bool) -> Any:
        return pool.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, self._idt)  # type: ignore[attr-defined]

    @staticmethod
    def max_pool2d_backward(grad: Any, indices: Any, x_shape: Ints, kernel: Ints, stride: Ints, padding: Ints,
                            dilation: Ints, ceil_mode: bool) -> Any:
        overlap = any(s < d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
        return pool.max_pool2d_backward(grad, indices, x_shape, overlap)

    @staticmethod
    def avg_pool2d(x: Any, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                   ceil_mode: bool) -> Any:
        return pool.avg_pool2d(x, kernel, stride, padding, count_include_pad, ceil_mode)

    @staticmethod
    def avg_pool2d_backward(grad: Any, x_shape: Ints, kernel: Ints, stride: Ints, padding: Ints,
                            count_include_pad: bool, ceil_mode: bool) -> Any:
        return pool.avg_pool2d_backward(grad, x_shape, kernel, stride, padding, count_include_pad, ceil_mode)
