"""Floats read from the data when the generated ``forward`` runs (a ratio, a fill value, a learning rate).

A host read of a Float tensor (``ratio.tolist()``) gives :class:`SymFloat`\\ s: floats whose value is the trace's
stand-in and which carry the source that reads them. Arithmetic with numbers keeps the source (``(1.0 - r)``),
a Tensor-API call taking one is recorded with it, and ``int()`` of one is written as ``int(...)`` by
:func:`as_int`. Comparing one decides a branch for every input: it is a guard and the node is refused (unless
the comparison is decided, :mod:`._domain`). ``float()`` of one gives a plain float, which the generator then
finds unused and refuses too: converters keep them with :meth:`~.._context.Context.float_scalar`.
"""

from __future__ import annotations

import operator
from typing import Any

from ._domain import decided
from ._errors import ModelGenError
from ._sym import GUARDS, Parts, Sym, parts_text, set_real_op

__all__ = ["SymFloat", "as_int", "has_sym", "real_op"]

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def real_op(a: Any, b: Any, op: str) -> Any:
    """``a op b`` of numbers, one at least a :class:`SymFloat` or :class:`~._sym.Sym`, as a :class:`SymFloat`."""
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
        return NotImplemented
    if op in "*/" and isinstance(a, SymFloat) and type(b) is int and b == 1:
        return a  # ``x * 1``, ``x / 1``: the same float
    value = _OPS[op](float(a), float(b))
    data = any(getattr(x, "data", False) for x in (a, b))
    return SymFloat(value, ("(", *_p(a), f" {op} ", *_p(b), ")"), data)


def _p(v: Any) -> Parts:
    if isinstance(v, (Sym, SymFloat)):
        return v.parts
    return (repr(float(v)) if isinstance(v, float) else str(int(v)),)


class SymFloat(float):
    """A float known when ``forward`` runs: its value is the trace's hint, :attr:`parts` the code computing it."""

    parts: Parts
    #: computed from a value read from the data (else from sizes only, ``x.shape[1] / 2``: comparisons of those
    #: are specialised on, as :class:`~._sym.Sym`'s are)
    data: bool

    def __new__(cls, hint: float, parts: Parts, data: bool = True) -> SymFloat:
        obj = float.__new__(cls, float(hint))
        obj.parts = parts
        obj.data = data
        return obj

    def __repr__(self) -> str:
        return parts_text(self.parts)

    def __add__(self, o: Any) -> Any:
        return real_op(self, o, "+")

    def __radd__(self, o: Any) -> Any:
        return real_op(o, self, "+")

    def __sub__(self, o: Any) -> Any:
        return real_op(self, o, "-")

    def __rsub__(self, o: Any) -> Any:
        return real_op(o, self, "-")

    def __mul__(self, o: Any) -> Any:
        return real_op(self, o, "*")

    def __rmul__(self, o: Any) -> Any:
        return real_op(o, self, "*")

    def __truediv__(self, o: Any) -> Any:
        return real_op(self, o, "/")

    def __rtruediv__(self, o: Any) -> Any:
        return real_op(o, self, "/")

    def __neg__(self) -> Any:
        return SymFloat(-float(self), ("(-", *self.parts, ")"), self.data)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return SymFloat(abs(float(self)), ("abs(", *self.parts, ")"), self.data)

    def __hash__(self) -> int:
        return float.__hash__(self)

    def __trunc__(self) -> Any:
        """``math.trunc`` of it: the int toward zero, written ``int(...)``."""
        return as_int(self)

    def _rounded(self, *_: Any) -> Any:
        """``math.ceil``/``math.floor``/``round`` of it: ``float``'s would give the trace's int, fixed in the
        generated code for every other value (a count, a chunk size), so the node is refused."""
        raise ModelGenError(f"{parts_text(self.parts)[:80]} (a value known only when the code runs) is rounded to "
                            "an int by a converter; generated code cannot keep that symbolic. Use "
                            "ember_import.onnx.load_model.")

    __ceil__ = __floor__ = __round__ = _rounded

    # ---------------------------------------------------------------- comparisons (guards)
    def _guard(self, other: Any, cmp: Any) -> None:
        if (self.data or getattr(other, "data", False)) and not decided(self, other, None):
            GUARDS.append(self)

    def __bool__(self) -> bool:
        self._guard(0.0, None)
        return float(self) != 0.0

    def __eq__(self, other: Any) -> bool:
        self._guard(other, None)
        return float.__eq__(self, other)

    def __ne__(self, other: Any) -> bool:
        self._guard(other, None)
        return float.__ne__(self, other)

    def __lt__(self, other: Any) -> bool:
        self._guard(other, None)
        return float.__lt__(self, other)

    def __le__(self, other: Any) -> bool:
        self._guard(other, None)
        return float.__le__(self, other)

    def __gt__(self, other: Any) -> bool:
        self._guard(other, None)
        return float.__gt__(self, other)

    def __ge__(self, other: Any) -> bool:
        self._guard(other, None)
        return float.__ge__(self, other)


def as_int(v: Any) -> Any:
    """``int(v)`` that keeps a :class:`SymFloat` as code (``int(depth)``, truncating toward zero as ``int``
    does); other values as ``int`` gives them (a :class:`Sym` stays itself)."""
    if isinstance(v, SymFloat):
        whole = v.parts[0] == "(" and v.parts[-1] == ")"  # ``(a + b)``: real_op's parentheses, which int( ) holds
        return Sym(int(float(v)), ("int(", *(v.parts[1:-1] if whole else v.parts), ")"), data=v.data)
    return v if isinstance(v, Sym) else int(v)


set_real_op(real_op)  # a Sym's arithmetic with a float (``batch / 2``): :mod:`._sym` sits below this module


def has_sym(v: Any) -> bool:
    """Whether ``v`` (a value, or a list/tuple nesting them) holds a :class:`~._sym.Sym` or a :class:`SymFloat`."""
    if isinstance(v, (Sym, SymFloat)):
        return True
    if isinstance(v, (list, tuple)):
        return any(has_sym(x) for x in v)
    return False
