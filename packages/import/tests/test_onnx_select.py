"""ONNX indexing and selection converters (``ops/_indexing.py``, ``ops/_select.py``) beyond the node suite, on
every installed backend: gradients through ``GatherElements``, ``GatherND`` (with ``batch_dims``),
``ScatterElements`` (data and updates, replace and add) and ``TopK`` values under ``Autodiff`` equal torch's
(float64); ``Unique`` equals ``numpy.unique``; ``TopK`` keeps index order for ties; ``ScatterND`` with a
``max`` reduction over repeated coordinates and ``OneHot`` with negative and out-of-range indices equal
onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import Tensor
from ember.autodiff import Autodiff

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from onnx import helper, numpy_helper  # noqa: E402

from _onnx_backends import BACKENDS  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402

RNG = np.random.default_rng(9)


@pytest.fixture(params=BACKENDS)
def backend(request: Any) -> str:
    return str(request.param)


def _model(node: Any, inputs: dict[str, np.ndarray], inits: dict[str, np.ndarray], n_out: int = 1,
           opset: int = 18) -> Any:
    vis = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
           for k, v in inputs.items()]
    graph = helper.make_graph([node], "g", vis, [helper.make_empty_tensor_value_info(f"y{i}") for i in range(n_out)],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model)
    for out, inf in zip(model.graph.output, inferred.graph.output, strict=True):
        out.CopyFrom(inf)
    return model


def _grad(node: Any, inputs: dict[str, np.ndarray], inits: dict[str, np.ndarray], torch_fn: Any,
          backend: str) -> None:
    """Outputs and input gradients of the one-node model equal ``torch_fn`` (float64 inputs)."""
    model = _model(node, inputs, inits)
    ad = Autodiff(backend_device(backend).backend).device()
    xs = [Tensor.from_data(v, ad, dtype="float64").require_grad() for v in inputs.values()]
    y = load_model(model, ad)(*xs)
    w = RNG.standard_normal(tuple(y.shape))
    grads = (y * Tensor.from_data(w, ad, dtype="float64")).sum().backward()
    ts = [torch.tensor(v, requires_grad=True) for v in inputs.values()]
    yt = torch_fn(*ts)
    (yt * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(y.to_numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    for x, t in zip(xs, ts, strict=True):
        np.testing.assert_allclose(x.grad(grads).to_numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_gradient_of_gather_elements_with_negative_indices(backend: str) -> None:
    idx = np.array([[0, -1, 1], [-3, 2, 2]], np.int64)
    node = helper.make_node("GatherElements", ["x", "i"], ["y0"], axis=1)
    _grad(node, {"x": RNG.standard_normal((2, 3))}, {"i": idx},
          lambda x: torch.gather(x, 1, torch.from_numpy(idx % 3)), backend)


def test_gradient_of_gather_nd_with_batch_dims(backend: str) -> None:
    idx = np.array([[[1], [0], [1]], [[2], [2], [0]]], np.int64)    # [2 batch, 3 picks, k=1]
    node = helper.make_node("GatherND", ["x", "i"], ["y0"], batch_dims=1)
    _grad(node, {"x": RNG.standard_normal((2, 3, 4))}, {"i": idx},
          lambda x: torch.stack([x[b, torch.from_numpy(idx[b, :, 0])] for b in range(2)]), backend)


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_gradient_of_scatter_elements(reduction: str, backend: str) -> None:
    idx = np.array([[1, 0], [2, 1], [0, 2]], np.int64)             # distinct positions per column
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y0"], axis=0, reduction=reduction)

    def ref(x: Any, u: Any) -> Any:
        i = torch.from_numpy(idx)
        return x.scatter(0, i, u) if reduction == "none" else x.scatter_add(0, i, u)

    _grad(node, {"x": RNG.standard_normal((3, 2)), "u": RNG.standard_normal((3, 2))}, {"i": idx}, ref, backend)


def test_gradient_of_topk_values(backend: str) -> None:
    node = helper.make_node("TopK", ["x", "k"], ["y0", "y1"], axis=1, largest=0)
    model = _model(node, {"x": RNG.standard_normal((3, 6))}, {"k": np.array([2], np.int64)}, n_out=2)
    ad = Autodiff(backend_device(backend).backend).device()
    x = RNG.standard_normal((3, 6))
    xe = Tensor.from_data(x, ad, dtype="float64").require_grad()
    vals, idx = load_model(model, ad)(xe)
    grads = vals.sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    tv, ti = torch.topk(xt, 2, dim=1, largest=False)
    tv.sum().backward()
    np.testing.assert_array_equal(idx.to_numpy(), ti.numpy())
    np.testing.assert_allclose(xe.grad(grads).to_numpy(), xt.grad.numpy())


def _run(model: Any, feeds: dict[str, np.ndarray], backend: str) -> list[np.ndarray]:
    dev = backend_device(backend)
    out = load_model(model, dev)(*[Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in feeds.values()])
    return [t.to_numpy() for t in (out if isinstance(out, tuple) else (out,))]


def _ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_topk_ties_keep_index_order(backend: str) -> None:
    x = np.array([[3, 1, 3, 2, 3, 1]], np.float32)
    node = helper.make_node("TopK", ["x", "k"], ["y0", "y1"])
    model = _model(node, {"x": x}, {"k": np.array([4], np.int64)}, n_out=2)
    vals, idx = _run(model, {"x": x}, backend)
    assert vals.tolist() == [[3, 3, 3, 2]] and idx.tolist() == [[0, 2, 4, 3]]


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_unique_equals_numpy(axis: int | None, backend: str) -> None:
    x = np.array([[2, 1, 2], [0, 5, 0], [2, 1, 2], [0, 5, 0]], np.int64)
    node = helper.make_node("Unique", ["x"], ["y0", "y1", "y2", "y3"], **({} if axis is None else {"axis": axis}))
    model = _model(node, {"x": x}, {}, n_out=4, opset=11)
    y, first, inverse, counts = _run(model, {"x": x}, backend)
    want = np.unique(x, axis=axis, return_index=True, return_inverse=True, return_counts=True)
    for got, exp in zip((y, first, inverse, counts), want, strict=True):
        np.testing.assert_array_equal(got, exp.reshape(got.shape))


def test_scatter_nd_max_over_repeated_coordinates_equals_onnxruntime(backend: str) -> None:
    data = RNG.standard_normal((4, 3)).astype(np.float32)
    upd = RNG.standard_normal((4, 3)).astype(np.float32)
    idx = np.array([[1], [3], [1], [1]], np.int64)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y0"], reduction="max")
    model = _model(node, {"x": data, "u": upd}, {"i": idx})
    feeds = {"x": data, "u": upd}
    np.testing.assert_array_equal(_run(model, feeds, backend)[0], _ort(model, feeds)[0])


def test_one_hot_negative_and_out_of_range_indices_equal_onnxruntime(backend: str) -> None:
    ind = np.array([[0, -1, 3], [7, -4, 2]], np.int64)
    node = helper.make_node("OneHot", ["x", "d", "v"], ["y0"], axis=1)
    model = _model(node, {"x": ind}, {"d": np.array(4, np.int64), "v": np.array([-1.0, 5.0], np.float32)},
                   opset=11)
    np.testing.assert_array_equal(_run(model, {"x": ind}, backend)[0], _ort(model, {"x": ind})[0])


def test_tensor_scatter_circular_kv_cache_update(backend: str) -> None:
    past = np.zeros((2, 5, 3), np.float32)
    upd = RNG.standard_normal((2, 2, 3)).astype(np.float32)
    node = helper.make_node("TensorScatter", ["p", "u", "w"], ["y0"], axis=1, mode="circular")
    model = _model(node, {"p": past, "u": upd}, {"w": np.array([4, 1], np.int64)}, opset=24)
    got = _run(model, {"p": past, "u": upd}, backend)[0]
    want = past.copy()
    want[0, [4, 0]] = upd[0]     # wraps around the cache length
    want[1, [1, 2]] = upd[1]
    np.testing.assert_array_equal(got, want)




@pytest.mark.parametrize(("op", "bad"), [("Gather", 4), ("Gather", -5), ("GatherElements", 4),
                                         ("GatherElements", -5), ("ScatterElements", 4)])
def test_indices_outside_minus_n_to_n_raise_as_in_onnxruntime(backend: str, op: str, bad: int) -> None:
    # -n..-1 count from the end (ONNX); beyond that the Ember op's ember.IndexError names the value (issue 28),
    # where a floor modulo would have wrapped it silently
    import ember
    from ember_import.onnx import OnnxImportError

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    ind = np.array([[0, -1], [bad, 1]], np.int64)
    ins = ["x", "i", "u"] if op == "ScatterElements" else ["x", "i"]
    node = helper.make_node(op, ins, ["y0"], axis=1)
    inits = {"u": np.ones((2, 2), np.float32)} if op == "ScatterElements" else {}
    model = _model(node, {"x": x, "i": ind}, inits, opset=13)
    with pytest.raises(Exception):  # noqa: B017, PT011 - onnxruntime's own error type
        _ort(model, {"x": x, "i": ind})
    seen = bad + 4 if bad < 0 else bad  # the value after the converter's wrap
    with pytest.raises(OnnxImportError, match=rf"index {seen} is out of range for dim 1 of size 4") as info:
        _run(model, {"x": x, "i": ind}, backend)
    assert isinstance(info.value.__cause__, ember.IndexError)
    ok = np.array([[0, -1], [-4, 1]], np.int64)
    np.testing.assert_array_equal(_run(model, {"x": x, "i": ok}, backend)[0], _ort(model, {"x": x, "i": ok})[0])
