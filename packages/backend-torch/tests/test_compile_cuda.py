"""Compiled steps on CUDA (skipped without a CUDA device; ``bench/gpu.sh cudatests`` runs them on a GPU machine):
inductor's modes, CUDA graphs included, give the eager step's results (Adam, Dropout, BatchNorm's running
statistics), the default mode is inductor and no step falls back to the captured graph, and a step reads nothing on
the host (no device-to-host synchronization inside the step)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import ember
import ember_torch
from ember import Int, Tensor
from ember.autodiff import Autodiff
from ember.module import Param
from ember.nn import BatchNormConfig, Dropout, Linear, Relu
from ember.optim import AdamConfig
from test_compile import Mlp, params_np, train_step, weights

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    pytest.mark.usefixtures("inductor_cache"),
]


def _setup() -> tuple[Any, Any]:
    B = ember.backend("torch", float_dtype="float64")  # float32 Adam steps amplify rounding
    return B, Autodiff(B).device("cuda:0")


def _mlp(dev: Any, dropout: float) -> Mlp:
    ws = weights()

    def lin(w: np.ndarray, b: np.ndarray) -> Linear:
        return Linear(weight=Param(Tensor.from_data(w, dev)), bias=Param(Tensor.from_data(b, dev)))

    return Mlp(l1=lin(ws[0], ws[1]), l2=lin(ws[2], ws[3]), act=Relu(), norm=BatchNormConfig(16).init(dev),
               dropout=Dropout(prob=dropout))


def _batch(dev: Any) -> Any:
    from test_compile import Batch

    rng = np.random.default_rng(1)
    x = rng.random((32, 2))
    y = ((x[:, 0] > 0.5) != (x[:, 1] > 0.5)).astype(np.int64)
    return Batch(Tensor.from_data(x, dev), Tensor.from_data(y, dev, Int))


@pytest.mark.parametrize("mode", [None, "default", "reduce-overhead"])
def test_cuda_modes_equal_eager(mode: Any) -> None:
    B, dev = _setup()
    batch = _batch(dev)
    m_c, m_e = _mlp(dev, 0.2), _mlp(dev, 0.2)
    o_c, o_e = AdamConfig().init().init_states(m_c), AdamConfig().init().init_states(m_e)
    lr = Tensor.from_data(np.array([0.05]), dev.inner)
    step = ember_torch.compile(train_step, mode=mode)
    lc, le = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback to the captured graph
        B.seed(3)
        for _ in range(5):
            m_c, loss = step(m_c, o_c, batch, lr)
            lc.append(loss.into_scalar())
    B.seed(3)
    for _ in range(5):
        m_e, loss = train_step(m_e, o_e, batch, 0.05)
        le.append(loss.into_scalar())
    # inductor's fused kernels reorder float64 sums (as in test_compile.py's inductor tests)
    np.testing.assert_allclose(lc, le, rtol=1e-7)
    for a, b in zip(params_np(m_c), params_np(m_e), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)
    (entry,) = step._cache.values()
    assert entry.mode == (mode or "default")


def test_cuda_step_reads_nothing_on_the_host() -> None:
    """After the first call, a compiled step runs without a device-to-host synchronization: under
    ``torch.cuda.set_sync_debug_mode("error")`` a synchronizing call raises."""
    B, dev = _setup()
    batch = _batch(dev)
    model = _mlp(dev, 0.2)
    optim = AdamConfig().init().init_states(model)
    lr = Tensor.from_data(np.array([0.05]), dev.inner)
    step = ember_torch.compile(train_step, mode="default")
    model, _ = step(model, optim, batch, lr)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            model, loss = step(model, optim, batch, lr)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert np.isfinite(loss.into_scalar())
