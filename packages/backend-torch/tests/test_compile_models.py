"""``ember_torch.compile`` on every model of ``bench/models.py`` (issue 32): twenty training steps (forward,
cross-entropy, backward, Adam; the guide's Dropout included) captured as one aten graph equal twenty eager steps
in float32 (``bench/_models_check.py`` says what "equal" means), at small sizes. Capture replays the graph without
inductor and runs by default; the same steps compiled by inductor take 20-60 s each on a small CPU and run with
``EMBER_SLOW_TESTS=1`` (``nox -s slow``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402
import ember_torch  # noqa: E402
from ember import Tensor  # noqa: E402
from ember.autodiff import Autodiff  # noqa: E402

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

from _models_check import LR, SMALL, compare  # noqa: E402
from _models_ember import train_step  # noqa: E402

SLOW = pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"), reason="inductor compiles: EMBER_SLOW_TESTS=1")

# one intra-op thread: on a shared 2-core machine torch's second thread spins and makes these steps 30x slower
B = ember.backend("torch", float_dtype="float32", threads=1)
DEV = Autodiff(B).device()


#: one inductor cache directory for the module (``conftest.py``)
pytestmark = pytest.mark.usefixtures("inductor_cache")


def _lr() -> Tensor:
    return Tensor.from_data(np.asarray([LR], np.float32), DEV.inner)


@pytest.mark.parametrize("name", list(SMALL))
def test_captured_steps_equal_eager_steps(name: str) -> None:
    step = ember_torch.compile(train_step, mode="capture")
    compare(name, DEV, B.seed, step, _lr())
    assert step.trace_count == 1  # twenty steps, one capture: the Python ran once


@SLOW
@pytest.mark.parametrize("name", list(SMALL))
def test_inductor_steps_equal_eager_steps(name: str) -> None:
    step = ember_torch.compile(train_step, mode="default")
    compare(name, DEV, B.seed, step, _lr())
    assert step.trace_count == 1
