"""The backend extension example (examples/custom_op): ``matmul_add_relu`` on each installed backend, forward and
gradients against the numpy float64 reference, kernels used where registered, the CLI."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from custom_op import matmul_add_relu, reference
from ember import Float, Tensor
from ember.autodiff import Autodiff

BACKENDS = [n for n in ("numpy", "torch", "jax") if importlib.util.find_spec(n) is not None]


@pytest.mark.parametrize("name", BACKENDS)
def test_forward_and_gradients_match_the_reference(name: str) -> None:
    B = ember.backend(name, float_dtype="float32")
    dev = Autodiff(B).device()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((32, 64)), rng.standard_normal((64, 48)), rng.standard_normal((1, 48))]
    gout = rng.standard_normal((32, 48))
    xs = [Tensor.from_data(a, dev, Float).require_grad() for a in arrays]
    y = matmul_add_relu(*xs)
    grads = y.mul(Tensor.from_data(gout, dev, Float)).sum().backward()
    ref = reference(*arrays, gout)
    np.testing.assert_allclose(y.to_numpy(), ref[0], atol=1e-4, rtol=1e-4)
    for x, r in zip(xs, ref[1:]):
        np.testing.assert_allclose(x.grad(grads).to_numpy(), r, atol=1e-3, rtol=1e-4)
    assert (matmul_add_relu.kernel(name) is not None) == (name != "numpy")


def test_cli_checks_every_backend(examples_dir: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "custom_op"], cwd=examples_dir, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [str(examples_dir), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "ok"
