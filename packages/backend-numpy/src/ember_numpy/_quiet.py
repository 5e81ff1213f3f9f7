"""``quiet``: run a numpy kernel with numpy's floating-point warnings ignored, for that call only.

numpy reports IEEE events (overflow, ``0/0``, ``log(0)``, ``inf - inf``, Int division by zero) as
``RuntimeWarning`` s, according to its error state; Ember's ops give the IEEE results silently, as
torch's do, so every kernel that can raise such a warning runs under :func:`quiet`.

How, and why not ``np.errstate``: since numpy 2.0 the error state is a context variable
(``numpy._core._ufunc_config._extobj_contextvar``) holding an opaque "extobj", and
``np.errstate(all="ignore")`` is ``token = var.set(make_extobj(all="ignore"))`` on entry and
``var.reset(token)`` on exit, plus building the context manager and the extobj each time (about
1 µs). :func:`quiet` builds the "ignore" extobj once and does only the ``set``/``reset`` pair
(about 0.15 µs), restoring the caller's state even when the kernel raises. The state is per thread
and per asyncio task, so concurrent callers never see it. ufuncs also run a little faster with
every error ignored (they skip reading the FPU status flags).

Robustness: these names are private, so the fast path is used only when (1) they import, and (2) a
self-test at import shows that the state they set is the "ignore" state (``np.geterr()``) and
that the caller's state comes back after ``reset``. Otherwise (numpy 1.x, or a future numpy that
changes them) :func:`quiet` falls back to ``np.errstate(all="ignore")``: same behaviour, slower.
:data:`FAST` tells which path is in use.

Cheaper still, the wrappers run the kernel in a private :class:`contextvars.Context` whose error state is
"ignore", built once at import: ``Context.run`` only switches the thread's current context (no new
context mapping, no token), about a sixth of a ``set``/``reset`` pair (callgrind: ~340 against ~1,900
instructions a call). A context can be entered by one caller at a time, so ``run`` raises ``RuntimeError``
when the context is already in use (by another thread while a kernel releases the GIL, or by a kernel
that calls another quiet kernel); the wrapper then falls back to the ``set``/``reset`` pair. Only numpy's
error state is read inside: kernels are numpy calls on plain arrays, which read no other context
variable. A kernel that itself raises ``RuntimeError`` runs a second time, under the pair, and the
error propagates from there (kernels are pure, so the rerun changes nothing but the time).

For a kernel of several statements, ``tok = enter()`` ... ``leave(tok)`` (in a ``try``/``finally``)
does the same inline, without the wrapper's extra Python frame; ``run(f, *args)`` in a
``try``/``except RuntimeError`` falling back to ``call(f, *args)`` is the context's form of it.
One difference with ``np.errstate``: the "ignore" state is built at import, so a ufunc buffer size set
later with ``np.setbufsize`` is not seen inside the kernels (it affects speed only, never results).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

__all__ = ["FAST", "call", "enter", "leave", "quiet", "quiet1", "quiet2", "run"]

F = Callable[..., Any]


def _fast_path() -> tuple[Any, Any, Any] | None:
    """``(set, reset, ignore_extobj)`` if numpy's error state is the context variable we expect."""
    try:
        from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj  # type: ignore[attr-defined]

        ignore = _make_extobj(all="ignore")
        before = np.geterr()
        tok = _extobj_contextvar.set(ignore)
        try:
            inside = np.geterr()
        finally:
            _extobj_contextvar.reset(tok)
        if set(inside.values()) != {"ignore"} or np.geterr() != before:
            return None
        return _extobj_contextvar.set, _extobj_contextvar.reset, ignore
    except Exception:  # pragma: no cover - numpy 1.x or changed internals
        return None


_FAST = _fast_path()
#: whether :func:`quiet` uses the cheap context-variable path (else ``np.errstate``)
FAST: bool = _FAST is not None


def _named(op: F, f: F) -> F:
    op.__name__ = getattr(f, "__name__", "op")
    op.__qualname__ = getattr(f, "__qualname__", op.__name__)
    op.__doc__ = getattr(f, "__doc__", None)
    op.__wrapped__ = f  # type: ignore[attr-defined]
    return op


if _FAST is not None:
    _set, _reset, _IGNORE = _FAST
    #: ``tok = enter()``: numpy's errors ignored from here on (C-level calls, no Python frame)
    enter: Callable[[], Any] = partial(_set, _IGNORE)
    #: ``leave(tok)``: the state from before the matching :func:`enter` restored
    leave: Callable[[Any], Any] = _reset
    _CTX = contextvars.Context()
    _CTX.run(_set, _IGNORE)
    #: ``run(f, *args)``: ``f(*args)`` in the private "ignore" context; ``RuntimeError`` when it is in use
    run: Callable[..., Any] = _CTX.run

    def call(f: F, *args: Any) -> Any:
        """``f(*args)`` with numpy's errors ignored through the context variable (:func:`run`'s fallback)."""
        tok = _set(_IGNORE)
        try:
            return f(*args)
        finally:
            _reset(tok)

    def quiet(f: F) -> F:
        """``f`` (any arguments) run with every numpy floating-point error ignored."""

        def op(*args: Any) -> Any:
            try:
                return run(f, *args)
            except RuntimeError:  # the context is in use (nested kernel, another thread): the pair
                return call(f, *args)

        return _named(op, f)

    def quiet1(f: F) -> F:
        """:func:`quiet` for a one-argument ``f`` (no ``*args`` packing: the unary ufuncs)."""

        def op(a: Any) -> Any:
            try:
                return run(f, a)
            except RuntimeError:
                tok = _set(_IGNORE)
                try:
                    return f(a)
                finally:
                    _reset(tok)

        return _named(op, f)

    def quiet2(f: F) -> F:
        """:func:`quiet` for a two-argument ``f`` (the binary ufuncs)."""

        def op(a: Any, b: Any) -> Any:
            try:
                return run(f, a, b)
            except RuntimeError:
                tok = _set(_IGNORE)
                try:
                    return f(a, b)
                finally:
                    _reset(tok)

        return _named(op, f)

else:  # pragma: no cover - numpy 1.x

    def enter() -> Any:
        """numpy's errors ignored from here on; returns the token for :func:`leave`."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def leave(tok: Any) -> None:
        """The state from before the matching :func:`enter` restored."""
        tok.__exit__(None, None, None)

    def quiet(f: F) -> F:
        """``f`` (any arguments) run with every numpy floating-point error ignored."""

        def op(*args: Any) -> Any:
            with np.errstate(all="ignore"):
                return f(*args)

        return _named(op, f)

    quiet1 = quiet2 = quiet

    def call(f: F, *args: Any) -> Any:
        """``f(*args)`` with numpy's errors ignored."""
        with np.errstate(all="ignore"):
            return f(*args)

    run = call
