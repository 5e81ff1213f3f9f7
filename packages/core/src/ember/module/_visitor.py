"""``ModuleVisitor`` and ``ModuleMapper``: the classes ``Module.visit`` / ``Module.map`` accept (Burn's traits).

Plain callables work too: ``module.visit(fn)`` calls ``fn(param)`` for every :class:`Param`;
``module.map(fn)`` replaces every ``Param`` by ``fn(param)``.
"""

from __future__ import annotations

from typing import Any

from .._kind import Bool, Float
from ._param import Param, RunningState

__all__ = ["ModuleVisitor", "ModuleMapper"]


class ModuleVisitor:
    """Reads a module tree. Override what you need; every method defaults to a no-op.

    ``path`` is the dotted path of the parameter (``"encoder.layers.0.weight"``).
    """

    def visit_float(self, path: str, param: Param) -> None:
        """A Float parameter."""

    def visit_int(self, path: str, param: Param) -> None:
        """An Int parameter."""

    def visit_bool(self, path: str, param: Param) -> None:
        """A Bool parameter."""

    def visit_running_state(self, path: str, state: RunningState) -> None:
        """A running-state buffer (BatchNorm statistics ...)."""

    def enter_module(self, path: str, module: Any) -> None:
        """Called before the fields of ``module`` (``path`` is ``""`` for the root)."""

    def exit_module(self, path: str, module: Any) -> None:
        """Called after the fields of ``module``."""

    def _param(self, path: str, param: Param) -> None:
        k = param.kind
        if k is Float:
            self.visit_float(path, param)
        elif k is Bool:
            self.visit_bool(path, param)
        else:
            self.visit_int(path, param)


class ModuleMapper:
    """Rewrites a module tree: each method returns the replacement (same id expected). Defaults keep it."""

    def map_float(self, path: str, param: Param) -> Param:
        return param

    def map_int(self, path: str, param: Param) -> Param:
        return param

    def map_bool(self, path: str, param: Param) -> Param:
        return param

    def map_running_state(self, path: str, state: RunningState) -> RunningState:
        return state

    def _param(self, path: str, param: Param) -> Param:
        k = param.kind
        if k is Float:
            return self.map_float(path, param)
        if k is Bool:
            return self.map_bool(path, param)
        return self.map_int(path, param)
