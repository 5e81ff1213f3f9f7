"""Running a graph: each node's converter applied to Ember tensors, in topological order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ember import DTypeError, EmberError, Tensor

from ._budget import check_planned, memory_error
from ._errors import OnnxImportError
from ._ir import Graph

if TYPE_CHECKING:
    from ._context import Context

__all__ = ["run_graph"]


def _on_main(v: Any, ctx: Context) -> bool:
    if isinstance(v, Tensor):
        return v.device is not ctx.host
    if isinstance(v, list):
        return any(_on_main(x, ctx) for x in v)
    return False


def _to_main(v: Any, ctx: Context) -> Any:
    if isinstance(v, Tensor):
        return ctx.to_main(v) if v.device is ctx.host else v
    if isinstance(v, list):
        return [_to_main(x, ctx) for x in v]
    return v


def run_graph(graph: Graph, env: dict[str, Any], ctx: Context) -> list[Any]:
    """Run ``graph`` with ``env`` holding its inputs, parameters, constants and outer-scope values.

    Returns the graph's outputs in order. Values are Ember tensors, Python lists of tensors (sequences) or
    ``None`` (an empty optional).

    Raises:
        OnnxImportError: a converter failed; the message names the node, its op and the input shapes.
    """
    program = ctx.program
    for node in graph.nodes:
        conv = program.converter(node)
        try:
            args = [env[name] if name else None for name in node.inputs]
        except KeyError as exc:
            raise OnnxImportError(
                f"{program.source}: {node.where()}: input {exc.args[0]!r} is not computed by any node."
            ) from None
        static = conv.static
        main = any(_on_main(a, ctx) for i, a in enumerate(args) if i not in static)
        if main:
            args = [a if i in static else _to_main(a, ctx) for i, a in enumerate(args)]
        ctx.device = ctx.main if main else ctx.host
        ctx.node = node
        ctx.env = env
        check_planned(ctx, node, args)
        try:
            try:
                out = conv.fn(ctx, node, *args)
            except DTypeError:
                if main or ctx.main is ctx.host:
                    raise
                # the host (numpy) lacks an element type the node produces (bfloat16): run it on the compute device
                args = [a if i in static else _to_main(a, ctx) for i, a in enumerate(args)]
                ctx.device = ctx.main
                out = conv.fn(ctx, node, *args)
        except OnnxImportError as exc:
            if program.source in str(exc):
                raise
            raise OnnxImportError(f"{program.source}: {exc}") from exc  # errors name the file (DESIGN §11)
        except MemoryError:
            raise memory_error(ctx, node, ", ".join(_describe(a) for a in args)) from None
        except (EmberError, ValueError, TypeError, IndexError, NotImplementedError) as exc:
            shapes = ", ".join(_describe(a) for a in args)
            raise OnnxImportError(
                f"{program.source}: {node.where()} failed on inputs ({shapes}): {type(exc).__name__}: {exc}"
            ) from exc
        outs = out if isinstance(out, tuple) else (out,)
        for name, value in zip(node.outputs, outs):
            if name:
                env[name] = value
    try:
        return [env[o.name] if o.name else None for o in graph.outputs]
    except KeyError as exc:
        raise OnnxImportError(
            f"{program.source}: graph {graph.name!r}: output {exc.args[0]!r} is not computed by any node."
        ) from None


def _describe(a: Any) -> str:
    if isinstance(a, Tensor):
        return f"{a.dtype}{list(a.shape)}"
    if isinstance(a, list):
        return f"sequence of {len(a)}"
    return "None" if a is None else type(a).__name__
