"""``ember_jax.jit`` on every model of ``bench/models.py`` (issue 32): twenty compiled training steps (forward,
cross-entropy, backward, Adam; the guide's Dropout included) equal twenty eager steps in float32
(``bench/_models_check.py`` says what "equal" means), at small sizes. Eager jax dispatches and compiles every op on
its own (10-40 s for twenty steps of one of these models on a small CPU), so the default run checks the LSTM
(``lax.scan``) and the other three run with ``EMBER_SLOW_TESTS=1`` (``nox -s slow``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
import ember_jax
from ember import Tensor
from ember.autodiff import Autodiff

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

from _models_check import LR, SMALL, compare  # noqa: E402
from _models_ember import train_step  # noqa: E402

SLOW = pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"), reason="eager jax steps: EMBER_SLOW_TESTS=1")

B = ember.backend("jax", float_dtype="float32")
DEV = Autodiff(B).device()


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n == "lstm" else SLOW) for n in SMALL])
def test_compiled_steps_equal_eager_steps(name: str) -> None:
    step = ember_jax.jit(train_step)
    lr = Tensor.from_data(np.asarray([LR], np.float32), DEV.inner)
    compare(name, DEV, B.seed, step, lr)
