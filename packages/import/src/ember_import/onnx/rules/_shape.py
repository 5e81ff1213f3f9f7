"""Host rules of the shape operators (onnx/docs/Operators.md, the version named in each docstring)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._errors import OnnxImportError
from ._hostrule import host_rule

__all__ = ["broadcast_shapes", "reshape_target"]


@host_rule(var="shape")
def reshape_target(have: Sequence[int], spec: Sequence[int], allowzero: bool) -> list[int]:
    """The concrete shape of ``Reshape(x, spec)`` for an ``x`` of shape ``have`` (Reshape 5, 13, 14, 19, 21).

    ``0`` copies the input's dim at that position (unless ``allowzero``: then it is an empty dim); one ``-1`` is
    inferred from the element count. When that count is symbolic (ModelGen's dynamic sizes, an ``int`` subclass)
    the ``-1`` stays ``-1``: generated code writes it as a person would and Ember infers it as ONNX does.

    Args:
        have: the input's shape.
        spec: the ``shape`` input's values (length = the output's rank).
        allowzero: the node's ``allowzero`` attribute.

    Returns:
        The output shape, ``len(spec)`` sizes.

    Raises:
        OnnxImportError: more than one ``-1``, a ``-1`` with an empty dim (its size is undefined), a ``0`` copied
            beyond the input's rank, a size below ``-1``, or an element count that does not match.
    """
    out = []
    for i, s in enumerate(spec):
        if s == 0 and not allowzero:
            if i >= len(have):
                raise OnnxImportError(f"shape {list(spec)} copies dim {i} (a 0), but the input has rank {len(have)}.")
            s = have[i]
        out.append(s)
    total = math.prod(have)
    if out.count(-1) > 1:
        raise OnnxImportError(f"shape {list(spec)} has more than one -1; at most one is inferred.")
    if -1 in out:
        known = math.prod(s for s in out if s != -1)
        if known == 0 or total % known:
            raise OnnxImportError(
                f"cannot infer the -1 of shape {list(spec)} for an input of shape {list(have)} ({total} elements)."
            )
        out[out.index(-1)] = total // known
    if math.prod(out) != total or any(s < 0 for s in out):
        raise OnnxImportError(
            f"cannot reshape an input of shape {list(have)} ({total} elements) to {list(spec)} (resolved {out})."
        )
    if -1 in spec and type(out[list(spec).index(-1)]) is not int:
        out[list(spec).index(-1)] = -1  # a symbolic size (ModelGen's trace): Ember infers it as ONNX does
    return out


@host_rule(var="shape")
def broadcast_shapes(shapes: Sequence[Sequence[int]]) -> list[int]:
    """The numpy broadcast of ``shapes`` (ONNX's multidirectional broadcasting: ``Expand`` 8, 13 and the
    elementwise operators from opset 7): right-aligned, a dim of 1 takes the other's size (also 0).

    Returns:
        ``max(len(s) for s in shapes)`` sizes.

    Raises:
        OnnxImportError: two sizes of one position differ and neither is 1.
    """
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            if d != out[i] and d != 1 and out[i] != 1:
                raise OnnxImportError(
                    f"input shapes {[list(x) for x in shapes]} do not broadcast (numpy rules); fix the model's shapes."
                )
            if out[i] == 1:
                out[i] = d
    return out
