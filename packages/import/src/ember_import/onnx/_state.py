"""``RunState``: what the interpreter and the memory budget read of a running node's context.

The layering of the ONNX runtime (issue 31: no import cycles): :mod:`._budget` and :mod:`._interpret` sit below
:mod:`._context`, and see the context through this protocol; :class:`~._context.Context` implements it and
runs sub-graphs with :func:`~._interpret.run_graph`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ember import Tensor
    from ember.backend import Device

    from ._ir import Node
    from ._program import Program

__all__ = ["RunState"]


class RunState(Protocol):
    """The running state of a graph (see :class:`~._context.Context` for the attributes' meaning)."""

    program: Program
    main: Device
    host: Device
    device: Device
    node: Node | None
    env: dict[str, Any]

    def to_main(self, t: Tensor) -> Tensor: ...

    def ints(self, t: Tensor | None) -> list[int] | None: ...

    def floats(self, t: Tensor | None) -> list[float] | None: ...

    def scalar(self, t: Tensor | None, default: Any = None) -> Any: ...

    def opset_of(self, domain: str) -> int: ...
