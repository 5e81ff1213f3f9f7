"""The readable ``repr`` of a module tree (after Burn's module ``Display``)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._param import Param, RunningState
from ._tree import _is_module, fields_of, walk_state

__all__ = ["display"]


def _count(v: Any) -> int:
    n = [0]

    def add(_p: str, x: Any) -> None:
        if isinstance(x, Param):
            n[0] += x.num_params()

    walk_state(v, "", add)
    return n[0]


def _leaf(x: Any) -> str:
    if isinstance(x, Param):
        t = x.val()
        kind = "" if t.kind.name == "Float" else f", {t.kind.name}"
        grad = "" if x.require_grad else ", no_grad"
        return f"Param[{list(t.shape)}, {t.dtype.value}{kind}{grad}]"
    if isinstance(x, RunningState):
        return f"RunningState[{list(x.shape)}, {x.dtype.value}]"
    return f"Tensor[{list(x.shape)}, {x.dtype.value}, constant]"


def _fmt(v: Any, indent: int) -> str:
    pad = "  " * (indent + 1)
    if isinstance(v, (Param, RunningState, Tensor)):
        return _leaf(v)
    if _is_module(v):
        if not fields_of(v):
            return type(v).__name__  # a unit module (Relu, Gelu ...), as Burn shows it
        lines = [f"{type(v).__name__} {{"]
        for name in fields_of(v):
            lines.append(f"{pad}{name}: {_fmt(getattr(v, name), indent + 1)}")
        lines.append(f"{pad}params: {_count(v)}")
        lines.append("  " * indent + "}")
        return "\n".join(lines)
    if isinstance(v, (list, tuple, dict)) and any(_is_module(x) or isinstance(x, (Param, RunningState, Tensor))
                                                   for x in (v.values() if isinstance(v, dict) else v)):
        open_, close = ("{", "}") if isinstance(v, dict) else ("[", "]") if isinstance(v, list) else ("(", ")")
        pairs = v.items() if isinstance(v, dict) else enumerate(v)
        lines = [open_]
        for k, x in pairs:
            lines.append(f"{pad}{k}: {_fmt(x, indent + 1)}")
        lines.append("  " * indent + close)
        return "\n".join(lines)
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def display(module: Any) -> str:
    return _fmt(module, 0)
