"""Shape operators: ``Shape``, ``Size``, ``Reshape``, ``Flatten``, ``Squeeze``, ``Unsqueeze``, ``Expand``,
``Tile``, ``Transpose``, ``ConstantOfShape`` and ``Range``.

Shape-valued inputs (``Reshape``'s shape, ``Squeeze``/``Unsqueeze``'s axes from opset 13, ``Expand``'s shape,
``Tile``'s repeats, ``Range``'s bounds, ``ConstantOfShape``'s shape) are static: read on the host, so that
the shape arithmetic of exported models (``Shape -> Gather -> Concat -> Reshape``) never touches the compute
device and stays static under ``ember_jax.jit``. ``Shape`` and ``Size`` produce host tensors (int64).
Semantics: onnx/docs/Operators.md and Changelog.md for each version named below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ember import DType, Tensor

from .. import rules
from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from .._validate import validating
from ._axes import flat_shape_2d, norm_axes, norm_axis
from ._elementwise_util import broadcast_shape

__all__ = ["reshape_target", "reshape_exact"]


@converter("Shape", since=1)
def shape(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Shape`` (1, 13, 15: ``start``/``end`` attributes select a range of dims, clamped): int64 ``[rank]``
    on the host."""
    dims = list(x.shape)
    r = len(dims)
    start, end = int(node.attr("start", 0)), node.attr("end", None)
    start = min(max(start + r if start < 0 else start, 0), r)
    stop = r if end is None else min(max(int(end) + r if int(end) < 0 else int(end), 0), r)
    return ctx.tensor(dims[start:stop] if stop > start else [], DType.INT64, device=ctx.host)


@converter("Size", since=1)
def size(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Size`` (1, 13): the number of elements, an int64 scalar (rank 0) on the host."""
    return ctx.tensor(math.prod(x.shape), DType.INT64, device=ctx.host)


def reshape_exact(x: Tensor, shape: Sequence[int]) -> Tensor:
    """``x.reshape(shape)`` with every entry a real size and as many elements as ``x``: Ember's ``reshape`` reads
    a ``0`` as "keep this dim" (Burn's convention), ONNX means an empty dim, so an empty result is created
    directly. Which of the two is decided by ``x``'s element count (an empty target goes with an empty input),
    never by the entries of ``shape``, which may be read from the data (ModelGen's host rules)."""
    target = shape if isinstance(shape, list) else list(shape)  # a rule's result list stays its variable
    if math.prod(x.shape) == 0:
        return Tensor.zeros(target, x.device, x.kind).cast(x.dtype)
    return x.reshape(target)


def reshape_target(node: Node, have: Sequence[int], spec: Sequence[int], allowzero: bool) -> list[int]:
    """:func:`ember_import.onnx.rules.reshape_target` (``Reshape``'s ``0`` and ``-1``), its errors naming ``node``.

    Raises:
        OnnxImportError: the rule's error, prefixed with the node.
    """
    try:
        return rules.reshape_target(list(have), list(spec), allowzero)
    except OnnxImportError as exc:
        raise OnnxImportError(f"{node.where()}: {exc}") from exc


@converter("Reshape", since=1)
def reshape_v1(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Reshape`` 1: the ``shape`` attribute."""
    return reshape_exact(x, reshape_target(node, x.shape, node.attr("shape", []), False))


@converter("Reshape", since=5, static=(1,))
def reshape(ctx: Context, node: Node, x: Tensor, spec: Tensor) -> Tensor:
    """``Reshape`` 5, 13, 14 (``allowzero``: a 0 is a real zero dim), 19, 21: the shape input."""
    target = reshape_target(node, x.shape, ctx.ints(spec) or [], bool(node.attr("allowzero", 0)))
    return reshape_exact(x, target)


@converter("Flatten", since=1)
def flatten(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Flatten`` (1, 9, 11: negative ``axis``, 13, 21): ``[prod(dims[:axis]), prod(dims[axis:])]``."""
    r = x.rank
    axis = int(node.attr("axis", 1))
    if not -r <= axis <= r:
        raise OnnxImportError(f"{node.where()}: axis {axis} is out of range for rank {r} (expected {-r} .. {r}).")
    return reshape_exact(x, flat_shape_2d(x.shape, axis + r if axis < 0 else axis))


def _squeeze(node: Node, x: Tensor, axes: Sequence[int] | None) -> Tensor:
    if not axes:
        dims = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = norm_axes(node, axes, x.rank)
        with validating():
            bad = [d for d in dims if x.shape[d] != 1]
        if bad:
            raise OnnxImportError(
                f"{node.where()}: cannot squeeze dims {bad} of shape {list(x.shape)}: their size is not 1."
            )
    return x.squeeze_dims(dims) if dims else x


@converter("Squeeze", since=1)
def squeeze_v1(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Squeeze`` 1, 11: the ``axes`` attribute (none: every size-1 dim)."""
    return _squeeze(node, x, node.attr("axes", None))


@converter("Squeeze", since=13, static=(1,))
def squeeze(ctx: Context, node: Node, x: Tensor, axes: Tensor | None = None) -> Tensor:
    """``Squeeze`` 13, 21, 23, 24, 25: the optional ``axes`` input."""
    return _squeeze(node, x, ctx.ints(axes))


def _unsqueeze(node: Node, x: Tensor, axes: Sequence[int] | None) -> Tensor:
    if not axes:
        raise OnnxImportError(f"{node.where()}: Unsqueeze needs axes; the node gives none.")
    out_rank = x.rank + len(axes)
    dims = norm_axes(node, axes, out_rank)
    if 0 in x.shape:  # Ember's reshape reads a 0 as "keep this dim": an empty input is reshaped exactly
        shape = list(x.shape)
        for d in sorted(dims):
            shape.insert(d, 1)
        return reshape_exact(x, shape)
    return x.unsqueeze_dim(dims[0]) if len(dims) == 1 else x.unsqueeze_dims(dims)  # norm_axes sorts plain ints


@converter("Unsqueeze", since=1)
def unsqueeze_v1(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Unsqueeze`` 1, 11 (negative axes): the ``axes`` attribute, positions in the output."""
    return _unsqueeze(node, x, node.attr("axes", None))


@converter("Unsqueeze", since=13, static=(1,))
def unsqueeze(ctx: Context, node: Node, x: Tensor, axes: Tensor) -> Tensor:
    """``Unsqueeze`` 13, 21, 23, 24, 25: the ``axes`` input."""
    return _unsqueeze(node, x, ctx.ints(axes))


@converter("Expand", since=8, static=(1,))
def expand(ctx: Context, node: Node, x: Tensor, spec: Tensor) -> Tensor:
    """``Expand`` (8, 13): numpy-style broadcast of ``x`` with the ``shape`` input (either side may be 1)."""
    target = broadcast_shape(node, [x.shape, ctx.ints(spec) or []])
    if not rules.from_data(target) and list(x.shape) == target:
        return x
    if x.rank < len(target):
        x = reshape_exact(x, [1] * (len(target) - x.rank) + list(x.shape))
    return x.expand(target)  # (a size-1 dim expands to 0 too)


@converter("Tile", since=6, static=(1,))
def tile(ctx: Context, node: Node, x: Tensor, repeats: Tensor) -> Tensor:
    """``Tile`` (6, 13): ``repeats[i]`` copies along dim ``i`` (one entry per dim)."""
    reps = ctx.ints(repeats) or []
    if len(reps) != x.rank or any(r < 0 for r in reps):
        raise OnnxImportError(
            f"{node.where()}: repeats {reps} must hold one non-negative count per dim of the input "
            f"(rank {x.rank})."
        )
    return x.repeat(reps)


@converter("Transpose", since=1)
def transpose(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Transpose`` (1, 13, 21, 23, 24, 25): ``perm`` (default: reversed dims)."""
    perm = node.attr("perm", None)
    perm = list(reversed(range(x.rank))) if perm is None else [norm_axis(node, p, x.rank, "perm entry") for p in perm]
    if sorted(perm) != list(range(x.rank)):
        raise OnnxImportError(f"{node.where()}: perm {perm} is not a permutation of the {x.rank} dims.")
    return x.permute(perm) if perm != list(range(x.rank)) else x


@converter("ConstantOfShape", since=9, static=(0,))
def constant_of_shape(ctx: Context, node: Node, spec: Tensor) -> Tensor:
    """``ConstantOfShape`` (9, 20, 21, 23, 24, 25): ``value`` (a one-element tensor, default float32 0)
    repeated to the shape input."""
    dims = ctx.ints(spec) or []
    value = node.attr("value", None)
    t = ctx.tensor([0.0], DType.FLOAT32) if value is None else ctx.tensor(value, value.dtype)
    if t.num_elements() != 1:
        raise OnnxImportError(f"{node.where()}: value must hold one element, found shape {list(t.shape)}.")
    return t.reshape([1] * len(dims)).expand(dims) if dims else t.reshape([])  # (a size-1 dim expands to 0 too)


@converter("Range", since=11, static=(0, 1, 2))
def range_(ctx: Context, node: Node, start: Tensor, limit: Tensor, delta: Tensor) -> Tensor:
    """``Range`` (11): ``start + i * delta`` for ``i < max(ceil((limit - start) / delta), 0)``, in the
    type of ``start``.

    Raises:
        OnnxImportError: ``delta`` is 0.
    """
    a, b, d = ctx.scalar(start), ctx.scalar(limit), ctx.scalar(delta)
    if d == 0:
        raise OnnxImportError(f"{node.where()}: delta is 0; a Range needs a non-zero step.")
    if isinstance(a, int) and isinstance(b, int) and isinstance(d, int) and not start.dtype.is_float:
        # integer bounds: ceil((b - a) / d) in integer arithmetic, the values as one ``arange`` (a size that is
        # only known when a generated model runs stays symbolic through this)
        n = max(-((a - b) // d), 0)
        if n == 0:
            return ctx.tensor([], start.dtype)
        out = Tensor.arange(0, n, ctx.device)
        if d != 1:
            out = out.mul_scalar(d)
        if a != 0:
            out = out.add_scalar(a)
        return out if out.dtype is start.dtype else out.cast(start.dtype)
    n = max(math.ceil((b - a) / d), 0)
    values = [a + i * d for i in range(n)]
    return ctx.tensor(values if values else [], start.dtype)
