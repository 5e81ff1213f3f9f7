"""IR passes run at import: constant folding and dead-node removal (Burn's onnx-ir post-processing).

- **Constant folding**: a node whose inputs are all constants (``Constant`` nodes, non-trainable
  initializers, folded values) and whose op is deterministic is run once, on the host, at import; its
  outputs become constants. ``Shape`` (and ``Size``) of a value whose inferred shape is fully static folds too,
  so ``Shape -> Gather -> Concat -> Reshape`` sub-graphs become one constant shape.
- **Dead-node removal**: nodes none of whose outputs reach a graph output are dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ember import Tensor, TensorData

from ._budget import check_planned, check_value, memory_error
from ._errors import OnnxImportError
from ._interpret import _describe
from ._ir import Graph

if TYPE_CHECKING:
    from ._context import Context

__all__ = ["fold_constants", "remove_dead_nodes", "NONDETERMINISTIC"]

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


def _static_shape(graph: Graph, name: str) -> list[int] | None:
    info = graph.value_info.get(name)
    if info is None or info.shape is None or not all(isinstance(d, int) for d in info.shape):
        return None
    return [int(d) for d in info.shape]  # type: ignore[arg-type]


def fold_constants(graph: Graph, constants: dict[str, TensorData], ctx: Context) -> int:
    """Evaluate constant nodes of the main graph on the host; returns how many were folded.

    ``constants`` gains the folded values (as host ``TensorData``); the folded nodes leave the graph.
    """
    program = ctx.program
    values: dict[str, Any] = {}
    graph_inputs = {i.name for i in graph.inputs}
    kept = []
    folded = 0
    total = 0  # bytes of the folded values (all kept until the end): within max_tensor_bytes too
    for node in graph.nodes:
        if node.op_type in NONDETERMINISTIC or node.subgraphs() or node.domain not in ("", "ai.onnx"):
            kept.append(node)
            continue
        if node.op_type in ("Shape", "Size") and node.inputs and node.inputs[0] not in graph_inputs:
            shape = _static_shape(graph, node.inputs[0])
        else:
            shape = None
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
        if not ok and shape is not None:  # Shape/Size of a statically shaped value
            _fold_shape(node, shape, values, ctx)
            folded += 1
            continue
        if not ok:
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
    return folded


def _fold_shape(node: Any, shape: list[int], values: dict[str, Any], ctx: Context) -> None:
    from ember import DType

    if node.op_type == "Size":
        n = 1
        for d in shape:
            n *= d
        values[node.outputs[0]] = Tensor.from_data(TensorData(n, DType.INT64), ctx.host, dtype=DType.INT64)
        return
    rank = len(shape)
    start = int(node.attrs.get("start", 0))
    end = node.attrs.get("end", None)
    start = max(0, min(rank, start + rank if start < 0 else start))
    stop = rank if end is None else max(0, min(rank, int(end) + rank if int(end) < 0 else int(end)))
    dims = shape[start:stop]
    values[node.outputs[0]] = Tensor.from_data(TensorData(dims, DType.INT64), ctx.host, dtype=DType.INT64)
