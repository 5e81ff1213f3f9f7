"""The activation layers against ``torch.nn`` (forward and input gradients; PRelu's weight gradient)
on every installed backend, and their configs."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from _nn_support import (
    BACKENDS,
    ad_device,
    check_grads,
    param_np,
    tensor,
    torch_t,
)
from ember import nn

torch = pytest.importorskip("torch")
T = torch.nn
rng = np.random.default_rng(2)

CASES = [
    ("relu", lambda: nn.Relu(), lambda: T.ReLU()),
    ("leaky_relu", lambda: nn.LeakyReluConfig(0.2).init(), lambda: T.LeakyReLU(0.2)),
    ("gelu", lambda: nn.Gelu(), lambda: T.GELU()),
    ("gelu_tanh", lambda: nn.GeluConfig(approximate=True).init(), lambda: T.GELU(approximate="tanh")),
    ("sigmoid", lambda: nn.Sigmoid(), lambda: T.Sigmoid()),
    ("tanh", lambda: nn.Tanh(), lambda: T.Tanh()),
    ("silu", lambda: nn.Silu(), lambda: T.SiLU()),
    ("swish", lambda: nn.Swish(), lambda: T.SiLU()),
    ("elu", lambda: nn.EluConfig(0.7).init(), lambda: T.ELU(0.7)),
    ("celu", lambda: nn.CeluConfig(1.3).init(), lambda: T.CELU(1.3)),
    ("selu", lambda: nn.Selu(), lambda: T.SELU()),
    ("softplus", lambda: nn.SoftplusConfig(2.0).init(), lambda: T.Softplus(2.0, threshold=1e9)),
    ("softsign", lambda: nn.Softsign(), lambda: T.Softsign()),
    ("hard_sigmoid_torch", lambda: nn.HardSigmoidConfig(1 / 6, 0.5).init(), lambda: T.Hardsigmoid()),
    ("hard_swish", lambda: nn.HardSwish(), lambda: T.Hardswish()),
    ("mish", lambda: nn.Mish(), lambda: T.Mish()),
    ("glu", lambda: nn.GluConfig(1).init(), lambda: T.GLU(1)),
]


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_activation_matches_torch(backend_name: str, case: tuple) -> None:
    _, ours, theirs = case
    dev = ad_device(backend_name)
    xn = rng.standard_normal((3, 4, 5)) * 3
    xn[np.abs(xn) < 1e-3] = 0.5  # keep away from kinks where subgradients may differ
    xn[np.abs(np.abs(xn) - 3) < 1e-3] = 1.0
    x = tensor(xn, dev).require_grad()
    xt = torch_t(xn, True)
    check_grads(ours()(x), theirs().double()(xt), [("x", x)], [xt])


def test_hard_sigmoid_burn_defaults() -> None:
    dev = ember.backend("numpy").device()
    x = np.array([-4.0, -1.0, 0.0, 1.0, 4.0])
    out = nn.HardSigmoid()(tensor(x, dev)).to_numpy()
    np.testing.assert_allclose(out, np.clip(0.2 * x + 0.5, 0, 1), rtol=1e-6)


def test_prelu_per_channel_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    layer = nn.PReluConfig(num_parameters=4, alpha=0.1).init(dev)
    alpha = np.array([0.1, -0.2, 0.3, 0.05])
    layer = layer.replace(alpha=layer.alpha.with_val(tensor(alpha, dev)))
    xn = rng.standard_normal((2, 4, 3))
    x = tensor(xn, dev).require_grad()
    xt, at = torch_t(xn, True), torch_t(alpha, True)
    check_grads(layer(x), torch.nn.functional.prelu(xt, at), [("x", x), ("alpha", layer.alpha.val())], [xt, at])
    assert param_np(nn.PReluConfig().init(dev).alpha).tolist() == [0.25]  # Burn's and PyTorch's default


def test_activation_rejects_int_input() -> None:
    dev = ember.backend("numpy").device()
    with pytest.raises(ember.KindError, match="relu"):
        nn.Relu()(ember.Tensor.from_ints([1, 2], dev))
