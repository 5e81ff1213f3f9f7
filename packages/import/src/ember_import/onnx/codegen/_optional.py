"""The ops on an optional whose emptiness is known only when the generated code runs (an
:class:`~._optval.OptVal`: an optional graph input, a loop-carried optional, an ``If`` that returns ``None`` on
one branch), written as code over ``None``:

- ``OptionalHasElement`` as ``Tensor.from_data(x is not None, device, dtype="bool")``;
- ``OptionalGetElement`` as ``if x is None: raise ValueError(...)`` then ``value = x`` (ONNX: an empty optional
  is an error; the runtime converter raises too), a tensor or a list of run-time length after it;
- ``Identity`` as the same optional.

Any other op reading it is refused (:class:`~._errors.ModelGenError`). Semantics: the ONNX operator
specification and :mod:`..ops._sequence`.
"""

from __future__ import annotations

from typing import Any

from ember import DType, Tensor

from .._ir import Node
from .._program import host_device
from ._errors import ModelGenError
from ._expr import literal
from ._gen import Gen
from ._gen_state import Line
from ._optval import OptVal
from ._seqval import SeqVal
from ._subgraph import copy_value, shape_of
from ._sym import Sym
from ._trace import untraced

__all__ = ["OPTIONAL_OPS", "convert_optional"]

#: the ops written as code on an :class:`OptVal`
OPTIONAL_OPS = frozenset({"Identity", "OptionalHasElement", "OptionalGetElement"})


def convert_optional(g: Gen, node: Node, args: list[Any]) -> None:
    """Write ``node``, whose first input is an :class:`OptVal`, and bind its output.

    Raises:
        ModelGenError: an op other than :data:`OPTIONAL_OPS`, or an optional among its other inputs.
    """
    op = node.op_type
    opt = args[0] if args else None
    if op not in OPTIONAL_OPS or not isinstance(opt, OptVal) or any(isinstance(a, OptVal) for a in args[1:]):
        raise ModelGenError(
            f"{node.where()}: an optional whose emptiness is known only when the code runs reaches {op}; "
            "generated code reads it with OptionalHasElement and OptionalGetElement. Use "
            "ember_import.onnx.load_model."
        )
    out: Any
    if op == "Identity":
        out = opt
    elif op == "OptionalHasElement":
        var = g.new_var(node.outputs[0] or "has_element")
        g.imports.add(("ember", "Tensor"))
        g.lines.append(Line((var,), ("Tensor.from_data(", opt.var, " is not None, ", g.device(), ', dtype="bool")')))
        with untraced():
            t = Tensor.from_data(True, host_device(), dtype=DType.BOOL)
        out = g.bind(t, var)
    else:  # OptionalGetElement
        name = node.inputs[0][:40] if node.inputs else ""
        message = literal(f"OptionalGetElement: the optional {name} is empty (None); the model needs a value")
        g.lines.append(Line((), ("if ", opt.var, " is None:\n    raise ValueError(", message, ")")))
        var = g.new_var(node.outputs[0] or "value")
        g.lines.append(Line((var,), (opt.var,)))
        if isinstance(opt.inner, SeqVal):
            out = SeqVal(var, opt.inner.elem)
        else:
            out = _bound(g, opt.inner, var)
    if node.outputs and node.outputs[0]:
        g.env[node.outputs[0]] = out


def _bound(g: Gen, inner: Tensor, var: Any) -> Tensor:
    """A copy of the stand-in ``inner`` held by ``var``, every dim the run's (``var.shape[i]``): ``load_model``
    takes an optional's value of any shape, and so does the generated code."""
    t = copy_value(inner)
    return g.bind(t, var, tuple(Sym(d, (var, f".shape[{i}]")) for i, d in enumerate(shape_of(t))))
