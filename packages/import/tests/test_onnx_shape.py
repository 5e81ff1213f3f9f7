"""ONNX shape converters (``ops/_reshape.py``, ``ops/_slicing.py``) beyond the node suite, on every installed
backend: gradients through ``Slice`` (negative steps), ``Pad`` (every mode, cropping), ``Gather`` (negative and
repeated indices), ``Concat``/``Split``, ``Expand``/``Tile`` and ``Transpose`` under ``Autodiff`` equal torch's
(float64); opset variants the suite covers thinly (``Squeeze``/``Unsqueeze``/``Split``/``Slice``/``Pad`` attribute
forms, ``Split``-18's uneven last chunk, ``Reshape``-14's ``allowzero``) equal onnxruntime; shape arithmetic runs on
the host and stays static under ``ember_jax.jit``; bad shapes raise ``OnnxImportError`` naming the node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import Tensor
from ember.autodiff import Autodiff

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from _onnx_backends import BACKENDS  # noqa: E402
from ember_import.onnx import OnnxImportError, load_model  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402

RNG = np.random.default_rng(5)


@pytest.fixture(params=BACKENDS)
def backend(request: Any) -> str:
    return str(request.param)


def _model(nodes: list[Any], x_shape: list[Any], opset: int, inits: dict[str, np.ndarray] | None = None,
           x_type: int = TensorProto.FLOAT, outputs: tuple[str, ...] = ("y",), out_rank: int = 2) -> Any:
    """A model over input ``x``; outputs shape inference cannot type get ``x``'s type and ``out_rank``
    symbolic dims."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", x_type, x_shape)],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model)
    for out, inf in zip(model.graph.output, inferred.graph.output, strict=True):
        if inf.type.HasField("tensor_type") and inf.type.tensor_type.HasField("shape"):
            out.CopyFrom(inf)
        else:
            out.CopyFrom(helper.make_tensor_value_info(out.name, x_type, [f"d{i}" for i in range(out_rank)]))
    return model


def _ort(model: Any, x: np.ndarray) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})


def _run(model: Any, x: np.ndarray, backend: str) -> list[np.ndarray]:
    dev = backend_device(backend)
    out = load_model(model, dev)(Tensor.from_data(x, dev, dtype=str(x.dtype)))
    return [t.to_numpy() for t in (out if isinstance(out, tuple) else (out,))]


# ------------------------------------------------------------------------------------------ opset variants
VARIANTS = [
    ("squeeze-11-attr", [helper.make_node("Squeeze", ["x"], ["y"], axes=[1, -1])], [2, 1, 3, 1], 11, {}),
    ("squeeze-13-all", [helper.make_node("Squeeze", ["x"], ["y"])], [2, 1, 3, 1], 13, {}),
    ("unsqueeze-11-attr", [helper.make_node("Unsqueeze", ["x"], ["y"], axes=[-1, 0])], [2, 3], 11, {}),
    ("unsqueeze-13-input", [helper.make_node("Unsqueeze", ["x", "a"], ["y"])], [2, 3], 13,
     {"a": np.array([3, 1], np.int64)}),
    ("slice-1-attrs", [helper.make_node("Slice", ["x"], ["y"], starts=[1, -3], ends=[1000, -1], axes=[0, 2])],
     [3, 4, 5], 9, {}),
    ("slice-13-neg-steps", [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], [3, 4, 5], 13,
     {"s": np.array([-1, 10], np.int64), "e": np.array([-1000, 0], np.int64), "a": np.array([2, 1], np.int64),
      "t": np.array([-2, -1], np.int64)}),
    ("pad-2-reflect", [helper.make_node("Pad", ["x"], ["y"], pads=[0, 1, 2, 0, 2, 1], mode="reflect")],
     [2, 4, 5], 2, {}),
    ("pad-18-axes-edge", [helper.make_node("Pad", ["x", "p", "", "a"], ["y"], mode="edge")], [2, 4, 5], 18,
     {"p": np.array([2, 1, 0, 3], np.int64), "a": np.array([-1, 0], np.int64)}),
    ("pad-19-wrap-crop", [helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")], [2, 4, 5], 19,
     {"p": np.array([0, 3, -1, 0, 2, 2], np.int64)}),
    ("pad-11-value", [helper.make_node("Pad", ["x", "p", "v"], ["y"])], [2, 4, 5], 11,
     {"p": np.array([0, 1, 0, 1, 0, 2], np.int64), "v": np.array(-2.5, np.float32)}),
    ("reshape-14-allowzero", [helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=0)], [2, 3, 4], 14,
     {"s": np.array([0, -1, 2], np.int64)}),
    ("flatten-11-neg", [helper.make_node("Flatten", ["x"], ["y"], axis=-1)], [2, 3, 4], 11, {}),
    ("expand-13-both-sides", [helper.make_node("Expand", ["x", "s"], ["y"])], [3, 1], 13,
     {"s": np.array([2, 1, 4], np.int64)}),
    ("tile-13", [helper.make_node("Tile", ["x", "r"], ["y"])], [2, 3], 13, {"r": np.array([3, 2], np.int64)}),
    ("gather-13-neg", [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], [2, 4, 3], 13,
     {"i": np.array([[-1, 0], [2, -4]], np.int64)}),
]


@pytest.mark.parametrize(("name", "nodes", "shape", "opset", "inits"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_opset_variants_equal_onnxruntime(name: str, nodes: list[Any], shape: list[int], opset: int,
                                           inits: dict[str, np.ndarray], backend: str) -> None:
    model = _model(nodes, shape, opset, inits)
    x = RNG.standard_normal(shape).astype(np.float32)
    for got, want in zip(_run(model, x, backend), _ort(model, x), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=0)


@pytest.mark.parametrize(("opset", "attrs", "inits", "sizes"), [
    (11, {"axis": 1, "split": [1, 4]}, {}, [1, 4]),
    (13, {"axis": -1}, {"s": np.array([2, 0, 3], np.int64)}, [2, 0, 3]),
    (18, {"axis": 1, "num_outputs": 3}, {}, [2, 2, 1]),      # the last chunk is smaller
], ids=["11-attr", "13-input-with-empty", "18-num-outputs"])
def test_split_versions(opset: int, attrs: dict[str, Any], inits: dict[str, np.ndarray], sizes: list[int],
                        backend: str) -> None:
    outs = tuple(f"y{i}" for i in range(len(sizes)))
    node = helper.make_node("Split", ["x", *inits], list(outs), **attrs)
    model = _model([node], [3, 5], opset, inits, outputs=outs)
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    got = _run(model, x, backend)
    assert [g.shape[1] for g in got] == sizes
    np.testing.assert_array_equal(np.concatenate(got, axis=1), x)


# ------------------------------------------------------------------------------------------ gradients
def _grad_case(nodes: list[Any], shape: list[int], opset: int, inits: dict[str, np.ndarray],
               torch_fn: Any, backend: str) -> None:
    model = _model(nodes, shape, opset, inits, x_type=TensorProto.DOUBLE)
    x = RNG.standard_normal(shape)
    dev = backend_device(backend)
    ad = Autodiff(dev.backend).device()
    xt = Tensor.from_data(x, ad, dtype="float64").require_grad()
    y = load_model(model, ad)(xt)
    w = RNG.standard_normal(tuple(y.shape))
    grads = (y * Tensor.from_data(w, ad, dtype="float64")).sum().backward()
    xr = torch.tensor(x, requires_grad=True)
    (torch_fn(xr) * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(y.to_numpy(), torch_fn(torch.from_numpy(x)).numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xt.grad(grads).to_numpy(), xr.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_gradient_of_slice_with_negative_steps(backend: str) -> None:
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])]
    inits = {"s": np.array([-1, 0], np.int64), "e": np.array([-1000, 5], np.int64),
             "a": np.array([1, 2], np.int64), "t": np.array([-2, 2], np.int64)}
    _grad_case(nodes, [2, 5, 6], 13, inits, lambda t: t.flip(1)[:, ::2, 0:5:2], backend)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_gradient_of_pad(mode: str, backend: str) -> None:
    nodes = [helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)]
    inits = {"p": np.array([0, 2, -1, 0, 1, 3], np.int64)}  # dim 2 cropped by 1 at the front, then padded 3

    def ref(t: Any) -> Any:
        t = t[:, :, 1:]
        if mode == "wrap":
            t = torch.cat([t[:, -2:], t, t[:, :1]], 1)
            return torch.cat([t, t[:, :, :3]], 2)
        m = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}[mode]
        return torch.nn.functional.pad(t[None], (0, 3, 2, 1), mode=m)[0] if m != "constant" else \
            torch.nn.functional.pad(t, (0, 3, 2, 1))

    _grad_case(nodes, [2, 4, 6], 19, inits, ref, backend)


def test_gradient_of_gather_with_negative_and_repeated_indices(backend: str) -> None:
    nodes = [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)]
    idx = np.array([[-1, 0, -1], [2, 2, 1]], np.int64)
    _grad_case(nodes, [3, 4, 2], 13, {"i": idx}, lambda t: t[:, torch.from_numpy(idx % 4)], backend)


def test_gradient_through_split_concat_expand_tile_transpose(backend: str) -> None:
    nodes = [
        helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=1),
        helper.make_node("Transpose", ["a"], ["at"], perm=[1, 0, 2]),
        helper.make_node("Tile", ["b", "r"], ["bt"]),
        helper.make_node("Expand", ["at", "es"], ["ae"]),
        helper.make_node("Reshape", ["ae", "rs"], ["ar"]),
        helper.make_node("Reshape", ["bt", "rs"], ["br"]),
        helper.make_node("Concat", ["ar", "br"], ["y"], axis=0),
    ]
    inits = {"sp": np.array([1, 2], np.int64), "r": np.array([1, 1, 2], np.int64),
             "es": np.array([2, 3, 2], np.int64), "rs": np.array([-1, 4], np.int64)}

    def ref(t: Any) -> Any:
        a, b = t[:, :1], t[:, 1:]
        ae = a.permute(1, 0, 2).expand(2, 3, 2).reshape(-1, 4)
        return torch.cat([ae, b.repeat(1, 1, 2).reshape(-1, 4)], 0)

    _grad_case(nodes, [3, 3, 2], 13, inits, ref, backend)


# ------------------------------------------------------------------------------------------ host shape arithmetic
def _dynamic_reshape_model() -> Any:
    """``y = Reshape(x, Concat(Shape(x)[0:1], [-1]))``: the exporters' flatten, with a dynamic batch."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    return _model(nodes, ["batch", 3, 4], 13, {"zero": np.array(0, np.int64), "zero1": np.array([0], np.int64),
                                                "minus1": np.array([-1], np.int64)})


def test_shape_arithmetic_runs_on_the_host(backend: str) -> None:
    model = _dynamic_reshape_model()
    for n in (1, 5):
        x = RNG.standard_normal((n, 3, 4)).astype(np.float32)
        np.testing.assert_array_equal(_run(model, x, backend)[0], x.reshape(n, 12))


@pytest.mark.skipif("jax" not in BACKENDS, reason="ember-backend-jax is not installed")
def test_shape_arithmetic_is_static_under_jit() -> None:
    import ember_jax

    dev = backend_device("jax")
    m = load_model(_dynamic_reshape_model(), dev)
    step = ember_jax.jit(lambda mod, inp: mod(inp))
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(step(m, Tensor.from_data(x, dev)).to_numpy(), x.reshape(2, 12))
    assert step.trace_count == 1


# ------------------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(("nodes", "inits", "match"), [
    ([helper.make_node("Reshape", ["x", "s"], ["y"])], {"s": np.array([5, -1], np.int64)}, "cannot infer the -1"),
    ([helper.make_node("Squeeze", ["x", "a"], ["y"])], {"a": np.array([0], np.int64)}, "size is not 1"),
    ([helper.make_node("Tile", ["x", "r"], ["y"])], {"r": np.array([2], np.int64)}, "one non-negative count"),
], ids=["reshape", "squeeze", "tile"])
def test_bad_shapes_name_the_node(nodes: list[Any], inits: dict[str, np.ndarray], match: str) -> None:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    dev = backend_device("numpy")
    with pytest.raises(OnnxImportError, match=match) as exc:
        load_model(model, dev, fold=False)(Tensor.from_data(np.zeros((2, 3), np.float32), dev))
    assert f"{nodes[0].op_type} node" in str(exc.value)
