"""Sparse slice gradients (``ember.autodiff._slice_grads``): the pieces a tensor's slices send back are gathered
and written out once (a ``cat`` for a split), with the values of the dense rule: checked against hand-built
numpy gradients for splits, gaps, overlaps, strided slices, slices along two dims and a dense use mixed in."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff

rng = np.random.default_rng(3)
X = rng.normal(size=(3, 8, 4))


@pytest.fixture(params=["numpy", "torch"], name="dev")
def dev_fixture(request):
    pytest.importorskip({"numpy": "ember_numpy", "torch": "torch"}[request.param])
    return Autodiff(ember.backend(request.param, float_dtype="float64")).device()


def _weights(shape):
    return rng.normal(size=shape)


def _check(dev, pieces_of):
    """``sum_i <w_i, piece_i(x)>`` differentiated, against the numpy gradient of the same pieces."""
    x = Tensor.from_data(X, dev).require_grad()
    pieces = pieces_of(x)
    ws = [_weights(p.shape) for p in pieces]
    loss = None
    for p, w in zip(pieces, ws):
        term = (p * Tensor.from_data(w, dev)).sum()
        loss = term if loss is None else loss + term
    got = x.grad(loss.backward()).to_numpy()
    want = np.zeros_like(X)
    probe = np.arange(X.size, dtype=np.float64).reshape(X.shape)  # which elements each piece reads
    for w, idx in zip(ws, pieces_of(probe)):
        np.add.at(want.reshape(-1), np.asarray(idx, np.int64).reshape(-1), w.reshape(-1))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _split(x, n):
    if isinstance(x, np.ndarray):
        return np.split(x, x.shape[1] // n, axis=1)
    return list(x.split(n, 1))


CASES = {
    "split, every piece used": lambda x: _split(x, 2),
    "split, pieces 0 and 2 only (gaps)": lambda x: [_split(x, 2)[0], _split(x, 2)[2]],
    "one step of a sequence": lambda x: [_split(x, 1)[5]],
    "overlapping slices": lambda x: [x[:, 0:5], x[:, 3:8]],
    "strided slice": lambda x: [x[:, 0:8:2], x[:, 1:4]],
    "slices along two dims": lambda x: [x[0:2], x[:, 6:8]],
    "a piece used twice": lambda x: [_split(x, 4)[1], _split(x, 4)[1], _split(x, 4)[0]],
    "a dense use mixed in": lambda x: [x, x[:, 2:6], x[1:3, :, 1:2]],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_slice_gradients_equal_the_dense_rule(dev, case):
    _check(dev, CASES[case])
