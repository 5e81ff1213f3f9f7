"""ONNX converters of family F3 (reductions, matrix products, softmax, normalization, losses) beyond the
node suite: gradients through MatMul, Gemm, Softmax, LayerNormalization and BatchNormalization under
``Autodiff`` against torch, and the older opset versions (attributes that became inputs, Softmax's 2-D
coercion, BatchNormalization's training outputs, GroupNormalization 18) against onnxruntime or numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ember_import.onnx import OnnxImportError, load_model  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402

RNG = np.random.default_rng(3)
_ONNX_TYPE = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
              np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32}


@pytest.fixture(params=["numpy", "torch", "jax"])
def backend(request: Any) -> str:
    """A backend name; the test is skipped where the backend is not installed."""
    try:
        backend_device(request.param)
    except Exception as exc:  # noqa: BLE001 - an uninstalled backend is not tested
        pytest.skip(f"backend {request.param} unavailable: {exc}")
    return str(request.param)


def _model(op: str, inputs: dict[str, np.ndarray], n_out: int = 1, opset: int = 17,
           consts: dict[str, np.ndarray] | None = None, out: np.ndarray | None = None, **attrs: Any) -> Any:
    """A one-node model: graph ``inputs`` then initializer ``consts`` (axes), in that order; output types and
    shapes from onnx shape inference, or those of ``out`` (where onnx cannot infer them)."""
    consts = consts or {}
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, [*inputs, *consts], outs, **attrs)
    vis = [helper.make_tensor_value_info(k, _ONNX_TYPE[v.dtype], list(v.shape)) for k, v in inputs.items()]
    inits = [numpy_helper.from_array(v, k) for k, v in consts.items()]
    ovis = ([helper.make_empty_tensor_value_info(o) for o in outs] if out is None
            else [helper.make_tensor_value_info(outs[0], _ONNX_TYPE[out.dtype], list(out.shape))])
    graph = helper.make_graph([node], "g", vis, ovis, initializer=inits)
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))
    del model.graph.value_info[:]
    model.ir_version = 8  # what onnxruntime reads
    return model


def _run(model: Any, inputs: dict[str, np.ndarray], backend: str) -> list[np.ndarray]:
    dev = backend_device(backend)
    m = load_model(model, dev)
    out = m(*[Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in inputs.values()])
    return [o.to_numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _ort(model: Any, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(sess.run(None, inputs))


def _check(model: Any, inputs: dict[str, np.ndarray], backend: str, want: list[np.ndarray] | None = None,
           rtol: float = 1e-5, atol: float = 1e-5) -> None:
    got = _run(model, inputs, backend)
    want = _ort(model, inputs) if want is None else want
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.asarray(w).dtype, (g.dtype, np.asarray(w).dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------- gradients
def _grads(model: Any, inputs: dict[str, np.ndarray], backend: str, weight: np.ndarray) -> tuple[float, list[Any]]:
    """``sum(y * weight)`` and its gradient with respect to every input, under ``Autodiff``."""
    inner = backend_device(backend).backend
    dev = Autodiff(inner).device()
    ts = [Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in inputs.values()]
    ts = [t.require_grad() if v.dtype.kind == "f" else t for t, v in zip(ts, inputs.values())]
    out = load_model(model, dev)(*ts)
    y = out[0] if isinstance(out, tuple) else out
    loss = y.mul(Tensor.from_data(weight, dev)).sum()
    g = loss.backward()
    grads = [t.grad(g) if v.dtype.kind == "f" else None for t, v in zip(ts, inputs.values())]
    # None: an Int input, or one y does not depend on (BatchNorm's running statistics in training)
    return float(loss.into_scalar()), [np.zeros(t.shape) if d is None else d.to_numpy() for t, d in zip(ts, grads)]


def _torch_grads(fn: Any, inputs: dict[str, np.ndarray], weight: np.ndarray) -> tuple[float, list[np.ndarray]]:
    torch = pytest.importorskip("torch")
    ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) if v.dtype.kind == "f" else torch.tensor(v)
          for v in inputs.values()]
    loss = (fn(*ts) * torch.tensor(weight, dtype=torch.float64)).sum()
    loss.backward()
    return loss.item(), [np.zeros(t.shape) if t.grad is None else t.grad.numpy() for t in ts]


def _grad_case(name: str) -> tuple[Any, dict[str, np.ndarray], Any, tuple[int, ...]]:
    torch = pytest.importorskip("torch")
    F = torch.nn.functional

    def c(p: Any) -> Any:  # a per-channel [C] parameter broadcast over [N, C, H, W]
        return p[None, :, None, None]

    if name == "matmul_batched":
        x = {"a": _f32(2, 3, 4), "b": _f32(4, 5)}
        return _model("MatMul", x), x, torch.matmul, (2, 3, 5)
    if name == "matmul_vector":
        x = {"a": _f32(4), "b": _f32(2, 4, 3)}
        return _model("MatMul", x), x, torch.matmul, (2, 3)
    if name == "gemm":
        x = {"a": _f32(4, 3), "b": _f32(5, 4), "c": _f32(5)}
        model = _model("Gemm", x, transA=1, transB=1, alpha=0.5, beta=2.0)
        return model, x, lambda a, b, c: 0.5 * a.T @ b.T + 2.0 * c, (3, 5)
    if name == "softmax":
        x = {"x": _f32(2, 3, 4)}
        return _model("Softmax", x, axis=1), x, lambda t: torch.softmax(t, 1), (2, 3, 4)
    if name == "softmax_opset11":  # coerced to 2-D [2, 12] at axis 1
        x = {"x": _f32(2, 3, 4)}
        return (_model("Softmax", x, opset=11), x,
                lambda t: torch.softmax(t.reshape(2, 12), 1).reshape(2, 3, 4), (2, 3, 4))
    if name == "log_softmax":
        x = {"x": _f32(3, 5)}
        return _model("LogSoftmax", x), x, lambda t: torch.log_softmax(t, -1), (3, 5)
    if name == "layer_norm":
        x = {"x": _f32(2, 3, 4), "s": _f32(3, 4), "b": _f32(3, 4)}
        return (_model("LayerNormalization", x, axis=1, epsilon=1e-3), x,
                lambda t, s, b: F.layer_norm(t, (3, 4), s, b, 1e-3), (2, 3, 4))
    if name == "batch_norm":
        var = RNG.uniform(0.5, 2.0, 3).astype(np.float32)
        x = {"x": _f32(4, 3, 2, 2), "s": _f32(3), "b": _f32(3), "m": _f32(3), "v": var}
        return (_model("BatchNormalization", x, opset=15, epsilon=1e-3), x,
                lambda t, s, b, m, v: (t - c(m)) / torch.sqrt(c(v) + 1e-3) * c(s) + c(b), (4, 3, 2, 2))
    if name == "batch_norm_training":
        x = {"x": _f32(4, 3, 2, 2), "s": _f32(3), "b": _f32(3), "m": _f32(3), "v": np.ones(3, np.float32)}
        return (_model("BatchNormalization", x, n_out=3, opset=15, epsilon=1e-3, training_mode=1), x,
                lambda t, s, b, m, v: F.batch_norm(t, None, None, s, b, True, 0.0, 1e-3) + 0 * (m + v).sum(),
                (4, 3, 2, 2))
    if name == "det":
        x = {"x": _f32(2, 3, 3)}
        return _model("Det", x, opset=11), x, torch.linalg.det, (2,)
    if name == "softmax_cross_entropy":
        x = {"s": _f32(4, 3, 2), "t": np.array([[0, 2], [1, -1], [2, 0], [1, 1]], np.int64), "w": _f32(3) ** 2}
        def sce(s: Any, t: Any, w: Any) -> Any:  # F.cross_entropy, differentiable in the weights too
            keep = t != -1
            wt = w[t.clamp(min=0)] * keep
            picked = torch.log_softmax(s, 1).gather(1, t.clamp(min=0)[:, None]).squeeze(1)
            return -(picked * wt).sum() / wt.sum()

        return _model("SoftmaxCrossEntropyLoss", x, opset=13, ignore_index=-1), x, sce, ()
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["matmul_batched", "matmul_vector", "gemm", "softmax", "softmax_opset11",
                                  "log_softmax", "layer_norm", "batch_norm", "batch_norm_training", "det",
                                  "softmax_cross_entropy"])
def test_gradients_match_torch(name: str, backend: str) -> None:
    model, inputs, fn, out_shape = _grad_case(name)
    weight = RNG.standard_normal(out_shape).astype(np.float32)
    loss, grads = _grads(model, inputs, backend, weight)
    want_loss, want = _torch_grads(fn, inputs, weight)
    assert loss == pytest.approx(want_loss, rel=1e-4, abs=1e-4)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)


# ---------------------------------------------------------------------------------------------- opset versions
@pytest.mark.parametrize(("op", "opset"), [("ReduceSum", 11), ("ReduceMean", 13), ("ReduceMax", 13),
                                           ("ReduceL2", 11), ("ReduceLogSumExp", 13), ("ReduceProd", 17)])
def test_reduce_axes_attribute_versions(op: str, opset: int, backend: str) -> None:
    x = {"x": _f32(2, 3, 4)}
    _check(_model(op, x, opset=opset, axes=[0, -1], keepdims=0), x, backend, rtol=1e-4)
    _check(_model(op, x, opset=opset), x, backend, rtol=1e-4)  # no axes: every axis, kept


@pytest.mark.parametrize(("op", "opset"), [("ReduceSum", 13), ("ReduceL1", 18), ("ReduceMin", 18)])
def test_reduce_axes_input_versions(op: str, opset: int, backend: str) -> None:
    x = {"x": _f32(2, 3, 4)}
    axes, empty = {"axes": np.array([1], np.int64)}, {"axes": np.zeros([0], np.int64)}
    _check(_model(op, x, opset=opset, consts=axes, keepdims=0), x, backend)
    _check(_model(op, x, opset=opset, consts=empty, noop_with_empty_axes=1), x, backend, want=[x["x"]])
    _check(_model(op, x, opset=opset, consts=empty), x, backend)


def test_reduce_int_keeps_its_type_and_empty_max_is_the_lowest_int(backend: str) -> None:
    x = {"x": RNG.integers(-5, 5, (3, 4)).astype(np.int32)}
    _check(_model("ReduceSum", x, opset=11, axes=[1]), x, backend)
    _check(_model("ReduceMean", x, opset=11, axes=[1]), x, backend)  # truncated toward zero
    e = {"x": np.zeros((2, 0), np.int32)}
    _check(_model("ReduceMax", e, opset=13, axes=[1], keepdims=0), e, backend,
           want=[np.full(2, np.iinfo(np.int32).min, np.int32)])


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_axis_rules(op: str, opset: int, backend: str) -> None:
    x = {"x": _f32(2, 3, 4)}
    x["x"][0, 1, 2] = x["x"][0, 2, 3] = 9.0  # a tie: Hardmax marks the first
    _check(_model(op, x, opset=opset), x, backend)
    _check(_model(op, x, opset=opset, axis=1), x, backend)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_select_last_index_and_old_opsets(op: str, backend: str) -> None:
    x = {"x": np.array([[1, 3, 3, 0], [0, 0, 2, 2]], np.float32)}
    _check(_model(op, x, opset=12, axis=1, select_last_index=1), x, backend)
    _check(_model(op, x, opset=11, axis=-1, keepdims=0), x, backend)
    _check(_model(op, x, opset=1), x, backend)


def test_cumsum_exclusive_reverse_with_int32_axis(backend: str) -> None:
    x, axis = {"x": _f32(3, 4)}, {"axis": np.array(1, np.int32)}
    for exclusive in (0, 1):
        for reverse in (0, 1):
            _check(_model("CumSum", x, opset=14, consts=axis, exclusive=exclusive, reverse=reverse), x, backend)


def test_gemm_versions(backend: str) -> None:
    x = {"a": _f32(3, 4), "b": _f32(4, 2), "c": _f32(1, 2)}
    want = 2.0 * x["a"].astype(np.float64) @ x["b"] + x["c"]
    _check(_model("Gemm", x, opset=6, broadcast=1, alpha=2.0), x, backend, want=[want.astype(np.float32)])
    x2 = {"a": _f32(3, 4), "b": _f32(2, 4)}
    _check(_model("Gemm", x2, opset=11, transB=1, beta=3.0), x2, backend)


def test_matmul_vectors(backend: str) -> None:
    x = {"a": _f32(4), "b": _f32(4)}
    _check(_model("MatMul", x, opset=13), x, backend)
    x = {"a": _f32(2, 1, 3, 4), "b": _f32(4, 5)}
    _check(_model("MatMul", x, opset=13), x, backend)
    x = {"a": _f32(2, 1, 3, 4), "b": _f32(4)}
    _check(_model("MatMul", x, opset=13), x, backend)


def test_batch_norm_versions(backend: str) -> None:
    x, s, b, m = _f32(4, 3, 2), _f32(3), _f32(3), _f32(3)
    v = RNG.uniform(0.5, 2.0, 3).astype(np.float32)
    ins = {"x": x, "s": s, "b": b, "m": m, "v": v}
    _check(_model("BatchNormalization", ins, opset=9, epsilon=1e-2), ins, backend, rtol=1e-4)
    _check(_model("BatchNormalization", ins, opset=7), ins, backend, rtol=1e-4)
    # training (opset 14+): batch statistics and the running ones (onnx.reference's formula)
    axes = (0, 2)
    bm, bv = x.astype(np.float64).mean(axes), x.astype(np.float64).var(axes)
    y = (x - bm[:, None]) / np.sqrt(bv[:, None] + 1e-5) * s[:, None] + b[:, None]
    want = [y.astype(np.float32), (m * 0.8 + bm * 0.2).astype(np.float32), (v * 0.8 + bv * 0.2).astype(np.float32)]
    model = _model("BatchNormalization", ins, n_out=3, opset=15, training_mode=1, momentum=0.8)
    _check(model, ins, backend, want=want, rtol=1e-4)
    # spatial=0 (opset 7): statistics per activation
    p = {"x": x, "s": _f32(3, 2), "b": _f32(3, 2), "m": _f32(3, 2), "v": RNG.uniform(0.5, 2, (3, 2)).astype(np.float32)}
    want1 = (x - p["m"]) / np.sqrt(p["v"] + 1e-5) * p["s"] + p["b"]
    _check(_model("BatchNormalization", p, opset=7, spatial=0), p, backend, want=[want1.astype(np.float32)], rtol=1e-4)


def test_group_norm_opset18_scales_per_group(backend: str) -> None:
    # onnx 1.23's checker refuses GroupNormalization 18-20 (deprecated), so the converter is called directly
    from types import SimpleNamespace

    from ember_import.onnx._ir import Node
    from ember_import.onnx.ops._normalization import group_norm

    x, s, b = _f32(2, 6, 3), _f32(2), _f32(2)
    g = x.astype(np.float64).reshape(2, 2, 9)
    y = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    want = (y * s[None, :, None] + b[None, :, None]).reshape(2, 6, 3)
    dev = backend_device(backend)
    node = Node("GroupNormalization", "", "gn", ["x", "s", "b"], ["y"], {"num_groups": 2})
    got = group_norm(SimpleNamespace(opset=18), node, *(Tensor.from_data(v, dev) for v in (x, s, b)))
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-4, atol=1e-5)


def test_layer_norm_statistics_outputs(backend: str) -> None:
    ins = {"x": _f32(2, 3, 4), "s": _f32(4)}
    x = ins["x"].astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    inv = 1 / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    want = [((x - mean) * inv * ins["s"]).astype(np.float32), mean.astype(np.float32), inv.astype(np.float32)]
    _check(_model("LayerNormalization", ins, n_out=3, opset=17), ins, backend, want=want, rtol=1e-4)


@pytest.mark.parametrize(("eq", "shapes"), [
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij,jk", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("i,i->", [(4,), (4,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bhid,bhjd->bhij", [(1, 2, 3, 4), (1, 2, 5, 4)]), ("iij->j", [(2, 2, 3)]),
])
def test_einsum_against_numpy(eq: str, shapes: list[tuple[int, ...]], backend: str) -> None:
    ins = {f"x{i}": RNG.standard_normal(s) for i, s in enumerate(shapes)}
    want = np.einsum(eq, *ins.values())
    _check(_model("Einsum", ins, opset=12, equation=eq, out=want), ins, backend, want=[want], rtol=1e-6)


def test_det_pivots_and_singular_batches(backend: str) -> None:
    a = RNG.standard_normal((3, 4, 4))
    a[1, 0, 0] = 0.0  # needs a row swap
    a[2, 3] = a[2, 1]  # singular
    _check(_model("Det", {"x": a}, opset=11), {"x": a}, backend, want=[np.linalg.det(a)], atol=1e-9)


def test_losses_with_weights_and_ignore_index(backend: str) -> None:
    scores, labels, w = _f32(4, 3, 2), np.array([[0, 2], [1, -1], [-1, 0], [2, 2]], np.int64), _f32(3) ** 2
    ins = {"s": scores, "t": labels, "w": w}
    for reduction in ("none", "sum", "mean"):
        _check(_model("SoftmaxCrossEntropyLoss", ins, n_out=2, opset=13, reduction=reduction, ignore_index=-1),
               ins, backend, rtol=1e-4)
        _check(_model("NegativeLogLikelihoodLoss", ins, opset=13, reduction=reduction, ignore_index=-1),
               ins, backend, rtol=1e-4)


def test_errors_name_the_problem() -> None:
    dev = ember.backend("numpy").device()
    ins = {"x": _f32(2, 3)}
    with pytest.raises(OnnxImportError, match="p must be 1 or 2"):
        load_model(_model("LpNormalization", ins, p=3), dev)(Tensor.from_data(ins["x"], dev))
    with pytest.raises(OnnxImportError, match="out of range"):
        load_model(_model("Softmax", ins, opset=13, axis=2, out=ins["x"]), dev)(Tensor.from_data(ins["x"], dev))
