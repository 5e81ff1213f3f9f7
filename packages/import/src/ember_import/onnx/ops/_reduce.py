"""Reductions: ``ReduceSum``, ``ReduceMean``, ``ReduceMax``, ``ReduceMin``, ``ReduceProd``, ``ReduceL1``,
``ReduceL2``, ``ReduceLogSum``, ``ReduceLogSumExp``, ``ReduceSumSquare``, ``ArgMax``, ``ArgMin``,
``CumSum`` and ``CumProd``.

Opset rules (onnx/docs/Changelog.md): ``axes`` is an attribute until opset 12 for ``ReduceSum`` and until 17
for the others, then an optional input (with ``noop_with_empty_axes``: no axes and the flag set returns the
input unchanged, no axes otherwise reduces every axis). A reduction over an empty set gives the ONNX
identity: 0 for sums and norms, 1 for the product, ``-inf``/``+inf`` for max/min (the type's lowest/highest
integer for Int), ``-inf`` for the log-sums, NaN for the mean.
"""

from __future__ import annotations

from collections.abc import Callable

from ember import Bool, DType, Float, Int, Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._axes import as_dtype, kept_shape, norm_axes, norm_axis
from ._late import late

__all__ = ["reduce_axes", "logsumexp"]


def reduce_axes(ctx: Context, node: Node, x: Tensor, axes_input: Tensor | None) -> list[int] | None:
    """The axes a ``Reduce*`` node reduces, sorted; ``None`` when it is a no-op (empty axes with
    ``noop_with_empty_axes=1``). The input (newer opsets) wins over the attribute (older ones)."""
    axes = ctx.ints(axes_input) if axes_input is not None else node.attr("axes", None)
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return None
        return list(range(x.rank))
    return norm_axes(node, axes, x.rank)


def logsumexp(x: Tensor, axes: list[int]) -> Tensor:
    """``log(sum(exp(x)))`` over ``axes`` (kept), with the maximum subtracted (detached: the gradient is the
    softmax either way) so that large values do not overflow; an all ``-inf`` slice gives ``-inf``."""
    m = x.max_dims(axes).detach()
    m = m.mask_fill(m.is_finite().bool_not(), 0.0)
    return x.sub(m).exp().sum_dims(axes).log().add(m)


def _int_bound(x: Tensor, lowest: bool) -> int:
    bits = 8 * x.dtype.itemsize
    if x.dtype.kind == "uint":
        return 0 if lowest else 2**bits - 1
    return -(2 ** (bits - 1)) if lowest else 2 ** (bits - 1) - 1


def _max(x: Tensor, axes: list[int]) -> Tensor:
    if x.kind is Bool:
        return _bool_reduce(x, axes, late(Tensor, "any_dim"))
    return x.max_dims(axes)


def _min(x: Tensor, axes: list[int]) -> Tensor:
    if x.kind is Bool:
        return _bool_reduce(x, axes, late(Tensor, "all_dim"))
    return x.min_dims(axes)


def _bool_reduce(x: Tensor, axes: list[int], fn: Callable[[Tensor, int], Tensor]) -> Tensor:
    for a in axes:
        x = fn(x, a)
    return x


def _float_op(fn: Callable[[Tensor, list[int]], Tensor]) -> Callable[[Tensor, list[int]], Tensor]:
    """``fn`` for Float math: an Int input is computed as float and truncated back to its type (as
    onnx.reference does with ``astype``)."""

    def run(x: Tensor, axes: list[int]) -> Tensor:
        if x.kind is Float:
            return fn(x, axes)
        return as_dtype(fn(x.float(), axes), x.dtype)

    return run


#: op -> (keepdims reduction, identity of the empty set: a number, or "low"/"high" for the type's bounds)
_REDUCTIONS: dict[str, tuple[Callable[[Tensor, list[int]], Tensor], object]] = {
    "ReduceSum": (late(Tensor, "sum_dims"), 0),
    "ReduceMean": (_float_op(late(Tensor, "mean_dims")), float("nan")),
    "ReduceMax": (_max, "low"),
    "ReduceMin": (_min, "high"),
    "ReduceProd": (late(Tensor, "prod_dims"), 1),
    "ReduceL1": (lambda x, a: x.abs().sum_dims(a), 0),
    "ReduceL2": (_float_op(lambda x, a: x.square().sum_dims(a).sqrt()), 0),
    "ReduceLogSum": (_float_op(lambda x, a: x.sum_dims(a).log()), float("-inf")),
    "ReduceLogSumExp": (_float_op(logsumexp), float("-inf")),
    "ReduceSumSquare": (lambda x, a: x.square().sum_dims(a), 0),
}


def _empty_result(x: Tensor, axes: list[int], identity: object) -> Tensor:
    """The reduction of an empty ``x`` over ``axes``: ``identity`` in the kept shape. The shape is that of a sum
    over ``axes`` (0 everywhere: a sum over an empty set), so axes read from the data by generated code stay code;
    when no reduced dim is empty, the result has a dim of size 0 and no value at all."""
    zeros = (x.int() if x.kind is Bool else x).sum_dims(axes)
    if x.kind is Bool:
        return as_dtype(zeros.full_like(int(identity == "high")), DType.BOOL)
    if identity in ("low", "high"):
        value: float | int = (
            _int_bound(x, identity == "low") if x.kind is Int else float("-inf" if identity == "low" else "inf")
        )
    else:
        value = identity  # type: ignore[assignment]
    if x.kind is Int:
        value = int(value) if value == value and abs(value) != float("inf") else 0
    return as_dtype(zeros.full_like(value), x.dtype)


def _reduce_converter(op: str, input_since: int) -> None:
    fn, identity = _REDUCTIONS[op]

    def convert(ctx: Context, node: Node, x: Tensor, axes_input: Tensor | None = None) -> Tensor:
        axes = reduce_axes(ctx, node, x, axes_input)
        if axes is None:
            return x
        if any(d == 0 for d in x.shape):  # an empty input (its shape says so, whatever the axes)
            y = _empty_result(x, axes, identity)
        else:
            y = fn(x, axes)
        return y if node.attr("keepdims", 1) else y.squeeze_dims(axes) if axes else y

    convert.__name__ = op.lower()
    convert.__doc__ = (
        f"``{op}``: ``axes`` attribute before opset {input_since}, optional input from {input_since} "
        "(with ``noop_with_empty_axes``); ``keepdims`` (default 1)."
    )
    converter(op, since=1, static=(1,))(convert)
    converter(op, since=input_since, static=(1,))(convert)


for _op in _REDUCTIONS:
    _reduce_converter(_op, 13 if _op == "ReduceSum" else 18)


# ---------------------------------------------------------------------------------------------- ArgMax/Min
def _arg_converter(op: str, fn: Callable[[Tensor, int], Tensor]) -> None:
    def convert(ctx: Context, node: Node, x: Tensor) -> Tensor:
        axis = norm_axis(node, node.attr("axis", 0), x.rank)
        n = x.shape[axis]
        if n == 0:
            raise OnnxImportError(f"{node.where()}: axis {axis} of shape {list(x.shape)} is empty; no index exists.")
        if node.attr("select_last_index", 0):
            idx = fn(x.flip([axis]), axis).neg().add(n - 1)
        else:
            idx = fn(x, axis)
        idx = as_dtype(idx, DType.INT64)
        return idx if node.attr("keepdims", 1) else idx.squeeze_dim(axis)

    convert.__name__ = op.lower()
    convert.__doc__ = (
        f"``{op}`` (opsets 1, 11, 12, 13): int64 index along ``axis`` (default 0; negative from 11); "
        "``keepdims`` (default 1); ``select_last_index`` (opset 12) picks the last of equal extremes."
    )
    for since in (1, 11, 12, 13):
        converter(op, since=since)(convert)


_arg_converter("ArgMax", late(Tensor, "argmax"))
_arg_converter("ArgMin", late(Tensor, "argmin"))


# ---------------------------------------------------------------------------------------------- CumSum/Prod
def _scan_converter(op: str, fn: Callable[[Tensor, int], Tensor], identity: int, since: int) -> None:
    def convert(ctx: Context, node: Node, x: Tensor, axis_input: Tensor) -> Tensor:
        axis = norm_axis(node, ctx.scalar(axis_input), x.rank)
        n = x.shape[axis]
        if any(d == 0 for d in x.shape):  # an empty input scans to itself (whatever the axis)
            return x
        reverse = bool(node.attr("reverse", 0))
        y = fn(x.flip([axis]) if reverse else x, axis)
        if node.attr("exclusive", 0):  # shifted by one: the identity first, the last total dropped
            first = as_dtype(Tensor.full(kept_shape(x.shape, [axis]), identity, x.device, x.kind), x.dtype)
            y = Tensor.cat([first, y.narrow(axis, 0, n - 1)], axis)
        return y.flip([axis]) if reverse else y

    convert.__name__ = op.lower()
    convert.__doc__ = (
        f"``{op}`` (opset {since}+): running {'sum' if identity == 0 else 'product'} along the ``axis`` input; "
        "``exclusive`` leaves each element out of its own result, ``reverse`` runs from the end."
    )
    converter(op, since=since, static=(1,))(convert)


_scan_converter("CumSum", late(Tensor, "cumsum"), 0, 11)
_scan_converter("CumProd", late(Tensor, "cumprod"), 1, 26)
