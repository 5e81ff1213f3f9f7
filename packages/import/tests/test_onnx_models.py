"""Real models exported from PyTorch and imported with ``ember_import.onnx``, on every installed backend:
outputs equal onnxruntime's within 1e-4; gradients of a loss through the imported model (under Autodiff)
equal torch's on the source model; the model compiles with ``ember_jax.jit``; it saves and loads with every
file recorder. Each model is exported with PyTorch's optimizations (BatchNorm folded, weights renamed) and
without (``optimize=False``, names kept)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember import record as R
from ember.autodiff import Autodiff

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from _onnx_backends import BACKENDS  # noqa: E402
from _onnx_models import MODELS, build, export  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402

TOL = 1e-4




@pytest.fixture(scope="module")
def exported(tmp_path_factory: Any) -> dict[tuple[str, bool], tuple[Path, Any, np.ndarray]]:
    """name, optimize -> (path, torch model, example input); exported once per test module."""
    root = tmp_path_factory.mktemp("onnx_models")
    out = {}
    for name, case in MODELS.items():
        x = case.inputs(np.random.default_rng(0))
        model = build(name)
        for optimize in (True, False):
            out[name, optimize] = (export(model, x, root / f"{name}_{optimize}.onnx", optimize=optimize), model, x)
    return out


def _ort(path: Path, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {sess.get_inputs()[0].name: x})[0], dtype=np.float64)


def _input(x: np.ndarray, dev: Any) -> Tensor:
    return Tensor.from_data(x, dev, dtype="int64" if x.dtype == np.int64 else "float32")


def _np(t: Tensor) -> np.ndarray:
    return np.asarray(t.to_data().to_numpy(), dtype=np.float64)


def _close(got: np.ndarray, want: np.ndarray, tol: float = TOL) -> None:
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


CASES = [(n, o) for n in MODELS for o in (True, False)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("name", "optimize"), CASES, ids=[f"{n}-{'opt' if o else 'raw'}" for n, o in CASES])
def test_outputs_equal_onnxruntime(exported: Any, name: str, optimize: bool, backend: str) -> None:
    path, _, x = exported[name, optimize]
    dev = ember.backend(backend).device()
    model = load_model(path, dev)
    _close(_np(model(_input(x, dev))), _ort(path, x))


def _torch_grads(model: Any, x: np.ndarray, weights: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    model.zero_grad()
    xt = torch.from_numpy(x)
    if xt.is_floating_point():
        xt.requires_grad_(True)
    out = model(xt)
    (out.double() * torch.from_numpy(weights)).sum().backward()
    grads = {k: p.grad.double().numpy() for k, p in model.named_parameters() if p.grad is not None}
    return grads, (xt.grad.double().numpy() if xt.grad is not None else None)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("name", "optimize"), CASES, ids=[f"{n}-{'opt' if o else 'raw'}" for n, o in CASES])
def test_gradients_equal_torch(exported: Any, name: str, optimize: bool, backend: str) -> None:
    path, tmodel, x = exported[name, optimize]
    dev = Autodiff(ember.backend(backend)).device()
    model = load_model(path, dev)
    out_shape = tuple(_ort(path, x).shape)
    weights = np.random.default_rng(1).standard_normal(out_shape)
    want, want_x = _torch_grads(tmodel, x, weights)
    xin = _input(x, dev)
    if x.dtype != np.int64:
        xin = xin.require_grad()
    out = model(xin)
    grads = (out * Tensor.from_data(weights.astype(np.float32), dev)).sum().backward()
    compared = 0
    for key, param in model.weights.items():
        if key in want and want[key].shape == tuple(param.val().shape):
            _close(_np(param.val().grad(grads)), want[key], 1e-3)
            compared += 1
    if want_x is not None:
        _close(_np(xin.grad(grads)), want_x, 1e-3)
        compared += 1
    if not optimize:  # names kept: every parameter PyTorch stores as-is must have been compared
        assert compared >= 2
    assert compared >= 1


@pytest.mark.skipif("jax" not in BACKENDS, reason="ember-backend-jax is not installed")
@pytest.mark.parametrize("name", list(MODELS))
def test_compiles_with_ember_jax_jit(exported: Any, name: str) -> None:
    import ember_jax

    path, _, x = exported[name, True]
    dev = ember.backend("jax").device()
    model = load_model(path, dev)
    step = ember_jax.jit(lambda m, inp: m(inp))
    got = _np(step(model, _input(x, dev)))
    _close(got, _ort(path, x))
    step(model, _input(x, dev))
    assert step.trace_count == 1


RECORDERS = [R.NamedMpkFileRecorder, R.NamedMpkGzFileRecorder, R.BinFileRecorder, R.BinGzFileRecorder,
             R.PrettyJsonFileRecorder, R.JsonGzFileRecorder, R.SafetensorsFileRecorder]


@pytest.mark.parametrize("recorder", RECORDERS, ids=lambda r: r.__name__)
def test_saves_and_loads_with_every_recorder(exported: Any, recorder: Any, tmp_path: Path) -> None:
    path, _, x = exported["resnet18", False]
    dev = ember.backend("numpy").device()
    model = load_model(path, dev)
    model.save_file(tmp_path / "rec", recorder())
    zeroed = model.map(lambda p: p.with_val(p.val() * 0.0))
    loaded = zeroed.load_file(tmp_path / "rec", recorder(), dev)
    np.testing.assert_array_equal(_np(loaded(_input(x, dev))), _np(model(_input(x, dev))))
