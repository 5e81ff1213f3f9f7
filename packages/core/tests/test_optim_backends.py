"""Every optimizer gives the same parameters on every installed backend as on numpy (a few steps each;
the 20-step comparisons against PyTorch run on numpy and torch in test_optim_torch.py)."""

from __future__ import annotations

import numpy as np
import pytest

from test_optim_problem import ad_device, problem, run_ember
from test_optim_records import CONFIGS

STEPS = 3


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_every_optimizer_agrees_with_numpy(backend):
    other = ad_device(backend)
    ref = ad_device("numpy")
    p = problem()
    for name, cfg in sorted(CONFIGS.items()):
        _, ours = run_ember(cfg.init(), other, p, STEPS, 0.01)
        _, base = run_ember(cfg.init(), ref, p, STEPS, 0.01)
        for i, ((w, b), (rw, rb)) in enumerate(zip(ours, base)):
            np.testing.assert_allclose(w, rw, rtol=1e-4, atol=1e-5, err_msg=f"{name} weight, step {i + 1}")
            np.testing.assert_allclose(b, rb, rtol=1e-4, atol=1e-5, err_msg=f"{name} bias, step {i + 1}")
