"""Gradient clipping against ``torch.nn.utils.clip_grad_norm_`` / ``clip_grad_value_`` (one tensor at a time,
as Burn clips each parameter's gradient)."""

from __future__ import annotations

import numpy as np
import pytest

from ember import Tensor
from ember.optim import GradientClippingConfig
from test_optim_problem import ad_device

torch = pytest.importorskip("torch")


@pytest.fixture(params=["numpy", "torch"])
def inner(request):
    return ad_device(request.param).inner


GRADS = [
    np.array([[0.6294, 0.0940, 0.8176], [0.7152, -0.9559, 0.7893]], np.float32),  # norm ~ 1.87
    np.array([3.0, -4.0], np.float32),  # norm 5
    np.array([0.3, 0.4], np.float32),  # norm 0.5: below every threshold, unchanged
    np.zeros((2, 2), np.float32),  # zero gradient: no division by zero
]


@pytest.mark.parametrize("max_norm", [0.5, 1.0, 2.2])
@pytest.mark.parametrize("i", range(len(GRADS)))
def test_clip_by_norm_matches_torch(inner, max_norm, i):
    g = GRADS[i]
    ours = GradientClippingConfig.norm(max_norm).clip(Tensor.from_data(g, inner)).to_numpy()
    t = torch.zeros(g.shape, requires_grad=True)
    t.grad = torch.tensor(g)
    torch.nn.utils.clip_grad_norm_([t], max_norm)
    np.testing.assert_allclose(ours, t.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert np.linalg.norm(ours) <= max_norm * (1 + 1e-5)


@pytest.mark.parametrize("value", [0.05, 0.5, 5.0])
@pytest.mark.parametrize("i", range(len(GRADS)))
def test_clip_by_value_matches_torch(inner, value, i):
    g = GRADS[i]
    ours = GradientClippingConfig.value(value).clip(Tensor.from_data(g, inner)).to_numpy()
    t = torch.zeros(g.shape, requires_grad=True)
    t.grad = torch.tensor(g)
    torch.nn.utils.clip_grad_value_([t], value)
    np.testing.assert_array_equal(ours, t.grad.numpy())


def test_clipping_config_names_and_json():
    cfg = GradientClippingConfig.norm(1.5)
    assert cfg.mode == "norm" and cfg.threshold == 1.5
    assert GradientClippingConfig.from_dict(cfg.to_dict()) == cfg
    assert GradientClippingConfig.value(2).threshold == 2.0
