"""``late(owner, name)``: a Tensor-API function looked up when it is called, not when a converter is defined.

Converter tables (``register_binary("Add", late(Tensor, "add"))``) hold these instead of the function objects, so
the code generator's trace (:mod:`ember_import.onnx.codegen._trace`), which wraps ``Tensor``'s methods and the
functions of ``ember.tensor.activation``/``module`` while it runs, sees every call a converter makes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["late"]


def late(owner: Any, name: str) -> Callable[..., Any]:
    """``getattr(owner, name)(*args, **kwargs)`` at call time."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(owner, name)(*args, **kwargs)

    call.__name__ = name
    call.__qualname__ = f"late.{name}"
    return call
