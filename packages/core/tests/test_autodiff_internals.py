"""Internals of ``ember.autodiff`` that the conformance suite does not see: the rule table is
backend-agnostic source, untracked ops record nothing, devices pickle, independent graphs can be
differentiated concurrently."""

from __future__ import annotations

import ast
import pickle
import threading
from pathlib import Path

import numpy as np

import ember
from ember import Tensor
from ember.autodiff import RULES, Autodiff, AutodiffDevice
from ember.autodiff._graph import AutodiffPrimitive, Leaf, Node

PKG = Path(ember.__file__).parent / "autodiff"


def test_autodiff_rules_never_import_an_array_library() -> None:
    # rules must run on every backend: only inner-backend primitives, never numpy/torch/jax
    files = sorted(PKG.glob("_rules_*.py")) + [PKG / "_record.py", PKG / "_graph.py"]
    assert len(files) >= 5
    for f in files:
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for n in names:
                assert n.split(".")[0] not in {"numpy", "torch", "jax"}, f"{f.name} imports {n}"


def test_autodiff_rule_table_patterns() -> None:
    assert {"add", "matmul", "log_softmax", "gather", "cumprod", "unfold"} <= set(RULES)
    from ember.autodiff._record import _FACTORIES

    # every rule has a recording factory, and the core patterns exist
    assert {"unary", "binary", "general", "indexed", "zero"} <= set(_FACTORIES)
    assert all(s.pattern in _FACTORIES for s in RULES.values())


def test_autodiff_untracked_ops_record_nothing() -> None:
    dev = Autodiff(ember.backend("numpy")).device()
    x = Tensor.from_floats(np.ones((2, 3)), dev)
    y = ((x * 2.0 + x).exp() @ Tensor.from_floats(np.ones((3, 1)), dev)).sum()
    assert type(y.primitive) is AutodiffPrimitive and y.primitive.node is None
    t = x.require_grad()
    assert type(t.primitive.node) is Leaf
    z = t * 2.0
    assert type(z.primitive.node) is Node and z.primitive.node.parents == (t.primitive.node, None)


def test_autodiff_device_pickles_to_an_autodiff_device() -> None:
    ad = Autodiff(ember.backend("numpy", float_dtype="float64"))
    dev = ad.device()
    assert isinstance(dev, AutodiffDevice)
    back = pickle.loads(pickle.dumps(dev))
    assert isinstance(back, AutodiffDevice) and back.backend.is_autodiff
    assert back.inner.name == dev.inner.name and back.backend.float_dtype == dev.backend.float_dtype
    t = pickle.loads(pickle.dumps(Tensor.from_floats([1.0, 2.0], dev)))
    assert t.device.backend.is_autodiff
    np.testing.assert_array_equal(t.to_numpy(), [1.0, 2.0])


def test_autodiff_concurrent_backward_in_threads() -> None:
    dev = Autodiff(ember.backend("numpy", float_dtype="float64")).device()
    errors: list[BaseException] = []
    results: dict[int, np.ndarray] = {}

    def work(k: int) -> None:
        try:
            for _ in range(50):
                x = Tensor.from_floats(np.arange(4.0) + k, dev).require_grad()
                g = x.grad(((x * x).sum() * float(k)).backward())
                results[k] = g.to_numpy()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for k in range(1, 5):
        np.testing.assert_allclose(results[k], 2.0 * k * (np.arange(4.0) + k))


def test_backward_sums_leaf_gradients_and_writes_out_slice_pieces() -> None:
    # leaves are not scheduled by the sweep: their gradients are summed where they arrive and collected at the end,
    # where slice pieces (a SliceGrad) are written out; checked against hand-computed derivatives
    dev = Autodiff(ember.backend("numpy", float_dtype="float64")).device()
    xv = np.arange(6.0).reshape(2, 3)
    x = Tensor.from_data(xv, dev).require_grad()
    w = Tensor.from_data(np.array([2.0, -1.0, 0.5]), dev).require_grad()
    z = Tensor.from_data(np.ones((2, 2)), dev).require_grad()
    loss = (x * w).sum() + x.chunk(3, 1)[0].sum() * 3.0 + (w * w).sum() + z.chunk(2, 0)[1].sum() * 5.0
    grads = loss.backward()
    # d/dx: w on every row, plus 3 on column 0 (a dense gradient and a slice piece)
    np.testing.assert_array_equal(x.grad(grads).to_numpy(), np.array([[5.0, -1.0, 0.5], [5.0, -1.0, 0.5]]))
    # d/dw: column sums of x plus 2 w (two consumers)
    np.testing.assert_array_equal(w.grad(grads).to_numpy(), xv.sum(0) + 2 * np.array([2.0, -1.0, 0.5]))
    # d/dz: only a slice piece reached z: zeros except row 1
    np.testing.assert_array_equal(z.grad(grads).to_numpy(), np.array([[0.0, 0.0], [5.0, 5.0]]))
    assert len(grads) == 3
