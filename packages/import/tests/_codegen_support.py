"""Shared by the ModelGen test files: one-node models, generate a model's source, import it and load its record
on numpy."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx

import ember
from ember_import.onnx import ModelGen


def generate_numpy(model: Any, tmp: Path, tag: str, prefix: str) -> tuple[Any, Any, str]:
    """``(module, device, source)``: ``model`` saved as ``tmp/<tag>.onnx``, generated into ``tmp/<tag>/``, the
    source imported as module ``<prefix>_<tag>`` and its record loaded on the numpy backend's device."""
    path = tmp / f"{tag}.onnx"
    onnx.save(model, path)
    py = Path(ModelGen().input(path).out_dir(tmp / tag).run())
    spec = importlib.util.spec_from_file_location(f"{prefix}_{tag}", py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    dev = ember.backend("numpy").device()
    return mod.Model.from_record(str(py.parent / "model.mpk"), dev), dev, py.read_text()


def one_node_model(node: Any, inputs: list[tuple[str, int, list[Any]]], out: tuple[str, int, int],
                   opset: int = 18) -> Any:
    """A one-node model; ``inputs`` are (name, element type, shape), ``out`` is (name, element type, rank): the
    output's dims are left unknown, as exporters write them when they depend on an input's values."""
    h = onnx.helper
    ins = [h.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    name, et, rank = out
    outs = [h.make_tensor_value_info(name, et, [None] * rank)]
    return h.make_model(h.make_graph([node], "g", ins, outs), opset_imports=[h.make_opsetid("", opset)])


def lint_generated(tool: str, py: Path) -> subprocess.CompletedProcess[str]:
    """``ruff check`` or ``mypy`` (``tool``) on the generated file ``py`` with the repository's settings."""
    config = str(Path(__file__).resolve().parents[3] / "pyproject.toml")
    args = ["ruff", "check", "--no-cache", "--config", config] if tool == "ruff" else ["mypy", "--config-file", config]
    return subprocess.run([sys.executable, "-m", *args, str(py)], capture_output=True, text=True, cwd=py.parent)


def graph_model(nodes: list[Any], ins: list[Any], outs: list[Any], opset: int, inits: list[Any] | None = None) -> Any:
    """A model of ``nodes`` with value infos ``ins``/``outs``, initializers ``inits``, the default domain at
    ``opset``."""
    h = onnx.helper
    graph = h.make_graph(nodes, "g", ins, outs, initializer=inits or [])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
