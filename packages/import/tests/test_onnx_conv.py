"""ONNX convolution, pooling and resampling converters (family F4) beyond the node suite, on every installed
backend: gradients through Conv/ConvTranspose/MaxPool/AveragePool/Resize/GridSample under ``Autodiff`` equal
torch's; opset-version variants (Resize-10 and Upsample-7/9 rounding, MaxPool-8 indices in storage order 1,
uint8 MaxPool-12, AveragePool-7, LpPool-2, RoiAlign with an adaptive sampling grid, DeformConv with groups,
MaxUnpool with pads) equal onnxruntime's, or the ONNX reference implementation's where onnxruntime lacks them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff
from ember.backend import backends

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
F = torch.nn.functional

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from ember_import.onnx import load_model  # noqa: E402

RNG = np.random.default_rng(7)
_NP = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
       np.dtype(np.uint8): TensorProto.UINT8}


BACKENDS = sorted(b.name for b in backends() if b.status == "ok" and b.name in ("numpy", "torch", "jax"))


def _device(name: str) -> Any:
    return ember.backend(name, int_dtype="int64").device() if name == "jax" else ember.backend(name).device()


@pytest.fixture(params=BACKENDS)
def backend(request: Any) -> str:
    return str(request.param)


def _model(op: str, inputs: dict[str, np.ndarray], n_out: int = 1, opset: int = 22,
           weights: dict[str, np.ndarray] | None = None, out_type: int = TensorProto.FLOAT, **attrs: Any) -> Any:
    """A one-node model: ``inputs`` are graph inputs (``""`` names an omitted optional input), ``weights``
    initializers (they follow the inputs in the node's input list)."""
    weights = weights or {}
    names = list(inputs) + list(weights)
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, **attrs)
    g_in = [helper.make_tensor_value_info(k, _NP[v.dtype], list(v.shape)) for k, v in inputs.items() if k]
    rank = next(iter(inputs.values())).ndim
    g_out = [helper.make_tensor_value_info(o, out_type if i == 0 else TensorProto.INT64,
                                           [f"{o}_{d}" for d in range(rank)]) for i, o in enumerate(outs)]
    inits = [numpy_helper.from_array(v, k) for k, v in weights.items()]
    graph = helper.make_graph([node], op.lower(), g_in, g_out, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ember(model: Any, inputs: dict[str, np.ndarray], backend: str) -> list[np.ndarray]:
    dev = _device(backend)
    m = load_model(model, dev)
    got = m(*[Tensor.from_data(v, dev, dtype=str(v.dtype)) for k, v in inputs.items() if k])
    return [g.to_numpy() for g in (got if isinstance(got, tuple) else (got,))]


def _ort(model: Any, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(sess.run(None, {k: v for k, v in inputs.items() if k}))


def _reference(model: Any, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    return list(ReferenceEvaluator(model).run(None, {k: v for k, v in inputs.items() if k}))


def _same(got: list[np.ndarray], want: list[np.ndarray], tol: float = 1e-4) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------- gradients
def _grads(model: Any, x: np.ndarray, backend: str, seed: np.ndarray, param: str | None = None) -> tuple[
        np.ndarray, np.ndarray, np.ndarray | None]:
    """Output, d(sum(y * seed))/dx and /d(param) through the imported model under Autodiff."""
    ad = Autodiff(ember.backend(backend)).device()
    m = load_model(model, ad)
    xt = Tensor.from_data(x, ad).require_grad()
    y = m(xt)
    grads = (y * Tensor.from_data(seed, ad)).sum().backward()
    gp = None if param is None else m.weights[param].val().grad(grads).to_numpy()
    return y.to_numpy(), xt.grad(grads).to_numpy(), gp


def _torch_grads(fn: Any, x: np.ndarray, seed: np.ndarray, param: np.ndarray | None = None) -> tuple[
        np.ndarray, np.ndarray, np.ndarray | None]:
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    pt = None if param is None else torch.tensor(param, dtype=torch.float64, requires_grad=True)
    y = fn(xt, pt)
    (y * torch.tensor(seed, dtype=torch.float64)).sum().backward()
    return (y.detach().numpy(), xt.grad.numpy(), None if pt is None else pt.grad.numpy())


def _check_grads(got: tuple[Any, ...], want: tuple[Any, ...]) -> None:
    for g, w in zip(got, want):
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_conv_gradients_asymmetric_pads_groups(backend: str) -> None:
    x, w, b = _f32(2, 4, 7, 6), _f32(6, 2, 3, 2), _f32(6)
    model = _model("Conv", {"x": x}, weights={"w": w, "b": b}, pads=[1, 0, 2, 1], strides=[2, 1], group=2)
    y = _ember(model, {"x": x}, backend)[0]
    seed = _f32(*y.shape)

    def fn(xt: Any, wt: Any) -> Any:
        return F.conv2d(F.pad(xt, (0, 1, 1, 2)), wt, torch.tensor(b, dtype=torch.float64), stride=(2, 1),
                        groups=2)

    _check_grads(_grads(model, x, backend, seed, "w"), _torch_grads(fn, x, seed, w))


def test_conv1d_gradients_dilated(backend: str) -> None:
    x, w = _f32(2, 3, 11), _f32(4, 3, 3)
    model = _model("Conv", {"x": x}, weights={"w": w}, pads=[2, 2], dilations=[2])
    seed = _f32(2, 4, 11)
    _check_grads(_grads(model, x, backend, seed, "w"),
                 _torch_grads(lambda xt, wt: F.conv1d(xt, wt, padding=2, dilation=2), x, seed, w))


def test_conv_transpose_gradients_asymmetric_output_padding(backend: str) -> None:
    x, w, b = _f32(1, 2, 4, 3), _f32(2, 3, 3, 3), _f32(3)
    model = _model("ConvTranspose", {"x": x}, weights={"w": w, "b": b}, strides=[2, 2], pads=[1, 0, 0, 2],
                   output_padding=[1, 1])
    y = _ember(model, {"x": x}, backend)[0]
    _same([y], _ort(model, {"x": x}))
    seed = _f32(*y.shape)

    def fn(xt: Any, wt: Any) -> Any:  # the full transposed convolution, cropped by the pads, extended by output_padding
        full = F.conv_transpose2d(xt, wt, stride=2)
        return F.pad(full, (0, -1, -1, 1)) + torch.tensor(b, dtype=torch.float64).reshape(1, -1, 1, 1)

    _check_grads(_grads(model, x, backend, seed, "w"), _torch_grads(fn, x, seed, w))


def test_conv_transpose_symmetric_matches_torch(backend: str) -> None:
    x, w = _f32(2, 4, 5), _f32(4, 1, 3)
    model = _model("ConvTranspose", {"x": x}, weights={"w": w}, strides=[2], pads=[1, 1], group=4,
                   dilations=[2])
    seed = _f32(2, 4, 11)
    _check_grads(_grads(model, x, backend, seed, "w"), _torch_grads(
        lambda xt, wt: F.conv_transpose1d(xt, wt, stride=2, padding=1, groups=4, dilation=2), x, seed, w))


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER"])
def test_max_pool_gradients(backend: str, auto_pad: str) -> None:
    x = _f32(2, 3, 7, 8)
    if auto_pad == "NOTSET":  # Ember's max_pool2d
        model = _model("MaxPool", {"x": x}, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)

        def fn(xt: Any, _: Any) -> Any:
            return F.max_pool2d(xt, 3, 2, 1, ceil_mode=True)
    else:  # windows of the padded input: kernel 2, stride 1 pads one element at the end
        model = _model("MaxPool", {"x": x}, kernel_shape=[2, 2], auto_pad=auto_pad)

        def fn(xt: Any, _: Any) -> Any:
            return F.max_pool2d(F.pad(xt, (0, 1, 0, 1), value=-np.inf), 2, 1)

    y = _ember(model, {"x": x}, backend)[0]
    seed = _f32(*y.shape)
    _check_grads(_grads(model, x, backend, seed), _torch_grads(fn, x, seed))


@pytest.mark.parametrize("include_pad", [0, 1])
def test_average_pool_gradients_asymmetric(backend: str, include_pad: int) -> None:
    x = _f32(1, 2, 6, 5)
    model = _model("AveragePool", {"x": x}, kernel_shape=[3, 2], pads=[2, 0, 1, 1], strides=[2, 1],
                   count_include_pad=include_pad)
    y = _ember(model, {"x": x}, backend)[0]
    _same([y], _ort(model, {"x": x}))
    seed = _f32(*y.shape)

    def fn(xt: Any, _: Any) -> Any:
        s = F.avg_pool2d(F.pad(xt, (0, 1, 2, 1)), (3, 2), (2, 1), divisor_override=1)
        ones = torch.ones_like(xt)
        if include_pad:
            ones = F.pad(ones, (0, 1, 2, 1), value=1.0)
        else:
            ones = F.pad(ones, (0, 1, 2, 1))
        return s / F.avg_pool2d(ones, (3, 2), (2, 1), divisor_override=1)

    _check_grads(_grads(model, x, backend, seed), _torch_grads(fn, x, seed))


def test_pool3d_gradients_through_unfolded_windows(backend: str) -> None:
    x = _f32(1, 2, 5, 4, 6)
    mx = _model("MaxPool", {"x": x}, kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[1, 0, 1, 0, 2, 0],
                dilations=[1, 1, 2])
    seed = _f32(*_ember(mx, {"x": x}, backend)[0].shape)

    def fmax(xt: Any, _: Any) -> Any:
        return F.max_pool3d(F.pad(xt, (1, 0, 0, 2, 1, 0), value=-np.inf), (2, 3, 2), (2, 1, 2), dilation=(1, 1, 2))

    _check_grads(_grads(mx, x, backend, seed), _torch_grads(fmax, x, seed))
    avg = _model("AveragePool", {"x": x}, kernel_shape=[3, 3, 3], pads=[1, 1, 1, 1, 1, 1], count_include_pad=1)
    seed = _f32(1, 2, 5, 4, 6)
    _check_grads(_grads(avg, x, backend, seed), _torch_grads(
        lambda xt, _: F.avg_pool3d(xt, 3, 1, 1, count_include_pad=True), x, seed))


def test_average_pool_fast_path_gradients(backend: str) -> None:
    x = _f32(2, 2, 6, 6)
    model = _model("AveragePool", {"x": x}, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    seed = _f32(2, 2, 3, 3)
    _check_grads(_grads(model, x, backend, seed),
                 _torch_grads(lambda xt, _: F.avg_pool2d(xt, 3, 2, 1, count_include_pad=False), x, seed))


def test_resize_linear_gradients(backend: str) -> None:
    x = _f32(1, 2, 4, 5)
    scales = np.array([1, 1, 2, 2], np.float32)
    model = _model("Resize", {"x": x}, opset=19, weights={"roi": np.zeros(0, np.float32), "scales": scales},
                   mode="linear")
    seed = _f32(1, 2, 8, 10)
    _check_grads(_grads(model, x, backend, seed), _torch_grads(
        lambda xt, _: F.interpolate(xt, scale_factor=2, mode="bilinear", align_corners=False), x, seed))


@pytest.mark.parametrize(("mode", "padding"), [("bilinear", "border"), ("bicubic", "zeros"), ("nearest", "zeros")])
def test_grid_sample_gradients(backend: str, mode: str, padding: str) -> None:
    x, grid = _f32(1, 2, 5, 4), (RNG.random((1, 3, 4, 2)) * 2.4 - 1.2).astype(np.float32)
    model = _model("GridSample", {"x": x}, opset=16, weights={"grid": grid}, mode=mode, padding_mode=padding)
    seed = _f32(1, 2, 3, 4)

    def fn(xt: Any, gt: Any) -> Any:
        return F.grid_sample(xt, gt, mode=mode, padding_mode=padding, align_corners=False)

    param = None if mode == "nearest" else "grid"  # nearest sampling has no gradient in the grid
    _check_grads(_grads(model, x, backend, seed, param), _torch_grads(fn, x, seed, grid)[:2])


@pytest.mark.parametrize("padding", ["border", "reflection"])
def test_grid_sample20_cubic_padding_matches_onnxruntime(backend: str, padding: str) -> None:
    x, grid = _f32(1, 2, 5, 4), (RNG.random((1, 3, 4, 2)) * 3 - 1.5).astype(np.float32)
    inputs = {"x": x, "grid": grid}
    model = _model("GridSample", inputs, opset=20, mode="cubic", padding_mode=padding, align_corners=1)
    _same(_ember(model, inputs, backend), _ort(model, inputs))


# ---------------------------------------------------------------------------------------------- opset variants
@pytest.mark.parametrize("scales", [[1, 1, 0.6, 0.5], [1, 1, 2.5, 3]])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize10_matches_onnxruntime(backend: str, scales: list[float], mode: str) -> None:
    x = _f32(1, 2, 5, 6)
    model = _model("Resize", {"x": x}, opset=10, weights={"s": np.array(scales, np.float32)}, mode=mode)
    _same(_ember(model, {"x": x}, backend), _ort(model, {"x": x}))


def test_upsample7_and_9(backend: str) -> None:
    x = _f32(1, 1, 3, 4)
    m7 = _model("Upsample", {"x": x}, opset=7, mode="linear", scales=[1.0, 1.0, 2.0, 1.5])
    _same(_ember(m7, {"x": x}, backend), _ort(m7, {"x": x}))
    m9 = _model("Upsample", {"x": x}, opset=9, weights={"s": np.array([1, 1, 3, 2], np.float32)})
    _same(_ember(m9, {"x": x}, backend), _ort(m9, {"x": x}))


def test_resize13_sizes_cubic_exclude_outside(backend: str) -> None:
    x = _f32(1, 1, 6, 7)
    model = _model("Resize", {"x": x, "": np.zeros(0)}, opset=13, weights={"sizes": np.array([1, 1, 4, 10])},
                   mode="cubic", coordinate_transformation_mode="asymmetric", exclude_outside=1,
                   cubic_coeff_a=-0.5)
    model.graph.node[0].input[:] = ["x", "", "", "sizes"]
    _same(_ember(model, {"x": x}, backend), _ort(model, {"x": x}))


def test_maxpool8_indices_column_major_3d(backend: str) -> None:
    x = _f32(2, 2, 4, 5, 3)
    model = _model("MaxPool", {"x": x}, n_out=2, opset=8, kernel_shape=[2, 3, 2], strides=[2, 1, 1],
                   pads=[1, 0, 1, 0, 1, 0], storage_order=1)
    got = _ember(model, {"x": x}, backend)
    _same(got, _reference(model, {"x": x}))


def test_maxpool_indices_fast_path_row_major(backend: str) -> None:
    x = _f32(2, 3, 6, 7)
    model = _model("MaxPool", {"x": x}, n_out=2, opset=12, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    _same(_ember(model, {"x": x}, backend), _ort(model, {"x": x}))


def test_maxpool12_uint8_padded(backend: str) -> None:
    x = RNG.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    model = _model("MaxPool", {"x": x}, opset=12, out_type=TensorProto.UINT8, kernel_shape=[3, 3],
                   pads=[1, 1, 1, 1])
    _same(_ember(model, {"x": x}, backend), _ort(model, {"x": x}))


def test_averagepool7_count_include_pad_lppool2_globallppool(backend: str) -> None:
    x = _f32(1, 2, 5, 6)
    avg = _model("AveragePool", {"x": x}, opset=7, kernel_shape=[3, 3], pads=[1, 0, 1, 2], count_include_pad=1)
    _same(_ember(avg, {"x": x}, backend), _ort(avg, {"x": x}))
    lp = _model("LpPool", {"x": x}, opset=2, kernel_shape=[2, 3], strides=[1, 2], p=3)
    _same(_ember(lp, {"x": x}, backend), _ort(lp, {"x": x}))
    glp = _model("GlobalLpPool", {"x": x}, opset=2, p=3)
    _same(_ember(glp, {"x": x}, backend), _ort(glp, {"x": x}))


def test_roialign_adaptive_sampling_grid(backend: str) -> None:
    x = _f32(2, 3, 10, 9)
    rois = np.array([[0.5, 1.0, 7.0, 8.5], [2.0, 0.0, 4.0, 3.0], [0.0, 0.0, 8.9, 9.9]], np.float32)
    model = _model("RoiAlign", {"x": x, "rois": rois, "bi": np.array([1, 0, 1])}, opset=16, output_height=3,
                   output_width=2, sampling_ratio=0, spatial_scale=0.9)
    inputs = {"x": x, "rois": rois, "bi": np.array([1, 0, 1])}
    _same(_ember(model, inputs, backend), _ort(model, inputs))


def test_deform_conv_groups_offset_groups(backend: str) -> None:
    x, w = _f32(1, 4, 5, 6), _f32(2, 2, 2, 3)
    offset = (_f32(1, 2 * 6 * 2, 3, 2) * 1.5).astype(np.float32)
    mask = RNG.random((1, 12, 3, 2)).astype(np.float32)
    inputs = {"x": x, "w": w, "offset": offset, "b": _f32(2), "mask": mask}
    model = _model("DeformConv", inputs, opset=19, group=2, offset_group=2, strides=[2, 2], dilations=[1, 2],
                   pads=[0, 1, 1, 0])
    _same(_ember(model, inputs, backend), _reference(model, inputs))


def test_maxunpool_with_pads(backend: str) -> None:
    x = _f32(1, 2, 4, 4)
    pool = _model("MaxPool", {"x": x}, n_out=2, opset=12, kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1])
    vals, idx = _ort(pool, {"x": x})
    inputs = {"v": vals, "i": idx}
    model = _model("MaxUnpool", inputs, opset=11, kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1])
    _same(_ember(model, inputs, backend), _ort(model, inputs))


@pytest.mark.skipif("jax" not in BACKENDS, reason="ember-backend-jax is not installed")
def test_chain_compiles_with_ember_jax_jit() -> None:
    """Conv (asymmetric pads), MaxPool with indices, Resize (static scales), ConvTranspose (output_shape),
    AveragePool, GridSample and GlobalAveragePool trace once under ``ember_jax.jit`` and equal onnxruntime."""
    import ember_jax

    x = _f32(2, 3, 9, 8)
    w1, w2 = _f32(4, 3, 3, 3), _f32(4, 2, 2, 2)
    grid = (RNG.random((2, 5, 4, 2)) * 2 - 1).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 0, 0, 1]),
        helper.make_node("MaxPool", ["a"], ["b", "bi"], kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER"),
        helper.make_node("Resize", ["b", "", "s"], ["c"], mode="linear"),
        helper.make_node("ConvTranspose", ["c", "w2"], ["d"], strides=[2, 2], output_shape=[17, 13]),
        helper.make_node("AveragePool", ["d"], ["e"], kernel_shape=[3, 3], pads=[0, 1, 2, 1], strides=[2, 2]),
        helper.make_node("GridSample", ["e", "grid"], ["f"], mode="bilinear"),
        helper.make_node("GlobalAveragePool", ["f"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"]),
         helper.make_tensor_value_info("bi", TensorProto.INT64, ["n", "c", "h", "w"])],
        initializer=[numpy_helper.from_array(v, k) for k, v in
                     {"w1": w1, "w2": w2, "grid": grid, "s": np.array([1, 1, 2, 1.5], np.float32)}.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    dev = _device("jax")
    m = load_model(model, dev)
    step = ember_jax.jit(lambda mod, inp: mod(inp))
    xt = Tensor.from_data(x, dev)
    got = [t.to_numpy() for t in step(m, xt)]
    step(m, xt)
    assert step.trace_count == 1
    _same(got, _ort(model, {"x": x}))
