"""The state of one code generation: traced values, fields and the lines of ``forward``.

Every ONNX value is what the runtime interpreter would hold, computed on the host (the *shadow*): a tensor that
is *traced* (it has a variable of the generated code, :class:`~._sym.Var`, and a shape whose dynamic dims are
:class:`~._sym.Sym`\\ s), a host tensor (a constant, or shape arithmetic whose elements may be ``Sym``\\ s), a list
(a sequence) or ``None``. The converters run on these values (:mod:`._trace` records their Tensor-API calls);
the layer recognizers of :mod:`._recognizers` write their lines through :meth:`Gen.emit`. Weights no layer claims
become ``Param`` fields; small constants become literals. The fields and the lines of ``forward`` are kept by
the base class :class:`~._gen_state.GenState`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from ember import DType, Kind, Tensor, TensorData
from ember.backend import Device

from .._ir import Node, ValueInfo
from ._errors import ModelGenError
from ._expr import literal
from ._gen_state import Field, GenState, Line
from ._names import identifier
from ._rules import RuleList
from ._runlist import count_is_dynamic, run_list
from ._sym import Parts, Sym, Var, parts_text
from ._symfloat import SymFloat, has_sym
from ._trace import DATA_DEPENDENT, untraced

__all__ = ["Field", "Gen", "Val", "python_value"]

#: constants with at most this many elements are written into the code; larger ones are stored as fields
INLINE_LIMIT = 64


@dataclasses.dataclass
class Val:
    """What a layer recognizer sees of an input: ``host`` (not a traced tensor), ``known`` (its value is a
    constant of the generation), ``const`` that value."""

    host: bool
    known: bool
    const: Any = None


def python_value(data: TensorData) -> Any:
    """A constant as Python data: a scalar for rank 0, nested lists otherwise."""
    return data.to_numpy().tolist()


def _flat(v: Any) -> list[Any]:
    if isinstance(v, (list, tuple)):
        return [y for x in v for y in _flat(x)]
    return [v]


class Gen(GenState):
    """One generation: the traced values, the fields and the lines of ``forward``."""

    # ------------------------------------------------------------------ values
    def info(self, name: str) -> ValueInfo | None:
        return self._infos.get(name) or self.graph.value_info.get(name)

    def value(self, name: str) -> Any:
        """The value of ``name`` (graph input, weight, constant or computed), ``None`` for ``""``."""
        if not name:
            return None
        if name in self.env:
            return self.env[name]
        if name in self.weights:
            t = self.weight_value(name)
        elif name in self.constants:
            data = self.constants[name]
            t = Tensor.from_data(data, _host(), dtype=data.dtype)
        else:
            where = self.node.where() if self.node is not None else "graph"
            raise ModelGenError(f"{where}: input {name!r:.80} is not computed before it is used.")
        self.env[name] = t
        return t

    def raw_value(self, name: str) -> Any:
        """The value of ``name`` without making a field of a weight (a recognised layer owns it)."""
        if name in self.quantized:
            return self.quantized[name]
        if name in self.weights and name not in self.env and name not in self._weight_vals:
            hit = self._raw.get(name)
            if hit is None:
                data = self.weights[name]
                with self.untraced():
                    hit = self._raw[name] = Tensor.from_data(data, _host(), dtype=data.dtype)
            return hit
        return self.value(name)

    def weight_value(self, name: str) -> Tensor:
        """A weight as a traced tensor whose code is its ``Param`` field (made on first use)."""
        t = self._weight_vals.get(name)
        if t is None:
            data = self.weights[name]
            t = Tensor.from_data(data, _host(), dtype=data.dtype)
            field = self.weight_field(name)
            var = Var(f"self.{field}.val()")
            self.traced[id(t)] = (t, var)
            self._weight_vals[name] = t
        return t

    def is_traced(self, v: Any) -> bool:
        return isinstance(v, Tensor) and id(v) in self.traced

    def val(self, node: Node, i: int) -> Val | None:
        """Input ``i`` of ``node`` as a recognizer sees it (``None`` when omitted)."""
        if i >= len(node.inputs) or not node.inputs[i]:
            return None
        name = node.inputs[i]
        if name in self.weights:
            return Val(host=False, known=False)
        v = self.value(name)
        if self.is_traced(v) or not isinstance(v, Tensor) or id(v) in self.host_syms:
            return Val(host=False, known=False)
        return Val(host=True, known=True, const=v.tolist())

    def const(self, node: Node, i: int, default: Any = None) -> Any:
        v = self.val(node, i)
        if v is None:
            return default
        if not v.known:
            raise ModelGenError(f"{node.where()}: input {node.inputs[i]!r:.80} must be a constant for generated code.")
        return v.const

    def rank(self, name: str) -> int | None:
        v = self.value(name) if name in self.env or name in self.weights or name in self.constants else None
        return len(v.shape) if isinstance(v, Tensor) else None

    def dtype(self, name: str) -> DType | None:
        v = self.value(name) if name in self.env or name in self.weights or name in self.constants else None
        return v.dtype if isinstance(v, Tensor) else None

    def tensor(self, node: Node, i: int) -> str:
        """Input ``i`` as the source of a tensor (a recognizer's argument)."""
        v = self.value(node.inputs[i]) if i < len(node.inputs) and node.inputs[i] else None
        if not isinstance(v, Tensor):
            raise ModelGenError(f"{node.where()}: input {i} must be a tensor.")
        return parts_text(self.arg(v))

    # ------------------------------------------------------------------ recording
    def new_var(self, base: str) -> Var:
        return Var(self.var_names.take(identifier(base, "value")))

    def device(self) -> Var:
        """The ``device`` variable of ``forward`` (the first input's device)."""
        if self.device_var is None:
            if self.device_source is None:
                raise ModelGenError("the model has no tensor input to take the device from.")
            self.device_var = Var(self.var_names.take("device"))
            self.lines.insert(0, Line((self.device_var,), self.device_source))
        return self.device_var

    def bind(self, t: Tensor, var: Var, dims: tuple[Any, ...] | None = None) -> Tensor:
        """Make ``t`` a traced tensor held by ``var``; ``dims`` its shape (``Sym``\\ s for dynamic dims)."""
        self.traced[id(t)] = (t, var)
        if dims is not None and has_sym(list(dims)):
            self.sym_shapes[id(t)] = tuple(dims)
        return t

    def record(self, parts: Parts, out: Any, name: str, call: tuple[Any, Any]) -> Any:
        """A recorded call: one line ``var = parts``; returns ``out`` with its tensors traced."""
        dynamic = name in DATA_DEPENDENT or self._has_dynamic(call)
        base = name.strip("_") or "value"
        if isinstance(out, Tensor):
            var = self.new_var(base)
            self.lines.append(Line((var,), parts))
            dims = self._dims(out, var, dynamic)
            target = call[0][1] if name in ("reshape", "expand") and len(call[0]) > 1 else None
            if dims is not None and isinstance(target, (list, tuple)) and len(target) == len(dims) \
                    and all(isinstance(d, int) and int(d) == int(h) for d, h in zip(target, dims)):
                dims = tuple(target)  # the shape the call was given: its fixed sizes are ints, its others Syms
            return self.bind(out, var, dims)
        if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
            if count_is_dynamic(self, name, *call):
                return run_list(self, parts, out, base)
            if not out:
                return out
            vars_ = tuple(self.new_var(base) for _ in out)
            self.lines.append(Line(vars_ if len(vars_) > 1 else (*vars_, Var("")), parts) if len(vars_) > 1
                              else Line(vars_, (*parts, "[0]")))
            for o, v in zip(out, vars_):
                self.bind(o, v, self._dims(o, v, dynamic))
            return out
        raise ModelGenError(f"{self._where()}: the Tensor-API call {parts_text(parts)[:120]} returns a "
                            f"{type(out).__name__}, which generated code cannot keep symbolic.")

    def _has_dynamic(self, v: Any) -> bool:
        if isinstance(v, Sym):
            return True
        if isinstance(v, Tensor):
            return id(v) in self.sym_shapes or id(v) in self.host_syms
        if isinstance(v, (list, tuple)):
            return any(self._has_dynamic(x) for x in v)
        if isinstance(v, slice):
            return any(self._has_dynamic(x) for x in (v.start, v.stop, v.step))
        if isinstance(v, dict):
            return any(self._has_dynamic(x) for x in v.values())
        return False

    def _dims(self, t: Tensor, var: Var, dynamic: bool) -> tuple[Any, ...] | None:
        with self.untraced():
            shape = tuple(t.shape)
        if not dynamic:
            return None
        return tuple(Sym(d, (var, f".shape[{i}]")) for i, d in enumerate(shape))

    def onnx_dims(self, name: str, t: Tensor, var: Var) -> None:
        """Refine the shape of the traced value ``name`` with ONNX's inferred shape: its fixed dims are ints,
        its named dims the graph inputs' (``batch``), the others ``var.shape[i]``."""
        if id(t) not in self.sym_shapes:
            return
        info = self.info(name)
        with self.untraced():
            shape = list(t.shape)
        if info is None or info.shape is None or len(info.shape) != len(shape):
            return
        dims: list[Any] = []
        for i, (d, h) in enumerate(zip(info.shape, shape)):
            if isinstance(d, int) and d == h:
                dims.append(h)
            elif isinstance(d, str) and d in self.dim_syms and int(self.dim_syms[d]) == h:
                dims.append(self.dim_syms[d])
            else:
                dims.append(Sym(h, (var, f".shape[{i}]")))
        if has_sym(dims):
            self.sym_shapes[id(t)] = tuple(dims)
        else:
            del self.sym_shapes[id(t)]

    def untraced(self) -> Any:
        return untraced()

    def host_read(self, t: Tensor, kind: str) -> Any:
        """``t.tolist()`` / ``t.into_scalar()`` of a traced tensor: a line of code, its ints as ``Sym``\\ s."""
        with self.untraced():
            data = t.tolist() if kind == "tolist" else t.into_scalar()
            dt = t.dtype
        hints = self.read_hints.get(id(t))
        if hints is not None:
            data = hints.value
        if data == []:
            return data  # no element: nothing read (its size is the tensor's static shape)
        if dt is DType.BOOL:
            raise ModelGenError(f"{self._where()}: the converter reads a {dt} value computed from tensor data "
                                "(a data-dependent branch); generated code keeps int and float values read from "
                                "the data as code, not bools. Use ember_import.onnx.load_model.")
        var = self.new_var("sizes" if isinstance(data, list) else "size")
        self.lines.append(Line((var,), (*self.arg(t, atom=True), f".{kind}()")))
        self.reads.append(var)

        def sym(v: Any, path: str) -> Any:
            if isinstance(v, list):
                return [sym(x, f"{path}[{i}]") for i, x in enumerate(v)]
            return SymFloat(v, (var, path)) if dt.is_float else Sym(int(v), (var, path), data=True)

        return sym(data, "")

    def _where(self) -> str:
        return self.node.where() if self.node is not None else "graph"

    # ------------------------------------------------------------------ arguments as source
    def arg(self, v: Any, atom: bool = False) -> Parts:
        """The source of a call argument."""
        if isinstance(v, Tensor):
            hit = self.traced.get(id(v)) or self.materialized.get(id(v))
            if hit is None:
                self.materialize(v)
                hit = self.materialized[id(v)]
            return (hit[1],)
        if isinstance(v, (Sym, SymFloat)):
            return v.parts
        if isinstance(v, Device):
            return (self.device(),)
        if isinstance(v, DType):
            self.imports.add(("ember", "DType"))
            return (f"DType.{v.name}",)
        if isinstance(v, Kind):
            self.imports.add(("ember", repr(v)))
            return (repr(v),)
        if isinstance(v, RuleList) and v.parts is not None:
            return v.parts  # a host rule's result, unchanged: its variable (:mod:`._rules`)
        if isinstance(v, (list, tuple)):
            inner: list[Any] = []
            for k, x in enumerate(v):
                if k:
                    inner.append(", ")
                inner.extend(self.arg(x))
            if isinstance(v, tuple):
                return ("(", *inner, ",)" if len(v) == 1 else ")")
            return ("[", *inner, "]")
        if isinstance(v, enum.Enum):
            return (*self._class_name(type(v)), f".{v.name}")
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            kw = {f.name: getattr(v, f.name) for f in dataclasses.fields(v) if f.init}
            defaults = {f.name: f.default for f in dataclasses.fields(v)
                        if f.init and f.default is not dataclasses.MISSING}
            kw = {k: x for k, x in kw.items() if k not in defaults or not _same(defaults[k], x)}
            return (*self._class_name(type(v)), "(", *self.call_args((), kw), ")")
        if isinstance(v, slice):
            return ("slice(", *self.call_args((v.start, v.stop, v.step), {}), ")")
        if isinstance(v, float) and atom and v < 0:
            return ("(", literal(v), ")")
        if isinstance(v, (int, float)) and atom and not isinstance(v, bool) and v < 0:
            return ("(", literal(v), ")")
        return (literal(v),)

    def _class_name(self, cls: type) -> Parts:
        import ember
        from ember.tensor import functional as tensor_module

        if getattr(tensor_module, cls.__name__, None) is cls:
            self.imports.add(("ember.tensor", "functional"))
            return (f"functional.{cls.__name__}",)
        if getattr(ember, cls.__name__, None) is cls:
            self.imports.add(("ember", cls.__name__))
            return (cls.__name__,)
        raise ModelGenError(f"{self._where()}: generated code cannot write a {cls.__name__} argument.")

    def call_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Parts:
        out: list[Any] = []
        for a in args:
            if out:
                out.append(", ")
            out.extend(self.arg(a))
        for k, a in kwargs.items():
            if out:
                out.append(", ")
            out.extend((f"{k}=", *self.arg(a)))
        return tuple(out)

    def index(self, key: Any) -> Parts:
        """The source of ``t[key]``'s key."""
        if isinstance(key, tuple):
            out: list[Any] = []
            for k, x in enumerate(key):
                if k:
                    out.append(", ")
                out.extend(self.index(x))
            return tuple(out) if len(key) != 1 else (*out, ",")
        if isinstance(key, slice):
            pieces: list[Any] = []
            for k, p in enumerate((key.start, key.stop, key.step)):
                if k == 2 and p is None:
                    break
                if k:
                    pieces.append(":")
                if p is not None:
                    pieces.extend(self.arg(p))
            return tuple(pieces)
        if key is Ellipsis:
            return ("...",)
        if key is None:
            return ("None",)
        return self.arg(key)

    def materialize(self, t: Tensor) -> None:
        """A host tensor used by traced code: a literal (small), a frozen ``Param`` field (large), or, when
        its elements hold ``Sym``\\ s, ``Tensor.from_data([...])`` of their expressions. It stays a host value
        for the converters (its variable is in :attr:`materialized`, not :attr:`traced`), so later nodes still
        fold it and read its elements."""
        syms = self.host_syms.get(id(t))
        with self.untraced():
            dt, shape, n = t.dtype, list(t.shape), t.num_elements()
        self.imports.add(("ember", "Tensor"))
        if syms is not None:
            dtype = f", dtype={literal(str(dt))})"
            parts: Parts = ("Tensor.from_data(", *self.arg(syms[1]), ", ", self.device(), dtype)
        elif n <= INLINE_LIMIT:
            with self.untraced():
                value = t.tolist()
            parts = ("Tensor.from_data(", literal(value), ", ", self.device(), f", dtype={literal(str(dt))})")
        else:
            with self.untraced():
                data = t.to_data()
            name = f"constant_{len(self.fields)}"
            self.weights[name] = data
            field = self.weight_field(name, constant=True)
            self.materialized[id(t)] = (t, Var(f"self.{field}.val()"))
            return
        var = self.new_var("const" if shape else "scalar")
        self.lines.append(Line((var,), parts))
        self.materialized[id(t)] = (t, var)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return False


def _host() -> Device:
    from .._program import host_device

    return host_device()


def flat(v: Any) -> list[Any]:
    return _flat(v)
