"""Int bitwise and Bool logical tensor ops, with the ``~ & | ^ << >>`` operators.

- Int tensors: ``bitwise_and/or/xor`` (tensor or int operand; ``*_scalar`` forms), ``bitwise_not``,
  ``bitwise_left_shift`` / ``bitwise_right_shift`` (arithmetic: ``-8 >> 1 == -4``), two's
  complement on the backend's int dtype. Shift counts must lie in ``[0, bits)`` (64 or 32);
  others are backend-defined, as in C and PyTorch.
- Bool tensors: ``bool_not``, ``bool_and``, ``bool_or``, ``bool_xor`` (Burn's names).
- Operators: ``~a``, ``a & b``, ``a | b``, ``a ^ b`` on Int (bitwise) and Bool (logical) tensors,
  ``a << b`` and ``a >> b`` on Int tensors, with a Python int/bool on either side.

Float tensors have none of these: they raise :class:`~ember.KindError` with a hint.
"""

from __future__ import annotations

from typing import Any

from .._errors import KindError
from .._kind import Bool, Float, Int
from . import _core
from ._base import TensorBase
from ._core import BOOL, INT, binary, new, op_error, scalar_for, unary
from ._util import check_same

_SYMBOL = {"and": "&", "or": "|", "xor": "^", "not": "~", "left_shift": "<<", "right_shift": ">>"}


def _operator_kind_error(name: str, t: Any) -> KindError:
    sym = _SYMBOL[name]
    if t.kind is Float:
        return KindError(
            f"operator {sym} ({'bitwise_' + name}) is not defined for Float tensors; it works on Int "
            "(bitwise) and Bool (logical) tensors. Convert with .int() or .bool() first, or compare "
            "(e.g. x > 0) to get a Bool mask."
        )
    return KindError(
        f"operator {sym} ({'bitwise_' + name}) is not defined for {t.kind} tensors; it needs Int tensors. "
        "Convert with .int() first."
    )


class IntBoolTensorOps(TensorBase):
    __slots__ = ()

    # ------------------------------------------------------------------ Int: bitwise
    bitwise_and = binary("bitwise_and", "bitwise_and", INT)
    bitwise_or = binary("bitwise_or", "bitwise_or", INT)
    bitwise_xor = binary("bitwise_xor", "bitwise_xor", INT)
    bitwise_not = unary("bitwise_not", "bitwise_not", INT)
    bitwise_left_shift = binary("bitwise_left_shift", "bitwise_left_shift", INT)
    bitwise_right_shift = binary("bitwise_right_shift", "bitwise_right_shift", INT)
    # Burn's ``_scalar`` forms (they accept tensors too)
    bitwise_and_scalar = bitwise_and
    bitwise_or_scalar = bitwise_or
    bitwise_xor_scalar = bitwise_xor
    bitwise_left_shift_scalar = bitwise_left_shift
    bitwise_right_shift_scalar = bitwise_right_shift

    # ------------------------------------------------------------------ Bool: logical
    bool_not = unary("bool_not", "logical_not", BOOL)
    bool_and = binary("bool_and", "logical_and", BOOL)
    bool_or = binary("bool_or", "logical_or", BOOL)
    bool_xor = binary("bool_xor", "logical_xor", BOOL)

    # ------------------------------------------------------------------ operators
    def __invert__(self) -> Any:
        k = self.kind
        if k is Int:
            return self.bitwise_not()
        if k is Bool:
            return self.bool_not()
        raise _operator_kind_error("not", self)

    def _logic(self, name: str, other: Any) -> Any:
        k = self.kind
        if k is Int:
            return getattr(self, "bitwise_" + name)(other)
        if k is Bool:
            return getattr(self, "bool_" + name)(other)
        raise _operator_kind_error(name, self)

    def __and__(self, other: Any) -> Any:
        return self._logic("and", other)

    def __or__(self, other: Any) -> Any:
        return self._logic("or", other)

    def __xor__(self, other: Any) -> Any:
        return self._logic("xor", other)

    # and / or / xor commute
    def __rand__(self, other: Any) -> Any:
        return self._logic("and", other)

    def __ror__(self, other: Any) -> Any:
        return self._logic("or", other)

    def __rxor__(self, other: Any) -> Any:
        return self._logic("xor", other)

    def __lshift__(self, other: Any) -> Any:
        if self.kind is not Int:
            raise _operator_kind_error("left_shift", self)
        return self.bitwise_left_shift(other)

    def __rshift__(self, other: Any) -> Any:
        if self.kind is not Int:
            raise _operator_kind_error("right_shift", self)
        return self.bitwise_right_shift(other)

    def __rlshift__(self, other: Any) -> Any:
        return self._reflected_shift("left_shift", other)

    def __rrshift__(self, other: Any) -> Any:
        return self._reflected_shift("right_shift", other)

    def _reflected_shift(self, name: str, other: Any) -> Any:
        """``int << tensor``: the int is broadcast to the tensor's shape, then shifted."""
        if self.kind is not Int:
            raise _operator_kind_error(name, self)
        op = "bitwise_" + name
        if type(other) is _core.Tensor:  # pragma: no cover - Python calls __lshift__ first
            check_same(op, other, self)
            return getattr(other, op)(self)
        value = scalar_for(op, self, other)
        ops, dev = self.ops, self.device
        try:
            full = ops.full(self.shape, value, self.dtype, dev.handle)
            p = getattr(ops, op)(full, self.primitive)
        except Exception as exc:
            raise op_error(op, exc, other, self) from exc
        return new(p, dev, Int, ops)
