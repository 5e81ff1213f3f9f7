"""Running the graph for generation: each node through a layer recognizer or its runtime converter, traced.

:class:`TraceContext` is the runtime :class:`~.._context.Context` for a trace: host reads of a traced tensor
become lines of code and give :class:`~._sym.Sym`\\ s, host tensors may hold ``Sym`` elements (the shape of a
tensor with a dynamic dim), and everything is computed on the host. Host nodes on such shapes (``Gather``,
``Concat``, ``Slice``, ``Unsqueeze``, arithmetic ...) are evaluated element-wise on the ``Sym``\\ s, so shape
arithmetic folds into Python expressions (``[batch, seq, 4, 8]``) where the runtime folds it into constants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import DType, DTypeError, EmberError, Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._program import Program, host_device
from ._errors import ModelGenError
from ._gen import Gen, flat
from ._hints import traced_with_hints
from ._host import HostDTypeError
from ._seqval import SeqVal
from ._sym import GUARDS, Sym
from ._symfloat import SymFloat, as_int, has_sym
from ._trace import untraced

__all__ = ["ControlFlow", "TraceContext", "convert_node", "shadow_outputs"]

#: writes a control-flow node (``If``/``Loop``/``Scan``, a sequence op on a traced sequence) as generated code
#: and returns ``True``, or returns ``False`` to leave it to its runtime converter: :func:`._control.control_flow`,
#: passed in by the caller (:mod:`._control` sits above this module: its sub-graph tracer runs nodes through
#: :func:`convert_node`)
ControlFlow = Callable[[Gen, "TraceContext", Node, list[Any]], bool]

#: tags standing for Sym elements in a data-movement evaluation (above any size a trace uses)
_TAG = 1 << 40
#: host ops that only move elements: evaluated on tags when their (non-static) inputs hold Sym elements
_MOVES = frozenset({"Gather", "GatherElements", "Concat", "Slice", "Unsqueeze", "Squeeze", "Reshape", "Identity",
                    "Cast", "Flatten", "Split", "Transpose", "Expand"})
#: host ops evaluated element-wise on Sym elements
_ARITH = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
          "Div": lambda a, b: a // b}


class TraceContext(Context):
    """The converters' context during generation (see the module docstring); ``control`` writes control-flow
    nodes (:data:`ControlFlow`; ``None``: every node through its runtime converter)."""

    __slots__ = ("control", "gen")

    def __init__(self, program: Program, gen: Gen, control: ControlFlow | None = None) -> None:
        host = host_device()
        super().__init__(program, host, host)
        self.gen = gen
        self.control = control

    def values(self, t: Tensor | None) -> list[Any] | None:
        if t is None:
            return None
        hs = self.gen.host_syms.get(id(t))
        if hs is not None:
            return flat(hs[1])
        if self.gen.is_traced(t) and t.rank == 0:
            return [t.tolist()]  # one read, no reshape line
        return super().values(t)

    def example(self, t: Tensor | None, value: Any) -> None:
        hints = self.gen.read_hints.get(id(t)) if t is not None else None
        if hints is not None and not hints.fixed:
            hints.example = _hints(value)

    def ints(self, t: Tensor | None) -> list[int] | None:
        v = self.values(t)
        return None if v is None else [x if isinstance(x, Sym) else int(x) for x in v]

    def floats(self, t: Tensor | None) -> list[float] | None:
        v = self.values(t)
        return None if v is None else [x if isinstance(x, (Sym, SymFloat)) else float(x) for x in v]

    def int_scalar(self, t: Tensor | None, default: Any = None) -> Any:
        v = self.scalar(t, default)
        return v if v is None else as_int(v)

    def float_scalar(self, t: Tensor | None, default: Any = None) -> Any:
        v = self.scalar(t, default)
        return v if v is None or isinstance(v, SymFloat) else float(v)

    def tensor(self, data: Any, dtype: DType | str, device: Any = None) -> Tensor:
        if has_sym(data):
            with untraced():
                t = Tensor.from_data(_hints(data), self.host, dtype=dtype)
            self.gen.host_syms[id(t)] = (t, data)
            return t
        return Tensor.from_data(data, self.host, dtype=dtype)

    def is_host(self, t: Any) -> bool:
        return isinstance(t, Tensor) and not self.gen.is_traced(t)

    def to_main(self, t: Tensor) -> Tensor:
        return t


def _hints(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_hints(x) for x in v]
    return int(v) if isinstance(v, Sym) else v


def _has_host_syms(gen: Gen, v: Any) -> bool:
    if isinstance(v, Tensor):
        return id(v) in gen.host_syms
    if isinstance(v, list):
        return any(_has_host_syms(gen, x) for x in v)
    return False


def _elems(gen: Gen, t: Tensor) -> list[Any]:
    hs = gen.host_syms.get(id(t))
    with untraced():
        return flat(hs[1]) if hs is not None else flat(t.tolist())


def _host_result(ctx: TraceContext, like: Tensor, shape: list[int], elems: list[Any]) -> Tensor:
    with untraced():
        t = Tensor.from_data(_hints(elems), ctx.host, dtype=like.dtype).reshape(shape) if shape else \
            Tensor.from_data(_hints(elems[0]), ctx.host, dtype=like.dtype)
    if has_sym(elems):
        ctx.gen.host_syms[id(t)] = (t, elems if shape else elems[0])
    return t


def _arith(ctx: TraceContext, node: Node, args: list[Any]) -> Any:
    """``Add``/``Sub``/``Mul``/``Div`` of int host values of rank <= 1 (shape arithmetic) on Sym elements."""
    a, b = args
    with untraced():
        ok = all(isinstance(x, Tensor) and x.rank <= 1 and not x.dtype.is_float and x.dtype is not DType.BOOL
                 for x in (a, b))
        if not ok:
            return None
        ea, eb = _elems(ctx.gen, a), _elems(ctx.gen, b)
        ra, rb = a.rank, b.rank
    n = max(len(ea), len(eb))
    if len(ea) not in (1, n) or len(eb) not in (1, n):
        return None
    fn = _ARITH[node.op_type]
    out = [fn(ea[i if len(ea) > 1 else 0], eb[i if len(eb) > 1 else 0]) for i in range(n)]
    shape = [n] if max(ra, rb) == 1 else []
    return _host_result(ctx, a, shape, out)


def _tagged(ctx: TraceContext, conv: Any, node: Node, args: list[Any]) -> Any:
    """Run a data-movement node on tags standing for the Sym elements of its inputs, and map the tags in
    its outputs back (``Gather``, ``Concat``, ``Slice``, ``Unsqueeze`` ... of a shape)."""
    gen = ctx.gen
    table: dict[int, Any] = {}
    tagged: list[Any] = []
    for a in args:
        if isinstance(a, Tensor) and id(a) in gen.host_syms:
            t, held = gen.host_syms[id(a)]
            items = flat(held)
            with untraced():
                dt, shape = t.dtype, list(t.shape)
            if dt.is_float or dt is DType.BOOL:
                return None
            vals = []
            for x in items:
                if isinstance(x, Sym):
                    tag = _TAG + len(table)
                    table[tag] = x
                    vals.append(tag)
                else:
                    vals.append(int(x))
            with untraced():
                tt = Tensor.from_data(vals, ctx.host, dtype=dt).reshape(shape) if shape else \
                    Tensor.from_data(vals[0], ctx.host, dtype=dt)
            tagged.append(tt)
        else:
            tagged.append(a)
    with untraced():
        out_tags = conv.fn(ctx, node, *tagged)
        plain = conv.fn(ctx, node, *[_hinted(ctx, a) for a in args])
    outs_t = out_tags if isinstance(out_tags, tuple) else (out_tags,)
    outs_p = plain if isinstance(plain, tuple) else (plain,)
    results = []
    for ot, op in zip(outs_t, outs_p):
        if not isinstance(ot, Tensor):
            return None
        with untraced():
            shape = list(ot.shape)
            vals = flat(ot.tolist()) if shape else [ot.tolist()]
            ok = not ot.dtype.is_float and ot.dtype is not DType.BOOL
        if not ok and table:
            return None  # a tag turned into a float or bool: not a pure data movement
        elems: list[Any] = []
        for v in vals:
            if isinstance(v, int) and v in table:
                elems.append(table[v])
            elif isinstance(v, int) and abs(v) >= _TAG // 2:
                return None  # arithmetic on a tag: not a data movement
            elif not ok and v != v:
                return None
            else:
                elems.append(v)
        if not ok and any(isinstance(e, Sym) for e in elems):
            return None
        results.append(_host_result(ctx, op, shape, elems))
    return tuple(results) if isinstance(out_tags, tuple) else results[0]


def _hinted(ctx: TraceContext, a: Any) -> Any:
    return a


def convert_node(gen: Gen, ctx: TraceContext, node: Node) -> None:
    """Run ``node``'s converter on the traced values (recording its Tensor-API calls) and bind its outputs."""
    program = ctx.program
    conv = program.converter(node)
    args = [gen.value(name) for name in node.inputs]
    for sub in node.subgraphs():  # the outer names a branch or body reads
        for name in sub.outer:
            if name not in gen.env and (name in gen.weights or name in gen.constants):
                gen.value(name)
    ctx.node = node
    ctx.env = gen.env
    gen.node = node
    out: Any = None
    if ctx.control is not None and ctx.control(gen, ctx, node, args):
        return
    traced_in = any(_traced(gen, a) for a in args)
    if not traced_in and _has_host_syms(gen, args):
        if node.op_type in _ARITH and len(args) == 2:
            out = _arith(ctx, node, args)
        movable = node.op_type in _MOVES and not any(
            isinstance(a, Tensor) and id(a) in gen.host_syms for i, a in enumerate(args) if i in conv.static)
        if out is None and movable:
            try:
                out = _tagged(ctx, conv, node, args)
            except (EmberError, ValueError, TypeError, IndexError, OnnxImportError):
                out = None
    if out is None:
        mark, reads = len(gen.lines), len(gen.reads)
        GUARDS.clear()
        try:
            out = traced_with_hints(gen, args, lambda: conv.fn(ctx, node, *args))
        except (ModelGenError, OnnxImportError):
            raise
        except DTypeError as exc:
            raise HostDTypeError(f"{node.where()}: generation computes on the host ({ctx.host}), which lacks an "
                                 f"element type of this node: {exc}") from exc
        except (EmberError, ValueError, TypeError, IndexError, NotImplementedError) as exc:
            raise ModelGenError(f"{node.where()} could not be traced: {type(exc).__name__}: {exc}") from exc
        _check_traced(gen, node, args, out, mark, reads)
        _name_outputs(gen, node, out, mark)
    outs = out if isinstance(out, tuple) else (out,)
    for name, value in zip(node.outputs, outs):
        if name:
            gen.env[name] = value


#: ops whose outputs may be host constants although an input is traced (its static shape)
_SHAPE_ONLY = frozenset({"Shape", "Size", "EyeLike"})
#: inputs a converter reads for their element type only (static in ONNX): a host constant converted to the
#: type of a traced ``like`` stays a constant
_TYPE_ONLY = {"CastLike": frozenset({1})}


def _check_traced(gen: Gen, node: Node, args: list[Any], out: Any, mark: int, reads: int) -> None:
    """Refuse a conversion the trace did not see whole: an output computed from a traced input without a
    recorded call (the converter used something the trace does not wrap), or a value read from the data that
    no recorded call uses afterwards (it decided the structure: axes, a branch), which generated code cannot
    keep as code.

    Raises:
        ModelGenError: naming the node.
    """
    if GUARDS:
        GUARDS.clear()
        raise ModelGenError(f"{node.where()}: its converter branches on a value read from the data (a size, an axis "
                            "or a count compared with a constant); generated code cannot keep that as code. Use "
                            "ember_import.onnx.load_model.")
    used: set[int] = set()
    for ln in gen.lines[mark:]:
        for p in ln.parts:
            if isinstance(p, Sym):
                used.update(id(x) for x in p.parts)
            used.add(id(p))
        used.update(id(x) for x in _sym_vars(ln.parts))
    for var in gen.reads[reads:]:
        if id(var) not in used:
            raise ModelGenError(f"{node.where()}: an input read from the data ({var.name}) decides the structure of "
                                "the computation (an axis list, a count or a branch); generated code cannot keep it "
                                "symbolic. Use ember_import.onnx.load_model.")
    type_only = _TYPE_ONLY.get(node.op_type, frozenset())
    if not any(_traced(gen, a) for i, a in enumerate(args) if i not in type_only) or node.op_type in _SHAPE_ONLY:
        return
    inputs = {id(a) for a in args}
    for value in out if isinstance(out, tuple) else (out,):
        if isinstance(value, Tensor) and not gen.is_traced(value) and id(value) not in gen.host_syms \
                and id(value) not in inputs:
            raise ModelGenError(f"{node.where()}: its converter computed an output outside the Tensor API the "
                                "trace records; generated code cannot write it. Use ember_import.onnx.load_model.")


def _sym_vars(parts: Any) -> list[Any]:
    out: list[Any] = []
    for p in parts:
        if isinstance(p, Sym):
            out.extend(_sym_vars(p.parts))
        else:
            out.append(p)
    return out


def _traced(gen: Gen, v: Any) -> bool:
    if isinstance(v, Tensor):
        return gen.is_traced(v)
    if isinstance(v, list):
        return any(_traced(gen, x) for x in v)
    return False


def _name_outputs(gen: Gen, node: Node, out: Any, mark: int) -> None:
    """Give the variables of the node's outputs that its lines defined the node's readable names."""
    outs = out if isinstance(out, tuple) else (out,)
    own = {id(t) for ln in gen.lines[mark:] for t in ln.targets}
    for i, value in enumerate(outs):
        if isinstance(value, SeqVal) and i < len(node.outputs) and node.outputs[i] and id(value.var) in own:
            gen.var_names.release(value.var.name)
            value.var.name = gen.node_var(node, i).name
            continue
        if i >= len(node.outputs) or not node.outputs[i] or not isinstance(value, Tensor):
            continue
        hit = gen.traced.get(id(value))
        if hit is None or id(hit[1]) not in own:
            continue
        var = hit[1]
        gen.var_names.release(var.name)
        var.name = gen.node_var(node, i).name
        gen.onnx_dims(node.outputs[i], value, var)


def shadow_outputs(gen: Gen, ctx: TraceContext, node: Node, dynamic: bool = False) -> bool:
    """A recognised node: its outputs computed by its converter without recording, bound to the variables
    the recognizer wrote (:attr:`Gen.pending`)."""
    program = ctx.program
    conv = program.converter(node)
    args = [gen.raw_value(name) for name in node.inputs]
    dynamic = dynamic or any(gen._has_dynamic(a) for a in args)
    with untraced():
        out = conv.fn(ctx, node, *args)
    outs = out if isinstance(out, tuple) else (out,)
    for name, value in zip(node.outputs, outs):
        if not name:
            continue
        var = gen.pending.pop(name, None)
        if var is None or not isinstance(value, Tensor):
            gen.env[name] = value  # an intermediate of the recognised pattern, used by its other nodes only
            continue
        gen.bind(value, var, gen._dims(value, var, dynamic))
        gen.onnx_dims(name, value, var)
        gen.env[name] = value
    return dynamic
