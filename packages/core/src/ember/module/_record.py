"""Module <-> record: ``into_record`` and ``load_record`` with a full mismatch report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import RecordError
from .._kind import Float, Int
from .._param_id import ParamId
from .._quantization._qtensor import QuantizedTensor
from .._quantization._record import is_quantized_record, quantized_from_record, quantized_record
from .._tensor_data import TensorData
from ..backend._device import Device
from ..tensor import Tensor
from ._param import Param, RunningState
from ._tree import _is_module, fields_of, has_state, items, join, rebuild, walk_state

__all__ = ["LoadReport", "to_record", "load_into"]


@dataclass
class LoadReport:
    """What ``load_record(record, strict=False)`` could not load.

    Attributes:
        missing: dotted paths of parameters/states of the module absent from the record (kept as they were).
        unused: dotted paths of record entries the module has no place for.
        mismatched: ``(path, problem)`` pairs: shapes or node types that differ (kept as they were).
    """

    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    mismatched: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """``True`` when everything matched."""
        return not (self.missing or self.unused or self.mismatched)

    def __bool__(self) -> bool:
        return self.ok

    def describe(self) -> str:
        lines = []
        if self.missing:
            lines.append(f"missing from the record ({len(self.missing)}): {', '.join(self.missing)}")
        if self.unused:
            lines.append(f"unused record entries ({len(self.unused)}): {', '.join(self.unused)}")
        for p, why in self.mismatched:
            lines.append(f"mismatch at {p}: {why}")
        return "\n".join(lines) if lines else "all keys and shapes match"

    __str__ = describe


def _leaf_record(leaf: Param | RunningState, data: bool) -> dict[str, Any]:
    t = leaf.val()
    if isinstance(t, QuantizedTensor):
        return {"id": leaf.id, "param": quantized_record(t, data)}
    if data:
        return {"id": leaf.id, "param": t.into_data()}
    from ..record._codec import TENSOR

    return {"id": leaf.id, "param": TENSOR}


def to_record(v: Any, data: bool = True) -> Any:
    """The record of a field value (``data=False``: a template whose tensors are ``TENSOR``)."""
    if isinstance(v, (Param, RunningState)):
        return _leaf_record(v, data)
    if _is_module(v):
        out = {}
        for name in fields_of(v):
            x = getattr(v, name)
            if x is None or has_state(x):
                out[name] = to_record(x, data)
        return out
    if isinstance(v, dict):
        return {str(k): to_record(x, data) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_record(x, data) for x in v]
    return None


def _leaf_paths(node: Any, path: str, out: list[str]) -> None:
    """Dotted paths of the tensors in a record subtree ({"id","param"} nodes count once)."""
    if isinstance(node, dict):
        if "param" in node and (_is_tensor_leaf(node["param"]) or is_quantized_record(node["param"])):
            out.append(path or "<root>")
            return
        for k, x in node.items():
            _leaf_paths(x, join(path, str(k)), out)
    elif isinstance(node, (list, tuple)):
        for i, x in enumerate(node):
            _leaf_paths(x, join(path, str(i)), out)
    elif node is not None and _is_tensor_leaf(node):
        out.append(path or "<root>")


def _is_tensor_leaf(x: Any) -> bool:
    return isinstance(x, (TensorData, Tensor, np.ndarray))


def _state_paths(v: Any, path: str) -> list[str]:
    out: list[str] = []
    walk_state(v, path, lambda p, _leaf: out.append(p))
    return out


def _describe(node: Any) -> str:
    if isinstance(node, dict):
        return f"a map with keys {sorted(map(str, node))[:8]}"
    return type(node).__name__


class _Loader:
    def __init__(self, device: Device | None, consume: bool) -> None:
        self.device = device
        self.consume = consume
        self.report = LoadReport()

    def leaf(self, v: Param | RunningState, node: Any, path: str) -> Any:
        rid: ParamId | None = None
        data = node
        if isinstance(node, dict) and "param" in node:
            data = node["param"]
            ident = node.get("id")
            if isinstance(ident, (ParamId, str, int)) and not isinstance(ident, bool):
                rid = ParamId(ident)
            if self.consume:
                node["param"] = None
        if is_quantized_record(data):
            return self.quantized(v, data, rid, path)
        if isinstance(v.val(), QuantizedTensor):
            self.report.mismatched.append(
                (path, f"the module holds a quantized tensor, the record {_describe(data)}; load the float record "
                       "before quantizing, or a record saved from the quantized module")
            )
            return v
        if isinstance(data, np.ndarray):
            data = TensorData(data)
        if not isinstance(data, (TensorData, Tensor)):
            self.report.mismatched.append((path, f"expected a tensor, found {_describe(data)}"))
            return v
        want = v.shape
        if tuple(data.shape) != tuple(want):
            self.report.mismatched.append(
                (path, f"shape {list(data.shape)} in the record, {list(want)} in the module")
            )
            return v
        device = self.device or v.device
        kind = v.kind
        if isinstance(data, Tensor):
            t = data.to_device(device)
            if t.kind is not kind:
                t = t.float() if kind is Float else t.int() if kind is Int else t.bool()
        else:
            t = Tensor.from_data(data, device, kind)
        pid = rid if rid is not None else v.id
        if isinstance(v, Param):
            return Param(t, pid, v.require_grad)
        return RunningState(t, pid)

    def quantized(self, v: Param | RunningState, node: Any, rid: ParamId | None, path: str) -> Any:
        """A leaf from a quantized record node: the module's leaf, float or quantized, takes the quantized tensor
        when the shapes agree (so a float model loads a quantized record into the same structure)."""
        device = self.device or v.device
        qt = quantized_from_record(node, device, path)
        if tuple(qt.shape) != tuple(v.shape):
            self.report.mismatched.append(
                (path, f"shape {list(qt.shape)} in the record (quantized), {list(v.shape)} in the module")
            )
            return v
        pid = rid if rid is not None else v.id
        if isinstance(v, Param):
            return Param(qt, pid, v.require_grad)  # type: ignore[arg-type]
        return RunningState(qt, pid)  # type: ignore[arg-type]

    def load(self, v: Any, node: Any, path: str) -> Any:
        if isinstance(v, (Param, RunningState)):
            return self.leaf(v, node, path)
        if _is_module(v):
            if not isinstance(node, dict):
                self._mismatch_subtree(v, node, path, "a module")
                return v
            upgrade = getattr(type(v), "__ember_record_upgrade__", None)
            if upgrade is not None:  # an older / foreign layout of this module's record (e.g. Lstm's per-gate form)
                node = upgrade(node)
            names = [n for n in fields_of(v) if getattr(v, n) is None or has_state(getattr(v, n))]
            for key in node:
                if key not in names:
                    _leaf_paths(node[key], join(path, str(key)), self.report.unused)
            new = {}
            for name in names:
                p = join(path, name)
                if name not in node:
                    self.report.missing.extend(_state_paths(getattr(v, name), p))
                    continue
                new[name] = self.load(getattr(v, name), node[name], p)
                if self.consume:
                    node[name] = None
            return rebuild(v, new)
        if isinstance(v, (list, tuple, dict)):
            return self._container(v, node, path)
        if v is None:
            if node is not None:
                _leaf_paths(node, path, self.report.unused)
            return v
        return v

    def _container(self, v: Any, node: Any, path: str) -> Any:
        if isinstance(node, (list, tuple)) and not isinstance(v, dict):
            lookup = {str(i): x for i, x in enumerate(node)}
        elif isinstance(node, dict):
            lookup = {str(k): x for k, x in node.items()}
        else:
            self._mismatch_subtree(v, node, path, "a list" if not isinstance(v, dict) else "a map")
            return v
        mine = dict(items(v))
        for k in lookup:
            if k not in mine:
                _leaf_paths(lookup[k], join(path, k), self.report.unused)
        out = {}
        for k, x in mine.items():
            p = join(path, k)
            if k not in lookup:
                self.report.missing.extend(_state_paths(x, p))
                out[k] = x
            else:
                out[k] = self.load(x, lookup[k], p)
        if isinstance(v, dict):
            return type(v)((k, out[str(k)]) for k in v)
        vals = [out[str(i)] for i in range(len(v))]
        if isinstance(v, list):
            return vals
        return type(v)(*vals) if hasattr(v, "_fields") else type(v)(vals)

    def _mismatch_subtree(self, v: Any, node: Any, path: str, expected: str) -> None:
        if node is None:
            self.report.missing.extend(_state_paths(v, path))
        else:
            self.report.mismatched.append((path or "<root>", f"expected {expected}, found {_describe(node)}"))


def load_into(module: Any, record: Any, strict: bool, device: Device | None, consume: bool,
              origin: str = "load_record") -> tuple[Any, LoadReport]:
    """Apply ``record`` to ``module``; returns the new module and the report.

    A record whose type defines ``__ember_load_prepare__(record, module) -> (module, record)`` (the records
    of ``ember_import``, in PyTorch's layout) is first converted to the module's layout by that hook. A module
    class that defines ``__ember_record_upgrade__(node) -> node`` (a static method) gets its own record node passed
    through it before loading: the way an older layout of its record keeps loading (``Lstm``: the per-gate layout).

    Raises:
        RecordError: ``strict`` and anything is missing, unused or mismatched (lists every problem).
    """
    prepare = getattr(type(record), "__ember_load_prepare__", None)
    if prepare is not None:  # a foreign-layout record (ember_import) adapts itself to the module first
        module, record = prepare(record, module)
    loader = _Loader(device, consume)
    out = loader.load(module, record, "")
    report = loader.report
    if strict and not report.ok:
        raise RecordError(
            f"{origin}: the record does not fit {type(module).__name__}:\n{report.describe()}\n"
            "Fix the model definition, or call load_record(record, strict=False) to load what fits."
        )
    return out, report
