"""The XOR example (examples/xor): a manual loop learns XOR."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember
from ember.autodiff import Autodiff
from xor import predict, train


@pytest.mark.parametrize("seed", [0, 1])
def test_learns_xor(seed: int) -> None:
    device = Autodiff(ember.backend("numpy")).device()
    model = train(device, steps=300, seed=seed)
    assert predict(model.valid(), device.inner) == [0, 1, 1, 0]


def test_cli_prints_0_1_1_0(examples_dir: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "xor", "--steps", "300"], cwd=examples_dir, capture_output=True,
                         text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(examples_dir)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "0 1 1 0"
