"""The scalars of the optimizer rules: a Python number in eager training, a one-element tensor in a compiled step.

The learning rate, the step counters of the per-parameter states (Adam's ``"time"``) and the coefficients
derived from them (bias corrections, decay rates) are Python numbers when training eagerly, and Float/Int
tensors of shape ``[1]`` under ``ember_jax.jit``, where every value must stay on the device (no host read).
The helpers here combine such scalars and take either form:

- all operands Python numbers: the plain Python arithmetic, so the eager path computes exactly what it
  computed before tensors were accepted (bitwise-same results);
- a tensor operand: the same formula with tensor ops, in the tensor's float dtype; Int tensors (counters) are
  converted with ``.float()`` first. The results agree with the Python path to float32 rounding (~1e-7
  relative); :func:`one_minus_pow` is accurate to a few float32 ulps where ``1 - beta ** t`` cancels.

Within one :meth:`Optimizer.step <ember.optim.Optimizer.step>` (:func:`step_scope`) a value derived from a
tensor counter is computed once for all the parameters whose states hold that same counter (:func:`shared`;
:func:`increment` uses it): a compiled step then updates one shared ``[1]`` counter instead of one per
parameter (each would be its own tiny kernel), and the new states share the result again.

A rule applies a scalar to a parameter-shaped tensor with ``mul_scalar`` / ``add_scalar`` / ``div_scalar``,
which take a Python number or a ``[1]`` tensor (broadcast). The eager path therefore runs the same calls as
before. (With a tensor scalar a rank-0 parameter broadcasts to ``[1]``; :class:`~ember.optim.Optimizer` gives
the result its rank back.)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .._kind import Float
from ..tensor import Tensor

__all__ = [
    "Count", "Scalar", "add", "div", "increment", "is_zero", "mul", "one_minus_pow", "rsub", "shared", "sqrt",
    "step_scope",
]

#: a real scalar: a Python number (eager) or a Float tensor of shape ``[1]`` (compiled step)
Scalar = float | Tensor
#: a step counter: a Python int (eager) or an Int tensor of shape ``[1]`` (compiled step)
Count = int | Tensor


def _f(t: Tensor) -> Tensor:
    return t if t.kind is Float else t.float()


# The checks are ``x.__class__ is Tensor`` (10 ns, a third of ``isinstance``): these helpers run a few times per
# parameter and step on the eager path, whose cost they must not change measurably.


def mul(a: Any, b: Any) -> Any:
    """``a * b`` (Python numbers or ``[1]`` tensors)."""
    if a.__class__ is Tensor:
        return _f(a).mul(_f(b) if b.__class__ is Tensor else b)
    if b.__class__ is Tensor:
        return _f(b).mul(a)
    return a * b


def add(a: Any, b: Any) -> Any:
    """``a + b``."""
    if a.__class__ is Tensor:
        return _f(a).add(_f(b) if b.__class__ is Tensor else b)
    if b.__class__ is Tensor:
        return _f(b).add(a)
    return a + b


def rsub(a: float, b: Any) -> Any:
    """``a - b`` for a Python number ``a`` (``-b + a`` with a tensor ``b``: the same IEEE result)."""
    if b.__class__ is Tensor:
        return _f(b).neg().add(a)
    return a - b


def div(a: Any, b: Any) -> Any:
    """``a / b`` (true division; with a tensor ``b`` and a number ``a``: ``full_like(b, a) / b``, one rounding)."""
    if a.__class__ is Tensor:
        return _f(a).div(_f(b) if b.__class__ is Tensor else b)
    if b.__class__ is Tensor:
        b = _f(b)
        return b.full_like(float(a)).div(b)
    return a / b


def sqrt(a: Any) -> Any:
    """``sqrt(a)`` (``math.sqrt`` for a number)."""
    if a.__class__ is Tensor:
        return _f(a).sqrt()
    return math.sqrt(a)


def one_minus_pow(beta: float, time: Any) -> Any:
    """``1 - beta ** time``: Adam's bias correction.

    A Python ``time`` gives Python's ``1.0 - beta**time``. A tensor ``time`` (Int or Float ``[1]``) gives
    ``-expm1(time * ln(beta))`` written as ``-2 h / (1 - h)`` with ``h = tanh(time * ln(beta) / 2)`` (the
    identity ``e^x - 1 = 2 tanh(x/2) / (1 - tanh(x/2))``), which keeps float32's relative accuracy when
    ``beta ** time`` is close to 1 (``beta = 0.999``, ``time = 1``: the subtraction ``1 - beta ** time`` would
    lose four digits); ``beta`` in ``(0, 1)``. Other ``beta`` use ``1 - beta ** time`` with ``powf``.
    """
    if time.__class__ is not Tensor:
        return 1.0 - beta**time
    t = _f(time)
    if beta == 0.0:  # 0 ** t = 0 for the counts t >= 1 the rules use
        return t.full_like(1.0)
    if 0.0 < beta < 1.0:
        h = t.mul(0.5 * math.log(beta)).tanh()
        return h.mul(-2.0).div(h.neg().add(1.0))
    return t.full_like(beta).powf(t).neg().add(1.0)


def increment(time: Any) -> Any:
    """``time + 1``: an int for a Python number (as before: ``int(time) + 1``), a tensor of the same kind for a
    tensor counter (it stays a tensor in the state afterwards; one result per counter and step, see
    :func:`shared`)."""
    if time.__class__ is Tensor:
        return shared("increment", time, _add_one)
    return int(time) + 1


def _add_one(t: Tensor) -> Tensor:
    return t.add(1)


T = TypeVar("T")
_scope = threading.local()


class step_scope:  # noqa: N801 - used as a context manager, like a function
    """The extent of one optimizer step for :func:`shared` (re-entrant; :class:`~ember.optim.Optimizer` opens
    one around each ``step``)."""

    __slots__ = ("_prev",)

    def __enter__(self) -> None:
        self._prev = getattr(_scope, "memo", None)
        _scope.memo = {}

    def __exit__(self, *exc: object) -> None:
        _scope.memo = self._prev


def shared(tag: Any, counter: Tensor, compute: Callable[[Tensor], T]) -> T:
    """``compute(counter)``, computed once per :func:`step_scope` for each ``(tag, counter array)``: the
    parameters whose states hold the same counter get the same result object. Outside a scope it is just
    ``compute(counter)``. ``tag`` (hashable) names the computation and its constants."""
    memo = getattr(_scope, "memo", None)
    if memo is None:
        return compute(counter)
    p = counter.primitive
    key = (tag, id(p))
    hit = memo.get(key)
    if hit is not None and hit[0] is p:
        return hit[1]  # type: ignore[no-any-return]
    out = compute(counter)
    memo[key] = (p, out)  # holding p keeps its id unique while the scope lives
    return out


def is_zero(a: Any) -> bool:
    """``a == 0`` for a Python number; ``False`` for a tensor (its value is not read: no host sync)."""
    return a.__class__ is not Tensor and a == 0.0
