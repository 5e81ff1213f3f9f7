"""``Program``: the static part of an imported model (graph, opsets, converters, constants).

An :class:`~._module.OnnxModule` holds its trainable parameters as fields and one ``Program`` as a plain
value. The program is shared by every copy of the module (``map``, ``valid()``, device moves, optimizer
steps) and is hashed by identity, so compiled steps key on it without walking the graph.
"""

from __future__ import annotations

import threading

import ember
from ember import DType, Tensor, TensorData
from ember.backend import Device

from ._errors import OnnxImportError
from ._ir import Graph, Node
from ._registry import Converter, lookup

__all__ = ["Program", "host_device"]

#: the budget of a Program built without one (ModelGen's): 1 GiB, as :func:`._budget.default_max_tensor_bytes`
DEFAULT_MAX_TENSOR_BYTES = 1 << 30

_host_lock = threading.Lock()
_host: Device | None = None


def host_device() -> Device:
    """The host device: Ember's numpy backend (float32/int64 defaults), where constants live."""
    global _host
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


class Program:
    """The static part of an imported model.

    Attributes:
        graph: the main graph (after the passes).
        opsets: domain -> opset version.
        constants: value name -> host data of every constant (non-trainable initializers, folded nodes).
        source: the model's file (or ``<bytes>``), named by errors raised while it runs.
        max_tensor_bytes: the memory budget of :mod:`._budget` (``None``: unchecked).
        converters: node -> its converter, resolved at import for every node of every (sub-)graph.
    """

    def __init__(self, graph: Graph, opsets: dict[str, int], constants: dict[str, TensorData], *,
                 source: str = "<model>", max_tensor_bytes: int | None = DEFAULT_MAX_TENSOR_BYTES) -> None:
        self.graph = graph
        self.opsets = opsets
        self.constants = constants
        self.source = source
        self.max_tensor_bytes = max_tensor_bytes
        self.converters: dict[int, Converter] = {}
        self._host_tensors: dict[str, Tensor] = {}
        self._host_ids: set[int] = set()  # ids of ``_host_tensors``' values (kept alive by it): O(1) membership
        self._moved: dict[tuple[int, int], Tensor] = {}
        self._lock = threading.Lock()
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
        """The constant ``name`` as a host tensor (built once)."""
        t = self._host_tensors.get(name)
        if t is None:
            data = self.constants[name]
            t = Tensor.from_data(data, host_device(), dtype=data.dtype)
            self._host_tensors[name] = t
            self._host_ids.add(id(t))
        return t

    def to_device(self, t: Tensor, device: Device) -> Tensor:
        """``t`` on ``device``; a host constant's copy is cached per device (so it moves once)."""
        if t.device is device:
            return t
        key = (id(t), id(device))
        hit = self._moved.get(key)
        if hit is not None:
            return hit
        out = _move(t, device)
        if id(t) in self._host_ids and not _traced(out):
            with self._lock:
                self._moved[key] = out
        return out

    __hash__ = object.__hash__


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
