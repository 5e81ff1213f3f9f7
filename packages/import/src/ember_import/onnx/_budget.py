"""The memory budget of an ONNX import: what one tensor a model file makes Ember materialise may take.

A tiny hostile file can ask for terabytes: ``ConstantOfShape`` of ``[2**20, 2**20]``, an ``Expand`` or ``Tile`` to
a huge shape, a ``Range`` of ``2**40`` steps, an initializer that declares huge dims over a few bytes of data
(ARCHITECTURE.md, "Trust": parsing hostile input is bounded in time and memory). ``load_model(..., max_tensor_bytes=N)``
sets the budget (default :func:`default_max_tensor_bytes`: ``max(file size, 1 GiB)``, the ``.pt`` reader's
rule and name); it applies to

- every value constant folding computes at import (checked before it is stored: folding materialises it), and
  all of them together (folding keeps them until the pass ends);
- the output of every op that sizes a new tensor from values (a shape, repeats, a count, pads, scales, a
  depth), checked *before* the converter allocates, at import and when the model runs: the ops in
  :data:`PLANNERS`.

A ``MemoryError`` raised by a node is reported the same way (an :class:`OnnxImportError` naming the node).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ember import DType, Tensor

from .._pt import default_max_tensor_bytes
from ._errors import OnnxImportError

if TYPE_CHECKING:
    from ._ir import Node
    from ._state import RunState

__all__ = [
    "default_max_tensor_bytes", "check_planned", "check_value", "memory_error", "describe_bytes", "describe_shape",
    "PLANNERS",
]

#: what :func:`check_planned` asks of a node: ``(output shape, element type)`` or ``None`` when unknown
Plan = tuple[list[int], DType] | None


def describe_bytes(n: int) -> str:
    """``"4398046511104 bytes (4.0 TiB)"``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{n} bytes ({size:.1f} {unit})"
        size /= 1024
    raise AssertionError  # pragma: no cover


def describe_shape(shape: Sequence[int], most: int = 8) -> str:
    """``[2, 3]``; a shape of more than ``most`` dims (a hostile file's) is cut: ``[1, 1, ... (1000000 dims)]``."""
    dims = [int(d) for d in shape[:most]]
    if len(shape) <= most:
        return str(dims)
    return "[" + ", ".join(map(str, dims)) + f", ... ({len(shape)} dims)]"


def _limit(ctx: RunState) -> int | None:
    return getattr(ctx.program, "max_tensor_bytes", None)


def _source(ctx: RunState) -> str:
    return getattr(ctx.program, "source", "") or "<model>"


def _refuse(ctx: RunState, node: Node, output: str, shape: Sequence[int], dtype: DType, nbytes: int,
            limit: int, when: str) -> OnnxImportError:
    return OnnxImportError(
        f"{_source(ctx)}: {node.where()} (output {output!r}) {when} a {dtype} tensor of shape {describe_shape(shape)}: "
        f"{describe_bytes(nbytes)}, more than the limit max_tensor_bytes={describe_bytes(limit)}. A small "
        "file asking for this much memory is malformed or hostile; if you trust it, pass "
        "load_model(..., max_tensor_bytes=N) with a larger N."
    )


def _first_output(node: Node) -> str:
    return next((o for o in node.outputs if o), "")


def check_planned(ctx: RunState, node: Node, args: Sequence[Any]) -> None:
    """Refuse ``node`` before it runs when the tensor it would create exceeds the budget.

    Only the ops in :data:`PLANNERS` are planned; a planner that cannot read its inputs (a malformed node)
    leaves the node to its converter, which reports the problem.

    Raises:
        OnnxImportError: the planned output is larger than ``max_tensor_bytes``.
    """
    limit = _limit(ctx)
    planner = PLANNERS.get(node.op_type)
    if limit is None or planner is None or node.domain not in ("", "ai.onnx"):
        return
    try:
        plan = planner(ctx, node, args)
    except Exception:  # malformed inputs: the converter raises the precise error
        return
    if plan is None:
        return
    shape, dtype = plan
    if any(d < 0 for d in shape):
        return
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > limit:
        raise _refuse(ctx, node, _first_output(node), shape, dtype, nbytes, limit, "would allocate")


def check_value(ctx: RunState, node: Node, output: str, value: Any, folded_so_far: int = 0) -> int:
    """Refuse a folded value larger than the budget (folding stores it as a constant: it would be materialised),
    or one that takes the values folded so far past the budget; returns the bytes ``value`` adds.

    Raises:
        OnnxImportError: ``value`` (a tensor, possibly a broadcast view) is larger than ``max_tensor_bytes``, or
            ``folded_so_far`` plus its size is (the folded constants are kept together until the end of the pass).
    """
    limit = _limit(ctx)
    if not isinstance(value, Tensor):
        return 0
    shape = list(value.shape)
    nbytes = math.prod(shape) * value.dtype.itemsize
    if limit is None:
        return nbytes
    if nbytes > limit:
        raise _refuse(ctx, node, output, shape, value.dtype, nbytes, limit, "folds at import into")
    if folded_so_far + nbytes > limit:
        raise OnnxImportError(
            f"{_source(ctx)}: {node.where()} (output {output!r}) folds into a {value.dtype} tensor of shape "
            f"{describe_shape(shape)} "
            f"({describe_bytes(nbytes)}), which takes the values constant folding keeps to "
            f"{describe_bytes(folded_so_far + nbytes)} in all, more than the limit "
            f"max_tensor_bytes={describe_bytes(limit)}. If you trust the model, pass load_model(..., "
            "max_tensor_bytes=N) with a larger N, or fold=False."
        )
    return nbytes


def memory_error(ctx: RunState, node: Node, shapes: str) -> OnnxImportError:
    """The error for a ``MemoryError`` raised while ``node`` ran on inputs described by ``shapes``."""
    limit = _limit(ctx)
    return OnnxImportError(
        f"{_source(ctx)}: {node.where()} ran out of memory on inputs ({shapes}); "
        f"max_tensor_bytes is {describe_bytes(limit) if limit is not None else 'unset'}. The model asks for more "
        "memory than this process may use: give it smaller inputs or more memory, or check the file is not hostile."
    )


# ---------------------------------------------------------------------------------------------- planners
def _ints(ctx: RunState, t: Any) -> list[int]:
    return [int(v) for v in (ctx.ints(t) or [])] if isinstance(t, Tensor) else []


def _float_dtype(node: Node, default: DType = DType.FLOAT32) -> DType:
    from ._dtypes import dtype_of

    dt = node.attrs.get("dtype")
    return default if dt is None else dtype_of(int(dt), node.where())


def _constant_of_shape(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    value = node.attrs.get("value")
    return _ints(ctx, args[0]), (value.dtype if value is not None else DType.FLOAT32)


def _expand(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    x, spec = args[0], _ints(ctx, args[1])
    a, b = list(x.shape), spec
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    return [max(p, q) if min(p, q) != 0 else 0 for p, q in zip(a, b)], x.dtype


def _tile(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    x, reps = args[0], _ints(ctx, args[1])
    if len(reps) != x.rank:
        return None
    return [d * r for d, r in zip(x.shape, reps)], x.dtype


def _range(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    a, b, d = (ctx.scalar(t) for t in args[:3])
    if d == 0:
        return None
    return [max(math.ceil((b - a) / d), 0)], args[0].dtype


def _scaled(shape: Sequence[int], axes: Sequence[int], scales: Sequence[float] | None,
            sizes: Sequence[int] | None) -> list[int]:
    out = list(shape)
    for k, ax in enumerate(axes):
        if sizes is not None and k < len(sizes):
            out[ax] = int(sizes[k])
        elif scales is not None and k < len(scales):
            out[ax] = int(math.floor(out[ax] * float(scales[k])))
    return out


def _resize(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    x = args[0]
    if ctx.opset_of(node.domain) < 11:  # Resize-10: (x, scales)
        return _scaled(x.shape, range(x.rank), ctx.floats(args[1]) if len(args) > 1 else None, None), x.dtype
    axes_attr = node.attrs.get("axes")
    axes = [int(a) % x.rank for a in axes_attr] if axes_attr is not None else list(range(x.rank))
    scales = ctx.floats(args[2]) if len(args) > 2 and args[2] is not None else None
    sizes = ctx.ints(args[3]) if len(args) > 3 and args[3] is not None else None
    return _scaled(x.shape, axes, scales or None, sizes or None), x.dtype


def _upsample(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    x = args[0]
    scales = ctx.floats(args[1]) if len(args) > 1 and args[1] is not None else node.attrs.get("scales")
    return _scaled(x.shape, range(x.rank), scales, None), x.dtype


def _pad(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    x = args[0]
    if len(args) > 1 and args[1] is not None:
        pads = _ints(ctx, args[1])
        axes_t = args[3] if len(args) > 3 else None
        axes = [a % x.rank for a in _ints(ctx, axes_t)] if axes_t is not None else list(range(x.rank))
    else:
        pads = [int(p) for p in (node.attrs.get("pads") or node.attrs.get("paddings") or [])]
        axes = list(range(x.rank))
    if len(pads) != 2 * len(axes):
        return None
    out = list(x.shape)
    for k, ax in enumerate(axes):
        out[ax] += pads[k] + pads[k + len(axes)]
    return out, x.dtype


def _random(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    return [int(d) for d in node.attrs.get("shape", [])], _float_dtype(node)


def _one_hot(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    depth = int(ctx.scalar(args[1]))
    return [*args[0].shape, depth], (args[2].dtype if len(args) > 2 and args[2] is not None else DType.FLOAT32)


def _max_unpool(ctx: RunState, node: Node, args: Sequence[Any]) -> Plan:
    if len(args) < 3 or args[2] is None:
        return None
    return _ints(ctx, args[2]), args[0].dtype


#: op type -> planner of the tensor it creates from values (see :func:`check_planned`)
PLANNERS: dict[str, Callable[[RunState, Node, Sequence[Any]], Plan]] = {
    "ConstantOfShape": _constant_of_shape,
    "Expand": _expand,
    "Tile": _tile,
    "Range": _range,
    "Resize": _resize,
    "Upsample": _upsample,
    "Pad": _pad,
    "RandomNormal": _random,
    "RandomUniform": _random,
    "OneHot": _one_hot,
    "MaxUnpool": _max_unpool,
}
