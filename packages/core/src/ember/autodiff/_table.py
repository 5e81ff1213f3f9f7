"""The one table of backward rules, ``RULES``: primitive name -> :class:`Spec`.

A rule is written with inner-backend primitives only (never numpy), so the same table serves
``Autodiff`` over every backend. The ``_rules_*`` modules fill the table with the decorators
below; :mod:`._record` turns each entry into the recording forward op of an ``Autodiff``
instance. Shapes of the backward functions, by pattern:

- ``unary``: ``bw(B, g, x, y, args) -> grad of a`` for ``op(a, *args)``. ``x`` is the input
  primitive (``save`` has ``"x"``), its shape (``"s"``) or ``None``; ``y`` the output (``"y"``)
  or ``None``; ``args`` the other arguments.
- ``binary``: ``bw(B, g, a, b, y, need_a, need_b) -> (grad a, grad b)`` for ``op(a, b)`` where
  ``b`` is a primitive or a Python scalar (a constant). ``a``/``b`` are the primitives (``"x"``)
  or their shapes (``"s"``); a constant ``b`` is passed as given. Gradients that are not needed
  may be ``None``; broadcasting must be reduced back with :func:`._rules_util.unbroadcast`.
- ``general``: ``bw(B, g, args, y, needs) -> grads`` for ops with several differentiable
  arguments at positions ``diff`` (an argument there may be a list, as for ``cat``). In ``args``
  the differentiable arguments are replaced by their primitives (``keep=True``) or their shapes;
  ``needs`` and the returned grads run over the flattened differentiable inputs.
- ``indexed``: ops returning ``(values, indices)`` along ``args[0] = dim`` (``topk``,
  ``sort_with_indices``, ``median``, ``max_dim_with_indices`` ...): the gradient of the values is
  scattered back at the indices; no backward function is needed.
- ``zero``: piecewise-constant ops (``floor``, ``sign`` ...): zero gradient.

``unary`` and ``binary`` rules may instead be written in the node's own form, ``direct=True``:
``bw(B, g, saved, parents)`` with ``saved = (x, y, args)`` (unary) or ``(a, b, y)`` (binary), as
above, and ``parents`` the parent nodes (``None`` for constants: a gradient not needed); it returns
a tuple with one gradient per parent. The node then calls ``bw`` itself, with no adapting frame in
between (about 0.1 µs a recorded op); the hot rules of every training step (``add``, ``matmul``,
``relu`` ...) are written so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["RULES", "Spec", "binary", "general", "indexed", "unary", "zero"]


class Spec:
    """One entry of the rule table."""

    __slots__ = ("name", "pattern", "backward", "save", "diff", "keep", "direct")

    def __init__(self, name: str, pattern: str, backward: Callable[..., Any] | None, save: str = "",
                 diff: tuple[int, ...] = (), keep: bool = False, direct: bool = False) -> None:
        self.name = name
        self.pattern = pattern
        self.backward = backward
        self.save = save
        self.diff = diff
        self.keep = keep
        self.direct = direct

    def __repr__(self) -> str:
        return f"Spec({self.name!r}, {self.pattern}, save={self.save!r}{', direct' if self.direct else ''})"


RULES: dict[str, Spec] = {}
"""Primitive name -> its backward rule (the Float ops Autodiff records)."""


def _register(spec: Spec) -> None:
    if spec.name in RULES:
        raise RuntimeError(f"autodiff rule {spec.name!r} is defined twice")
    RULES[spec.name] = spec


def unary(*names: str, save: str = "", direct: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            _register(Spec(n, "unary", fn, save, direct=direct))
        return fn

    return deco


def binary(*names: str, save: str = "x", direct: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            _register(Spec(n, "binary", fn, save, direct=direct))
        return fn

    return deco


def general(name: str, diff: tuple[int, ...], keep: bool = False,
            save: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        _register(Spec(name, "general", fn, save, diff, keep))
        return fn

    return deco


def indexed(*names: str) -> None:
    for n in names:
        _register(Spec(n, "indexed", None))


def zero(*names: str) -> None:
    for n in names:
        _register(Spec(n, "zero", None))
