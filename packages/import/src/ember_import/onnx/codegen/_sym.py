"""Symbolic values of a trace: variables of the generated ``forward`` and sizes known only when it runs.

A :class:`Var` is a name of the generated code (renamed freely until the source is written). A :class:`Sym` is
an ``int`` whose value is a *hint* (the size the trace ran with) and which also carries the source expression
that computes it when the generated code runs (``batch``, ``x.shape[1]``, ``(batch * seq)``): the converters'
host arithmetic on shapes (``math.prod``, ``+``, ``//``) keeps the expression, so a dynamic dim stays code while a
static one is an ``int`` and folds into a constant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._errors import OnnxImportError
from ._domain import DataInt, decided, domain_values
from ._parts import Parts, Var, parts_text

__all__ = ["GUARDS", "Parts", "Sym", "Var", "norm_axis", "parts_text", "set_real_op"]

#: the values read from the data that a comparison used while a node was converted (the converter branched on
#: them: generated code would be specialised on the trace's stand-in data); the generator checks it per node
GUARDS: list[Any] = []


class Sym(DataInt):
    """An int known when ``forward`` runs: its value is the trace's hint, :attr:`parts` the code computing it.

    ``+ - * // %`` and negation with ints or other ``Sym``\\ s give ``Sym``\\ s; comparisons use the hint (the
    generated code is specialised on them, as ``torch.fx`` guards are). A product keeps its constant factor
    apart (:attr:`coef`), so ``(4 * batch) // 4`` is ``batch``.
    """

    parts: Parts
    coef: int
    factors: Parts | None

    def __new__(
        cls,
        hint: int,
        parts: Parts,
        coef: int = 1,
        factors: Parts | None = None,
        data: bool = False,
        domain: frozenset[int] | None = None,
    ) -> Sym:
        obj = int.__new__(cls, int(hint))
        obj.data = data
        obj.domain = domain
        obj.parts = parts
        obj.coef = coef
        obj.factors = factors if factors is not None else (parts if coef == 1 else None)
        return obj

    def __repr__(self) -> str:
        return parts_text(self.parts)

    # ---------------------------------------------------------------- arithmetic
    @staticmethod
    def _p(v: Any) -> Parts:
        return v.parts if isinstance(v, Sym) else (str(int(v)),)

    def _bin(self, other: Any, op: str, value: int, swap: bool = False) -> Any:
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        a, b = (other, self) if swap else (self, other)
        data = self.data or (isinstance(other, Sym) and other.data)
        return Sym(value, ("(", *Sym._p(a), f" {op} ", *Sym._p(b), ")"), data=data)

    # with a float, and true division: a float known when ``forward`` runs (:mod:`._symfloat`)
    def __truediv__(self, other: Any) -> Any:
        return real_op(self, other, "/")

    def __rtruediv__(self, other: Any) -> Any:
        return real_op(other, self, "/")

    def __add__(self, other: Any) -> Any:
        if isinstance(other, float):
            return real_op(self, other, "+")
        if type(other) is int and other == 0:
            return self
        return self._bin(other, "+", int(self) + int(other)) if isinstance(other, int) else NotImplemented

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, float):
            return real_op(other, self, "+")
        if type(other) is int and other == 0:
            return self
        return self._bin(other, "+", int(other) + int(self), swap=True) if isinstance(other, int) else NotImplemented

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, float):
            return real_op(self, other, "-")
        if type(other) is int and other == 0:
            return self
        return self._bin(other, "-", int(self) - int(other)) if isinstance(other, int) else NotImplemented

    def __rsub__(self, other: Any) -> Any:
        if isinstance(other, float):
            return real_op(other, self, "-")
        if type(other) is int and other == 0:
            return -self
        return self._bin(other, "-", int(other) - int(self), swap=True) if isinstance(other, int) else NotImplemented

    def _product(self, value: int, coef: int) -> Sym:
        """``coef`` times this Sym's factors (``(4 * batch)``; the factors alone when ``coef`` is 1)."""
        assert self.factors is not None
        parts = ("(", str(coef), " * ", *self.factors, ")") if coef != 1 else self.factors
        return Sym(value, parts, coef, self.factors, data=self.data)

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, float):
            return real_op(self, other, "*")
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        if type(other) is int:
            if other == 1:
                return self
            if self.factors is not None:
                return self._product(int(self) * other, self.coef * other)
        return self._bin(other, "*", int(self) * other)

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> Any:
        if type(other) is int:
            if other == 1:
                return self
            if self.factors is not None and other and not self.coef % other:
                return self._product(int(self) // other, self.coef // other)
        return self._bin(other, "//", int(self) // int(other)) if isinstance(other, int) else NotImplemented

    def __rfloordiv__(self, other: Any) -> Any:
        return self._bin(other, "//", int(other) // int(self), swap=True) if isinstance(other, int) else NotImplemented

    def __mod__(self, other: Any) -> Any:
        if not isinstance(other, int):
            return NotImplemented
        out = self._bin(other, "%", int(self) % int(other))
        if self.data and type(other) is int and other > 0:
            out.domain = frozenset(range(other))  # Python's % of a positive int: 0 .. other - 1
        return out

    def __neg__(self) -> Any:
        if len(self.parts) == 3 and self.parts[0] == "(-" and self.parts[2] == ")" and isinstance(self.negated, Sym):
            return self.negated
        out = Sym(-int(self), ("(-", *self.parts, ")"), data=self.data)
        out.negated = self
        return out

    negated: Any = None

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return Sym(abs(int(self)), ("abs(", *self.parts, ")"), data=self.data)

    def __bool__(self) -> bool:
        self._guard(0, int.__ne__)  # ``if n:`` / ``a or b`` decide a branch as a comparison does
        return int(self) != 0

    def __hash__(self) -> int:
        return int.__hash__(self)

    # ---------------------------------------------------------------- comparisons (guards)
    def _guard(self, other: Any, cmp: Any = None) -> None:
        if (self.data or (isinstance(other, Sym) and other.data)) and not decided(self, other, cmp):
            GUARDS.append(self)

    def __norm_axis__(self, rank: int) -> Sym:
        """This axis in ``[0, rank)`` (ONNX's negative axes count from the end), branch-free: see
        :func:`norm_axis`."""
        return norm_axis(self, rank)

    def __eq__(self, other: Any) -> bool:
        self._guard(other, int.__eq__)
        return int.__eq__(self, other)

    def __ne__(self, other: Any) -> bool:
        self._guard(other, int.__ne__)
        return int.__ne__(self, other)

    def __lt__(self, other: Any) -> bool:
        self._guard(other, int.__lt__)
        return int.__lt__(self, other)

    def __le__(self, other: Any) -> bool:
        self._guard(other, int.__le__)
        return int.__le__(self, other)

    def __gt__(self, other: Any) -> bool:
        self._guard(other, int.__gt__)
        return int.__gt__(self, other)

    def __ge__(self, other: Any) -> bool:
        self._guard(other, int.__ge__)
        return int.__ge__(self, other)


def _keep_domain(name: str, fn: Callable[[int, int], int]) -> None:
    """Make ``Sym.<name>`` carry its operand's :attr:`~._domain.DataInt.domain` to the result: the values
    ``fn(x, y)`` takes for ``x`` in it and ``y`` the other operand (an int, or a Sym's values), so a size derived
    from a picked dim (``2 * (n - 1)`` with ``n = x.shape[axis]``) still decides comparisons that come out the
    same for every dim. A pair of Syms is taken as independent (a superset of the values: conservative)."""
    orig = getattr(Sym, name)

    def method(self: Sym, other: Any) -> Any:
        out = orig(self, other)
        if not isinstance(out, Sym) or out is self or out.domain is not None or self.domain is None:
            return out
        others = domain_values(other)
        if others is not None and len(self.domain) * len(others) <= 4096:
            try:
                out.domain = frozenset(fn(int(x), y) for x in self.domain for y in others)
            except ZeroDivisionError:
                pass
        return out

    method.__name__ = method.__qualname__ = name
    method.__doc__ = orig.__doc__
    setattr(Sym, name, method)


for _name, _fn in (
    ("__add__", lambda a, b: a + b),
    ("__radd__", lambda a, b: b + a),
    ("__sub__", lambda a, b: a - b),
    ("__rsub__", lambda a, b: b - a),
    ("__mul__", lambda a, b: a * b),
    ("__rmul__", lambda a, b: b * a),
    ("__floordiv__", lambda a, b: a // b),
    ("__rfloordiv__", lambda a, b: b // a),
):
    _keep_domain(_name, _fn)


#: ``a op b`` of numbers as a :class:`~._symfloat.SymFloat`: :func:`._symfloat.real_op`, which registers itself
#: with :func:`set_real_op` when imported (:mod:`._symfloat` sits above this module; the package imports it)
_REAL_OP: list[Callable[[Any, Any, str], Any]] = []


def set_real_op(fn: Callable[[Any, Any, str], Any]) -> None:
    """Make ``fn`` the arithmetic of a Sym with a float, and its true division (see :data:`_REAL_OP`)."""
    _REAL_OP[:] = [fn]


def real_op(a: Any, b: Any, op: str) -> Any:
    """``a op b`` (``+ - * /``) where one side is a float or ``op`` is ``/``: a :class:`~._symfloat.SymFloat`."""
    if not _REAL_OP:
        raise RuntimeError(
            "ember_import.onnx.codegen._symfloat is not imported: a Sym's arithmetic with a float needs it. "
            "Import ember_import.onnx.codegen (the package imports it)."
        )
    return _REAL_OP[0](a, b, op)


def norm_axis(axis: Any, rank: int) -> Any:
    """``axis`` (a Sym read from the data, in ``[-rank, rank)``) as an axis in ``[0, rank)``, branch-free: the
    code ``(axis % rank)``, whose domain is ``range(rank)``. An out-of-range axis is the model's error (ONNX
    refuses it); the trace's own value is checked, so the example input cannot hide one."""
    n = max(int(rank), 1)
    h = int(axis)
    if not -rank <= h < n:
        raise OnnxImportError(
            f"axis {h} read from the data is out of range for rank {rank} (expected {-rank} .. {rank - 1})."
        )
    return Sym(h % n, ("(", *Sym._p(axis), f" % {n})"), data=True, domain=frozenset(range(n)))
