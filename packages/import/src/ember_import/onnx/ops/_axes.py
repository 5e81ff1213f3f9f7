"""Helpers shared by the reduction, matrix, normalization and loss converters: ONNX axis
normalization, element-type casts within a kind, scalar scaling, and the ``stash_type`` attribute."""

from __future__ import annotations

from collections.abc import Sequence

from ember import DType, Int, Tensor

from .._dtypes import dtype_of
from .._errors import OnnxImportError
from .._ir import Node
from ._elementwise_util import to_dtype

__all__ = ["norm_axis", "norm_axes", "as_dtype", "scale", "stash_dtype", "flat_shape_2d", "kept_shape"]


def norm_axis(node: Node, axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[0, rank)`` (ONNX counts negative axes from the end). An axis with a ``__norm_axis__(rank)``
    method (ModelGen's value read from the data when generated code runs) is normalised by it, branch-free.

    Raises:
        OnnxImportError: ``axis`` is outside ``[-rank, rank - 1]``.
    """
    hook = getattr(axis, "__norm_axis__", None)
    if hook is not None:  # a value known only when generated code runs (ModelGen): normalised branch-free
        return hook(rank)  # type: ignore[no-any-return]
    a = int(axis)
    if not -rank <= a < max(rank, 1):
        raise OnnxImportError(
            f"{node.where()}: {what} {a} is out of range for an input of rank {rank} (expected "
            f"{-rank} .. {rank - 1}); fix the model's {what}."
        )
    return a + rank if a < 0 else a


def norm_axes(node: Node, axes: Sequence[int], rank: int) -> list[int]:
    """The distinct ``axes`` in ``[0, rank)``, sorted (unsorted when they are read from the data by generated
    code: see :func:`norm_axis`).

    Raises:
        OnnxImportError: an axis out of range or repeated.
    """
    out = [norm_axis(node, a, rank, "axes entry") for a in axes]
    if not any(hasattr(a, "__norm_axis__") for a in axes):
        out.sort()  # axes known only when generated code runs stay in their order (the Tensor API takes any)
    if len({int(a) for a in out}) != len(out):
        raise OnnxImportError(f"{node.where()}: axes {list(axes)} repeat an axis (rank {rank}); list each once.")
    return out


def as_dtype(t: Tensor, dtype: DType) -> Tensor:
    """``t`` with element type ``dtype``, across kinds too (:func:`._elementwise_util.to_dtype`: exact int64 ->
    float64, floats truncate toward zero, anything to bool is ``!= 0``)."""
    return to_dtype(t, dtype)


def scale(t: Tensor, factor: float) -> Tensor:
    """``t * factor`` (nothing when ``factor`` is 1; an integral factor for Int tensors)."""
    if factor == 1:
        return t
    return t.mul(int(factor) if t.kind is Int else float(factor))


def stash_dtype(node: Node, default: int = 1) -> DType:
    """The element type named by the ``stash_type`` attribute (``LayerNormalization``, ``RMSNormalization``,
    ``GroupNormalization`` 21): the precision of the mean and variance (ONNX default 1, float32)."""
    return dtype_of(int(node.attr("stash_type", default)), f"{node.where()} stash_type")


def flat_shape_2d(shape: Sequence[int], axis: int) -> list[int]:
    """``[prod(shape[:axis]), prod(shape[axis:])]``: ONNX's coercion of a tensor to 2-D at ``axis``
    (``Softmax``/``LogSoftmax``/``Hardmax`` before opset 13, ``Flatten``)."""
    lead = 1
    for s in shape[:axis]:
        lead *= s
    tail = 1
    for s in shape[axis:]:
        tail *= s
    return [lead, tail]


def kept_shape(shape: Sequence[int], axes: Sequence[int]) -> list[int]:
    """``shape`` with each of ``axes`` set to 1 (the shape of a reduction with ``keepdims``)."""
    return [1 if i in axes else s for i, s in enumerate(shape)]
