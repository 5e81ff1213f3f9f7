"""Tensor-op code for the nodes no layer claims: one statement per node, Ember's Tensor API only.

Shape arithmetic stays in Python (``Shape`` is ``list(x.shape)``, ``Gather`` on it an index, ``Concat`` a list
sum), so reshapes keep following the batch size as the runtime interpreter's host values do. Values known
while generating (constants, shapes of static dims) are folded into literals. Semantics: the ONNX operator
specification (onnx/docs/Operators.md), as the runtime converters in ``ember_import/onnx/ops`` implement them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ember import DType

from .._dtypes import dtype_of
from .._ir import Node
from ._errors import ModelGenError
from ._expr import literal
from ._gen import Gen, Val, host_list, items_of, wrap_source

__all__ = ["EMITTERS"]

Emitter = Callable[[Gen, Node], None]

_BIG = 2**31


def _axes(g: Gen, node: Node, input_index: int, since: int) -> list[int] | None:
    """``axes`` from the attribute (before opset ``since``) or from input ``input_index``."""
    if g.opset < since:
        a = node.attr("axes", None)
        return None if a is None else [int(x) for x in a]
    v = g.const(node, input_index)
    if v is None:
        return None
    return [int(x) for x in (v if isinstance(v, list) else [v])]


def _norm(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _rank(g: Gen, node: Node, i: int = 0) -> int:
    r = g.rank(node.inputs[i])
    if r is None:
        raise ModelGenError(f"{node.where()}: the rank of {node.inputs[i]!r:.80} is unknown (shape inference gave "
                            "none).")
    return r


def _host_scalar(expr: str) -> Val:
    try:
        value = int(expr)
    except ValueError:
        return Val(expr=expr, host=True)
    return Val(expr=expr, host=True, const=value, known=True)


def _fold(g: Gen, node: Node, vals: list[Val], fn: Callable[..., Any], expr: str) -> None:
    """A host result: folded when every input is known, else a statement."""
    if all(v.known for v in vals):
        g.known(node, fn(*[v.const for v in vals]))
    else:
        g.emit(node, expr, host=True)


# ------------------------------------------------------------------ shape arithmetic and structure
def shape(g: Gen, node: Node) -> None:
    """``Shape`` (1, 13, 15: ``start``/``end``): a Python list of dim expressions (static dims as literals,
    symbolic ones as named variables)."""
    x = g.tensor(node, 0)
    info = g.info(node.inputs[0])
    start, end = int(node.attr("start", 0)), node.attr("end", None)
    end = None if end is None else int(end)
    if info is None or info.shape is None:
        sl = "" if (start, end) == (0, None) else f"[{start}:{'' if end is None else end}]"
        g.emit(node, f"list({x}.shape{sl})", host=True)
        return
    dims = list(info.shape)
    idx = list(range(len(dims)))[start:end]
    g.env[node.outputs[0]] = host_list([g.dim(x, i, dims[i]) for i in idx])


def size(g: Gen, node: Node) -> None:
    g.emit(node, f"{g.tensor(node, 0)}.num_elements()", host=True)


def constant(g: Gen, node: Node) -> None:
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        v = node.attr(key, None)
        if v is not None:
            g.known(node, v.to_numpy().tolist() if hasattr(v, "to_numpy") else v)
            return
    raise ModelGenError(f"{node.where()}: only numeric constants are supported in generated code.")


def identity(g: Gen, node: Node) -> None:
    v = g.val(node, 0)
    assert v is not None
    if v.weight is not None:
        g.env[node.outputs[0]] = Val(expr=g.tensor(node, 0))
    else:
        g.env[node.outputs[0]] = v


def gather(g: Gen, node: Node) -> None:
    axis = int(node.attr("axis", 0))
    data = g.val(node, 0)
    assert data is not None
    if data.host:
        idx = g.const(node, 1)
        items = items_of(data)
        if items is not None:
            if isinstance(idx, list):
                g.env[node.outputs[0]] = host_list([items[int(i)] for i in idx])
            else:
                e = items[int(idx)]
                g.env[node.outputs[0]] = _host_scalar(e)
            return
        if isinstance(idx, list):
            text = "[" + ", ".join(f"{data.expr}[{int(i)}]" for i in idx) + "]"
            _fold(g, node, [data], lambda d: [d[int(i)] for i in idx], text)
        else:
            _fold(g, node, [data], lambda d: d[int(idx)], f"{data.expr}[{int(idx)}]")
        return
    x = g.tensor(node, 0)
    r = _rank(g, node)
    ax = _norm(axis, r)
    iv = g.val(node, 1)
    assert iv is not None
    if iv.known and isinstance(iv.const, int):
        i = iv.const
        start = str(i) if i >= 0 else f"{x}.shape[{ax}] + ({i})"
        g.emit(node, f"{x}.narrow({ax}, {start}, 1).squeeze_dim({ax})")
        return
    ri = g.rank(node.inputs[1])
    if ri == 1:
        info = g.info(node.inputs[0])
        dim = None if info is None or info.shape is None else info.shape[ax]
        if iv.known and isinstance(iv.const, list) and isinstance(dim, int):
            idx = g.host_tensor(Val(expr=literal([i + dim if i < 0 else i for i in iv.const]), host=True),
                                DType.INT64)
        elif iv.known and isinstance(iv.const, list) and all(i >= 0 for i in iv.const):
            idx = g.tensor(node, 1)
        else:  # indices may be negative (ONNX counts them from the end); as the runtime's wrap_index
            idx = wrap_source(g.tensor(node, 1), f"{x}.shape[{ax}]")
        g.emit(node, f"{x}.select({ax}, {idx})")
        return
    raise ModelGenError(f"{node.where()}: Gather with {ri}-D tensor indices is not supported in generated code.")


def unsqueeze(g: Gen, node: Node) -> None:
    axes = _axes(g, node, 1, 13) or []
    v = g.val(node, 0)
    assert v is not None
    if v.host:
        if axes != [0] or items_of(v) is not None:
            raise ModelGenError(f"{node.where()}: Unsqueeze of a shape list on axes {axes} is not supported.")
        g.env[node.outputs[0]] = host_list([v.expr])
        return
    x = g.tensor(node, 0)
    out_rank = _rank(g, node) + len(axes)
    dims = sorted(_norm(a, out_rank) for a in axes)
    expr = f"{x}.unsqueeze_dim({dims[0]})" if len(dims) == 1 else f"{x}.unsqueeze_dims({dims})"
    g.emit(node, expr)


def squeeze(g: Gen, node: Node) -> None:
    axes = _axes(g, node, 1, 13)
    v = g.val(node, 0)
    assert v is not None
    if v.host:
        items = items_of(v)
        if items is not None and len(items) == 1:
            g.env[node.outputs[0]] = _host_scalar(items[0])
        else:
            _fold(g, node, [v], lambda a: a[0], f"{v.expr}[0]")
        return
    x = g.tensor(node, 0)
    r = _rank(g, node)
    if axes is None:
        info = g.info(node.inputs[0])
        if info is None or info.shape is None or not all(isinstance(d, int) for d in info.shape):
            raise ModelGenError(f"{node.where()}: Squeeze without axes needs a static input shape.")
        axes = [i for i, d in enumerate(info.shape) if d == 1]
    dims = sorted(_norm(a, r) for a in axes)
    g.emit(node, f"{x}.squeeze_dim({dims[0]})" if len(dims) == 1 else f"{x}.squeeze_dims({dims})")


def concat(g: Gen, node: Node) -> None:
    vals = [g.val(node, i) for i in range(len(node.inputs))]
    present = [v for v in vals if v is not None]
    if all(v.host for v in present):
        parts = [items_of(v) for v in present]
        if all(p is not None for p in parts):
            g.env[node.outputs[0]] = host_list([x for p in parts if p is not None for x in p])
        else:
            _fold(g, node, present, lambda *a: [x for part in a for x in part], " + ".join(v.expr for v in present))
        return
    r = _rank(g, node)
    axis = _norm(int(node.attr("axis")), r)
    tensors = ", ".join(g.tensor(node, i) for i in range(len(node.inputs)) if node.inputs[i])
    g.emit(node, f"Tensor.cat([{tensors}], {axis})")


def _slice_args(g: Gen, node: Node) -> tuple[list[int], list[int], list[int], list[int]]:
    if g.opset < 10:
        starts, ends = [int(s) for s in node.attr("starts")], [int(e) for e in node.attr("ends")]
        axes = [int(a) for a in node.attr("axes", list(range(len(starts))))]
        return starts, ends, axes, [1] * len(starts)
    starts = [int(s) for s in _as_list(g.const(node, 1))]
    ends = [int(e) for e in _as_list(g.const(node, 2))]
    axes = [int(a) for a in _as_list(g.const(node, 3, list(range(len(starts)))))]
    steps = [int(s) for s in _as_list(g.const(node, 4, [1] * len(starts)))]
    return starts, ends, axes, steps


def _as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else [v]


def _bound(v: int) -> str:
    return "" if abs(v) >= _BIG else str(v)


def slice_(g: Gen, node: Node) -> None:
    starts, ends, axes, steps = _slice_args(g, node)
    v = g.val(node, 0)
    assert v is not None
    if v.host:
        s, e, st = starts[0], ends[0], steps[0]
        py = slice(None if abs(s) >= _BIG else s, None if abs(e) >= _BIG else e, st)
        text = f"{_bound(s)}:{_bound(e)}" + ("" if st == 1 else f":{st}")
        items = items_of(v)
        if items is not None:
            g.env[node.outputs[0]] = host_list(items[py])
        else:
            _fold(g, node, [v], lambda a: a[py], f"{v.expr}[{text}]")
        return
    x = g.tensor(node, 0)
    r = _rank(g, node)
    ranges = [":"] * r
    for s, e, a, st in zip(starts, ends, axes, steps):
        ranges[_norm(a, r)] = f"{_bound(s)}:{_bound(e)}" + ("" if st == 1 else f":{st}")
    while ranges and ranges[-1] == ":":
        ranges.pop()
    g.emit(node, f"{x}[{', '.join(ranges)}]")


def reshape(g: Gen, node: Node) -> None:
    if node.attr("allowzero", 0):
        raise ModelGenError(f"{node.where()}: Reshape with allowzero=1 is not supported in generated code.")
    spec = g.host(node, 1)
    assert spec is not None
    g.emit(node, f"{g.tensor(node, 0)}.reshape({spec.expr})")


def flatten(g: Gen, node: Node) -> None:
    r = _rank(g, node)
    axis = _norm(int(node.attr("axis", 1)), r)
    x = g.tensor(node, 0)
    if axis == 0:
        g.emit(node, f"{x}.reshape([1, -1])")
    elif axis == 1:
        g.emit(node, f"{x}.flatten(1)")
    else:
        g.emit(node, f"{x}.flatten({axis}).flatten(0, {axis - 1})")


def transpose(g: Gen, node: Node) -> None:
    r = _rank(g, node)
    perm = [int(p) for p in node.attr("perm", list(range(r))[::-1])]
    x = g.tensor(node, 0)
    moved = [i for i, p in enumerate(perm) if p != i]
    if len(moved) == 2:
        g.emit(node, f"{x}.swap_dims({moved[0]}, {moved[1]})")
    else:
        g.emit(node, f"{x}.permute({perm})")


def expand(g: Gen, node: Node) -> None:
    spec = g.host(node, 1)
    assert spec is not None
    r = _rank(g, node)
    if not spec.known:
        raise ModelGenError(f"{node.where()}: Expand to a shape computed at run time is not supported.")
    lead = len(spec.const) - r
    target = [d if i < lead or d != 1 else -1 for i, d in enumerate(spec.const)]
    g.emit(node, f"{g.tensor(node, 0)}.expand({literal(target)})")


def constant_of_shape(g: Gen, node: Node) -> None:
    spec = g.host(node, 0)
    assert spec is not None
    value = node.attr("value", None)
    fill: Any = 0.0
    dt = DType.FLOAT32
    if value is not None:
        fill = value.to_numpy().reshape(-1)[0].item()
        dt = value.dtype
    kind = "" if dt.is_float else (", Bool" if dt is DType.BOOL else ", Int")
    g.emit(node, f"Tensor.full({spec.expr}, {literal(fill)}, {g.device()}{kind})")


def split(g: Gen, node: Node) -> None:
    r = _rank(g, node)
    axis = _norm(int(node.attr("axis", 0)), r)
    sizes = node.attr("split", None) if g.opset < 13 else g.const(node, 1)
    x = g.tensor(node, 0)
    n = len(node.outputs)
    if sizes is None:
        info = g.info(node.inputs[0])
        dim = None if info is None or info.shape is None else info.shape[axis]
        if not isinstance(dim, int):
            raise ModelGenError(f"{node.where()}: an even Split needs a static dim {axis}.")
        step = -(-dim // n)
        sizes = [min(step, dim - i * step) for i in range(n)]
    names = [g.var(node, i) for i in range(n)]
    g.lines.append(f"{', '.join(names)} = {x}.split_with_sizes({literal([int(s) for s in sizes])}, {axis})")
    for i, name in enumerate(names):
        g.env[node.outputs[i]] = Val(expr=name)


# ------------------------------------------------------------------ element-wise
_PY = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Pow": "**", "Mod": "%"}
_PYFN: dict[str, Callable[[Any, Any], Any]] = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "Div": lambda a, b: a // b if isinstance(a, int) and isinstance(b, int) else a / b,
    "Pow": lambda a, b: a**b, "Mod": lambda a, b: a % b,
}


def _scalar(v: Val) -> bool:
    return v.host and (not v.known or not isinstance(v.const, list))


def _paren(e: str) -> str:
    """``e`` parenthesized unless it is one primary (a name, literal, call, index or attribute chain)."""
    depth = 0
    for ch in e:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth == 0:
            return f"({e})"
    return f"({e})" if e.startswith("-") else e


def _host_items(g: Gen, node: Node, items: list[str]) -> None:
    """A host result from element expressions; a long one is named by a statement (``scale = ...``)."""
    v = host_list(items)
    if not v.known and len(v.expr) > 60:
        name = g.var(node)
        if len(items) == 1:
            g.lines.append(f"{name} = {items[0]}")
            v = Val(expr=f"[{name}]", host=True, items=[name])
        else:
            g.lines.append(f"{name} = {v.expr}")
            v = Val(expr=name, host=True, items=[f"{name}[{i}]" for i in range(len(items))])
    g.env[node.outputs[0]] = v


def binary(g: Gen, node: Node) -> None:
    a, b = g.val(node, 0), g.val(node, 1)
    assert a is not None and b is not None
    op = node.op_type
    out_dt = g.dtype(node.outputs[0])
    if a.host and b.host:
        sym = "//" if op == "Div" and out_dt is not None and not out_dt.is_float else _PY[op]
        ia, ib = items_of(a), items_of(b)
        if ia is None and ib is None:
            _fold(g, node, [a, b], _PYFN[op], f"{a.expr} {sym} {b.expr}")
            return
        if ia is None or ib is None:
            raise ModelGenError(f"{node.where()}: element-wise {op} of a shape list computed at run time.")
        if a.known and b.known:
            av, bv = _as_list(a.const), _as_list(b.const)
            n = max(len(av), len(bv))
            av, bv = av * n if len(av) == 1 else av, bv * n if len(bv) == 1 else bv
            g.known(node, [_PYFN[op](x, y) for x, y in zip(av, bv)])
            return
        n = max(len(ia), len(ib))
        ia, ib = ia * n if len(ia) == 1 else ia, ib * n if len(ib) == 1 else ib
        _host_items(g, node, [f"{_paren(x)} {sym} {_paren(y)}" for x, y in zip(ia, ib)])
        return
    if op == "Div" and out_dt is not None and not out_dt.is_float:
        raise ModelGenError(f"{node.where()}: integer tensor division is not supported in generated code.")
    da, db = g.dtype(node.inputs[0]), g.dtype(node.inputs[1])
    if op == "Pow" and (da is None or not da.is_float or (db is not None and not db.is_float and not b.host)):
        raise ModelGenError(f"{node.where()}: Pow of {da} by {db} is only written for float tensors in generated code.")
    if op == "Mod" and node.attr("fmod", 0) and (da is None or not da.is_float):
        raise ModelGenError(f"{node.where()}: Mod with fmod=1 on {da} is only written for float tensors.")
    ta, tb = _operand(g, node, 0, a), _operand(g, node, 1, b)
    if op == "Pow":
        g.emit(node, f"{ta}.powf_scalar({tb})" if a.host is False and b.host else f"{ta}.powf({tb})")
    elif op == "Mod":
        method = "fmod" if node.attr("fmod", 0) else "remainder"
        g.emit(node, f"{ta}.{method}({tb})")
    else:
        g.emit(node, f"{_paren(ta)} {_PY[op]} {_paren(tb)}")


def _operand(g: Gen, node: Node, i: int, v: Val) -> str:
    """A binary op's operand: a Python scalar stays one (also a one-element shape list), else a tensor."""
    if v.host:
        items = items_of(v)
        if items is None and _scalar(v):
            return v.expr
        if items is not None and len(items) == 1:
            return items[0]
    return g.tensor(node, i)


_UNARY = {"Erf": "erf", "Sqrt": "sqrt", "Exp": "exp", "Log": "log", "Abs": "abs", "Reciprocal": "recip",
          "Floor": "floor", "Ceil": "ceil", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Sign": "sign",
          "Neg": "neg", "Round": "round", "Not": "bool_not", "IsNaN": "is_nan"}
_MATH = {"Sqrt": "math.sqrt", "Exp": "math.exp", "Log": "math.log", "Floor": "math.floor", "Ceil": "math.ceil",
         "Abs": "abs", "Neg": "-"}


def unary(g: Gen, node: Node) -> None:
    v = g.val(node, 0)
    assert v is not None
    op = node.op_type
    if v.host and op in _MATH:
        fn = _MATH[op]
        if fn.startswith("math."):
            g.needs_math = True
        pyfn: Callable[[Any], Any] = {"Neg": lambda x: -x, "Abs": abs}.get(op) or getattr(math, fn[5:])
        items = items_of(v)
        if items is not None:
            if v.known:
                g.known(node, [pyfn(x) for x in v.const])
            else:
                _host_items(g, node, [f"-{_paren(x)}" if fn == "-" else f"{fn}({x})" for x in items])
            return
        _fold(g, node, [v], pyfn, f"-{v.expr}" if fn == "-" else f"{fn}({v.expr})")
        return
    g.emit(node, f"{g.tensor(node, 0)}.{_UNARY[op]}()")


def cast(g: Gen, node: Node) -> None:
    to = dtype_of(int(node.attr("to")), f"{node.where()} attribute 'to'")
    v = g.val(node, 0)
    assert v is not None
    if v.host:
        conv = "float" if to.is_float else ("bool" if to is DType.BOOL else "int")
        fn = {"float": float, "int": int, "bool": bool}[conv]
        items = items_of(v)
        if items is not None and not v.known:
            _host_items(g, node, [f"{conv}({x})" for x in items])
        elif v.known and isinstance(v.const, list):
            g.known(node, [fn(x) for x in v.const])
        elif v.known:
            g.known(node, fn(v.const))
        else:
            g.emit(node, f"{conv}({v.expr})", host=True)
        return
    _cast_tensor(g, node, to)


def _cast_tensor(g: Gen, node: Node, to: DType) -> None:
    x = g.tensor(node, 0)
    src = g.dtype(node.inputs[0])
    if src is to:
        g.env[node.outputs[0]] = Val(expr=x)
        return
    g.emit(node, f"{x}{_cast_code(src, to)}")


#: the element types ``.float()``, ``.int()`` and ``.bool()`` give on a backend with its default settings
_DEFAULT = {"float": DType.FLOAT32, "int": DType.INT64, "bool": DType.BOOL}


def _cast_code(src: DType | None, to: DType) -> str:
    """The method calls converting ``src`` to ``to`` exactly: ``.cast("float16")`` within a kind, ``.float()`` /
    ``.int()`` / ``.bool()`` across kinds (followed by ``.cast(...)`` unless ``to`` is that kind's default)."""
    kind = "float" if to.is_float else ("bool" if to is DType.BOOL else "int")
    src_kind = None if src is None else ("float" if src.is_float else ("bool" if src is DType.BOOL else "int"))
    if src_kind == kind:
        return f'.cast("{to.value}")'
    return f".{kind}()" + ("" if to is _DEFAULT[kind] else f'.cast("{to.value}")')


def compare(g: Gen, node: Node) -> None:
    method = {"Equal": "equal", "Less": "lower", "LessOrEqual": "lower_equal", "Greater": "greater",
              "GreaterOrEqual": "greater_equal", "And": "bool_and", "Or": "bool_or", "Xor": "bool_xor"}[node.op_type]
    g.emit(node, f"{g.tensor(node, 0)}.{method}({g.tensor(node, 1)})")


def where(g: Gen, node: Node) -> None:
    """``Where(c, a, b)``: ``b.mask_where(c, a)``, ``b`` expanded first when it is smaller than the result."""
    c, a, b = g.tensor(node, 0), g.val(node, 1), g.tensor(node, 2)
    assert a is not None
    av = a.expr if _scalar(a) else g.tensor(node, 1)
    out, b_info = g.info(node.outputs[0]), g.info(node.inputs[2])
    if out is None or out.shape is None or b_info is None or b_info.shape is None:
        raise ModelGenError(f"{node.where()}: Where needs the shapes of its result and of its third input.")
    if list(b_info.shape) != list(out.shape):
        if not all(isinstance(d, int) for d in out.shape):
            raise ModelGenError(f"{node.where()}: Where broadcasting to a shape known only at run time.")
        b = f"{b}.expand({list(out.shape)})"
    g.emit(node, f"{b}.mask_where({c}, {av})")


def clip(g: Gen, node: Node) -> None:
    if g.opset < 11:
        lo, hi = node.attr("min", None), node.attr("max", None)
    else:
        lo, hi = g.const(node, 1), g.const(node, 2)
    args = ", ".join(f"{k}={literal(float(v) if isinstance(v, float) else v)}" for k, v in (("min", lo), ("max", hi))
                     if v is not None)
    if not args:
        g.env[node.outputs[0]] = Val(expr=g.tensor(node, 0))
        return
    g.emit(node, f"{g.tensor(node, 0)}.clamp({args})")


def _softmax(name: str) -> Emitter:
    def emit(g: Gen, node: Node) -> None:
        r = _rank(g, node)
        axis = _norm(int(node.attr("axis", -1 if g.opset >= 13 else 1)), r)
        if g.opset < 13 and axis != r - 1:
            raise ModelGenError(f"{node.where()}: {node.op_type} before opset 13 on axis {axis} flattens its input; "
                                "not supported in generated code.")
        g.emit(node, f"activation.{name}({g.tensor(node, 0)}, {axis})")

    return emit


def matmul(g: Gen, node: Node) -> None:
    if _rank(g, node, 0) < 2 or _rank(g, node, 1) < 2:
        raise ModelGenError(f"{node.where()}: MatMul of 1-D operands is not supported in generated code.")
    g.emit(node, f"{g.tensor(node, 0)}.matmul({g.tensor(node, 1)})")


def reduce(g: Gen, node: Node) -> None:
    method = {"ReduceMean": "mean_dims", "ReduceSum": "sum_dims", "ReduceMax": "max_dims",
              "ReduceMin": "min_dims"}[node.op_type]
    since = 13 if node.op_type == "ReduceSum" else 18
    axes = _axes(g, node, 1, since)
    r = _rank(g, node)
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            g.env[node.outputs[0]] = Val(expr=g.tensor(node, 0))
            return
        axes = list(range(r))
    dims = sorted(_norm(a, r) for a in axes)
    expr = f"{g.tensor(node, 0)}.{method}({dims})"
    if not node.attr("keepdims", 1):
        expr += f".squeeze_dims({dims})"
    g.emit(node, expr)


def resize(g: Gen, node: Node) -> None:
    """``Resize`` 11+ in the modes Ember's ``interpolate`` computes: ``linear`` with ``half_pixel`` /
    ``pytorch_half_pixel`` / ``align_corners``, ``nearest`` with ``asymmetric`` + ``floor`` (PyTorch's), on
    ``[N, C, H, W]`` (bilinear) or any rank (nearest)."""
    if g.opset < 11:
        raise ModelGenError(f"{node.where()}: Resize before opset 11 is not supported in generated code.")
    mode = node.attr("mode", "nearest")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel")
    scales = g.const(node, 2)
    if node.attr("antialias", 0) or (scales and any(float(s) != int(s) or s < 1 for s in list(scales)[2:])):
        raise ModelGenError(f"{node.where()}: Resize with antialias or non-integer scales is not supported in "
                            "generated code (Ember's interpolate maps coordinates by the size ratio).")
    info_out = g.info(node.outputs[0])
    out_dims = None if info_out is None or info_out.shape is None else list(info_out.shape)[2:]
    if ctm == "pytorch_half_pixel" and not (out_dims and all(isinstance(d, int) and d > 1 for d in out_dims)):
        raise ModelGenError(f"{node.where()}: Resize with pytorch_half_pixel needs output dims known to be > 1.")
    align = ctm == "align_corners"
    if mode == "linear" and ctm in ("half_pixel", "pytorch_half_pixel", "align_corners"):
        m = "BILINEAR"
    elif mode == "nearest" and ctm == "asymmetric" and node.attr("nearest_mode", "round_prefer_floor") == "floor":
        m = "NEAREST"
    else:
        raise ModelGenError(f"{node.where()}: Resize mode {mode!r:.40} with {ctm!r:.40} coordinates is not "
                            "supported in generated code.")
    info = g.info(node.outputs[0])
    if info is not None and info.shape is not None and all(isinstance(d, int) for d in info.shape[2:]):
        size_expr = literal(list(info.shape[2:]))
    else:
        sizes = g.const(node, 3)
        if sizes:
            size_expr = literal(list(sizes)[2:])
        else:
            x = g.tensor(node, 0)
            g.needs_math = True
            size = g.var(node, 0, "size")
            g.lines.append(f"{size} = [" + ", ".join(f"math.floor({x}.shape[{i}] * {literal(float(s))})"
                                                     for i, s in enumerate(scales) if i >= 2) + "]")
            size_expr = size
    opts = f"module.InterpolateOptions(module.InterpolateMode.{m}{', align_corners=True' if align else ''})"
    g.emit(node, f"module.interpolate({g.tensor(node, 0)}, {size_expr}, {opts})")


EMITTERS: dict[str, Emitter] = {
    "Shape": shape, "Size": size, "Constant": constant, "Identity": identity, "Gather": gather,
    "Unsqueeze": unsqueeze, "Squeeze": squeeze, "Concat": concat, "Slice": slice_, "Reshape": reshape,
    "Flatten": flatten, "Transpose": transpose, "Expand": expand, "ConstantOfShape": constant_of_shape,
    "Split": split, "Cast": cast, "Where": where, "Clip": clip, "MatMul": matmul, "Resize": resize,
    "Softmax": _softmax("softmax"), "LogSoftmax": _softmax("log_softmax"),
    **{op: binary for op in _PY},
    **{op: unary for op in _UNARY},
    **{op: compare for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor")},
    **{op: reduce for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin")},
}


# ------------------------------------------------------------------ more ops (tensor inputs that are not weights)
def cast_like(g: Gen, node: Node) -> None:
    to = g.dtype(node.inputs[1])
    if to is None:
        raise ModelGenError(f"{node.where()}: the element type of {node.inputs[1]!r:.80} is unknown.")
    _cast_tensor(g, node, to)


def arg_extreme(g: Gen, node: Node) -> None:
    if node.attr("select_last_index", 0):
        raise ModelGenError(f"{node.where()}: select_last_index=1 is not supported in generated code.")
    r = _rank(g, node)
    axis = _norm(int(node.attr("axis", 0)), r)
    method = "argmax" if node.op_type == "ArgMax" else "argmin"
    expr = f"{g.tensor(node, 0)}.{method}({axis})"
    g.emit(node, expr if node.attr("keepdims", 1) else f"{expr}.squeeze_dim({axis})")


def variadic(g: Gen, node: Node) -> None:
    """``Max``/``Min``/``Sum``/``Mean`` of any number of inputs (numpy broadcasting)."""
    xs = [g.tensor(node, i) for i in range(len(node.inputs)) if node.inputs[i]]
    if node.op_type in ("Max", "Min"):
        method = "max_pair" if node.op_type == "Max" else "min_pair"
        expr = xs[0]
        for x in xs[1:]:
            expr = f"{expr}.{method}({x})"
    else:
        expr = " + ".join(xs)
        if node.op_type == "Mean" and len(xs) > 1:
            expr = f"({expr}) / {len(xs)}"
    if len(xs) == 1:
        g.env[node.outputs[0]] = Val(expr=xs[0])
        return
    g.emit(node, expr)


def trilu(g: Gen, node: Node) -> None:
    k = int(g.const(node, 1, 0))
    method = "triu" if node.attr("upper", 1) else "tril"
    g.emit(node, f"{g.tensor(node, 0)}.{method}({k})")


def cumsum(g: Gen, node: Node) -> None:
    if node.attr("exclusive", 0) or node.attr("reverse", 0):
        raise ModelGenError(f"{node.where()}: exclusive or reverse CumSum is not supported in generated code.")
    axis = _norm(int(g.const(node, 1)), _rank(g, node))
    g.emit(node, f"{g.tensor(node, 0)}.cumsum({axis})")


def range_(g: Gen, node: Node) -> None:
    dt = g.dtype(node.outputs[0])
    if dt is None or not dt.is_int:
        raise ModelGenError(f"{node.where()}: only integer Range is supported in generated code.")
    vals = [g.host(node, i) for i in range(3)]
    if any(v is None or (v.known and isinstance(v.const, list)) for v in vals):
        raise ModelGenError(f"{node.where()}: Range takes three scalars.")
    start, limit, delta = (v.expr for v in vals if v is not None)
    g.emit(node, f"Tensor.arange_step({start}, {limit}, {delta}, {g.device()})")


def layer_norm_ops(g: Gen, node: Node) -> None:
    """``LayerNormalization`` whose scale is not a weight (a layer otherwise): its formula, over the axes from
    ``axis`` on (ONNX operator specification)."""
    if len([o for o in node.outputs if o and g.uses.get(o)]) > 1:
        raise ModelGenError(f"{node.where()}: LayerNormalization's Mean/InvStdDev outputs are not supported.")
    r = _rank(g, node)
    dims = list(range(_norm(int(node.attr("axis", -1)), r), r))
    eps = literal(float(node.attr("epsilon", 1e-5)))
    x, scale = g.tensor(node, 0), g.tensor(node, 1)
    bias = "" if len(node.inputs) < 3 or not node.inputs[2] else f" + {g.tensor(node, 2)}"
    centered = g.var(node, 0, "centered")
    g.lines.append(f"{centered} = {x} - {x}.mean_dims({dims})")
    g.emit(node, f"{centered} / ({centered}.square().mean_dims({dims}) + {eps}).sqrt() * {scale}{bias}")


def conv_ops(g: Gen, node: Node) -> None:
    """``Conv`` that is not a layer (a weight computed at run time, asymmetric pads): ``module.convNd`` with the
    input padded first where the pads differ."""
    auto = node.attr("auto_pad", "NOTSET")
    if auto not in ("NOTSET", "VALID"):
        raise ModelGenError(f"{node.where()}: auto_pad {auto} is not supported in generated code.")
    k = _rank(g, node) - 2
    if k not in (1, 2, 3):
        raise ModelGenError(f"{node.where()}: Conv over {k} spatial dims is not supported in generated code.")
    pads = [int(p) for p in node.attr("pads", [0] * 2 * k)] if auto == "NOTSET" else [0] * 2 * k
    x = g.tensor(node, 0)
    padding: Any
    if pads[:k] != pads[k:]:
        pairs = [(pads[i], pads[i + k]) for i in range(k)]
        padded = g.var(node, 0, "padded")
        g.lines.append(f"{padded} = {x}.pad({pairs})")
        x, padding = padded, 0
    else:
        padding = pads[:k] if any(pads) else 0
    strides = [int(s) for s in node.attr("strides", [1] * k)]
    dilations = [int(d) for d in node.attr("dilations", [1] * k)]
    opts = [f"stride={literal(strides)}", f"padding={literal(padding)}", f"dilation={literal(dilations)}",
            f"groups={int(node.attr('group', 1))}"]
    bias = "None" if len(node.inputs) < 3 or not node.inputs[2] else g.tensor(node, 2)
    g.emit(node, f"module.conv{k}d({x}, {g.tensor(node, 1)}, {bias}, module.ConvOptions({', '.join(opts)}))")


def global_max_pool(g: Gen, node: Node) -> None:
    r = _rank(g, node)
    g.emit(node, f"{g.tensor(node, 0)}.max_dims({list(range(2, r))})")


def pad(g: Gen, node: Node) -> None:
    mode = node.attr("mode", "constant")
    mode = {"constant": "constant", "reflect": "reflect", "edge": "edge"}.get(mode)
    if mode is None:
        raise ModelGenError(f"{node.where()}: Pad mode {node.attr('mode')!r:.40} is not supported in generated code.")
    r = _rank(g, node)
    if g.opset < 11:
        pads, value, axes = list(node.attr("pads")), float(node.attr("value", 0.0)), None
    else:
        pads = list(_as_list(g.const(node, 1)))
        value = g.const(node, 2, 0)
        value = value[0] if isinstance(value, list) else value
        axes = g.const(node, 3)
    axes = list(range(r)) if axes is None else [_norm(a, r) for a in _as_list(axes)]
    n = len(axes)
    per = {a: (int(pads[i]), int(pads[i + n])) for i, a in enumerate(axes)}
    if any(b < 0 or e < 0 for b, e in per.values()):
        raise ModelGenError(f"{node.where()}: negative pads (crops) are not supported in generated code.")
    first = min((a for a, p in per.items() if p != (0, 0)), default=r)
    pairs = [per.get(a, (0, 0)) for a in range(first, r)]
    if not pairs:
        g.env[node.outputs[0]] = Val(expr=g.tensor(node, 0))
        return
    extra = f", {literal(value)}" if mode == "constant" and value not in (0, 0.0, None) else ""
    extra += f', mode="{mode}"' if mode != "constant" else ""
    g.emit(node, f"{g.tensor(node, 0)}.pad({pairs}{extra})")


EMITTERS.update({
    "CastLike": cast_like, "ArgMax": arg_extreme, "ArgMin": arg_extreme, "Trilu": trilu, "CumSum": cumsum,
    "Range": range_, "GlobalMaxPool": global_max_pool, "Pad": pad,
    **{op: variadic for op in ("Max", "Min", "Sum", "Mean")},
})
#: ops with a layer form whose tensor form is used when the layer's pattern does not hold
FALLBACKS: dict[str, Emitter] = {"LayerNormalization": layer_norm_ops, "Conv": conv_ops}
