"""Activations, ``Clip`` and ``Dropout`` (ONNX operator specification, onnx/docs/Operators.md; formulas there).

``Relu`` (1, 6, 13, 14), ``LeakyRelu`` (1, 6, 16), ``PRelu`` (1, 6, 7, 9, 16), ``Elu`` (1, 6, 22), ``Celu`` (12),
``Selu`` (1, 6, 22), ``Sigmoid`` (1, 6, 13), ``HardSigmoid`` (1, 6, 22), ``HardSwish`` (14, 22), ``Softplus``
(1, 22), ``Softsign`` (1, 22), ``Mish`` (18, 22), ``Gelu`` (20), ``Swish`` (24), ``SwiGLU`` (28),
``ThresholdedRelu`` (10, 22), ``Shrink`` (9), ``Clip`` (1, 6: ``min``/``max`` attributes; 11, 12, 13: optional
inputs), ``Dropout`` (1, 6, 7, 10, 12, 13, 22). Float activations use :mod:`ember.tensor.activation` where it has
the function, so they are differentiable under ``Autodiff``.
"""

from __future__ import annotations

from typing import Any

from ember import Distribution, DType, Tensor
from ember.tensor import activation

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._elementwise_util import is_float, register_unary, to_dtype
from ._late import late

__all__: list[str] = []

#: float32's largest value: the default bounds of ``Clip`` before opset 11
_FLT_MAX = 3.4028234663852886e38

register_unary("Sigmoid", late(activation, "sigmoid"), "1, 6, 13")
register_unary("Softsign", late(activation, "softsign"), "1, 22")
register_unary("Softplus", late(activation, "softplus"), "1, 22")
register_unary("Mish", late(activation, "mish"), "18, 22", since=18)
register_unary("HardSwish", activation.hard_swish, "14, 22: ``x * max(0, min(1, x / 6 + 0.5))``", since=14)


@converter("Relu", since=1)
def relu(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Relu`` (1, 6, 13, 14: signed integers from 14): ``max(0, x)``."""
    return activation.relu(x) if is_float(x) else x.clamp_min(0)


@converter("LeakyRelu", since=1)
def leaky_relu(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``LeakyRelu``: ``x`` for ``x >= 0``, ``alpha * x`` otherwise (``alpha`` default 0.01)."""
    return activation.leaky_relu(x, node.attr("alpha", 0.01))


@converter("PRelu", since=1)
def prelu(ctx: Context, node: Node, x: Tensor, slope: Tensor) -> Tensor:
    """ONNX ``PRelu``: ``x`` for ``x >= 0``, ``slope * x`` otherwise; ``slope`` broadcasts to ``x`` (numpy rules
    from opset 7; before, a 1-D slope of ``C`` values is per channel, dim 1)."""
    if ctx.opset < 7 and slope.rank == 1 and x.rank > 2 and slope.shape[0] == x.shape[1] != 1:
        slope = slope.reshape([slope.shape[0]] + [1] * (x.rank - 2))
    return x.mask_where(x.lower(0), x * slope)


@converter("Elu", since=1)
def elu(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Elu``: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise (``alpha`` default 1)."""
    return activation.elu(x, node.attr("alpha", 1.0))


@converter("Celu", since=12)
def celu(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Celu`` (12): ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (``alpha`` default 1)."""
    return activation.celu(x, node.attr("alpha", 1.0))


@converter("Selu", since=1)
def selu(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Selu``: ``gamma * elu(x, alpha)`` with the attributes' ``alpha``/``gamma`` (defaults
    1.67326319... and 1.05070102..., float32 roundings of Klambauer et al.'s constants)."""
    alpha = node.attr("alpha", 1.6732631921768188)
    gamma = node.attr("gamma", 1.0507010221481323)
    return activation.elu(x, alpha) * gamma


@converter("HardSigmoid", since=1)
def hard_sigmoid(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``HardSigmoid``: ``max(0, min(1, alpha * x + beta))`` (defaults 0.2 and 0.5)."""
    return activation.hard_sigmoid(x, node.attr("alpha", 0.2), node.attr("beta", 0.5))


@converter("Gelu", since=20)
def gelu(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Gelu`` (20): ``x * Phi(x)``; ``approximate="tanh"`` gives the tanh approximation."""
    approximate = node.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise OnnxImportError(f"{node.where()}: approximate must be 'none' or 'tanh', found {approximate!r}.")
    return activation.gelu(x, approximate)


def _swish(x: Tensor, alpha: float) -> Tensor:
    return x * activation.sigmoid(x if alpha == 1.0 else x * alpha)


@converter("Swish", since=24)
def swish(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Swish`` (24): ``x * sigmoid(alpha * x)`` (``alpha`` default 1)."""
    return _swish(x, node.attr("alpha", 1.0))


@converter("SwiGLU", since=28)
def swiglu(ctx: Context, node: Node, a: Tensor, b: Tensor) -> Tensor:
    """ONNX ``SwiGLU`` (28): ``Swish_alpha(a) * b``, ``a`` and ``b`` of the same shape (``alpha`` default 1)."""
    return _swish(a, node.attr("alpha", 1.0)) * b


@converter("ThresholdedRelu", since=10)
def thresholded_relu(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``ThresholdedRelu`` (10, 22): ``x`` for ``x > alpha``, 0 otherwise, NaN included (``alpha`` default
    1)."""
    return x.mask_fill(x.greater(node.attr("alpha", 1.0)).bool_not(), 0.0)


@converter("Shrink", since=9)
def shrink(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Shrink`` (9): ``x + bias`` for ``x < -lambd``, ``x - bias`` for ``x > lambd``, else 0 (defaults
    ``bias=0``, ``lambd=0.5``). Integer inputs compare as floats and shift by the integral part of ``bias``."""
    bias, lambd = node.attr("bias", 0.0), node.attr("lambd", 0.5)
    xf = x if is_float(x) else x.float()
    shift: Any = bias if is_float(x) else int(bias)
    out = x.zeros_like().mask_where(xf.lower(-lambd), x + shift)
    return out.mask_where(xf.greater(lambd), x - shift)


@converter("Clip", since=1)
def clip_attrs(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Clip`` 1 and 6: ``x`` clamped to the ``min``/``max`` attributes (defaults: float32's range)."""
    lo, hi = node.attr("min", -_FLT_MAX), node.attr("max", _FLT_MAX)
    return x.clamp(lo, hi)


@converter("Clip", since=11)
def clip(ctx: Context, node: Node, x: Tensor, lo: Tensor | None = None, hi: Tensor | None = None) -> Tensor:
    """ONNX ``Clip`` 11, 12 (integer types), 13: ``min(max(x, lo), hi)`` with the optional scalar inputs ``lo``
    and ``hi`` (an omitted bound does not clip); ``lo > hi`` gives ``hi`` everywhere, as the reference."""
    if lo is not None:
        x = x.max_pair(lo)
    if hi is not None:
        x = x.min_pair(hi)
    return x


def _dropout(ctx: Context, node: Node, x: Tensor, ratio: float, training: bool, mask_dtype: DType) -> Any:
    """``Dropout``'s outputs: ``x`` and an all-true mask in inference (or with ``ratio`` 0); in training, a random
    keep mask (probability ``1 - ratio``) and ``x * mask / (1 - ratio)``. The ``seed`` attribute is not
    followed: Ember draws from the backend's generator."""
    if not training or ratio == 0.0:
        out, keep = x, x.ones_like().bool()
    else:
        keep = x.random_like(Distribution.uniform(0.0, 1.0)).greater_equal(ratio)
        out = x * to_dtype(keep, x.dtype) * (1.0 / (1.0 - ratio))
    return _outputs(node, out, keep, mask_dtype)


def _outputs(node: Node, out: Tensor, keep: Tensor, mask_dtype: DType) -> Any:
    return (out, to_dtype(keep, mask_dtype)) if len(node.outputs) > 1 and node.outputs[1] else out


def _dropout_data(ctx: Context, node: Node, x: Tensor, ratio: Tensor | None, training: Tensor) -> Any:
    """:func:`_dropout` with ``training_mode`` (and ``ratio``) computed from the data: the same formulas with the
    dropped fraction a tensor, ``ratio`` when training and 0 otherwise (a uniform draw in ``[0, 1)`` is never
    below 0, so nothing is dropped or scaled then); no host read, so no branch on the data."""
    on = ctx.to_main(training).reshape([]).bool()
    if ratio is None:
        rate = on.float().mul(0.5)
    else:
        r = ctx.to_main(ratio).reshape([])
        rate = r.mask_fill(on.bool_not(), 0.0)
    rate = rate if rate.dtype is x.dtype else rate.cast(x.dtype)
    keep = x.random_like(Distribution.uniform(0.0, 1.0)).greater_equal(rate)
    return _outputs(node, x * to_dtype(keep, x.dtype) / (1.0 - rate), keep, DType.BOOL)


@converter("Dropout", since=1)
def dropout_attrs(ctx: Context, node: Node, x: Tensor) -> Any:
    """ONNX ``Dropout`` 1, 6 (``is_test`` 0 trains), 7 (inference only) and 10 (bool mask): ``ratio`` attribute
    (default 0.5); the mask has ``x``'s type before 10."""
    training = ctx.opset < 7 and not node.attr("is_test", 0)
    mask_dtype = DType.BOOL if ctx.opset >= 10 else x.dtype
    return _dropout(ctx, node, x, float(node.attr("ratio", 0.5)), training, mask_dtype)


@converter("Dropout", since=12, static=(1, 2))
def dropout(ctx: Context, node: Node, x: Tensor, ratio: Tensor | None = None, training: Tensor | None = None) -> Any:
    """ONNX ``Dropout`` 12, 13, 22: ``ratio`` (default 0.5) and ``training_mode`` (default false) inputs, read on
    the host when they are constants; computed from the data, they stay tensors (:func:`_dropout_data`)."""
    if training is None or ctx.is_host(training):
        if not ctx.scalar(training, False):
            return _dropout(ctx, node, x, 0.5, False, DType.BOOL)  # the ratio is not used in inference
        if ratio is None or ctx.is_host(ratio):
            return _dropout(ctx, node, x, ctx.float_scalar(ratio, 0.5), True, DType.BOOL)
    assert training is not None  # None is inference, returned above
    return _dropout_data(ctx, node, x, ratio, training)
