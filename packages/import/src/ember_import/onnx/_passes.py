"""IR passes run at import: constant folding and dead-node removal (Burn's onnx-ir post-processing).

- **Constant folding**: a node whose inputs are all constants (``Constant`` nodes, non-trainable
  initializers, folded values) and whose op is deterministic is run once, on the host, at import; its
  outputs become constants. ``Shape`` (and ``Size``) of a value whose inferred shape is fully static folds too,
  so ``Shape -> Gather -> Concat -> Reshape`` sub-graphs become one constant shape. With dynamic dims, the
  static ones still fold: ``Shape(x) -> Gather(1)`` of ``x: [batch, 116, 28, 28]`` is the constant 116
  (:func:`fold`, :class:`FoldResult`).
- **Dead-node removal**: nodes none of whose outputs reach a graph output are dropped.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ember import Tensor, TensorData

from ._budget import check_planned, check_value, memory_error
from ._errors import OnnxImportError
from ._interpret import _describe
from ._ir import Graph

if TYPE_CHECKING:
    from ._context import Context

__all__ = ["fold", "fold_constants", "FoldResult", "remove_dead_nodes", "NONDETERMINISTIC", "PARTIAL_OPS"]

#: ops whose outputs differ from run to run: never folded
NONDETERMINISTIC = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"}
)


def remove_dead_nodes(graph: Graph) -> int:
    """Drop the nodes of ``graph`` (not of sub-graphs) that no output depends on; returns how many."""
    needed = {o.name for o in graph.outputs}
    keep = []
    for node in reversed(graph.nodes):
        if any(o in needed for o in node.outputs if o):
            keep.append(node)
            needed.update(i for i in node.inputs if i)
            for g in node.subgraphs():
                needed.update(g.outer)
    removed = len(graph.nodes) - len(keep)
    graph.nodes = list(reversed(keep))
    return removed


def _shape_dims(graph: Graph, name: str) -> list[int | None] | None:
    """The inferred dims of ``name``: an ``int`` per static dim, ``None`` per dynamic one (``None``: rank unknown).

    Graph inputs count too: ``OnnxModule.forward`` refuses an input whose fixed dims differ from the declared
    ones, so a declared dim holds whenever the model runs."""
    info = graph.value_info.get(name)
    if info is None or info.shape is None:
        return None
    return [d if isinstance(d, int) and d >= 0 else None for d in info.shape]


@dataclasses.dataclass
class FoldResult:
    """What :func:`fold` did to a graph.

    Attributes:
        folded: how many nodes became constants (and left the graph).
        partial: value name -> its elements where only some are known at import: 1-D Int vectors computed
            from ``Shape`` of a value with static and dynamic dims (``Shape(x)`` of ``x: [batch, 3, 224, 224]``
            is ``[None, 3, 224, 224]``), and what ``Gather``, ``Slice``, ``Concat``, ``Unsqueeze``,
            ``Squeeze``, ``Reshape``, ``Identity`` and ``Cast`` (to int64) make of them; ``None`` marks an element
            known only when the model runs. The nodes of these values stay in the graph; the parts that use
            only known elements were folded (they are in ``constants``).
    """

    folded: int = 0
    partial: dict[str, list[int | None]] = dataclasses.field(default_factory=dict)


def fold_constants(graph: Graph, constants: dict[str, TensorData], ctx: Context) -> int:
    """Evaluate the constant nodes of the main graph on the host; returns how many were folded (see :func:`fold`,
    which also returns the partially known shape values)."""
    return fold(graph, constants, ctx).folded


def fold(graph: Graph, constants: dict[str, TensorData], ctx: Context) -> FoldResult:
    """Evaluate the constant nodes of the main graph on the host, with partially static shapes.

    A node folds when all its inputs are constants (initializers, ``Constant`` nodes, folded values) and its op
    is deterministic; ``Shape``/``Size`` fold when the inferred shape of their input is static. A ``Shape`` of a
    value with dynamic dims becomes a partially known vector (:attr:`FoldResult.partial`), and the
    element-moving ops above run on it with their own converters (unknown elements stand in as markers no
    shape takes): an output made only of known elements folds, so ``Shape(x) -> Gather(1)`` on a static channel
    dim of a dynamic-batch ``x`` is a constant, and a ``Slice`` whose bound comes from it has constant bounds.

    Args:
        graph: the main graph; its folded nodes leave ``graph.nodes``.
        constants: name -> host data of the constants; gains the folded values.
        ctx: a host context of the graph's program (converters, budget).

    Returns:
        :class:`FoldResult`: the number of folded nodes and the partially known shape values.

    Raises:
        OnnxImportError: a folded value, or all of them together, above the program's ``max_tensor_bytes``.

    The cost is linear in the nodes (each runs at most twice on the host: once with markers, once more when
    it folds; partial vectors hold at most :data:`MAX_PARTIAL` elements).
    """
    program = ctx.program
    values: dict[str, Any] = {}
    partial: dict[str, tuple[list[int | None], int]] = {}  # name -> (elements, rank 0 or 1)
    kept = []
    folded = 0
    total = 0  # bytes of the folded values (all kept until the end): within max_tensor_bytes too
    for node in graph.nodes:
        if node.op_type in NONDETERMINISTIC or node.subgraphs() or node.domain not in ("", "ai.onnx"):
            kept.append(node)
            continue
        args: list[Any] = []
        ok = True
        for name in node.inputs:
            if not name:
                args.append(None)
            elif name in values:
                args.append(values[name])
            elif name in constants:
                args.append(program.host_constant(name))
            else:
                ok = False
                break
        if not ok:
            if node.op_type in ("Shape", "Size") and node.inputs and node.inputs[0]:
                dims = _shape_dims(graph, node.inputs[0])
                if dims is not None:
                    got = _fold_shape(node, dims, ctx)
                    if isinstance(got, Tensor):
                        values[node.outputs[0]] = got
                        folded += 1
                        continue
                    if got is not None:
                        partial[node.outputs[0]] = (got, 1)
            elif node.op_type in PARTIAL_OPS and any(n in partial for n in node.inputs):
                moved = _fold_partial(node, partial, values, constants, ctx)
                if isinstance(moved, Tensor):
                    values[node.outputs[0]] = moved
                    folded += 1
                    continue
                if moved is not None:
                    partial[node.outputs[0]] = moved
            kept.append(node)
            continue
        ctx.device = ctx.host
        ctx.node = node
        check_planned(ctx, node, args)  # a ConstantOfShape/Expand/Tile/Range... bomb: refused before it allocates
        try:
            out = program.converter(node).fn(ctx, node, *args)
        except MemoryError:
            raise memory_error(ctx, node, ", ".join(_describe(a) for a in args)) from None
        except Exception:
            kept.append(node)  # left to run time, where the error (if any) is reported with context
            continue
        outs = out if isinstance(out, tuple) else (out,)
        if not all(isinstance(o, Tensor) or o is None for o in outs):
            kept.append(node)
            continue
        for name, value in zip(node.outputs, outs):
            if name and value is not None:
                total += check_value(ctx, node, name, value, total)  # a view is cheap; the stored constant is not
                values[name] = value
        folded += 1
    for name in list(values):  # each tensor is let go once copied out: the peak is the total plus one value
        value = values.pop(name)
        try:
            constants[name] = value.to_data()
        except MemoryError:
            raise OnnxImportError(
                f"{program.source}: folding value {name!r} ({_describe(value)}) ran out of memory; "
                f"max_tensor_bytes is {program.max_tensor_bytes}. Lower it, or give the process more memory."
            ) from None
        del value
    graph.nodes = kept
    return FoldResult(folded, {k: elems for k, (elems, rank) in partial.items() if rank == 1})


#: ops that only move the elements of their partially known input (position -> may be partial)
PARTIAL_OPS: dict[str, frozenset[int] | None] = {
    "Gather": frozenset({0}), "Slice": frozenset({0}), "Unsqueeze": frozenset({0}), "Squeeze": frozenset({0}),
    "Reshape": frozenset({0}), "Identity": frozenset({0}), "Cast": frozenset({0}), "Concat": None,  # None: any
}
#: the most elements a partially known vector holds (they come from shapes: larger ones are not tracked)
MAX_PARTIAL = 4096
#: an unknown element ``k`` stands in as ``_MARK - k``: below every dim, so an output element is known iff above it
_MARK = -(1 << 62)


def _fold_shape(node: Any, dims: list[int | None], ctx: Context) -> Tensor | list[int | None] | None:
    """``Shape``/``Size`` of a value with inferred ``dims``: a host constant when every dim it reads is static,
    else the partially known ``Shape`` (``None`` for a ``Size``)."""
    from ember import DType

    if node.op_type == "Size":
        if any(d is None for d in dims):
            return None
        n = 1
        for d in dims:
            n *= d  # type: ignore[operator]
        return Tensor.from_data(TensorData(n, DType.INT64), ctx.host, dtype=DType.INT64)
    rank = len(dims)
    start = int(node.attrs.get("start", 0))
    end = node.attrs.get("end", None)
    start = max(0, min(rank, start + rank if start < 0 else start))
    stop = rank if end is None else max(0, min(rank, int(end) + rank if int(end) < 0 else int(end)))
    picked = dims[start:stop]
    if any(d is None for d in picked):
        return picked
    return Tensor.from_data(TensorData(picked, DType.INT64), ctx.host, dtype=DType.INT64)


def _fold_partial(node: Any, partial: dict[str, tuple[list[int | None], int]], values: dict[str, Any],
                  constants: dict[str, TensorData],
                  ctx: Context) -> Tensor | tuple[list[int | None], int] | None:
    """Run an element-moving node on partially known inputs with its converter; unknown elements stand in as
    markers. Returns a host constant when no marker reaches the output, the output's elements (``None`` where
    a marker landed) and rank when it is a scalar or a vector, else ``None`` (not tracked: the node runs when
    the model runs)."""
    from ember import DType

    program = ctx.program
    allowed = PARTIAL_OPS[node.op_type]
    if node.op_type == "Cast" and node.attrs.get("to") != 7:  # only int64 (ONNX TensorProto.INT64) keeps markers
        return None
    args: list[Any] = []
    for i, name in enumerate(node.inputs):
        if not name:
            args.append(None)
        elif name in partial and (allowed is None or i in allowed):
            elems, rank = partial[name]
            data = [_MARK - k if d is None else d for k, d in enumerate(elems)]
            args.append(Tensor.from_data(TensorData(data if rank else data[0], DType.INT64), ctx.host,
                                         dtype=DType.INT64))
        elif name in values:
            args.append(values[name])
        elif name in constants:
            args.append(program.host_constant(name))
        else:
            return None
    ctx.device = ctx.host
    ctx.node = node
    try:
        check_planned(ctx, node, args)
        out = program.converter(node).fn(ctx, node, *args)
    except Exception:  # left to run time, where the error (if any) is reported with context
        return None
    if not isinstance(out, Tensor) or out.dtype is not DType.INT64 or out.rank > 1 or out.num_elements() > MAX_PARTIAL:
        return None
    got = [int(v) for v in out.reshape([-1]).tolist()]
    if all(v > _MARK for v in got):
        return out
    return [None if v <= _MARK else v for v in got], out.rank
