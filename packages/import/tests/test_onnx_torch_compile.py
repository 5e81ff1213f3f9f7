"""Imported ONNX models captured by ``ember_torch.compile`` (the interpreter runs once, at capture): inference equal
to onnxruntime's, and fine-tuning steps equal to the same steps run eagerly."""

from __future__ import annotations

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


@pytest.mark.parametrize("name", ["guide_cnn", "gelu_mlp"])
def test_fine_tuning_compiled_equals_eager(exported: Any, name: str) -> None:
    path, x = exported[name]
    dev = Autodiff(ember.backend("torch")).device()

    def train_step(model: Any, optim: Any, inp: Tensor, lr: Any) -> tuple[Any, Tensor]:
        out = model(inp)
        loss = (out * out).mean()
        return optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model)), loss

    step = ember_torch.compile(train_step, mode="capture")
    m_c, m_e = load_model(path, dev), load_model(path, dev)
    o_c, o_e = SgdConfig().init(), SgdConfig().init()
    inp = Tensor.from_data(x, dev)
    lr = Tensor.from_data(np.asarray([0.05]), dev.inner)
    lc, le = [], []
    for _ in range(3):
        m_c, loss = step(m_c, o_c, inp, lr)
        lc.append(loss.into_scalar())
        m_e, loss = train_step(m_e, o_e, inp, 0.05)
        le.append(loss.into_scalar())
    np.testing.assert_allclose(lc, le, rtol=1e-5)
    assert lc[-1] < lc[0]
    for a, b in zip(m_c.params(), m_e.params(), strict=True):
        np.testing.assert_allclose(a.val().to_numpy(), b.val().to_numpy(), rtol=1e-5, atol=1e-6)
    assert step.trace_count == 1
