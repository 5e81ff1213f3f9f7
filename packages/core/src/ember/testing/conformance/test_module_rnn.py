"""The recurrent primitives (``ember.tensor.functional.lstm`` and ``lstm_backward``; ``lstm_stack`` and
``lstm_stack_backward``).

Forward against a float64 numpy loop written here from PyTorch's ``nn.LSTM`` equations, on every float dtype (the
stack: that loop per layer); gradients of all three outputs by finite differences under ``Autodiff`` in float64
(the backend's own backward kernel); the stack's gradients in float32 and float64 against single layers chained on
numpy in float64; the backend's primitives against the contract's composites; errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember import DType, KindError, ShapeError, Tensor
from ember.autodiff import Autodiff, gradcheck
from ember.backend._ops_rnn import RnnOps
from ember.tensor import functional as M
from ember.testing import assert_close

from ._module_helpers import ftensor, held, low_precision

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


# ---------------------------------------------------------------- lstm_stack (issue 32)
#: (batch, seq_length, d_input, d, num_layers, bias)
STACK_CASES = [(2, 3, 4, 5, 2, True), (1, 1, 3, 2, 3, False), (3, 4, 2, 3, 1, True)]


def _stack_arrays(n: int, seq: int, d_in: int, d: int, layers: int, bias: bool) -> list[np.ndarray]:
    """``[x, h0, c0, w_x 0, w_h 0, (bias 0), w_x 1, ...]``: the states ``[layers, n, d]``."""
    arrs = [rng.normal(0.0, 1.0, (n, seq, d_in)), rng.normal(0.0, 0.5, (layers, n, d)),
            rng.normal(0.0, 0.5, (layers, n, d))]
    for k in range(layers):
        arrs += [rng.normal(0.0, 0.5, (d_in if k == 0 else d, 4 * d)), rng.normal(0.0, 0.5, (d, 4 * d))]
        arrs += [rng.normal(0.0, 0.5, 4 * d)] if bias else []
    return arrs


def _triples(ws: list[Any], bias: bool) -> list[tuple[Any, Any, Any]]:
    per = 3 if bias else 2
    return [(ws[k], ws[k + 1], ws[k + 2] if bias else None) for k in range(0, len(ws), per)]


def _stack_ref(arrs: list[np.ndarray], bias: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each layer :func:`_lstm_ref` over the one below's output; the final states stacked on a new first dim."""
    y, h0, c0 = arrs[:3]
    hs, cs = [], []
    for k, (wx, wh, b) in enumerate(_triples(arrs[3:], bias)):
        y, h, c = _lstm_ref(y, h0[k], c0[k], wx, wh, b)
        hs.append(h)
        cs.append(c)
    return y, np.stack(hs), np.stack(cs)


def _stack(ts: list[Tensor], bias: bool) -> tuple[Tensor, Tensor, Tensor]:
    return M.lstm_stack(ts[0], ts[1], ts[2], _triples(ts[3:], bias))


def _chain(ts: list[Tensor], bias: bool) -> tuple[Tensor, Tensor, Tensor]:
    """The same stack as single-layer :func:`lstm` calls, one after the other."""
    y, h0, c0 = ts[:3]
    hs, cs = [], []
    for k, (wx, wh, b) in enumerate(_triples(ts[3:], bias)):
        y, h, c = M.lstm(y, h0.slice([(k, k + 1)]).squeeze_dim(0), c0.slice([(k, k + 1)]).squeeze_dim(0), wx, wh, b)
        hs.append(h)
        cs.append(c)
    return y, Tensor.stack(hs, 0), Tensor.stack(cs, 0)


@pytest.mark.parametrize("case", STACK_CASES)
def test_lstm_stack_forward(float_device: Any, case: tuple[Any, ...]) -> None:
    ts = [ftensor(a, float_device) for a in _stack_arrays(*case)]
    got = _stack(ts, case[5])
    want = _stack_ref([held(t) for t in ts], case[5])
    # float16 / bfloat16 round each layer's output before the next reads it: the reference reads rounded inputs only
    tol = {"rtol": 0.05, "atol": 0.05} if low_precision(float_device) and case[4] > 1 else {}
    for t, w in zip(got, want):
        assert t.shape == w.shape and t.dtype == ts[0].dtype
        assert_close(t, w, **tol)


@pytest.mark.parametrize("case", STACK_CASES)
def test_lstm_stack_gradcheck(ad_device: Any, case: tuple[Any, ...]) -> None:
    def fn(*ts: Tensor) -> Tensor:
        y, h, c = _stack(list(ts), case[5])
        return Tensor.cat([y.flatten(0, 2), h.flatten(0, 2), c.flatten(0, 2)], 0)

    gradcheck(fn, _stack_arrays(*case), ad_device)


@pytest.mark.parametrize("case", STACK_CASES)
@pytest.mark.parametrize("loss_of", ["all", "y", "c"])
def test_lstm_stack_gradients_equal_chained_layers(float_device: Any, case: tuple[Any, ...], loss_of: str) -> None:
    """Gradients of every input through the stack (float32, float64) equal those through single-layer ``lstm``
    calls chained on the same backend in float64 (``loss_of``: which outputs reach the loss: ``y`` only or ``c_n``
    only leave the others without a gradient)."""
    if low_precision(float_device):
        pytest.skip("gradients compared in float32 and float64")
    arrays = _stack_arrays(*case)
    ad = Autodiff(float_device.backend).device(float_device.name)
    # the reference: the same backend's single-layer kernel (checked against numpy loops above) in float64
    ref = Autodiff(ember.backend(float_device.backend.name, float_dtype="float64")).device(float_device.name)

    def grads(run: Any, dev: Any) -> list[Tensor]:
        ts = [ftensor(a, dev).require_grad() for a in arrays]
        y, h, c = run(ts, case[5])
        w = (y * 0.0 + 1.0).cumsum(1) * 0.1  # unequal weights per step
        loss = {"all": (y * y * w).sum() + (h * c).sum(), "y": (y * w).sum(), "c": (c * c).sum()}[loss_of]
        g = loss.backward()
        return [loss.detach()] + [t.grad(g) for t in ts]

    tol = {"atol": 5e-5, "rtol": 1e-4} if ad.backend.float_dtype is DType.FLOAT32 else {}
    for got, want in zip(grads(_stack, ad), grads(_chain, ref), strict=True):
        assert got.shape == want.shape
        assert_close(got, held(want), **tol)


@pytest.mark.parametrize("case", STACK_CASES[:2])
def test_lstm_stack_primitives_equal_the_composites(float_device: Any, case: tuple[Any, ...]) -> None:
    """The backend's ``lstm_stack`` / ``lstm_stack_backward`` against the contract's defaults (its single-layer
    kernel per layer)."""
    B = float_device.backend
    n, seq, _, d, layers, bias = case
    ts = [ftensor(a, float_device) for a in _stack_arrays(*case)]
    x, h0, c0 = (t.primitive for t in ts[:3])
    ws = _triples([t.primitive for t in ts[3:]], bias)
    got = B.lstm_stack(x, h0, c0, ws, True)
    want = RnnOps.lstm_stack(B, x, h0, c0, ws, True)
    tol = {"atol": 5e-5} if ts[0].dtype is DType.FLOAT32 else {}  # as test_lstm_primitives_equal_the_composites
    if low_precision(float_device):
        tol = {"rtol": 0.05, "atol": 0.05}
    for p, w in zip(got[:3], want[:3]):
        assert_close(Tensor(p, float_device), held(Tensor(w, float_device)), **tol)
    gy = ftensor(rng.normal(0.0, 1.0, (n, seq, d)), float_device).primitive
    gc = ftensor(rng.normal(0.0, 1.0, (layers, n, d)), float_device).primitive
    g_got = B.lstm_stack_backward(gy, None, gc, x, h0, c0, ws, got[0], got[3])
    g_want = RnnOps.lstm_stack_backward(B, gy, None, gc, x, h0, c0, ws, want[0], want[3])
    assert len(g_got) == 4 and len(g_got[3]) == layers
    flat_got = [*g_got[:3], *(g for triple in g_got[3] for g in triple)]
    flat_want = [*g_want[:3], *(g for triple in g_want[3] for g in triple)]
    for p, w, like in zip(flat_got, flat_want, [x, h0, c0, *(a for triple in ws for a in triple)], strict=True):
        if like is None:
            assert p is None and w is None
            continue
        t = Tensor(p, float_device)
        assert t.shape == tuple(B.shape(like)) and t.dtype == ts[0].dtype
        assert_close(t, held(Tensor(w, float_device)), **tol)


def test_lstm_stack_outputs_tracked(ad_device: Any) -> None:
    ts = [ftensor(a, ad_device) for a in _stack_arrays(2, 2, 3, 2, 2, True)]
    assert all(t.is_require_grad() for t in _stack(ts[:4] + [ts[4].require_grad()] + ts[5:], True))
    assert not any(t.is_require_grad() for t in _stack(ts, True))


def test_lstm_stack_errors(device: Any) -> None:
    ts = [ftensor(a, device) for a in _stack_arrays(2, 3, 4, 5, 2, True)]
    x, h, c = ts[:3]
    ws = _triples(ts[3:], True)
    with pytest.raises(ShapeError, match=r"expected x of shape \[batch, seq_length >= 1, d_input\]"):
        M.lstm_stack(x.flatten(0, 1), h, c, ws)
    with pytest.raises(ShapeError, match=r"non-empty list of \(w_x, w_h, bias\) triples"):
        M.lstm_stack(x, h, c, [])
    with pytest.raises(ShapeError, match=r"h0 must have shape \[2, 2, 5\]"):
        M.lstm_stack(x, h.slice([(0, 1)]), c, ws)
    with pytest.raises(ShapeError, match=r"w_x of layer 1 must have shape \[5, 20\]"):
        M.lstm_stack(x, h, c, [ws[0], (ws[0][0], ws[1][1], ws[1][2])])
    with pytest.raises(ShapeError, match=r"bias for every layer or for none"):
        M.lstm_stack(x, h, c, [ws[0], (ws[1][0], ws[1][1], None)])
    with pytest.raises(KindError, match="w_h of layer 1 must be a Float"):
        M.lstm_stack(x, h, c, [ws[0], (ws[1][0], ws[1][1].int(), ws[1][2])])
