"""ONNX's node test suite run against an Ember backend (the conformance score of ONNX import).

The cases come from ``onnx.backend.test.loader.load_model_tests(kind="node")`` (1,884 in onnx 1.23.2): each
is a one-node model (or its function expansion) with input and expected output arrays. A case **passes**
when :func:`ember_import.onnx.load_model` imports it and every output matches: same element type, same
shape, values within ``rtol=1e-3, atol=1e-5`` for float32/float64 (``rtol=1e-2, atol=1e-3`` for
float16/bfloat16), NaN where NaN is expected, integers and bools exact.

Each backend keeps a strict known-failures list (``known_failures.py``: name -> reason): a listed case that
passes, and an entry naming no case, fail the run, as ``ember.testing`` does.

Command line: ``python -m ember_import.onnx.conformance --backend numpy [-k FILTER] [--per-op] [-v]``.
"""

from __future__ import annotations

from ._runner import CaseResult, Report, backend_device, run_case, run_suite
from .known_failures import KNOWN_FAILURES

__all__ = ["CaseResult", "KNOWN_FAILURES", "Report", "backend_device", "run_case", "run_suite"]
