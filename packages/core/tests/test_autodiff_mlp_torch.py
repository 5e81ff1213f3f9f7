"""A 3-layer MLP's gradients under ``Autodiff(numpy)`` equal PyTorch's for the same weights and
inputs (float64), and a second run on the torch backend when it is installed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff
from ember.tensor import activation as A

torch = pytest.importorskip("torch")

rng = np.random.default_rng(7)
SIZES = [(5, 16), (16, 12), (12, 4)]
PARAMS = {f"{k}{i}": v for i, (n, m) in enumerate(SIZES) for k, v in
          (("w", rng.standard_normal((n, m)) / np.sqrt(n)), ("b", rng.standard_normal(m) * 0.1))}
X = rng.standard_normal((8, 5))
Y = rng.integers(0, 4, 8)


def _ember_grads(inner: Any) -> dict[str, np.ndarray]:
    dev = Autodiff(inner).device()
    p = {k: Tensor.from_floats(v, dev).require_grad() for k, v in PARAMS.items()}
    x = Tensor.from_floats(X, dev)
    h = A.relu(x @ p["w0"] + p["b0"])
    h = A.tanh(h @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    y = Tensor.from_ints(Y, dev).unsqueeze_dim(1)
    loss = A.log_softmax(logits, 1).gather(1, y).mean().neg()
    grads = loss.backward()
    out = {k: t.grad(grads).to_numpy() for k, t in p.items()}
    out["loss"] = loss.to_numpy()
    return out


def _torch_grads() -> dict[str, np.ndarray]:
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in PARAMS.items()}
    x = torch.tensor(X, dtype=torch.float64)
    h = torch.relu(x @ p["w0"] + p["b0"])
    h = torch.tanh(h @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(Y))
    loss.backward()
    out = {k: t.grad.numpy() for k, t in p.items()}
    out["loss"] = np.array([loss.item()])
    return out


def _backends() -> list[str]:
    names = ["numpy"]
    try:
        ember.backend("torch")
        names.append("torch")
    except ember.EmberError:
        pass
    return names


@pytest.mark.parametrize("name", _backends())
def test_autodiff_mlp_gradients_match_pytorch(name: str) -> None:
    ours = _ember_grads(ember.backend(name, float_dtype="float64"))
    ref = _torch_grads()
    for k in ref:
        np.testing.assert_allclose(ours[k], ref[k], rtol=1e-10, atol=1e-12, err_msg=k)


def test_autodiff_mlp_float32_close_to_pytorch() -> None:
    ours = _ember_grads(ember.backend("numpy", float_dtype="float32"))
    ref = _torch_grads()
    for k in ref:
        np.testing.assert_allclose(ours[k], ref[k], rtol=1e-4, atol=1e-5, err_msg=k)
