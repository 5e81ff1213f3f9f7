"""Inference steps with their weights as constants (``ember_torch.compile(..., options={"freezing": True})``,
issue 32): which leaves are weights, the frozen copy of a captured graph, and a new compile when the weights
change. The parts run here without inductor (the compile function is the identity); the whole path through
inductor is slow (20-60 s) and runs with ``EMBER_SLOW_TESTS=1`` (``nox -s slow``); imported ONNX models take it
in ``packages/import/tests/test_onnx_torch_compile.py``."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import ember
import ember_torch
from ember import Tensor
from ember.autodiff import Autodiff
from ember.backend.step_tree import Flat, flatten
from ember.module import Module, Param
from ember.nn import Linear, Relu

torch = pytest.importorskip("torch")

from ember_torch._capture_flatten import TREE  # noqa: E402
from ember_torch._capture_freeze import FrozenRun, frozen_graph, weight_leaves  # noqa: E402

SLOW = pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"), reason="inductor compiles: EMBER_SLOW_TESTS=1")
B = ember.backend("torch", float_dtype="float32", threads=1)

#: one inductor cache directory for the module (``conftest.py``)
pytestmark = pytest.mark.usefixtures("inductor_cache")


class Mlp(Module):
    l1: Linear
    l2: Linear
    act: Relu

    def forward(self, x: Tensor) -> Tensor:
        return self.l2.forward(self.act.forward(self.l1.forward(x)))


def _weights(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in [(4, 16), (16,), (16, 3), (3,)]]


def _mlp(ws: list[np.ndarray], dev: Any) -> Mlp:
    def lin(w: np.ndarray, b: np.ndarray) -> Linear:
        return Linear(weight=Param(Tensor.from_data(w, dev)), bias=Param(Tensor.from_data(b, dev)))

    return Mlp(l1=lin(ws[0], ws[1]), l2=lin(ws[2], ws[3]), act=Relu())


def _reference(ws: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    w1, b1, w2, b2 = (w.astype(np.float64) for w in ws)
    return np.maximum(x.astype(np.float64) @ w1 + b1, 0.0) @ w2 + b2


def _x() -> np.ndarray:
    return np.random.default_rng(9).standard_normal((5, 4)).astype(np.float32)


def _forward(m: Mlp, x: Tensor) -> Tensor:
    return m.forward(x)


def _flat(*args: Any) -> Flat:
    fl = Flat(TREE)
    flatten(fl, args)
    return fl


def test_weight_leaves_are_the_parameters_of_an_inference_model() -> None:
    dev = B.device()
    ws = _weights(0)
    model, x = _mlp(ws, dev), Tensor.from_data(_x(), dev)
    fl = _flat(model, x)
    idx = weight_leaves(fl)
    assert len(fl.leaves) == 5
    got = sorted(tuple(fl.leaves[i].shape) for i in idx)
    assert got == sorted(w.shape for w in ws)  # the four parameters, not the input
    assert all(fl.leaves[i] is not x.primitive for i in idx)


def test_parameters_being_trained_are_not_weights() -> None:
    dev = Autodiff(B).device()
    fl = _flat(_mlp(_weights(0), dev), Tensor.from_data(_x(), dev))
    assert weight_leaves(fl) == []


def test_frozen_graph_takes_only_the_other_inputs() -> None:
    dev = B.device()
    ws = _weights(0)
    model, x = _mlp(ws, dev), Tensor.from_data(_x(), dev)
    gm = ember_torch.compile(_forward, mode="capture").graph(model, x)
    fl = _flat(model, x)
    idx = weight_leaves(fl)
    frozen = frozen_graph(gm, {i: fl.leaves[i] for i in idx})
    placeholders = [n for n in frozen.graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == 1
    got = frozen(x.primitive)
    got = got[0] if isinstance(got, (tuple, list)) else got
    np.testing.assert_allclose(got.numpy(), _reference(ws, _x()), rtol=1e-5, atol=1e-5)


def test_frozen_run_compiles_again_for_new_or_changed_weights() -> None:
    dev = B.device()
    ws1, ws2 = _weights(0), _weights(1)
    m1, m2, x = _mlp(ws1, dev), _mlp(ws2, dev), Tensor.from_data(_x(), dev)
    gm = ember_torch.compile(_forward, mode="capture").graph(m1, x)
    fl1, fl2 = _flat(m1, x), _flat(m2, x)
    compiled: list[Any] = []

    def identity(module: Any) -> Any:
        compiled.append(module)
        return module

    run = FrozenRun(gm, weight_leaves(fl1), fl1.leaves, identity)

    def out(leaves: list[Any]) -> np.ndarray:
        r = run(*leaves)
        return (r[0] if isinstance(r, (tuple, list)) else r).numpy()

    np.testing.assert_allclose(out(fl1.leaves), _reference(ws1, _x()), rtol=1e-5, atol=1e-5)
    out(fl1.leaves)
    assert run.compiles == 1 and len(compiled) == 1  # the same weights: no new compile
    np.testing.assert_allclose(out(fl2.leaves), _reference(ws2, _x()), rtol=1e-5, atol=1e-5)
    assert run.compiles == 2
    # a weight changed in place (same tensor object, new version) is seen too
    w = next(t for t in fl2.leaves if tuple(t.shape) == (3,))
    with torch.no_grad():
        w.add_(1.0)
    ws2[3] = ws2[3] + 1.0
    np.testing.assert_allclose(out(fl2.leaves), _reference(ws2, _x()), rtol=1e-5, atol=1e-5)
    assert run.compiles == 3


@SLOW
def test_freezing_inductor_step_equals_reference_and_keeps_training_params_as_inputs() -> None:
    dev = B.device()
    ws = _weights(0)
    model, x = _mlp(ws, dev), Tensor.from_data(_x(), dev)
    step = ember_torch.compile(_forward, mode="default", options={"freezing": True})
    np.testing.assert_allclose(step(model, x).to_numpy(), _reference(ws, _x()), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(step(model, x).to_numpy(), _reference(ws, _x()), rtol=1e-5, atol=1e-5)
    (entry,) = step._cache.values()
    assert isinstance(entry.run, FrozenRun) and entry.run.compiles == 1 and len(entry.weights) == 4
    # on Autodiff the parameters are trained: they stay inputs, the step is compiled as without the option
    adev = Autodiff(B).device()
    step(_mlp(ws, adev), Tensor.from_data(_x(), adev))
    assert sorted(len(e.weights) for e in step._cache.values()) == [0, 4]
