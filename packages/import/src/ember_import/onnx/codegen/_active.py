"""The generation tracing on this thread (:func:`active`) and what the trace records into (:class:`Gen`).

Below :mod:`._domain` (a comparison made inside a recorded call decides nothing) and :mod:`._trace`, which sets
it (:func:`._trace.tracing`).
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from ._parts import Parts

__all__ = ["Gen", "active", "set_active"]


class Gen(Protocol):
    """What the trace records into: the generation state (:class:`~._gen.Gen`, which imports this module: the
    protocol keeps the import one way)."""

    imports: set[tuple[str, str]]
    depth: int
    traced: dict[int, tuple[Any, Any]]
    sym_shapes: dict[int, tuple[int, ...]]
    host_syms: dict[int, tuple[Any, list[Any]]]

    def record(self, parts: Parts, out: Any, name: str, call: tuple[Any, Any]) -> Any: ...

    def host_read(self, t: Any, kind: str) -> Any: ...

    def arg(self, v: Any, atom: bool = False) -> Parts: ...

    def call_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Parts: ...

    def index(self, key: Any) -> Parts: ...


_local = threading.local()


def active() -> Gen | None:
    """The generation tracing on this thread, or ``None``."""
    return getattr(_local, "gen", None)


def set_active(gen: Gen | None) -> None:
    """Make ``gen`` the generation tracing on this thread (``None``: none); :func:`._trace.tracing` does."""
    _local.gen = gen
