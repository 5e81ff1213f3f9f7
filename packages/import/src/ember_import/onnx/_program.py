"""``Program``: the static part of an imported model (graph, opsets, converters, constants).

An :class:`~._module.OnnxModule` holds its trainable parameters as fields and one ``Program`` as a plain
value. The program is shared by every copy of the module (``map``, ``valid()``, device moves, optimizer
steps) and is hashed by identity, so compiled steps key on it without walking the graph.

A ``Program`` holds no Ember tensors: its constants are host ``TensorData``. The tensors made from them (a
constant on the host, its copy on each compute device) are kept in a side table keyed by the program
(:class:`_Tensors`, weakly referenced), so the program stays a plain static value for ``ember_jax.jit``
however the module ran before (eagerly, at other shapes, compiled): the tensors are immutable copies of
immutable data, which a compiled step may embed as constants.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import ember
from ember import DType, Tensor, TensorData
from ember.backend import Device

from ._errors import OnnxImportError
from ._ir import Graph, Node
from ._registry import Converter, lookup

__all__ = ["Program", "host_device", "host_override"]

#: the budget of a Program built without one (ModelGen's): 1 GiB, as :func:`._budget.default_max_tensor_bytes`
DEFAULT_MAX_TENSOR_BYTES = 1 << 30

_host_lock = threading.Lock()
_host: Device | None = None


#: the host of the current context when not numpy's (:func:`host_override`)
_override: contextvars.ContextVar[Device | None] = contextvars.ContextVar("ember_import_onnx_host", default=None)


def host_device() -> Device:
    """The host device: Ember's numpy backend (float32/int64 defaults), where constants live; inside
    :func:`host_override`, the device given there."""
    global _host
    override = _override.get()
    if override is not None:
        return override
    with _host_lock:
        if _host is None:
            try:
                _host = ember.backend("numpy").device()
            except Exception as exc:  # pragma: no cover - the extra pulls ember-backend-numpy
                from ember import install_command

                raise OnnxImportError(
                    f"ONNX import runs constants and shape arithmetic on Ember's numpy backend, which is not "
                    f"available ({exc}); install it with: {install_command('ember-import', 'onnx')}."
                ) from None
        return _host


@contextlib.contextmanager
def host_override(device: Device) -> Iterator[None]:
    """Make ``device`` the host in this context (thread, task): ``ModelGen`` traces a model on a CPU backend
    that has an element type numpy lacks (bfloat16), since its trace computes every value on the host."""
    token = _override.set(device)
    try:
        yield
    finally:
        _override.reset(token)


class Program:
    """The static part of an imported model.

    Attributes:
        graph: the main graph (after the passes).
        opsets: domain -> opset version.
        constants: value name -> host data of every constant (non-trainable initializers, folded nodes).
        source: the model's file (or ``<bytes>``), named by errors raised while it runs.
        max_tensor_bytes: the memory budget of :mod:`._budget` (``None``: unchecked).
        converters: node -> its converter, resolved at import for every node of every (sub-)graph.
        plans: id of a (sub-)graph -> its ``_interpret.Plan`` (built at the graph's first run; no tensors).
    """

    def __init__(self, graph: Graph, opsets: dict[str, int], constants: dict[str, TensorData], *,
                 source: str = "<model>", max_tensor_bytes: int | None = DEFAULT_MAX_TENSOR_BYTES) -> None:
        self.graph = graph
        self.opsets = opsets
        self.constants = constants
        self.source = source
        self.max_tensor_bytes = max_tensor_bytes
        self.converters: dict[int, Converter] = {}
        self.plans: dict[int, Any] = {}
        self.resolve(graph)

    def resolve(self, graph: Graph) -> None:
        """Find the converter of every node (sub-graphs too).

        Raises:
            OnnxImportError: listing **every** node without a converter (op, domain, opset, node names).
        """
        missing: dict[tuple[str, str, int], list[str]] = {}
        for node in graph.walk():
            domain = node.domain or "ai.onnx"
            opset = self.opsets.get(domain, 0 if domain != "ai.onnx" else 1)
            conv = lookup(node.op_type, node.domain, opset)
            if conv is None:
                missing.setdefault((domain, node.op_type, opset), []).append(node.name)
            else:
                self.converters[id(node)] = conv
        if missing:
            lines = []
            for (domain, op, opset), names in sorted(missing.items()):
                more = f" and {len(names) - 5} more" if len(names) > 5 else ""
                shown = ", ".join(repr(n) for n in names[:5]) + more
                where = "" if domain == "ai.onnx" else f" (domain {domain})"
                lines.append(f"  - {op}{where} at opset {opset}: {len(names)} node(s): {shown}")
            raise OnnxImportError(
                f"{self.source}: the model uses {len(missing)} operator(s) Ember cannot convert:\n"
                + "\n".join(lines) + "\n"
                "Run `python -m ember_import onnx-info MODEL.onnx` for the full support table; re-export the model "
                "with a different opset or without these ops, or open an issue naming the operator."
            )

    def converter(self, node: Node) -> Converter:
        return self.converters[id(node)]

    def host_constant(self, name: str) -> Tensor:
        """The constant ``name`` as a host tensor (built once per program and kept in its side table)."""
        cache = _tensors(self)
        t = cache.host.get(name)
        if t is None:
            data = self.constants[name]
            t = Tensor.from_data(data, host_device(), dtype=data.dtype)
            with cache.lock:
                t = cache.host.setdefault(name, t)
                cache.host_ids[id(t)] = t
        return t

    def host_constants(self) -> dict[str, Tensor]:
        """Every constant as a host tensor: a new dict (the caller may change it) of the tensors built once."""
        cache = _tensors(self)
        if cache.complete is None or len(cache.complete) != len(self.constants):
            cache.complete = {name: self.host_constant(name) for name in self.constants}
        return dict(cache.complete)

    def to_device(self, t: Tensor, device: Device) -> Tensor:
        """``t`` on ``device``; a host constant's copy is cached per device (so it moves once). A copy made
        while a compiled step traces is not kept if it came out traced (it would leak a tracer)."""
        if t.device is device:
            return t
        cache = _tensors(self)
        key = (id(t), id(device))
        hit = cache.moved.get(key)
        if hit is not None:
            return hit[1]
        out = _move(t, device)
        if id(t) in cache.host_ids and not _traced(out):
            with cache.lock:
                cache.moved[key] = (device, out)  # (the device is kept alive with its key's id)
        return out

    def drop_tensors(self) -> None:
        """Forget the tensors made from the constants (``load_model`` calls it once folding is done, so the
        host copies of constants that folding consumed are let go)."""
        with _table_lock:
            _TABLE.pop(self, None)
        self.plans.clear()  # (plans made while folding ran name nodes the passes may have rewritten since)

    __hash__ = object.__hash__


class _Tensors:
    """The tensors made from a program's constants: ``host`` (name -> host tensor), ``host_ids`` (their ids,
    for O(1) membership), ``moved`` ((id of a host constant, id of a device) -> (device, copy)) and ``complete``
    (every constant's host tensor, once :meth:`Program.host_constants` built it)."""

    __slots__ = ("host", "host_ids", "moved", "lock", "complete")

    def __init__(self) -> None:
        self.host: dict[str, Tensor] = {}
        self.host_ids: dict[int, Tensor] = {}
        self.moved: dict[tuple[int, int], tuple[Device, Tensor]] = {}
        self.lock = threading.Lock()
        self.complete: dict[str, Tensor] | None = None


#: program -> its tensors; outside the program so that the program holds no tensors (see the module docstring)
_TABLE: weakref.WeakKeyDictionary[Program, _Tensors] = weakref.WeakKeyDictionary()
_table_lock = threading.Lock()


def _tensors(program: Program) -> _Tensors:
    found = _TABLE.get(program)
    if found is None:
        with _table_lock:
            found = _TABLE.setdefault(program, _Tensors())
    return found


def _move(t: Tensor, device: Device) -> Tensor:
    """Move keeping the element type (``to_device`` takes the destination's default type)."""
    want = t.dtype
    if want in device.backend.supported_dtypes:
        return Tensor.from_data(t.to_data(), device, dtype=want)
    raise OnnxImportError(
        f"a {want} value cannot live on the {device.backend.name!r} backend, which does not support {want}. "
        "Use a backend that holds this element type."
    )


def _traced(t: Tensor) -> bool:
    try:
        return not t.backend.is_concrete(t.primitive)
    except Exception:
        return False


def dtype_name(dt: DType | None) -> str:
    return "?" if dt is None else str(dt)
