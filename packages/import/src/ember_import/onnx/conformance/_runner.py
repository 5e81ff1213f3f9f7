"""Running ONNX node test cases on an Ember device and comparing with the expected outputs."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import time
import warnings
from collections import Counter
from typing import Any

import numpy as np

import ember
from ember import DType, Tensor, TensorData
from ember.backend import Device

from .._errors import OnnxImportError
from .._module import load_model

__all__ = ["CaseResult", "Report", "backend_device", "run_case", "run_suite", "load_cases"]

#: float tolerances by element type (the issue's rtol 1e-3 / atol 1e-5 for float32/64)
TOLERANCE = {
    DType.FLOAT64: (1e-3, 1e-5), DType.FLOAT32: (1e-3, 1e-5),
    DType.FLOAT16: (1e-2, 1e-3), DType.BFLOAT16: (2e-2, 1e-2),
}


@dataclasses.dataclass
class CaseResult:
    """The outcome of one case: ``status`` is ``"pass"``, ``"fail"`` (wrong output) or ``"error"``
    (import or run raised); ``ops`` the case's operators; ``message`` why it did not pass."""

    name: str
    status: str
    ops: tuple[str, ...]
    message: str = ""
    seconds: float = 0.0


def backend_device(name: str) -> Device:
    """The device the suite runs on: ``numpy``/``torch`` with float32/int64 defaults; ``jax`` with
    ``int_dtype="int64"``, which turns on jax's x64 mode so int64/float64 cases can run."""
    if name == "jax":
        return ember.backend("jax", int_dtype="int64").device()
    return ember.backend(name).device()


def load_cases() -> list[Any]:
    """Every node test case of the installed onnx (quietly: building them warns about overflows)."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return list(load_model_tests(kind="node"))


def _ops(case: Any) -> tuple[str, ...]:
    return tuple(sorted({n.op_type for n in case.model.graph.node if n.op_type != "Constant"} or {"Constant"}))


def _array(value: Any) -> np.ndarray:
    """A data-set value as an array: the loader gives arrays, or ``TensorProto`` for the cases stored as
    protobuf (the Cast/CastLike and some quantization cases)."""
    from onnx import TensorProto, numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)


def _typed(arr: np.ndarray) -> tuple[np.ndarray, DType]:
    """``(array numpy can compute with, its Ember element type)``: bfloat16 arrays (``ml_dtypes``, as onnx
    gives them) are widened to float32, exactly."""
    if arr.dtype.name == "bfloat16":
        return arr.astype(np.float32), DType.BFLOAT16
    return arr, DType.from_numpy(arr.dtype)


def _to_ember(value: Any, device: Device) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_to_ember(v, device) for v in value]
    arr, dt = _typed(_array(value))
    return Tensor.from_data(TensorData(arr, dt), device, dtype=dt)


def _compare(name: str, got: Any, want: Any) -> str | None:
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{name}: expected a sequence of {len(want)}, got {type(got).__name__}"
        for i, (g, w) in enumerate(zip(got, want)):
            err = _compare(f"{name}[{i}]", g, w)
            if err:
                return err
        return None
    if want is None:
        return None if got is None else f"{name}: expected an empty optional"
    if not isinstance(got, Tensor):
        return f"{name}: expected a tensor, got {type(got).__name__}"
    try:
        w, wdt = _typed(_array(want))
    except Exception:
        return f"{name}: expected element type {w.dtype} has no Ember equivalent"
    if got.dtype is not wdt:
        return f"{name}: element type {got.dtype}, expected {wdt}"
    g = (got.cast(DType.FLOAT32) if got.dtype is DType.BFLOAT16 else got).to_numpy()
    if tuple(g.shape) != tuple(w.shape):
        return f"{name}: shape {list(g.shape)}, expected {list(w.shape)}"
    if wdt.is_float:
        rtol, atol = TOLERANCE[wdt]
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        ok = np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)
        if not ok.all():
            i = int(np.argmax(~ok.reshape(-1)))
            return (f"{name}: {int((~ok).sum())} of {ok.size} values differ; first at flat index {i}: "
                    f"{g64.reshape(-1)[i]!r} vs expected {w64.reshape(-1)[i]!r}")
        return None
    if not np.array_equal(g, w):
        bad = int((g != w).sum())
        return f"{name}: {bad} of {w.size} values differ"
    return None


def run_case(case: Any, device: Device) -> CaseResult:
    """Import ``case.model`` on ``device``, run every data set and compare the outputs."""
    ops = _ops(case)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            device.backend.seed(0)  # random ops give the same draws in every run (the list stays exact)
            model = load_model(case.model, device)
            outputs = [o.name for o in case.model.graph.output]
            for inputs, expected in case.data_sets:
                got = model(*[_to_ember(x, device) for x in inputs])
                got_list = list(got) if isinstance(got, tuple) else [got]
                if len(got_list) != len(expected):
                    return CaseResult(case.name, "fail", ops, f"{len(got_list)} outputs, expected {len(expected)}",
                                      time.perf_counter() - start)
                for name, g, w in zip(outputs, got_list, expected):
                    err = _compare(name, g, w)
                    if err:
                        return CaseResult(case.name, "fail", ops, err, time.perf_counter() - start)
    except OnnxImportError as exc:
        return CaseResult(case.name, "error", ops, f"OnnxImportError: {exc}", time.perf_counter() - start)
    except Exception as exc:  # the runner reports every failure; it never stops the suite
        return CaseResult(case.name, "error", ops, f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
    return CaseResult(case.name, "pass", ops, "", time.perf_counter() - start)


@dataclasses.dataclass
class Report:
    """The results of a run and their check against the backend's known failures.

    Attributes:
        results: one per case run.
        unexpected_failures: cases that failed and are not listed.
        unexpected_passes: listed cases that passed (remove them from the list).
        stale: list entries that match no case of the suite.
    """

    backend: str
    results: list[CaseResult]
    unexpected_failures: list[CaseResult]
    unexpected_passes: list[str]
    stale: list[str]

    @property
    def passed(self) -> int:
        return sum(r.status == "pass" for r in self.results)

    @property
    def ok(self) -> bool:
        return not (self.unexpected_failures or self.unexpected_passes or self.stale)

    def per_op(self) -> dict[str, tuple[int, int]]:
        """op -> (passed, total) over the cases that use it."""
        total: Counter[str] = Counter()
        good: Counter[str] = Counter()
        for r in self.results:
            for op in r.ops:
                total[op] += 1
                good[op] += r.status == "pass"
        return {op: (good[op], total[op]) for op in sorted(total)}


def _matches(pattern: str, name: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern) if any(c in pattern for c in "*?[") else name == pattern


def run_suite(backend: str, filter: str | None = None, known: dict[str, str] | None = None,
              progress: Any = None) -> Report:
    """Run every node case (those whose name matches the regex ``filter``) on ``backend``.

    Args:
        backend: an installed Ember backend name.
        filter: a regular expression searched in case names (``"conv|pool"``).
        known: the known failures (default: this package's list for ``backend``).
        progress: called with each :class:`CaseResult` as it finishes.
    """
    from .known_failures import KNOWN_FAILURES

    device = backend_device(backend)
    known = KNOWN_FAILURES.get(backend, {}) if known is None else known
    cases = load_cases()
    rx = re.compile(filter) if filter else None
    selected = [c for c in cases if rx is None or rx.search(c.name)]
    results = []
    for case in selected:
        r = run_case(case, device)
        results.append(r)
        if progress is not None:
            progress(r)
    listed = {r.name: any(_matches(p, r.name) for p in known) for r in results}
    unexpected_failures = [r for r in results if r.status != "pass" and not listed[r.name]]
    unexpected_passes = [r.name for r in results if r.status == "pass" and listed[r.name]]
    names = [c.name for c in cases]
    stale = [p for p in known if not any(_matches(p, n) for n in names)]
    return Report(backend, results, unexpected_failures, unexpected_passes, stale)
