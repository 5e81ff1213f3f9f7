"""The recurrent primitive (``ember.tensor.functional.lstm`` and ``lstm_backward``).

Forward against a float64 numpy loop written here from PyTorch's ``nn.LSTM`` equations, on every float dtype;
gradients of all three outputs by finite differences under ``Autodiff`` in float64 (the backend's own backward
kernel); the backend's primitives against the contract's composites; errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import DType, KindError, ShapeError, Tensor
from ember.autodiff import gradcheck
from ember.backend._ops_rnn import RnnOps
from ember.tensor import functional as M
from ember.testing import assert_close

from ._module_helpers import ftensor, held

rng = np.random.default_rng(23)
#: (batch, seq_length, d_input, d, bias)
CASES = [(2, 3, 4, 5, True), (1, 1, 3, 2, False), (3, 5, 2, 3, True)]


def _sigmoid(a: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-a))


def _lstm_ref(x: np.ndarray, h: np.ndarray, c: np.ndarray, wx: np.ndarray, wh: np.ndarray,
              b: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PyTorch's ``nn.LSTM`` equations, gates ``i, f, g, o``, one step at a time."""
    d = h.shape[1]
    ys = []
    for t in range(x.shape[1]):
        z = x[:, t] @ wx + h @ wh + (0.0 if b is None else b)
        i, f, g, o = _sigmoid(z[:, :d]), _sigmoid(z[:, d:2 * d]), np.tanh(z[:, 2 * d:3 * d]), _sigmoid(z[:, 3 * d:])
        c = f * c + i * g
        h = o * np.tanh(c)
        ys.append(h)
    return np.stack(ys, 1), h, c


def _arrays(n: int, seq: int, d_in: int, d: int, bias: bool) -> list[np.ndarray]:
    arrs = [rng.normal(0.0, 1.0, (n, seq, d_in)), rng.normal(0.0, 0.5, (n, d)), rng.normal(0.0, 0.5, (n, d)),
            rng.normal(0.0, 0.5, (d_in, 4 * d)), rng.normal(0.0, 0.5, (d, 4 * d))]
    return arrs + [rng.normal(0.0, 0.5, 4 * d)] if bias else arrs


@pytest.mark.parametrize("case", CASES)
def test_lstm_forward(float_device: Any, case: tuple[Any, ...]) -> None:
    ts = [ftensor(a, float_device) for a in _arrays(*case)]
    got = M.lstm(*ts)
    want = _lstm_ref(*[held(t) for t in ts], *([] if case[4] else [None]))
    for t, w in zip(got, want):
        assert t.shape == w.shape and t.dtype == ts[0].dtype
        assert_close(t, w)


@pytest.mark.parametrize("case", CASES)
def test_lstm_gradcheck(ad_device: Any, case: tuple[Any, ...]) -> None:
    def fn(*ts: Tensor) -> Tensor:
        y, h, c = M.lstm(*ts)
        return Tensor.cat([y.flatten(0, 2), h.flatten(0, 1), c.flatten(0, 1)], 0)

    gradcheck(fn, _arrays(*case), ad_device)


def test_lstm_gradcheck_one_output(ad_device: Any) -> None:
    """Gradients reaching only ``c_n`` (``y`` and ``h_n`` unused), and only a slice of ``y``."""
    gradcheck(lambda *ts: M.lstm(*ts)[2], _arrays(2, 3, 2, 2, True), ad_device)
    gradcheck(lambda *ts: M.lstm(*ts)[0].slice([None, (1, 2)]), _arrays(2, 3, 2, 2, False), ad_device)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("grads", ["all", "y"])
def test_lstm_primitives_equal_the_composites(float_device: Any, case: tuple[Any, ...], grads: str) -> None:
    B = float_device.backend
    n, seq, _, d, bias = case
    ts = [ftensor(a, float_device) for a in _arrays(*case)]
    raw = [t.primitive for t in ts] + ([] if bias else [None])
    x, h0, c0, wx, wh, b = raw
    got = B.lstm(x, h0, c0, wx, wh, b, True)
    want = RnnOps.lstm(B, x, h0, c0, wx, wh, b, True)
    # two float32 computations, each rounding differently: cuDNN's fused LSTM differed from the composite by up to
    # 2.4e-5 (absolute) in a gradient of these cases on an H200 with TF32 off, so float32 allows 5e-5 absolute
    # (twice that); float64 keeps the dtype's tolerance
    tol = {"atol": 5e-5} if ts[0].dtype is DType.FLOAT32 else {}
    for p, w in zip(got[:3], want[:3]):
        assert_close(Tensor(p, float_device), held(Tensor(w, float_device)), **tol)
    gy = ftensor(rng.normal(0.0, 1.0, (n, seq, d)), float_device).primitive
    gh, gc = (ftensor(rng.normal(0.0, 1.0, (n, d)), float_device).primitive if grads == "all" else None
              for _ in range(2))
    g_got = B.lstm_backward(gy, gh, gc, x, h0, c0, wx, wh, b, got[0], got[3])
    g_want = RnnOps.lstm_backward(B, gy, gh, gc, x, h0, c0, wx, wh, b, want[0], want[3])
    assert len(g_got) == 6
    for name, p, w, like in zip(("x", "h0", "c0", "w_x", "w_h", "bias"), g_got, g_want, raw):
        if like is None:
            assert p is None and w is None, name
            continue
        t = Tensor(p, float_device)
        assert t.shape == tuple(B.shape(like)) and t.dtype == ts[0].dtype, name
        assert_close(t, held(Tensor(w, float_device)), **tol)


def test_lstm_outputs_tracked(ad_device: Any) -> None:
    x, h0, c0, wx, wh, b = (ftensor(a, ad_device) for a in _arrays(2, 2, 3, 2, True))
    assert all(t.is_require_grad() for t in M.lstm(x, h0, c0, wx.require_grad(), wh, b))
    assert not any(t.is_require_grad() for t in M.lstm(x, h0, c0, wx, wh, b))


def test_lstm_errors(device: Any) -> None:
    x, h, c, wx, wh, b = (ftensor(a, device) for a in _arrays(2, 3, 4, 5, True))
    with pytest.raises(ShapeError, match=r"expected x of shape \[batch, seq_length >= 1, d_input\]"):
        M.lstm(x.flatten(0, 1), h, c, wx, wh, b)
    with pytest.raises(ShapeError, match=r"expected x of shape"):
        M.lstm(x.slice([None, (0, 0)]), h, c, wx, wh, b)
    with pytest.raises(ShapeError, match=r"c0 must have shape \[2, 5\]"):
        M.lstm(x, h, c.slice([(0, 1)]), wx, wh, b)
    with pytest.raises(ShapeError, match=r"w_x must have shape \[4, 20\]"):
        M.lstm(x, h, c, wx.slice([(0, 3)]), wh, b)
    with pytest.raises(ShapeError, match=r"bias must have shape \[20\]"):
        M.lstm(x, h, c, wx, wh, b.slice([(0, 4)]))
    with pytest.raises(KindError, match="h0 must be a Float"):
        M.lstm(x, h.int(), c, wx, wh, b)
