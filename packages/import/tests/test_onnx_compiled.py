"""An imported model compiles however it was used before (issue 30): ``ember_jax.jit`` takes an ``OnnxModule``
after eager calls, at a second batch size (one trace per shape), before eager calls, with gradients, and inside the
Learner's compiled step (fine-tuning equals the same run uncompiled); torch eager stays as it was.

The model has a dynamic batch, so its ``Shape -> Gather -> Concat -> Reshape`` arithmetic runs at each call, and a
float ``Constant`` that the program keeps on the host and copies to the compute device (the copies that used to
make the program a static value holding tensors). Expectations are onnxruntime's outputs and torch float64
gradients of the same formula."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from _onnx_backends import BACKENDS  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402

needs_jax = pytest.mark.skipif("jax" not in BACKENDS, reason="ember-backend-jax is not installed")

RNG = np.random.default_rng(11)
W1 = RNG.standard_normal((6, 8)).astype(np.float32) * 0.5
B1 = RNG.standard_normal(8).astype(np.float32) * 0.1
SCALE = RNG.standard_normal(4).astype(np.float32)
W2 = RNG.standard_normal((8, 3)).astype(np.float32) * 0.5


def _model() -> Any:
    """``y = flatten(reshape(relu(x @ W1 + B1), [batch, 2, 4]) * SCALE) @ W2``; x: float32[batch, 6], y: [batch, 3]."""
    i64 = np.int64
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["m"]),
        helper.make_node("Add", ["m", "B1"], ["a"]),
        helper.make_node("Relu", ["a"], ["h"]),
        helper.make_node("Shape", ["h"], ["hs"]),
        helper.make_node("Gather", ["hs", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Concat", ["n1", "tail"], ["shape3"], axis=0),
        helper.make_node("Reshape", ["h", "shape3"], ["h3"]),
        helper.make_node("Constant", [], ["scale"], value=numpy_helper.from_array(SCALE, "scale")),
        helper.make_node("Mul", ["h3", "scale"], ["s3"]),
        helper.make_node("Flatten", ["s3"], ["f"], axis=1),
        helper.make_node("MatMul", ["f", "W2"], ["y"]),
    ]
    inits = {"W1": W1, "B1": B1, "W2": W2, "zero": np.array(0, i64), "axes0": np.array([0], i64),
             "tail": np.array([2, 4], i64)}
    graph = helper.make_graph(nodes, "compiled", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


MODEL = _model()


def _ort(x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(MODEL.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


def _x(n: int) -> np.ndarray:
    return RNG.standard_normal((n, 6)).astype(np.float32)


def _close(got: Tensor, x: np.ndarray) -> None:
    np.testing.assert_allclose(got.to_numpy(), _ort(x), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------- inference
@needs_jax
def test_jit_after_eager_calls_and_per_batch_size() -> None:
    """Eager at two batch sizes first (the program caches its constants' tensors), then compiled: one trace per
    batch size, none for a size seen before."""
    import ember_jax

    dev = ember.backend("jax").device()
    m = load_model(MODEL, dev)
    xs = {n: _x(n) for n in (2, 5)}
    for x in xs.values():
        _close(m(Tensor.from_data(x, dev)), x)
    step = ember_jax.jit(lambda mod, inp: mod(inp))
    for n in (2, 5, 2, 5):
        _close(step(m, Tensor.from_data(xs[n], dev)), xs[n])
    assert step.trace_count == 2 and step.cache_size == 2


@needs_jax
def test_eager_after_jit_and_a_second_compiled_step() -> None:
    """Compiled first, then eager (the copies made while tracing must not be tracers), then a new step."""
    import ember_jax

    dev = ember.backend("jax").device()
    m = load_model(MODEL, dev)
    x = _x(3)
    step = ember_jax.jit(lambda mod, inp: mod(inp))
    _close(step(m, Tensor.from_data(x, dev)), x)
    _close(m(Tensor.from_data(x, dev)), x)
    x4 = _x(4)
    _close(m(Tensor.from_data(x4, dev)), x4)
    again = ember_jax.jit(lambda mod, inp: mod(inp) * 2.0)
    np.testing.assert_allclose(again(m, Tensor.from_data(x4, dev)).to_numpy(), 2.0 * _ort(x4), rtol=1e-5, atol=1e-5)
    assert again.trace_count == 1


def test_torch_and_numpy_eager_at_two_batch_sizes() -> None:
    for name in [b for b in BACKENDS if b != "jax"]:
        dev = ember.backend(name).device()
        m = load_model(MODEL, dev)
        for n in (2, 7, 2):
            x = _x(n)
            _close(m(Tensor.from_data(x, dev)), x)


# ---------------------------------------------------------------------------------------------- gradients
def _torch_grads(x: np.ndarray, wt: np.ndarray) -> dict[str, np.ndarray]:
    """d sum(y * wt) / d W1, B1, W2 in float64 with torch (the model's formula written out)."""
    torch = pytest.importorskip("torch")
    p = {k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in (("W1", W1), ("B1", B1), ("W2", W2))}
    h = torch.relu(torch.tensor(x.astype(np.float64)) @ p["W1"] + p["B1"])
    f = (h.reshape(-1, 2, 4) * torch.tensor(SCALE.astype(np.float64))).reshape(-1, 8)
    ((f @ p["W2"]) * torch.tensor(wt.astype(np.float64))).sum().backward()
    return {k: v.grad.numpy() for k, v in p.items()}  # type: ignore[union-attr]


@needs_jax
def test_gradients_under_jit_equal_torch_and_eager() -> None:
    import ember_jax

    dev = Autodiff(ember.backend("jax")).device()
    m = load_model(MODEL, dev)

    def grads(mod: Any, inp: Tensor, wt: Tensor) -> dict[str, Tensor]:
        g = (mod(inp) * wt).sum().backward()
        return {k: p.val().grad(g) for k, p in mod.weights.items()}

    step = ember_jax.jit(grads)
    for n in (4, 6):
        x, wt = _x(n), RNG.standard_normal((n, 3)).astype(np.float32)
        eager = grads(m, Tensor.from_data(x, dev), Tensor.from_data(wt, dev))  # eager first, then compiled
        compiled = step(m, Tensor.from_data(x, dev), Tensor.from_data(wt, dev))
        want = _torch_grads(x, wt)
        assert set(compiled) == set(want)
        for k, w in want.items():
            np.testing.assert_allclose(compiled[k].to_numpy(), w, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(compiled[k].to_numpy(), eager[k].to_numpy(), rtol=1e-5, atol=1e-6)
    assert step.trace_count == 2


# ---------------------------------------------------------------------------------------------- fine-tuning
def _fine_tune(tmp: Any, compile: bool) -> tuple[Any, dict[str, Any]]:
    """Two epochs of Adam on a 3-class problem with the imported model as the network; returns the trained
    model and the Learner's compiled steps by name."""
    from ember.data import DataLoaderBuilder, InMemDataset
    from ember.module import Module
    from ember.nn.loss import CrossEntropyLossConfig
    from ember.optim import AdamConfig
    from ember_train import ClassificationOutput, LearnerBuilder, TrainOutput

    class Tuned(Module):
        net: Any  # OnnxModule
        loss: Any  # CrossEntropyLoss

        def forward_classification(self, batch: tuple[Tensor, Tensor]) -> ClassificationOutput:
            x, y = batch
            logits = self.net(x)
            return ClassificationOutput(self.loss.forward(logits, y), logits, y)

        def train_step(self, batch: tuple[Tensor, Tensor]) -> TrainOutput:
            out = self.forward_classification(batch)
            return TrainOutput(self, out.loss.backward(), out)

        def valid_step(self, batch: tuple[Tensor, Tensor]) -> ClassificationOutput:
            return self.forward_classification(batch)

    dev = Autodiff(ember.backend("jax")).device()
    dev.backend.seed(0)

    def batcher(items: list[tuple[list[float], int]], device: Any) -> tuple[Tensor, Tensor]:
        x = np.asarray([i[0] for i in items], np.float32)
        return Tensor.from_data(x, device), Tensor.from_data(np.asarray([i[1] for i in items], np.int64), device)

    data = np.random.default_rng(3)
    ys = data.integers(0, 3, 64)
    xs = data.standard_normal((64, 6)) + np.eye(6)[ys] * 2.0
    items = [(xs[i].tolist(), int(ys[i])) for i in range(64)]
    train = DataLoaderBuilder(batcher).batch_size(16).shuffle(1).build(InMemDataset(items[:48]))
    valid = DataLoaderBuilder(batcher).batch_size(16).build(InMemDataset(items[48:]))
    made: dict[str, Any] = {}
    compile_ = dev.backend.compile

    def recording(fn: Any, **options: Any) -> Any:
        made[fn.__name__] = step = compile_(fn, **options)
        return step

    dev.backend.compile = recording  # type: ignore[method-assign]
    try:
        model = Tuned(net=load_model(MODEL, dev), loss=CrossEntropyLossConfig().init(dev))
        model.net(Tensor.from_data(_x(5), dev))  # an eager call first, at another batch size
        learner = (LearnerBuilder(tmp).devices([dev]).num_epochs(2).seed(3).compile(compile)
                   .build(model, AdamConfig().init(), 0.02))
        result = learner.fit(train, valid)
    finally:
        del dev.backend.compile
    return result.model, made


@needs_jax
def test_learner_fine_tunes_an_imported_model_in_a_compiled_step(tmp_path: Any) -> None:
    import ember_jax

    tuned, made = _fine_tune(tmp_path / "compiled", True)
    plain, _ = _fine_tune(tmp_path / "eager", False)
    assert sorted(made) == ["_train", "_valid"]
    assert all(isinstance(s, ember_jax.CompiledStep) for s in made.values())
    assert made["_train"].trace_count == 1  # one batch shape: traced once in two epochs
    start = {"W1": W1, "B1": B1, "W2": W2}
    for k, p in tuned.net.weights.items():
        got = p.val().to_numpy()
        assert np.abs(got - start[k]).max() > 1e-3  # it trained
        np.testing.assert_allclose(got, plain.net.weights[k].val().to_numpy(), rtol=1e-5, atol=1e-6)
    x = _x(3)  # the fine-tuned module still runs eagerly and compiled
    dev = tuned.net.weights["W1"].val().device
    eager = tuned.net(Tensor.from_data(x, dev)).to_numpy()
    step = ember_jax.jit(lambda mod, inp: mod(inp))
    np.testing.assert_allclose(step(tuned.net, Tensor.from_data(x, dev)).to_numpy(), eager, rtol=1e-5, atol=1e-6)
