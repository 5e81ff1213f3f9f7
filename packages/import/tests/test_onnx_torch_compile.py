"""Imported ONNX models captured by ``ember_torch.compile`` (the interpreter runs once, at capture): inference equal
to onnxruntime's, and fine-tuning steps equal to the same steps run eagerly. Inductor with the weights frozen
(``options={"freezing": True}``, issue 32) compiles for 20-60 s: with ``EMBER_SLOW_TESTS=1`` (``nox -s slow``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff
from ember.optim import GradientsParams, SgdConfig

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
ember_torch = pytest.importorskip("ember_torch")

from _onnx_models import MODELS, build, export  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402

NAMES = ["guide_cnn", "gelu_mlp", "transformer"]
SLOW = pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"), reason="inductor compiles: EMBER_SLOW_TESTS=1")


@pytest.fixture(scope="module")
def inductor_cache(tmp_path_factory: Any) -> Iterator[None]:
    """One inductor cache directory for the module's compiles."""
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("inductor"))
    yield
    if old is None:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    else:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def exported(tmp_path_factory: Any) -> dict[str, tuple[Path, np.ndarray]]:
    root = tmp_path_factory.mktemp("onnx_torch_compile")
    out = {}
    for name in NAMES:
        x = MODELS[name].inputs(np.random.default_rng(0))
        out[name] = (export(build(name), x, root / f"{name}.onnx"), x)
    return out


def _ort(path: Path, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {sess.get_inputs()[0].name: x})[0], dtype=np.float64)


@pytest.mark.parametrize("name", NAMES)
def test_inference_compiled_equals_onnxruntime(exported: Any, name: str) -> None:
    path, x = exported[name]
    dev = ember.backend("torch").device()
    model = load_model(path, dev)
    step = ember_torch.compile(lambda m, inp: m(inp), mode="capture")
    inp = Tensor.from_data(x, dev)
    got = np.asarray(step(model, inp).to_numpy(), np.float64)
    want = _ort(path, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))
    # a second call replays the graph: the interpreter does not run again
    np.testing.assert_array_equal(np.asarray(step(model, inp).to_numpy(), np.float64), got)
    assert step.trace_count == 1


def _train_step(model: Any, optim: Any, inp: Tensor, lr: Any) -> tuple[Any, Tensor]:
    out = model(inp)
    loss = (out * out).mean()
    return optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model)), loss


def _fine_tune_both(step: Any, path: Path, x: np.ndarray, rtol: float) -> None:
    """Three SGD steps of ``step`` and of the eager step from the same start: equal losses and parameters."""
    dev = Autodiff(ember.backend("torch", threads=1)).device()
    m_c, m_e = load_model(path, dev), load_model(path, dev)
    o_c, o_e = SgdConfig().init(), SgdConfig().init()
    inp = Tensor.from_data(x, dev)
    lr = Tensor.from_data(np.asarray([0.05]), dev.inner)
    lc, le = [], []
    for _ in range(3):
        m_c, loss = step(m_c, o_c, inp, lr)
        lc.append(loss.into_scalar())
        m_e, loss = _train_step(m_e, o_e, inp, 0.05)
        le.append(loss.into_scalar())
    np.testing.assert_allclose(lc, le, rtol=rtol)
    assert lc[-1] < lc[0]
    for a, b in zip(m_c.params(), m_e.params(), strict=True):
        np.testing.assert_allclose(a.val().to_numpy(), b.val().to_numpy(), rtol=rtol, atol=rtol / 10)
    assert step.trace_count == 1


@pytest.mark.parametrize("name", ["guide_cnn", "gelu_mlp"])
def test_fine_tuning_compiled_equals_eager(exported: Any, name: str) -> None:
    path, x = exported[name]
    _fine_tune_both(ember_torch.compile(_train_step, mode="capture"), path, x, 1e-5)


@SLOW
@pytest.mark.usefixtures("inductor_cache")
@pytest.mark.parametrize("name", ["guide_cnn", "transformer"])
def test_inference_frozen_equals_eager_and_onnxruntime(exported: Any, tmp_path: Path, name: str) -> None:
    from ember_torch._capture_freeze import FrozenRun

    path, x = exported[name]
    dev = ember.backend("torch", threads=1).device()
    model = load_model(path, dev)
    step = ember_torch.compile(lambda m, inp: m(inp), mode="default", options={"freezing": True})
    inp = Tensor.from_data(x, dev)
    got = np.asarray(step(model, inp).to_numpy(), np.float64)
    eager = np.asarray(model(inp).to_numpy(), np.float64)
    want = _ort(path, x)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, eager, rtol=1e-4, atol=1e-4 * scale)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)
    (entry,) = step._cache.values()
    assert isinstance(entry.run, FrozenRun) and len(entry.weights) == len(list(model.params()))
    # the model with other weights loaded (the same parameter ids): the same capture, weights frozen again
    other = export(build(name, seed=1), x, tmp_path / "other.onnx")
    reloaded = model.load_record(load_model(other, dev).into_record())
    got2 = np.asarray(step(reloaded, inp).to_numpy(), np.float64)
    want2 = _ort(other, x)
    np.testing.assert_allclose(got2, want2, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want2).max())))
    assert np.abs(want2 - want).max() > 1e-3  # the weights differ: a stale constant would fail above
    assert step.trace_count == 1 and entry.run.compiles == 2


@SLOW
@pytest.mark.usefixtures("inductor_cache")
def test_fine_tuning_with_freezing_option_trains_the_parameters(exported: Any) -> None:
    """Under ``Autodiff`` the parameters are trained: the option leaves them inputs of the compiled step."""
    path, x = exported["gelu_mlp"]
    step = ember_torch.compile(_train_step, mode="default", options={"freezing": True})
    _fine_tune_both(step, path, x, 1e-4)
    assert all(not e.weights for e in step._cache.values())
