"""Softmax and normalization: ``Softmax``, ``LogSoftmax``, ``Hardmax``, ``BatchNormalization``,
``LayerNormalization``, ``GroupNormalization``, ``InstanceNormalization``, ``LpNormalization``,
``MeanVarianceNormalization``, ``RMSNormalization`` and ``LRN``.

Formulas follow the ONNX operator specification (onnx/docs/Operators.md) and its reference implementation
(``onnx.reference.ops``); variances are the biased (population) ones, as there.
"""

from __future__ import annotations

from collections.abc import Callable

from ember import DType, Tensor
from ember.tensor import activation, functional

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._axes import as_dtype, flat_shape_2d, norm_axes, norm_axis, stash_dtype
from ._late import late

__all__ = ["standardize"]


# ---------------------------------------------------------------------------------------------- softmax
def _along_axis(ctx: Context, node: Node, x: Tensor, fn: Callable[[Tensor, int], Tensor]) -> Tensor:
    """``fn(x, axis)`` with ONNX's axis rule: from opset 13 one axis (default -1); before, the input is
    coerced to 2-D ``[prod(shape[:axis]), prod(shape[axis:])]`` (default axis 1) and ``fn`` runs on dim 1."""
    if x.rank == 0:
        return fn(x.reshape([1]), 0).reshape([])
    if ctx.opset >= 13:
        return fn(x, norm_axis(node, node.attr("axis", -1), x.rank))
    axis = norm_axis(node, node.attr("axis", 1), x.rank) if x.rank > 1 else 0
    shape = list(x.shape)
    return fn(x.reshape(flat_shape_2d(shape, axis)), 1).reshape(shape)


def _hardmax(x: Tensor, axis: int) -> Tensor:
    n = x.shape[axis]
    if n == 0:
        return x
    pos = Tensor.arange(0, n, x.device).reshape([n if d == axis else 1 for d in range(x.rank)])
    return x.zeros_like().mask_fill(pos.equal(x.argmax(axis)), 1.0)


def _softmax_converter(op: str, fn: Callable[[Tensor, int], Tensor]) -> None:
    def convert(ctx: Context, node: Node, x: Tensor) -> Tensor:
        return _along_axis(ctx, node, x, fn)

    convert.__name__ = op.lower()
    convert.__doc__ = (
        f"``{op}`` (opsets 1, 11, 13): before opset 13 the input is flattened to 2-D at ``axis`` (default 1), "
        "from 13 the op runs along the single ``axis`` (default -1)."
    )
    converter(op, since=1)(convert)
    converter(op, since=13)(convert)


_softmax_converter("Softmax", late(activation, "softmax"))
_softmax_converter("LogSoftmax", late(activation, "log_softmax"))
_softmax_converter("Hardmax", _hardmax)  # the first maximal entry is 1, the others 0


# ---------------------------------------------------------------------------------------------- helpers
def standardize(x: Tensor, lead: int, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(x - mean) / sqrt(var + eps)`` over the dims from ``lead`` on, with ``(mean, 1 / sqrt(var + eps))``
    kept with size-1 dims; biased variance, computed as ``mean((x - mean)^2)``."""
    shape = list(x.shape)
    flat = x.reshape(shape[:lead] + [-1])
    var, mean = flat.var_mean_bias(-1)
    inv = var.add(eps).sqrt().recip()
    y = flat.sub(mean).mul(inv).reshape(shape)
    stat_shape = shape[:lead] + [1] * (len(shape) - lead)
    return y, mean.reshape(stat_shape), inv.reshape(stat_shape)


def _channel_param(p: Tensor, rank: int, dtype: DType) -> Tensor:
    """A per-channel ``[C]`` parameter shaped ``[1, C, 1, ...]`` to broadcast over ``[N, C, D1, ...]``;
    a parameter of rank > 1 (``BatchNormalization``'s ``spatial=0``: ``[C, D1, ...]``) gets a leading 1."""
    p = as_dtype(p, dtype)
    if p.rank > 1:
        return p.unsqueeze_dim(0)
    return p.reshape([1, -1] + [1] * (rank - 2))


def _affine(y: Tensor, s: Tensor | None, b: Tensor | None) -> Tensor:
    if s is not None:
        y = y.mul(s)
    if b is not None:
        y = y.add(b)
    return y


def _need_rank(node: Node, x: Tensor, least: int, layout: str) -> None:
    if x.rank < least:
        raise OnnxImportError(f"{node.where()}: expected input X of layout {layout}, got shape {list(x.shape)}.")


# ---------------------------------------------------------------------------------------------- batch norm
def _batch_norm(
    ctx: Context, node: Node, x: Tensor, s: Tensor, b: Tensor, mean: Tensor, var: Tensor
) -> Tensor | tuple[Tensor | None, ...]:
    """``BatchNormalization`` (opsets 1, 6, 7, 9, 14, 15).

    Inference: ``y = (x - mean) / sqrt(var + epsilon) * scale + B`` with the per-channel statistics given.
    Training (``training_mode=1`` from opset 14; ``is_test=0`` in opsets 1/6; more than one output requested
    in opsets 7/9): ``y`` uses the batch mean and biased variance over every axis but 1, and the running
    statistics become ``input * momentum + batch * (1 - momentum)`` (onnx.reference's
    ``_batchnorm_training_mode``). Opset 14+ returns ``(y, running_mean, running_var)``; earlier ones
    ``(y, running_mean, running_var, saved_mean, saved_var)``. ``spatial=0`` (before opset 9): statistics
    per activation ``[C, D1, ...]``, reduced over the batch axis only.
    """
    _need_rank(node, x, 2, "[N, C, D1, ...]")
    eps = float(node.attr("epsilon", 1e-5))
    n_out = sum(1 for o in node.outputs if o)
    if ctx.opset >= 14:
        training = bool(node.attr("training_mode", 0))
    elif ctx.opset >= 7:
        training = n_out > 1
    else:
        training = not node.attr("is_test", 0)
    spatial = ctx.opset >= 9 or bool(node.attr("spatial", 1))
    dt = x.dtype
    if not training:
        inv = _channel_param(var, x.rank, dt).add(eps).sqrt().recip()
        y = x.sub(_channel_param(mean, x.rank, dt)).mul(inv)
        return _affine(y, _channel_param(s, x.rank, dt), _channel_param(b, x.rank, dt))
    axes = [0] + list(range(2, x.rank)) if spatial else [0]
    bmean = x.mean_dims(axes)
    bvar = x.sub(bmean).square().mean_dims(axes)
    y = x.sub(bmean).mul(bvar.add(eps).sqrt().recip())
    y = _affine(y, _channel_param(s, x.rank, dt), _channel_param(b, x.rank, dt))
    momentum = float(node.attr("momentum", 0.9))
    saved_mean = as_dtype(bmean.reshape(list(mean.shape)), mean.dtype)
    saved_var = as_dtype(bvar.reshape(list(var.shape)), var.dtype)
    run_mean = mean.mul(momentum).add(saved_mean.mul(1.0 - momentum))
    run_var = var.mul(momentum).add(saved_var.mul(1.0 - momentum))
    if ctx.opset >= 14:
        return y, run_mean, run_var
    return y, run_mean, run_var, saved_mean, saved_var


for _since in (1, 6, 7, 9, 14, 15):
    converter("BatchNormalization", since=_since)(_batch_norm)


# ---------------------------------------------------------------------------------------------- layer norms
@converter("LayerNormalization", since=17)
def layer_norm(
    ctx: Context, node: Node, x: Tensor, s: Tensor, b: Tensor | None = None
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """``LayerNormalization`` (opset 17): standardize over the dims from ``axis`` (default -1) in
    ``stash_type`` precision (default float32), cast back to X's type, then ``* Scale + B`` (both broadcast
    to the normalized shape). Returns ``(Y, Mean, InvStdDev)``, the statistics of shape
    ``X.shape[:axis] + [1, ...]`` in the stash type (``None`` when the model does not read them and the node runs
    as Ember's fused ``layer_norm``)."""
    axis = norm_axis(node, node.attr("axis", -1), x.rank)
    st = stash_dtype(node)
    eps = float(node.attr("epsilon", 1e-5))
    if _fused_layer_norm(node, x, s, b, axis, st):
        assert b is not None
        return functional.layer_norm(x, s, b, eps)[0], None, None
    y, mean, inv = standardize(as_dtype(x, st), axis, eps)
    return _affine(as_dtype(y, x.dtype), s, b), mean, inv


def _fused_layer_norm(node: Node, x: Tensor, s: Tensor, b: Tensor | None, axis: int, st: DType) -> bool:
    """Whether Ember's fused ``layer_norm`` computes the node (one kernel: ``native_layer_norm`` on torch):
    float32 normalized over the last dim with ``[d]`` scale and bias, and the statistics outputs unused (the
    fused op's are not differentiable)."""
    d = x.shape[-1] if x.rank else 0
    return (x.rank >= 1 and axis == x.rank - 1 and x.dtype == DType.FLOAT32 and st == DType.FLOAT32
            and not any(node.outputs[1:]) and b is not None and list(s.shape) == [d] and list(b.shape) == [d]
            and s.dtype == DType.FLOAT32 and b.dtype == DType.FLOAT32 and s.device is x.device
            and b.device is x.device)


@converter("RMSNormalization", since=23)
def rms_norm(ctx: Context, node: Node, x: Tensor, s: Tensor) -> Tensor:
    """``RMSNormalization`` (opset 23): ``X / sqrt(mean(X^2) + epsilon) * scale`` with the mean over the
    dims from ``axis`` (default -1), computed in ``stash_type`` precision (default float32)."""
    axis = norm_axis(node, node.attr("axis", -1), x.rank)
    xs = as_dtype(x, stash_dtype(node))
    ms = xs.square().mean_dims(list(range(axis, x.rank)))
    y = xs.mul(ms.add(float(node.attr("epsilon", 1e-5))).sqrt().recip())
    return as_dtype(y, x.dtype).mul(s)


@converter("GroupNormalization", since=18)
def group_norm(ctx: Context, node: Node, x: Tensor, s: Tensor, b: Tensor) -> Tensor:
    """``GroupNormalization`` (opsets 18, 21): standardize each of ``num_groups`` channel groups of
    ``[N, C, D1, ...]`` over its channels and spatial dims, then scale and shift. Opset 18's scale and bias
    are per group ``[num_groups]``; opset 21's per channel ``[C]``, with ``stash_type``."""
    _need_rank(node, x, 2, "[N, C, D1, ...]")
    g = int(node.attr("num_groups"))
    shape = list(x.shape)
    if g <= 0 or shape[1] % g:
        raise OnnxImportError(f"{node.where()}: {shape[1]} channels do not split into num_groups={g} groups.")
    st = stash_dtype(node) if ctx.opset >= 21 else x.dtype
    grouped = as_dtype(x, st).reshape([shape[0], g, -1])
    y, _, _ = standardize(grouped, 2, float(node.attr("epsilon", 1e-5)))
    y = as_dtype(y, x.dtype)
    if ctx.opset >= 21:
        return _affine(y.reshape(shape), _channel_param(s, x.rank, x.dtype), _channel_param(b, x.rank, x.dtype))
    return _affine(y, s.reshape([1, g, 1]), b.reshape([1, g, 1])).reshape(shape)


@converter("InstanceNormalization", since=1)
def instance_norm(ctx: Context, node: Node, x: Tensor, s: Tensor, b: Tensor) -> Tensor:
    """``InstanceNormalization`` (opsets 1, 6, 22): standardize each ``(n, c)`` of ``[N, C, D1, ...]`` over the
    spatial dims, then ``* scale[c] + B[c]``."""
    _need_rank(node, x, 3, "[N, C, D1, ...]")
    y, _, _ = standardize(x, 2, float(node.attr("epsilon", 1e-5)))
    return _affine(y, _channel_param(s, x.rank, x.dtype), _channel_param(b, x.rank, x.dtype))


@converter("LpNormalization", since=1)
def lp_norm(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``LpNormalization`` (opsets 1, 22): ``x / ||x||_p`` along ``axis`` (default -1), ``p`` 1 or 2
    (default 2); an all-zero slice stays zero (the node suite's expectation)."""
    axis = norm_axis(node, node.attr("axis", -1), x.rank)
    p = int(node.attr("p", 2))
    if p == 1:
        norm = x.abs().sum_dim(axis)
    elif p == 2:
        norm = x.square().sum_dim(axis).sqrt()
    else:
        raise OnnxImportError(f"{node.where()}: p must be 1 or 2, got {p}.")
    return x.div(norm.mask_fill(norm.equal(0.0), 1.0))


@converter("MeanVarianceNormalization", since=9)
def mean_variance_norm(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``MeanVarianceNormalization`` (opsets 9, 13): ``(X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9)`` over
    ``axes`` (default ``[0, 2, 3]``), the spec's function body."""
    axes = norm_axes(node, node.attr("axes", [0, 2, 3]), x.rank)
    mean = x.mean_dims(axes)
    var = x.square().mean_dims(axes).sub(mean.square())
    return x.sub(mean).div(var.sqrt().add(1e-9))


@converter("LRN", since=1)
def lrn(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``LRN`` (opsets 1, 13), local response normalization across channels (Krizhevsky et al., 2012):
    ``y = x / (bias + alpha / size * sum_{c'} x[c']^2) ** beta`` with ``c'`` in
    ``[c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]``."""
    _need_rank(node, x, 3, "[N, C, D1, ...]")
    size = int(node.attr("size"))
    alpha, beta, bias = (float(node.attr(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = x.square()
    c = x.shape[1]

    def zeros(n: int) -> list[Tensor]:
        shape = [n if d == 1 else s for d, s in enumerate(x.shape)]
        return [as_dtype(Tensor.zeros(shape, x.device), x.dtype)] if n else []

    padded = Tensor.cat(zeros(lo) + [sq] + zeros(hi), 1)
    total = padded.narrow(1, 0, c)
    for k in range(1, size):
        total = total.add(padded.narrow(1, k, c))
    return x.div(total.mul(alpha / size).add(bias).powf(beta))
