"""The converter registry: one function per ONNX operator (and opset range).

A converter maps a node to Ember tensor ops::

    @converter("Relu", since=6)
    def relu(ctx: Context, node: Node, x: Tensor) -> Tensor:
        return ember.tensor.activation.relu(x)

It receives the :class:`~.Context`, the :class:`~._ir.Node` and the node's inputs positionally (``None``
for an omitted optional input; a Python ``list`` of tensors for a sequence value) and returns one value or a
tuple (one entry per output; ``None`` for an optional output it does not compute). Converters use Ember's
Tensor API only, never numpy/torch/jax, so every backend, Autodiff and ``ember_jax.jit`` work.

``static=(i, ...)`` names the inputs the converter reads as host values (``Reshape``'s shape, ``Slice``'s
starts): they are passed as they are, without being moved to the compute device, so shape arithmetic stays
on the host (and static under ``ember_jax.jit``). Read them with :meth:`Context.ints`.

Opset ranges: ``since`` is the first opset version of the domain the converter handles; the registry picks
the entry with the greatest ``since`` not above the model's opset. A converter that handles several versions
may read ``ctx.opset`` itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["converter", "lookup", "Converter", "registered_ops"]


@dataclasses.dataclass(frozen=True)
class Converter:
    """A registered converter: the function, the op, its domain, first opset, and static inputs."""

    fn: Callable[..., Any]
    op_type: str
    domain: str
    since: int
    static: tuple[int, ...]


_TABLE: dict[tuple[str, str], list[Converter]] = {}


def _norm_domain(domain: str) -> str:
    return "ai.onnx" if domain in ("", "ai.onnx") else domain


def converter(
    op_type: str, since: int = 1, *, domain: str = "", static: tuple[int, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the converter of ``op_type`` for opsets ``>= since`` (until a later entry).

    Raises:
        ValueError: the same ``(op_type, domain, since)`` is registered twice.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = (_norm_domain(domain), op_type)
        entries = _TABLE.setdefault(key, [])
        if any(e.since == since for e in entries):
            raise ValueError(f"converter for {op_type} (domain {key[0]!r}) since opset {since} registered twice")
        entries.append(Converter(fn, op_type, key[0], since, tuple(static)))
        entries.sort(key=lambda e: e.since)
        return fn

    return deco


def lookup(op_type: str, domain: str, opset: int) -> Converter | None:
    """The converter for ``op_type`` at ``opset`` of ``domain``, or ``None`` when there is none."""
    _load_ops()
    entries = _TABLE.get((_norm_domain(domain), op_type))
    if not entries:
        return None
    found = None
    for e in entries:
        if e.since <= opset:
            found = e
    return found


def registered_ops() -> dict[tuple[str, str], list[int]]:
    """``(domain, op_type) -> [since, ...]`` of every registered converter (for ``onnx-info`` and docs)."""
    _load_ops()
    return {k: [e.since for e in v] for k, v in sorted(_TABLE.items())}


_loaded = False


def _load_ops() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from . import ops  # noqa: F401  (registers every converter)
