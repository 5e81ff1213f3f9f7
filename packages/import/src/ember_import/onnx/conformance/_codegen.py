"""ONNX's node test cases through the code generator: each case is written as Ember source by ``ModelGen``,
imported, run on a backend and compared with the expected outputs, as :mod:`._runner` does for the runtime module.

The generator's contract is *right or refused*: a case either passes, or generation refuses it with
:class:`~ember_import.onnx.ModelGenError` (an operator or attribute it has no code for), or the backend lacks an
element type the case needs. A wrong value or any other error is a failure (``--codegen`` exits 1 on one).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ember import DTypeError
from ember.backend import Device

from .._errors import OnnxImportError
from ..codegen import ModelGen, ModelGenError
from ._runner import CaseResult, _compare, _ops, _to_ember, backend_device, load_cases

__all__ = ["CodegenReport", "run_codegen_case", "run_codegen_suite"]

#: ops whose outputs are random draws: a generated model's values cannot equal the case's expected ones
_RANDOM = frozenset({"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                     "Multinomial"})


def _draws(case: Any) -> bool:
    """Whether the case draws random numbers: a random op, or a ``Dropout`` given a ``training_mode`` input (in
    training it draws its keep mask)."""
    return any(n.op_type in _RANDOM or (n.op_type == "Dropout" and len(n.input) > 2 and n.input[2])
               for n in case.model.graph.node)


@dataclasses.dataclass
class CodegenReport:
    """Results of a code-generation run: ``status`` of each case is ``pass``, ``refused`` (the generator said
    why), ``no-type`` (the backend lacks an element type), ``random`` (the case draws random numbers: generated,
    imported and run, but its values are not compared, as the runtime's known failures list them) or ``fail``."""

    backend: str
    results: list[CaseResult]

    def counts(self) -> Counter[str]:
        return Counter(r.status for r in self.results)

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "fail"]


def _load_generated(py: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_codegen_case_{name}", py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses (the generated @config, Module fields) look their module up
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    return mod


def run_codegen_case(case: Any, device: Device, folder: Path) -> CaseResult:
    """Generate, import and run one node case in ``folder``."""
    import onnx

    ops = _ops(case)
    start = time.perf_counter()

    def result(status: str, message: str = "") -> CaseResult:
        return CaseResult(case.name, status, ops, message, time.perf_counter() - start)

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        folder.mkdir(parents=True, exist_ok=True)
        onnx.save(case.model, folder / "model.onnx")
        try:
            py = ModelGen().input(folder / "model.onnx").out_dir(folder).run()
        except (ModelGenError, OnnxImportError) as exc:
            return result("refused", f"{type(exc).__name__}: {exc}")
        try:
            device.backend.seed(0)
            net = _load_generated(py, case.name).Model.from_record(str(folder / "model.mpk"), device)
            outputs = [o.name for o in case.model.graph.output]
            for inputs, expected in case.data_sets:
                got = net(*[_to_ember(x, device) for x in inputs])
                got_list = list(got) if isinstance(got, tuple) else [got]
                for name, g, w in zip(outputs, got_list, expected):
                    err = _compare(name, g, w)
                    if err:
                        return result("random" if _draws(case) else "fail", err)
        except DTypeError as exc:
            if "does not support" in str(exc) or "has no Ember element type" in str(exc):
                return result("no-type", str(exc))
            return result("fail", f"DTypeError: {exc}")
        except Exception as exc:  # the runner reports every failure; it never stops the suite
            return result("fail", f"{type(exc).__name__}: {exc}")
    return result("pass")


def run_codegen_suite(backend: str, filter: str | None = None, progress: Any = None) -> CodegenReport:
    """Every node case (names matching the regex ``filter``) through ``ModelGen`` on ``backend``."""
    import re

    device = backend_device(backend)
    rx = re.compile(filter) if filter else None
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in load_cases():
            if rx is not None and not rx.search(case.name):
                continue
            r = run_codegen_case(case, device, Path(tmp) / case.name)
            results.append(r)
            if progress is not None:
                progress(r)
    return CodegenReport(backend, results)
