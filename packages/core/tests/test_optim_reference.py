"""Lion, Adan and Muon (absent from or approximate in torch.optim) against float64 numpy implementations of
the papers' / reference code's update rules, on the shared regression problem."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ember import Tensor
from ember.optim import (
    AdamWConfig,
    AdanConfig,
    AdjustLrFn,
    LionConfig,
    MomentumConfig,
    MuonConfig,
    WeightDecayConfig,
    zeropower_via_newtonschulz,
)
from test_optim_problem import dev_fixture, np_grads, problem, run_ember  # noqa: F401 - dev_fixture is `dev`

STEPS = 20


def reference(step_fn, p, lr, steps: int = STEPS):
    """Runs ``step_fn(lr, param, grad, state) -> (param, state)`` on (W, b) in float64."""
    w, b = p["w0"].astype(np.float64), p["b0"].astype(np.float64)
    sw = sb = None
    out = []
    for _ in range(steps):
        gw, gb = np_grads(w, b, p)
        w, sw = step_fn(lr, w, gw, sw)
        b, sb = step_fn(lr, b, gb, sb)
        out.append((w, b))
    return out


def check(ours, ref, rtol=1e-4, atol=1e-5):
    assert np.abs(ref[-1][0] - ref[0][0]).max() > 1e-3, "the parameters did not move"
    for i, ((w, b), (rw, rb)) in enumerate(zip(ours, ref)):
        np.testing.assert_allclose(w, rw, rtol=rtol, atol=atol, err_msg=f"weight after step {i + 1}")
        np.testing.assert_allclose(b, rb, rtol=rtol, atol=atol, err_msg=f"bias after step {i + 1}")


def lion_ref(b1, b2, wd):
    # Chen et al. 2023, Algorithm 2 (Lion with decoupled weight decay)
    def step(lr, x, g, m):
        m = np.zeros_like(x) if m is None else m
        c = np.sign(b1 * m + (1 - b1) * g)
        x = x * (1 - lr * wd) - lr * c
        return x, b2 * m + (1 - b2) * g

    return step


def adan_ref(b1, b2, b3, eps, wd, no_prox):
    # the Adan reference implementation (sail-sg/Adan, single-tensor path), Burn's beta convention
    def step(lr, x, g, s):
        if s is None:
            s = {"t": 0, "m": np.zeros_like(x), "n": np.zeros_like(x), "v": np.zeros_like(x), "prev": g}
        t = s["t"] + 1
        d = g - s["prev"]
        m = b1 * s["m"] + (1 - b1) * g
        n = b2 * s["n"] + (1 - b2) * d
        v = b3 * s["v"] + (1 - b3) * (g + b2 * d) ** 2
        denom = np.sqrt(v) / math.sqrt(1 - b3**t) + eps
        u = (m / (1 - b1**t) + b2 * n / (1 - b2**t)) / denom
        x = x * (1 - lr * wd) - lr * u if no_prox else (x - lr * u) / (1 + lr * wd)
        return x, {"t": t, "m": m, "n": n, "v": v, "prev": g}

    return step


@pytest.mark.parametrize("wd", [0.0, 0.5])
def test_lion_matches_the_paper_algorithm(dev, wd):
    p = problem()
    _, ours = run_ember(LionConfig(beta_1=0.9, beta_2=0.99, weight_decay=wd).init(), dev, p, STEPS, 0.003)
    check(ours, reference(lion_ref(0.9, 0.99, wd), p, 0.003))


def test_lion_two_steps_by_hand(dev):
    # Burn's unit test values: lr 0.1, weight decay 0.1
    from ember.optim import Lion

    rule = Lion(0.9, 0.99, 0.1)
    inner = dev.inner
    x = Tensor.from_floats([1.0, -2.0, 3.0], inner)
    x, s = rule.step(0.1, x, Tensor.from_floats([0.5, -0.25, 0.0], inner), None)
    np.testing.assert_allclose(x.to_numpy(), [0.89, -1.88, 2.97], atol=1e-6)
    x, s = rule.step(0.1, x, Tensor.from_floats([-0.1, 0.5, -2.0], inner), s)
    np.testing.assert_allclose(x.to_numpy(), [0.9811, -1.9612, 3.0403], atol=1e-6)
    np.testing.assert_allclose(s["momentum"].to_numpy(), [0.00395, 0.002525, -0.02], atol=1e-6)


@pytest.mark.parametrize("wd,no_prox", [(0.0, False), (0.02, False), (0.05, True)])
def test_adan_matches_the_reference_implementation(dev, wd, no_prox):
    p = problem()
    cfg = AdanConfig(weight_decay=wd, no_prox=no_prox)
    _, ours = run_ember(cfg.init(), dev, p, STEPS, 0.02)
    check(ours, reference(adan_ref(0.98, 0.92, 0.99, 1e-8, wd, no_prox), p, 0.02))


def ns_ref(g, coeffs=(3.4445, -4.775, 2.0315), steps=5, eps=1e-7):
    a, b, c = coeffs
    tall = g.shape[0] > g.shape[1]
    x = g.T if tall else g
    x = x / max(np.linalg.norm(x), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


def muon_ref(momentum, nesterov, wd, adjust, adamw):
    # Keller Jordan's Muon for matrices (momentum buffer v = m v + g, Nesterov g + m v), AdamW for the rest
    def step(lr, x, g, s):
        if x.ndim != 2:
            s = s or {"t": 0, "m": np.zeros_like(x), "v": np.zeros_like(x)}
            t = s["t"] + 1
            b1, b2, eps, awd = adamw
            m = b1 * s["m"] + (1 - b1) * g
            v = b2 * s["v"] + (1 - b2) * g * g
            x = x * (1 - lr * awd) - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
            return x, {"t": t, "m": m, "v": v}
        v = g if s is None else momentum * s + g
        u = g + momentum * v if nesterov else v
        o = ns_ref(u)
        rows, cols = x.shape
        ratio = math.sqrt(max(1.0, rows / cols)) if adjust == "original" else 0.2 * math.sqrt(max(rows, cols))
        return x * (1 - lr * wd) - lr * ratio * o, v

    return step


@pytest.mark.parametrize("adjust", [AdjustLrFn.Original, AdjustLrFn.MatchRmsAdamW])
def test_muon_matches_keller_jordans_algorithm(dev, adjust):
    p = problem()  # weight [4, 3] is tall: exercises the transpose and sqrt(4/3) lr ratio
    cfg = MuonConfig(weight_decay=WeightDecayConfig(0.1), adjust_lr_fn=adjust)
    _, ours = run_ember(cfg.init(), dev, p, STEPS, 0.01)
    ref = reference(muon_ref(0.95, True, 0.1, adjust.value, (0.9, 0.999, 1e-5, 1e-4)), p, 0.01)
    check(ours, ref, rtol=2e-4, atol=2e-5)


def test_muon_without_nesterov_and_custom_fallback(dev):
    p = problem()
    cfg = MuonConfig(
        momentum=MomentumConfig(momentum=0.9, dampening=0.0, nesterov=False),
        fallback=AdamWConfig(epsilon=1e-8, weight_decay=0.0),
    )
    _, ours = run_ember(cfg.init(), dev, p, STEPS, 0.01)
    check(ours, reference(muon_ref(0.9, False, 0.0, "original", (0.9, 0.999, 1e-8, 0.0)), p, 0.01), 2e-4, 2e-5)


def test_newton_schulz_orthogonalizes(dev):
    rng = np.random.default_rng(3)
    g = rng.normal(size=(6, 4))
    o = zeropower_via_newtonschulz(Tensor.from_data(g.astype(np.float32), dev.inner)).to_numpy()
    np.testing.assert_allclose(o, ns_ref(g), rtol=1e-4, atol=1e-5)
    s = np.linalg.svd(o.astype(np.float64), compute_uv=False)
    assert s.min() > 0.6 and s.max() < 1.25  # the quintic iteration's band (K. Jordan)
    u, _, vt = np.linalg.svd(g, full_matrices=False)
    assert np.abs(o - u @ vt).max() < 0.35  # close to U V^T


def test_muon_lr_adjustment_ratios():
    # Burn's documented values
    assert AdjustLrFn.Original.ratio((512, 512)) == pytest.approx(1.0)
    assert AdjustLrFn.Original.ratio((1024, 512)) == pytest.approx(math.sqrt(2.0))
    assert AdjustLrFn.Original.ratio((512, 1024)) == pytest.approx(1.0)
    assert AdjustLrFn.MatchRmsAdamW.ratio((1024, 512)) == pytest.approx(6.4)
    assert AdjustLrFn.MatchRmsAdamW.ratio((512,)) == 1.0
