"""BatchNorm, LayerNorm, GroupNorm, InstanceNorm and RmsNorm against PyTorch (forward, input and
weight gradients) on every installed backend; BatchNorm's running statistics and inference mode."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from _nn_support import (
    BACKENDS,
    ad_device,
    assert_close,
    check_grads,
    param_np,
    tensor,
    torch_t,
)
from ember import nn

torch = pytest.importorskip("torch")
F = torch.nn.functional
rng = np.random.default_rng(5)


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def _affine(layer: nn.Module) -> tuple[np.ndarray, np.ndarray]:
    # non-trivial gamma / beta so their gradients and effect are tested
    g = 1.0 + 0.3 * rng.standard_normal(layer.gamma.shape)
    b = 0.2 * rng.standard_normal(layer.gamma.shape)
    return g, b


def _with_affine(layer: nn.Module, g: np.ndarray, b: np.ndarray | None, dev: object) -> nn.Module:
    changes = {"gamma": layer.gamma.with_val(tensor(g, dev))}
    if b is not None:
        changes["beta"] = layer.beta.with_val(tensor(b, dev))
    return layer.replace(**changes)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 3, 2)])
def test_batch_norm_train_matches_torch(backend_name: str, shape: tuple[int, ...]) -> None:
    dev = ad_device(backend_name)
    bn = nn.BatchNormConfig(3, momentum=0.2).init(dev)
    g, b = _affine(bn)
    bn = _with_affine(bn, g, b, dev)
    xn = rng.standard_normal(shape) * 2 + 1
    x = tensor(xn, dev).require_grad()
    xt, gt, bt = torch_t(xn, True), torch_t(g, True), torch_t(b, True)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    expected = F.batch_norm(xt, rm, rv, gt, bt, training=True, momentum=0.2, eps=1e-5)
    check_grads(bn(x), expected, [("x", x), ("gamma", bn.gamma.val()), ("beta", bn.beta.val())], [xt, gt, bt])
    # running mean as PyTorch; running var from the *biased* batch variance (Burn's convention)
    assert_close(bn.running_mean.value(), rm.numpy())
    dims = tuple(i for i in range(len(shape)) if i != 1)
    assert_close(bn.running_var.value(), 0.8 + 0.2 * xn.var(axis=dims))


def test_batch_norm_inference_after_valid(backend_name: str) -> None:
    dev = ad_device(backend_name)
    bn = nn.BatchNormConfig(3).init(dev)
    for _ in range(3):
        bn(tensor(rng.standard_normal((8, 3, 4)) + 2.0, dev))
    valid = bn.valid()
    xn = rng.standard_normal((2, 3, 4))
    rm, rv = param_np(valid.running_mean), param_np(valid.running_var)
    expected = (xn - rm[None, :, None]) / np.sqrt(rv[None, :, None] + 1e-5)
    before = rm.copy()
    assert_close(valid(tensor(xn, valid.gamma.device)), expected)
    np.testing.assert_array_equal(param_np(valid.running_mean), before)  # no update at inference


def test_layer_norm_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    ln = nn.LayerNormConfig(6).init(dev)
    g, b = _affine(ln)
    ln = _with_affine(ln, g, b, dev)
    xn = rng.standard_normal((2, 4, 6)) * 3
    x = tensor(xn, dev).require_grad()
    xt, gt, bt = torch_t(xn, True), torch_t(g, True), torch_t(b, True)
    check_grads(ln(x), F.layer_norm(xt, (6,), gt, bt, 1e-5),
                [("x", x), ("gamma", ln.gamma.val()), ("beta", ln.beta.val())], [xt, gt, bt])


def test_rms_norm_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    rn = nn.RmsNormConfig(5).init(dev)
    g, _ = _affine(rn)
    rn = _with_affine(rn, g, None, dev)
    xn = rng.standard_normal((3, 5))
    x = tensor(xn, dev).require_grad()
    xt, gt = torch_t(xn, True), torch_t(g, True)
    check_grads(rn(x), F.rms_norm(xt, (5,), gt, 1e-5), [("x", x), ("gamma", rn.gamma.val())], [xt, gt])


@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 6, 3, 4)])
def test_group_norm_matches_torch(backend_name: str, shape: tuple[int, ...]) -> None:
    dev = ad_device(backend_name)
    gn = nn.GroupNormConfig(3, 6).init(dev)
    g, b = _affine(gn)
    gn = _with_affine(gn, g, b, dev)
    xn = rng.standard_normal(shape)
    x = tensor(xn, dev).require_grad()
    xt, gt, bt = torch_t(xn, True), torch_t(g, True), torch_t(b, True)
    check_grads(gn(x), F.group_norm(xt, 3, gt, bt, 1e-5),
                [("x", x), ("gamma", gn.gamma.val()), ("beta", gn.beta.val())], [xt, gt, bt])


def test_instance_norm_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    inn = nn.InstanceNormConfig(4).init(dev)
    g, b = _affine(inn)
    inn = _with_affine(inn, g, b, dev)
    xn = rng.standard_normal((2, 4, 3, 5))
    x = tensor(xn, dev).require_grad()
    xt, gt, bt = torch_t(xn, True), torch_t(g, True), torch_t(b, True)
    check_grads(inn(x), F.instance_norm(xt, weight=gt, bias=bt, eps=1e-5),
                [("x", x), ("gamma", inn.gamma.val()), ("beta", inn.beta.val())], [xt, gt, bt])


def test_norm_errors_name_layer_and_shape() -> None:
    dev = ember.backend("numpy").device()
    with pytest.raises(ember.ShapeError, match=r"BatchNorm: expected input of shape \[batch, channels, \.\.\.\] "
                                                r"with channels = 3, got shape \[2, 4, 5\]"):
        nn.BatchNormConfig(3).init(dev)(tensor(np.zeros((2, 4, 5)), dev))
    with pytest.raises(ember.ShapeError, match="LayerNorm.*d_model = 6.*got shape"):
        nn.LayerNormConfig(6).init(dev)(tensor(np.zeros((2, 5)), dev))
    with pytest.raises(ember.ConfigError, match=r"num_groups \(4\) must divide num_channels \(6\)"):
        nn.GroupNormConfig(4, 6).init(dev)
    no_affine = nn.GroupNormConfig(2, 4, affine=False).init(dev)
    assert no_affine.gamma is None and no_affine.num_params() == 0
