"""Parameter trajectories over 20 steps equal PyTorch's ``torch.optim`` with matching hyper-parameters."""

from __future__ import annotations

import numpy as np
import pytest

from ember.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)
from test_optim_problem import dev_fixture, problem, run_ember  # noqa: F401 - dev_fixture is the `dev` fixture

torch = pytest.importorskip("torch")

STEPS = 20


def run_torch(make_optim, p, steps: int = STEPS, lr=0.05, clip=None):
    """The torch trajectory of the same problem: ``[(W, b) after each step]`` in float32."""
    x, y = torch.tensor(p["x"]), torch.tensor(p["y"])
    w = torch.tensor(p["w0"], requires_grad=True)
    b = torch.tensor(p["b0"], requires_grad=True)
    opt = make_optim([w, b], lr if not callable(lr) else lr(0))
    out = []
    for i in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr(i) if callable(lr) else lr
        opt.zero_grad()
        ((x @ w + b - y) ** 2).mean().backward()
        if clip is not None:
            clip(w, b)
        opt.step()
        out.append((w.detach().numpy().copy(), b.detach().numpy().copy()))
    return out


def assert_same_trajectory(ours, theirs, rtol=2e-4, atol=2e-5):
    assert len(ours) == len(theirs)
    moved = np.abs(ours[-1][0] - theirs[0][0]).max()
    assert moved > 1e-3, "the parameters did not move: the comparison would be vacuous"
    for i, ((w, b), (tw, tb)) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(w, tw, rtol=rtol, atol=atol, err_msg=f"weight after step {i + 1}")
        np.testing.assert_allclose(b, tb, rtol=rtol, atol=atol, err_msg=f"bias after step {i + 1}")


CASES = {
    "sgd": (SgdConfig(), lambda ps, lr: torch.optim.SGD(ps, lr=lr)),
    "sgd_momentum_wd": (
        SgdConfig(WeightDecayConfig(0.01), MomentumConfig(momentum=0.9, dampening=0.0, nesterov=False)),
        lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.9, dampening=0.0, weight_decay=0.01),
    ),
    "sgd_burn_default_momentum": (  # Burn's MomentumConfig defaults: 0.9, dampening 0.1
        SgdConfig().with_momentum(MomentumConfig()),
        lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.9, dampening=0.1),
    ),
    "sgd_nesterov": (
        SgdConfig(momentum=MomentumConfig(momentum=0.8, dampening=0.0, nesterov=True)),
        lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.8, nesterov=True),
    ),
    "adam": (AdamConfig(epsilon=1e-8), lambda ps, lr: torch.optim.Adam(ps, lr=lr, eps=1e-8)),
    "adam_burn_defaults": (AdamConfig(), lambda ps, lr: torch.optim.Adam(ps, lr=lr, betas=(0.9, 0.999), eps=1e-5)),
    "adam_wd_amsgrad": (
        AdamConfig(beta_1=0.8, beta_2=0.99, epsilon=1e-7, amsgrad=True, weight_decay=WeightDecayConfig(0.05)),
        lambda ps, lr: torch.optim.Adam(ps, lr=lr, betas=(0.8, 0.99), eps=1e-7, amsgrad=True, weight_decay=0.05),
    ),
    "adamw": (
        AdamWConfig(epsilon=1e-8, weight_decay=0.1),
        lambda ps, lr: torch.optim.AdamW(ps, lr=lr, eps=1e-8, weight_decay=0.1),
    ),
    "adamw_burn_defaults": (
        AdamWConfig(), lambda ps, lr: torch.optim.AdamW(ps, lr=lr, eps=1e-5, weight_decay=1e-4),
    ),
    "adamw_amsgrad": (
        AdamWConfig(weight_decay=0.05, amsgrad=True),
        lambda ps, lr: torch.optim.AdamW(ps, lr=lr, eps=1e-5, weight_decay=0.05, amsgrad=True),
    ),
    "adagrad": (
        AdaGradConfig(lr_decay=0.1, epsilon=1e-10),
        lambda ps, lr: torch.optim.Adagrad(ps, lr=lr, lr_decay=0.1, eps=1e-10),
    ),
    "adagrad_wd": (
        AdaGradConfig(weight_decay=WeightDecayConfig(0.05)),
        lambda ps, lr: torch.optim.Adagrad(ps, lr=lr, eps=1e-5, weight_decay=0.05),
    ),
    "rmsprop": (
        RmsPropConfig(momentum=0.0, epsilon=1e-8),
        lambda ps, lr: torch.optim.RMSprop(ps, lr=lr, alpha=0.99, eps=1e-8),
    ),
    "rmsprop_burn_defaults": (  # Burn: momentum 0.9, eps 1e-5
        RmsPropConfig(), lambda ps, lr: torch.optim.RMSprop(ps, lr=lr, alpha=0.99, eps=1e-5, momentum=0.9),
    ),
    "rmsprop_centered_wd": (
        RmsPropConfig(alpha=0.9, momentum=0.5, centered=True, weight_decay=WeightDecayConfig(0.02)),
        lambda ps, lr: torch.optim.RMSprop(
            ps, lr=lr, alpha=0.9, eps=1e-5, momentum=0.5, centered=True, weight_decay=0.02
        ),
    ),
}

LRS = {"sgd": 0.05, "adagrad": 0.1}


@pytest.mark.parametrize("case", sorted(CASES))
def test_trajectory_matches_torch(dev, case):
    cfg, make = CASES[case]
    lr = 0.01 if case.startswith("rmsprop") else LRS.get(case.split("_")[0], 0.02)
    p = problem()
    _, ours = run_ember(cfg.init(), dev, p, STEPS, lr)
    theirs = run_torch(make, p, STEPS, lr)
    assert_same_trajectory(ours, theirs)


def test_trajectory_with_a_changing_lr_matches_torch(dev):
    def lr(i):
        return 0.05 * 0.9**i

    p = problem()
    _, ours = run_ember(AdamConfig(epsilon=1e-8).init(), dev, p, STEPS, lr)
    theirs = run_torch(lambda ps, lr0: torch.optim.Adam(ps, lr=lr0, eps=1e-8), p, STEPS, lr)
    assert_same_trajectory(ours, theirs)


@pytest.mark.parametrize("mode", ["norm", "value"])
def test_clipped_trajectory_matches_torch_clip_utils(dev, mode):
    # clipping is per parameter tensor (Burn), so torch's utilities are applied to each tensor separately
    threshold = 0.3 if mode == "norm" else 0.05
    clip_cfg = GradientClippingConfig.norm(threshold) if mode == "norm" else GradientClippingConfig.value(threshold)

    def clip(w, b):
        for t in (w, b):
            if mode == "norm":
                torch.nn.utils.clip_grad_norm_([t], threshold)
            else:
                torch.nn.utils.clip_grad_value_([t], threshold)

    p = problem()
    cfg = SgdConfig(momentum=MomentumConfig(momentum=0.9, dampening=0.0)).with_grad_clipping(clip_cfg)
    _, ours = run_ember(cfg.init(), dev, p, STEPS, 0.05)
    theirs = run_torch(lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.9), p, STEPS, 0.05, clip=clip)
    unclipped = run_torch(lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.9), p, STEPS, 0.05)
    assert np.abs(unclipped[-1][0] - theirs[-1][0]).max() > 1e-2, "clipping must be active in this test"
    assert_same_trajectory(ours, theirs)
