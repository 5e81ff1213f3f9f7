"""Running a graph: each node's converter applied to Ember tensors, in topological order.

A graph runs from its :class:`Plan`, built once per graph of a program (at the first run) and kept by the
program: per node the converter's function, the inputs it reads as host values, its input and output names,
its budget planner and the values whose last use it is (dropped once it has run, so a forward holds only the
live values). The loop then does no lookups, attribute parsing or bookkeeping per node beyond the call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ember import DTypeError, EmberError, Tensor

from ._budget import PLANNERS, check_planned, memory_error
from ._errors import OnnxImportError
from ._ir import Graph, Node

if TYPE_CHECKING:
    from ._program import Program
    from ._state import RunState

__all__ = ["run_graph", "plan", "plan_of", "Plan", "Step"]


class Step:
    """One node of a :class:`Plan`.

    Attributes:
        fn: the converter's function; node: the node.
        inputs: its input names (``""``: an omitted optional input, read as ``None``).
        outputs: ``(position, name)`` of each output the graph names.
        static: the positions of the inputs read as host values (never moved to the compute device).
        dynamic: the positions of the other inputs, or ``None`` when every input is dynamic.
        planned: whether :func:`._budget.check_planned` plans the node's output.
        drop: the values whose last reader this node is (freed after it ran).
    """

    __slots__ = ("fn", "node", "inputs", "outputs", "static", "dynamic", "planned", "drop")

    def __init__(self, fn: Callable[..., Any], node: Node, static: Sequence[int], planned: bool,
                 drop: tuple[str, ...]) -> None:
        self.fn, self.node, self.planned, self.drop = fn, node, planned, drop
        self.inputs = tuple(node.inputs)
        self.outputs = tuple((i, o) for i, o in enumerate(node.outputs) if o)
        self.static = frozenset(static)
        dynamic = tuple(i for i in range(len(self.inputs)) if i not in self.static)
        self.dynamic = None if len(dynamic) == len(self.inputs) else dynamic


class Plan:
    """The steps of one graph, and the graph's output names (built by :func:`plan`)."""

    __slots__ = ("graph", "nodes", "count", "steps", "outputs")

    def __init__(self, graph: Graph, steps: list[Step]) -> None:
        self.graph, self.steps = graph, steps
        self.nodes, self.count = graph.nodes, len(graph.nodes)  # a graph rewritten since invalidates the plan
        self.outputs = tuple(o.name for o in graph.outputs)


def plan(graph: Graph, program: Program) -> Plan:
    """The :class:`Plan` of ``graph``: its converters resolved, each value's last reader found.

    A node holding sub-graphs reads every name its sub-graphs read from outside (``Graph.outer``), so values a
    branch or loop body needs stay alive until that node ran; graph outputs are never dropped; an output nothing
    reads is dropped by the node that makes it.
    """
    last: dict[str, int] = {}
    for k, node in enumerate(graph.nodes):
        for name in node.inputs:
            last[name] = k
        for sub in node.subgraphs():
            for name in sub.outer:
                last[name] = k
    kept = {info.name for info in graph.outputs}
    for name in kept:
        last.pop(name, None)
    last.pop("", None)
    drops: list[list[str]] = [[] for _ in graph.nodes]
    for name, k in last.items():
        drops[k].append(name)
    for k, node in enumerate(graph.nodes):  # an output nothing reads is dropped as soon as it is made
        drops[k].extend(o for o in node.outputs if o and o not in last and o not in kept)
    steps = []
    for k, node in enumerate(graph.nodes):
        conv = program.converter(node)
        planned = node.op_type in PLANNERS and node.domain in ("", "ai.onnx")
        steps.append(Step(conv.fn, node, conv.static, planned, tuple(drops[k])))
    return Plan(graph, steps)


def plan_of(graph: Graph, program: Program) -> Plan:
    """``graph``'s plan, built at its first run and kept by ``program`` (rebuilt when the graph's node list was
    replaced or changed length since, as the import passes do)."""
    found = program.plans.get(id(graph))
    if found is None or found.graph is not graph or found.nodes is not graph.nodes or found.count != len(graph.nodes):
        found = program.plans[id(graph)] = plan(graph, program)
    return found


def _on_main(v: Any, host: Any) -> bool:
    if isinstance(v, Tensor):
        return v.device is not host
    if isinstance(v, list):
        return any(_on_main(x, host) for x in v)
    return False


def _to_main(v: Any, ctx: RunState) -> Any:
    if isinstance(v, Tensor):
        return ctx.to_main(v) if v.device is ctx.host else v
    if isinstance(v, list):
        return [_to_main(x, ctx) for x in v]
    return v


def _moved(args: list[Any], step: Step, ctx: RunState, seen: dict[int, tuple[Tensor, Tensor]]) -> list[Any]:
    """``args`` with the dynamic host tensors on the compute device; ``seen`` (this run's moves: id of the host
    tensor -> (it, its copy)) spares the program's cache lookup for a constant read by several nodes."""
    host = ctx.host
    out = list(args)
    for i in range(len(out)) if step.dynamic is None else step.dynamic:
        a = out[i]
        if a.__class__ is Tensor:
            if a.device is host:
                hit = seen.get(id(a))
                if hit is None or hit[0] is not a:
                    hit = seen[id(a)] = (a, ctx.to_main(a))
                out[i] = hit[1]
        elif isinstance(a, (Tensor, list)):
            out[i] = _to_main(a, ctx)
    return out


def run_graph(graph: Graph, env: dict[str, Any], ctx: RunState) -> list[Any]:
    """Run ``graph`` with ``env`` holding its inputs, parameters, constants and outer-scope values.

    Returns the graph's outputs in order. Values are Ember tensors, Python lists of tensors (sequences) or
    ``None`` (an empty optional). ``env`` is consumed: the values a node reads last are removed from it.

    Raises:
        OnnxImportError: a converter failed; the message names the node, its op and the input shapes.
    """
    program = ctx.program
    p = plan_of(graph, program)
    host, main_dev = ctx.host, ctx.main
    one_device = main_dev is host
    ctx.env = env
    env[""] = None  # an omitted optional input reads as None
    seen: dict[int, tuple[Tensor, Tensor]] = {}
    for step in p.steps:
        try:
            args = [env[name] for name in step.inputs]
        except KeyError as exc:
            raise OnnxImportError(
                f"{program.source}: {step.node.where()}: input {exc.args[0]!r} is not computed by any node."
            ) from None
        main = False
        if not one_device:
            dynamic = step.dynamic
            for a in (args if dynamic is None else [args[i] for i in dynamic]):
                if a.__class__ is Tensor:
                    if a.device is not host:
                        main = True
                        break
                elif _on_main(a, host):
                    main = True
                    break
            if main:
                args = _moved(args, step, ctx, seen)
        ctx.device = main_dev if main else host
        ctx.node = step.node
        if step.planned:
            check_planned(ctx, step.node, args)
        try:
            out = step.fn(ctx, step.node, *args)
        except DTypeError as exc:
            if main or one_device:
                raise _failure(exc, step.node, ctx, args, program.source) from exc
            # the host (numpy) lacks an element type the node produces (bfloat16): run it on the compute device
            args = _moved(args, step, ctx, seen)
            ctx.device = main_dev
            out = _call(step, ctx, args, program.source)
        except Exception as exc:
            err = _failure(exc, step.node, ctx, args, program.source)
            if err is exc:
                raise
            raise err from (None if isinstance(exc, MemoryError) else exc)
        if isinstance(out, tuple):
            for i, name in step.outputs:
                if i < len(out):
                    env[name] = out[i]
        elif step.outputs and step.outputs[0][0] == 0:
            env[step.outputs[0][1]] = out
        for name in step.drop:
            env.pop(name, None)
    try:
        return [env[name] if name else None for name in p.outputs]
    except KeyError as exc:
        raise OnnxImportError(
            f"{program.source}: graph {graph.name!r}: output {exc.args[0]!r} is not computed by any node."
        ) from None


def _call(step: Step, ctx: RunState, args: list[Any], source: str) -> Any:
    try:
        return step.fn(ctx, step.node, *args)
    except Exception as exc:
        err = _failure(exc, step.node, ctx, args, source)
        if err is exc:
            raise
        raise err from (None if isinstance(exc, MemoryError) else exc)


def _failure(exc: Exception, node: Node, ctx: RunState, args: list[Any], source: str) -> Exception:
    """The error to raise for ``exc`` raised by ``node``'s converter (errors name the file, DESIGN §11);
    ``exc`` itself when it is raised as it is."""
    if isinstance(exc, OnnxImportError):
        return exc if source in str(exc) else OnnxImportError(f"{source}: {exc}")
    if isinstance(exc, MemoryError):
        return memory_error(ctx, node, ", ".join(_describe(a) for a in args))
    if isinstance(exc, (EmberError, ValueError, TypeError, IndexError, NotImplementedError)):
        shapes = ", ".join(_describe(a) for a in args)
        return OnnxImportError(f"{source}: {node.where()} failed on inputs ({shapes}): {type(exc).__name__}: {exc}")
    return exc


def _describe(a: Any) -> str:
    if isinstance(a, Tensor):
        return f"{a.dtype}{list(a.shape)}"
    if isinstance(a, list):
        return f"sequence of {len(a)}"
    return "None" if a is None else type(a).__name__
