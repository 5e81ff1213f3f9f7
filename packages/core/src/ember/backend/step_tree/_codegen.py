"""What the generated result builders of compiled steps share (:class:`CodeGen`): the namespace of the core's
constructors and slot setters, constants by name, fresh variables, and compiling the source."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...autodiff import _graph
from ...autodiff._graph import AutodiffPrimitive, Leaf, new_leaf
from ...module import Param, RunningState
from ...optim import GradientsParams
from ...tensor import Tensor

__all__ = ["CodeGen"]


class CodeGen:
    """Lines of a generated function's body and the namespace it runs in.

    The namespace holds ``_new`` (``object.__new__``), ``_set`` (``object.__setattr__``), ``_Tensor``, ``_AP``
    (``AutodiffPrimitive``), ``_leaf`` (a new graph leaf), ``_Leaf`` and ``_leaf_id`` (a graph leaf's class and
    its next id, see :meth:`leaf`), ``_Param``, ``_RS`` (``RunningState``), ``_GP`` (``GradientsParams``) and the
    slot setters of the immutable ``Param`` / ``RunningState`` (``_Pid``, ``_Prg``, ``_Pt``, ``_RSid``, ``_RSt``:
    set without their ``__setattr__`` guard); :meth:`const` adds any other object."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "_new": object.__new__, "_set": object.__setattr__, "_Tensor": Tensor, "_AP": AutodiffPrimitive,
            "_leaf": new_leaf, "_Param": Param, "_RS": RunningState, "_GP": GradientsParams,
            "_Pid": Param.__dict__["id"].__set__, "_Prg": Param.__dict__["require_grad"].__set__,
            "_Pt": Param.__dict__["_tensor"].__set__, "_RSid": RunningState.__dict__["id"].__set__,
            "_RSt": RunningState.__dict__["_tensor"].__set__, "_Leaf": Leaf, "_leaf_id": _graph._ids.__next__,
        }
        self._consts: dict[int, str] = {}
        self.tmp = 0

    def const(self, v: Any) -> str:
        """An expression for ``v``: its literal for ``None``, booleans, short ints and strings, else a name bound
        to the object in the namespace (the same name for the same object)."""
        if v is None or v is True or v is False or (v.__class__ in (int, str) and len(repr(v)) < 40):
            return repr(v)
        name = self._consts.get(id(v))
        if name is None:
            name = self._consts[id(v)] = f"k{len(self._consts)}"
            self.ns[name] = v
        return name

    def leaf(self) -> str:
        """Emit a new graph leaf (what ``_leaf()`` makes, without its call frame); returns its variable."""
        v = self.var()
        self.emit(f"{v} = _new(_Leaf); {v}.id = _leaf_id()")
        return v

    def var(self) -> str:
        """A fresh local variable name."""
        self.tmp += 1
        return f"v{self.tmp}"

    def emit(self, line: str) -> None:
        """Append one statement of the function's body."""
        self.lines.append("    " + line)

    def function(self, signature: str, returns: str, filename: str) -> tuple[Callable[..., Any], str]:
        """Compile ``def <signature>:`` with the lines emitted and ``return <returns>``; returns the function and
        its source (for debugging; ``filename`` names it in tracebacks)."""
        src = f"def {signature}:\n" + "".join(line + "\n" for line in self.lines) + f"    return {returns}\n"
        exec(compile(src, filename, "exec"), self.ns)  # noqa: S102 - generated from the backend's own nodes
        name = signature.split("(", 1)[0]
        return self.ns[name], src
