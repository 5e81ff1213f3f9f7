"""The torch kernel of ``matmul`` for ``[..., m, k] @ [k, n]`` with a non-contiguous left operand (an imported
Transformer's ``[seq, batch, d]`` view times a weight): one ``mm`` on a contiguous copy, as for a contiguous
operand, where ``torch.matmul`` alone expands the weight over the batch dims into a ``bmm`` (issue 32)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember_torch
from ember import Tensor

torch = pytest.importorskip("torch")

DEV = ember.backend("torch", float_dtype="float64").device()


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 3, 5)), rng.standard_normal((5, 6))


def _step(x: Tensor, w: Tensor) -> Tensor:
    return x.swap_dims(0, 1).matmul(w)  # [3, 4, 5] (a view of [4, 3, 5]) @ [5, 6]


def test_transposed_batch_times_matrix_equals_numpy() -> None:
    x, w = _inputs()
    got = _step(Tensor.from_data(x, DEV), Tensor.from_data(w, DEV)).to_numpy()
    np.testing.assert_allclose(got, np.swapaxes(x, 0, 1) @ w, rtol=1e-12, atol=1e-12)


def test_transposed_batch_times_matrix_is_one_mm() -> None:
    x, w = _inputs()
    gm = ember_torch.compile(_step, mode="capture").graph(Tensor.from_data(x, DEV), Tensor.from_data(w, DEV))
    ops = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert "aten.mm.default" in ops and "aten.bmm.default" not in ops, ops
