"""ONNX element-wise, logic, cast and activation converters (family F1) beyond the node suite, on every installed
backend: gradients through the differentiable converters under ``Autodiff`` equal torch's (float64); opset
variants the suite does not cover (legacy ``broadcast``/``axis`` of opsets < 7, ``Clip``-6 attributes and
``Clip``-11 with an omitted bound, ``Cast``-1's type-name ``to``, ``Dropout``-7's typed mask and ``Dropout``-12 in
training mode, ``PRelu``-6 per-channel slopes) and integer semantics (``Div`` truncation, ``Mod`` signs, ``Pow`` with
an integer base and float exponent, out-of-range ``BitShift``, exact int64 -> float64 ``Cast``) equal numpy float64
or onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import Tensor
from ember.autodiff import Autodiff

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from onnx import TensorProto, helper  # noqa: E402

from _onnx_backends import BACKENDS  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402

RNG = np.random.default_rng(11)


@pytest.fixture(params=BACKENDS)
def backend(request: Any) -> str:
    """Each installed backend's name."""
    return str(request.param)


def _graph_model(op: str, inputs: dict[str, np.ndarray | None], opset: int, n_out: int = 1,
                 out_type: int | None = None, **attrs: Any) -> Any:
    """A one-node model over graph ``inputs`` (``None``: an omitted optional input); output types are inferred
    (outputs shape inference leaves untyped, as those of old opsets, get the first input's shape and ``out_type``,
    by default the first input's type)."""
    node = helper.make_node(op, [k if v is not None else "" for k, v in inputs.items()],
                            [f"y{i}" for i in range(n_out)], **attrs)
    vis = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
           for k, v in inputs.items() if v is not None]
    outs = [helper.make_empty_tensor_value_info(f"y{i}") for i in range(n_out)]
    graph = helper.make_graph([node], op.lower(), vis, outs)
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))
    for out in model.graph.output:
        if not out.type.HasField("tensor_type"):
            out.type.CopyFrom(vis[0].type)
            if out_type is not None:
                out.type.tensor_type.elem_type = out_type
    return model


def _fed(inputs: dict[str, np.ndarray | None]) -> list[np.ndarray]:
    return [v for v in inputs.values() if v is not None]


def _run(op: str, inputs: dict[str, np.ndarray | None], backend: str, opset: int = 22, n_out: int = 1,
         out_type: int | None = None, **attrs: Any) -> list[np.ndarray]:
    """The outputs of the one-node model, imported and run on ``backend``, as numpy arrays (dtype kept)."""
    dev = backend_device(backend)
    model = load_model(_graph_model(op, inputs, opset, n_out, out_type, **attrs), dev)
    out = model(*[Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in _fed(inputs)])
    return [o.to_numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _ort(op: str, inputs: dict[str, np.ndarray | None], opset: int = 22, **attrs: Any) -> list[np.ndarray]:
    model = _graph_model(op, inputs, opset, **attrs)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(sess.run(None, {k: v for k, v in inputs.items() if v is not None}))


def _exact(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------- gradients
T = torch.nn.functional

#: (op, attributes, opset, input shapes, torch function of the float64 inputs, positive inputs)
_GRAD_CASES: list[tuple[str, dict[str, Any], int, list[tuple[int, ...]], Any, bool]] = [
    ("Div", {}, 14, [(3, 4), (4,)], torch.div, True),
    ("Pow", {}, 15, [(3, 4), (3, 4)], torch.pow, True),
    ("Sqrt", {}, 13, [(3, 4)], torch.sqrt, True),
    ("Atan", {}, 7, [(3, 4)], torch.atan, False),
    ("Erf", {}, 13, [(3, 4)], torch.erf, False),
    ("Max", {}, 13, [(3, 4), (4,), (3, 1)], lambda a, b, c: torch.maximum(torch.maximum(a, b), c), False),
    ("Mean", {}, 13, [(3, 4), (4,)], lambda a, b: (a + b) / 2, False),
    ("Selu", {"alpha": 1.5, "gamma": 2.0}, 22, [(3, 4)], lambda x: 2.0 * T.elu(x, 1.5), False),
    ("Celu", {"alpha": 0.7}, 12, [(3, 4)], lambda x: T.celu(x, 0.7), False),
    ("Gelu", {"approximate": "tanh"}, 20, [(3, 4)], lambda x: T.gelu(x, approximate="tanh"), False),
    ("Mish", {}, 22, [(3, 4)], T.mish, False),
    ("HardSwish", {}, 22, [(3, 4)], T.hardswish, False),
    ("Swish", {"alpha": 1.7}, 24, [(3, 4)], lambda x: x * torch.sigmoid(1.7 * x), False),
    ("SwiGLU", {}, 28, [(3, 4), (3, 4)], lambda a, b: T.silu(a) * b, False),
    ("PRelu", {}, 16, [(2, 3, 4), (3, 1)], lambda x, s: torch.where(x < 0, x * s, x), False),
    ("Shrink", {"bias": 0.3, "lambd": 0.4}, 9, [(3, 4)],
     lambda x: torch.where(x < -0.4, x + 0.3, torch.where(x > 0.4, x - 0.3, 0.0)), False),
    ("ThresholdedRelu", {"alpha": 0.2}, 22, [(3, 4)], lambda x: torch.where(x > 0.2, x, 0.0), False),
]


@pytest.mark.parametrize("case", _GRAD_CASES, ids=[c[0] for c in _GRAD_CASES])
def test_gradients_match_torch(backend: str, case: Any) -> None:
    op, attrs, opset, shapes, fn, positive = case
    xs = [_f32(*s) for s in shapes]
    if positive:
        xs = [np.abs(x) + 0.5 for x in xs]
    xs = [np.where(np.abs(x) < 0.05, 0.3 + 0.1 * i, x).astype(np.float32) for i, x in enumerate(xs)]  # no kinks, ties
    names = {f"x{i}": x for i, x in enumerate(xs)}
    dev = Autodiff(backend_device(backend).backend).device()
    model = load_model(_graph_model(op, dict(names), opset, **attrs), dev)
    ts = [Tensor.from_data(x, dev).require_grad() for x in xs]
    y = model(*ts)
    seed = _f32(*y.shape)
    grads = (y * Tensor.from_data(seed, dev)).sum().backward()
    tx = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    ty = fn(*tx)
    (ty * torch.tensor(seed, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(y.to_numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    for t, r in zip(ts, tx):
        assert r.grad is not None
        np.testing.assert_allclose(t.grad(grads).to_numpy(), r.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_clip_gradient_flows_only_inside_the_bounds(backend: str) -> None:
    x = np.array([-2.0, -0.5, 0.25, 3.0], dtype=np.float32)
    lo, hi = np.array(-1.0, dtype=np.float32), np.array(1.0, dtype=np.float32)
    dev = Autodiff(backend_device(backend).backend).device()
    model = load_model(_graph_model("Clip", {"x": x, "lo": lo, "hi": hi}, 13), dev)
    xt = Tensor.from_data(x, dev).require_grad()
    y = model(xt, Tensor.from_data(lo, dev), Tensor.from_data(hi, dev))
    np.testing.assert_allclose(xt.grad(y.sum().backward()).to_numpy(), [0.0, 1.0, 1.0, 0.0])


# ---------------------------------------------------------------------------------------------- opset variants
def test_add_legacy_broadcast_axis(backend: str) -> None:
    a, b = _f32(2, 3, 4, 5), _f32(3, 4)
    (got,) = _run("Add", {"a": a, "b": b}, backend, opset=6, broadcast=1, axis=1)
    np.testing.assert_allclose(got, a + b[None, :, :, None], rtol=1e-6)
    (got,) = _run("Mul", {"a": a, "b": _f32(5)}, backend, opset=6, broadcast=1)
    assert got.shape == a.shape


def test_clip_opset6_attributes_and_opset11_omitted_min(backend: str) -> None:
    x = _f32(3, 4) * 3
    (got,) = _run("Clip", {"x": x}, backend, opset=6, min=-0.5, max=1.5)
    np.testing.assert_allclose(got, np.clip(x, -0.5, 1.5))
    (got,) = _run("Clip", {"x": x}, backend, opset=6)
    np.testing.assert_allclose(got, x)
    hi = np.array(0.25, dtype=np.float32)
    inputs: dict[str, np.ndarray | None] = {"x": x, "lo": None, "hi": hi}
    (got,) = _run("Clip", inputs, backend, opset=11)
    np.testing.assert_allclose(got, _ort("Clip", inputs, opset=11)[0])
    xi = np.array([-7, -1, 0, 4, 9], dtype=np.int32)
    (got,) = _run("Clip", {"x": xi, "lo": np.array(-2, np.int32), "hi": np.array(5, np.int32)}, backend, opset=13)
    _exact(got, np.clip(xi, -2, 5).astype(np.int32))


def test_integer_div_truncates_and_mod_signs(backend: str) -> None:
    a = np.array([7, -7, 7, -7, 5, -6, 0], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 4, 3], dtype=np.int32)
    (got,) = _run("Div", {"a": a, "b": b}, backend, opset=14)
    _exact(got, np.trunc(a / b).astype(np.int32))
    (got,) = _run("Mod", {"a": a, "b": b}, backend, opset=13)
    _exact(got, np.mod(a, b))
    (got,) = _run("Mod", {"a": a, "b": b}, backend, opset=13, fmod=1)
    _exact(got, np.fmod(a, b))
    af, bf = a.astype(np.float64) + 0.5, b.astype(np.float64)
    (got,) = _run("Mod", {"a": af, "b": bf}, backend, opset=13, fmod=1)
    np.testing.assert_allclose(got, np.fmod(af, bf))


def test_pow_integer_base_keeps_its_type(backend: str) -> None:
    base = np.array([1, 2, 3, -4], dtype=np.int64)
    (got,) = _run("Pow", {"x": base, "y": np.array([0.5, 3.0, 2.5, 2.0], dtype=np.float32)}, backend, opset=15)
    _exact(got, np.array([1, 8, 15, 16], dtype=np.int64))  # float64 power truncated (the ONNX reference)
    (got,) = _run("Pow", {"x": base.astype(np.int32), "y": np.array([3, 2, 0, 3], np.int32)}, backend, opset=15)
    _exact(got, np.array([1, 4, 1, -64], dtype=np.int32))
    (got,) = _run("Pow", {"x": np.array([-2.0, 2.0], np.float32), "y": np.array([3, -1], np.int64)}, backend)
    _exact(got, np.array([-8.0, 0.5], dtype=np.float32))


def test_bitshift_out_of_range_amounts(backend: str) -> None:
    x = np.array([-64, 64, -1, 3, 5], dtype=np.int8)
    y = np.array([9, 8, 2, 1, 0], dtype=np.int8)
    (got,) = _run("BitShift", {"x": x, "y": y}, backend, opset=11, direction="RIGHT")
    _exact(got, np.array([-1, 0, -1, 1, 5], dtype=np.int8))
    (got,) = _run("BitShift", {"x": x, "y": y}, backend, opset=11, direction="LEFT")
    _exact(got, np.array([0, 0, -4, 6, 5], dtype=np.int8))


def test_cast_int64_to_double_is_exact_and_opset1_names_the_type(backend: str) -> None:
    big = np.array([2**53 + 1, -(2**60) + 7, 123456789012345, 0], dtype=np.int64)
    (got,) = _run("Cast", {"x": big}, backend, opset=13, to=TensorProto.DOUBLE)
    _exact(got, big.astype(np.float64))
    x = np.array([-1.7, 0.0, 2.9], dtype=np.float32)
    (got,) = _run("Cast", {"x": x}, backend, opset=1, out_type=TensorProto.INT32, to="INT32")
    _exact(got, np.array([-1, 0, 2], dtype=np.int32))
    (got,) = _run("Cast", {"x": x}, backend, opset=19, to=TensorProto.BOOL)
    _exact(got, x != 0)
    (got,) = _run("CastLike", {"x": np.array([True, False]), "like": np.zeros(1, np.float16)}, backend, opset=15)
    _exact(got, np.array([1.0, 0.0], dtype=np.float16))


def test_dropout_masks_and_training_mode(backend: str) -> None:
    x = _f32(4, 5)
    got = _run("Dropout", {"x": x}, backend, opset=7, n_out=2, ratio=0.3)
    _exact(got[0], x)
    _exact(got[1], np.ones_like(x))  # the mask has the data's type before opset 10
    got = _run("Dropout", {"x": x}, backend, opset=10, n_out=2)
    _exact(got[1], np.ones(x.shape, dtype=bool))
    ratio, train = np.array(0.5, dtype=np.float32), np.array(True)
    y, mask = _run("Dropout", {"x": x, "r": ratio, "t": train}, backend, opset=13, n_out=2)
    assert mask.dtype == np.bool_
    np.testing.assert_allclose(y, np.where(mask, x * 2.0, 0.0), rtol=1e-6)
    y, mask = _run("Dropout", {"x": x, "r": ratio, "t": np.array(False)}, backend, opset=13, n_out=2)
    _exact(y, x)
    assert mask.all()


def test_prelu_opset6_per_channel_slope(backend: str) -> None:
    x, slope = _f32(2, 3, 4), np.array([0.1, 0.2, 0.3], dtype=np.float32)
    (got,) = _run("PRelu", {"x": x, "s": slope}, backend, opset=6)
    np.testing.assert_allclose(got, np.where(x < 0, x * slope[:, None], x), rtol=1e-6)


def test_is_inf_detect_attributes_and_int_relu(backend: str) -> None:
    x = np.array([np.inf, -np.inf, 1.0, np.nan], dtype=np.float32)
    (got,) = _run("IsInf", {"x": x}, backend, opset=20, detect_positive=0)
    _exact(got, np.array([False, True, False, False]))
    (got,) = _run("IsInf", {"x": x}, backend, opset=20, detect_negative=0)
    _exact(got, np.array([True, False, False, False]))
    xi = np.array([-3, 0, 5], dtype=np.int8)
    (got,) = _run("Relu", {"x": xi}, backend, opset=14)
    _exact(got, np.array([0, 0, 5], dtype=np.int8))


def test_comparisons_legacy_broadcast_and_where(backend: str) -> None:
    a, b = _f32(2, 3, 4), _f32(3)
    (got,) = _run("Greater", {"a": a, "b": b}, backend, opset=1, broadcast=1, axis=1)
    _exact(got, a > b[None, :, None])
    c = RNG.random((3, 1)) > 0.5
    x, y = _f32(1, 4), _f32(3, 4)
    (got,) = _run("Where", {"c": c, "x": x, "y": y}, backend, opset=16)
    _exact(got, np.where(c, x, y))


@pytest.mark.skipif("jax" not in BACKENDS, reason="ember-backend-jax is not installed")
def test_chain_compiles_with_ember_jax_jit() -> None:
    """Mul, Add, Clip (bound inputs), Cast, integer Div/Mod, Greater, Where, Neg, Pow, Sigmoid and Dropout (static
    ratio/training_mode initializers) trace once under ``ember_jax.jit`` and equal onnxruntime."""
    from onnx import numpy_helper

    import ember_jax

    x = _f32(3, 5) * 4
    consts = {"w": _f32(5), "lo": np.array(-3.0, np.float32), "hi": np.array(3.5, np.float32),
              "k": np.array(2, np.int32), "r": np.array(0.4, np.float32), "t": np.array(False),
              "e": np.array(2.0, np.float32)}
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["a"]),
        helper.make_node("Add", ["a", "x"], ["b"]),
        helper.make_node("Clip", ["b", "lo", "hi"], ["c"]),
        helper.make_node("Cast", ["c"], ["ci"], to=TensorProto.INT32),
        helper.make_node("Div", ["ci", "k"], ["d"]),
        helper.make_node("Mod", ["ci", "k"], ["m"], fmod=1),
        helper.make_node("Add", ["d", "m"], ["dm"]),
        helper.make_node("Cast", ["dm"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Greater", ["x", "f"], ["g"]),
        helper.make_node("Neg", ["f"], ["nf"]),
        helper.make_node("Pow", ["x", "e"], ["p"]),
        helper.make_node("Where", ["g", "p", "nf"], ["wh"]),
        helper.make_node("Sigmoid", ["wh"], ["s"]),
        helper.make_node("Dropout", ["s", "r", "t"], ["y", "mask"]),
    ]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape)),
         helper.make_tensor_value_info("mask", TensorProto.BOOL, list(x.shape))],
        initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    dev = backend_device("jax")
    step = ember_jax.jit(lambda mod, inp: mod(inp))
    m, xt = load_model(model, dev), Tensor.from_data(x, dev)
    got = [t.to_numpy() for t in step(m, xt)]
    step(m, xt)
    assert step.trace_count == 1
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    _exact(got[1], want[1])
