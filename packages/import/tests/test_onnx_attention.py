"""ONNX converters of family F6 (attention and quantization) beyond the node suite: ``Attention`` gradients
under ``Autodiff`` against ``torch.nn.functional.scaled_dot_product_attention`` (MHA, GQA, causal, masks,
3-D packing, KV cache), finite gradients of fully-masked rows, attribute combinations the suite lacks
(against ``onnx.reference``), and the quantization operators' older opsets, per-axis/blocked parameters,
per-row/per-column zero points and errors (against numpy float64 expectations)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import Tensor
from ember.autodiff import Autodiff

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from _onnx_backends import BACKENDS  # noqa: E402
from ember_import.onnx import OnnxImportError, load_model  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402

RNG = np.random.default_rng(7)
_TYPE = {np.dtype(t): getattr(TensorProto, n) for t, n in (
    (np.float32, "FLOAT"), (np.float64, "DOUBLE"), (np.int64, "INT64"), (np.int32, "INT32"),
    (np.uint8, "UINT8"), (np.int8, "INT8"), (np.int16, "INT16"), (np.uint16, "UINT16"), (np.bool_, "BOOL"))}


@pytest.fixture(params=BACKENDS)
def backend(request: Any) -> str:
    """Each installed backend's name."""
    return str(request.param)


def _model(op: str, inputs: dict[str, np.ndarray | None], n_out: int | str = 1, opset: int = 23, **attrs: Any) -> Any:
    """A one-node model over graph ``inputs`` (``None``: an omitted optional input) with ``n_out`` outputs, or
    those marked ``1`` in a string such as ``"1001"`` (the first and the fourth)."""
    mark = "1" * n_out if isinstance(n_out, int) else n_out
    outs = [f"y{i}" if m == "1" else "" for i, m in enumerate(mark)]
    node = helper.make_node(op, [k if v is not None else "" for k, v in inputs.items()], outs, **attrs)
    vis = [helper.make_tensor_value_info(k, _TYPE[v.dtype], list(v.shape)) for k, v in inputs.items() if v is not None]
    graph = helper.make_graph([node], "g", vis, [helper.make_empty_tensor_value_info(o) for o in outs if o])
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))
    del model.graph.value_info[:]
    return model


def _fed(inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    return {k: v for k, v in inputs.items() if v is not None}


def _run(model: Any, inputs: dict[str, np.ndarray | None], backend: str) -> list[np.ndarray]:
    dev = backend_device(backend)
    out = load_model(model, dev)(*[Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in _fed(inputs).values()])
    return [o.to_numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _reference(model: Any, inputs: dict[str, np.ndarray | None]) -> list[np.ndarray]:
    return list(ReferenceEvaluator(model).run(None, _fed(inputs)))


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------- gradients
def _sdpa(q: Any, k: Any, v: Any, mask: Any = None, causal: bool = False, scale: float | None = None) -> Any:
    import torch

    gqa = q.shape[1] != k.shape[1]
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale,
                                                            enable_gqa=gqa)


def _packed(fn: Any, hq: int, hk: int) -> Any:
    """``fn`` on 3-D ``[B, S, H * D]`` tensors, unpacked to 4-D and back (ONNX's 3-D attention layout)."""

    def run(q: Any, k: Any, v: Any, *rest: Any) -> Any:
        def split(x: Any, h: int) -> Any:
            return x.reshape(x.shape[0], x.shape[1], h, -1).transpose(1, 2)

        y = fn(split(q, hq), split(k, hk), split(v, hk), *rest)
        return y.transpose(1, 2).reshape(y.shape[0], y.shape[2], -1)

    return run


def _with_past(q: Any, k: Any, v: Any, pk: Any, pv: Any) -> Any:
    import torch

    return _sdpa(q, torch.cat([pk, k], 2), torch.cat([pv, v], 2))


_GRAD_CASES: dict[str, tuple[dict[str, np.ndarray | None], dict[str, Any], Any]] = {
    "mha": ({"q": _f32(2, 2, 3, 4), "k": _f32(2, 2, 5, 4), "v": _f32(2, 2, 5, 3)}, {}, _sdpa),
    "gqa_causal_scaled": (
        {"q": _f32(1, 4, 4, 4), "k": _f32(1, 2, 4, 4), "v": _f32(1, 2, 4, 4)}, {"is_causal": 1, "scale": 0.3},
        lambda q, k, v: _sdpa(q, k, v, causal=True, scale=0.3)),
    "float_mask": (
        {"q": _f32(2, 2, 3, 4), "k": _f32(2, 2, 5, 4), "v": _f32(2, 2, 5, 4), "mask": _f32(3, 5)}, {}, _sdpa),
    "bool_mask": (
        {"q": _f32(1, 2, 3, 4), "k": _f32(1, 2, 4, 4), "v": _f32(1, 2, 4, 4),
         "mask": np.array([[1, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=bool)}, {}, _sdpa),
    "packed_3d_gqa": (
        {"q": _f32(2, 3, 8), "k": _f32(2, 4, 4), "v": _f32(2, 4, 6)}, {"q_num_heads": 4, "kv_num_heads": 2},
        _packed(_sdpa, 4, 2)),
    "past_key_value": (
        {"q": _f32(1, 2, 2, 4), "k": _f32(1, 2, 2, 4), "v": _f32(1, 2, 2, 4), "mask": None,
         "past_key": _f32(1, 2, 3, 4), "past_value": _f32(1, 2, 3, 4)}, {}, _with_past),
}


@pytest.mark.parametrize("name", sorted(_GRAD_CASES))
def test_attention_gradients_match_torch_sdpa(name: str, backend: str) -> None:
    """``Y`` and the gradients of ``sum(Y * W)`` with respect to every float input (Q, K, V, a float mask,
    the KV cache) equal PyTorch's scaled_dot_product_attention ones (float64)."""
    torch = pytest.importorskip("torch")
    inputs, attrs, fn = _GRAD_CASES[name]
    model = _model("Attention", inputs, **attrs)
    fed = _fed(inputs)
    dev = Autodiff(backend_device(backend).backend).device()
    ts = [Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in fed.values()]
    ts = [t.require_grad() if v.dtype.kind == "f" else t for t, v in zip(ts, fed.values())]
    out = load_model(model, dev)(*ts)
    y = out[0] if isinstance(out, tuple) else out
    weight = RNG.standard_normal(y.shape)
    loss = y.mul(Tensor.from_data(weight.astype(np.float32), dev)).sum()
    g = loss.backward()
    tt = [torch.tensor(v, dtype=torch.float64, requires_grad=True) if v.dtype.kind == "f" else torch.tensor(v)
          for v in fed.values()]
    want = fn(*tt)
    np.testing.assert_allclose(y.to_numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    (want * torch.tensor(weight)).sum().backward()
    for key, t, w in zip(fed, ts, tt):
        if w.grad is not None:
            np.testing.assert_allclose(t.grad(g).to_numpy(), w.grad.numpy(), rtol=1e-3, atol=1e-5, err_msg=key)


def test_fully_masked_row_has_zero_output_and_finite_gradients(backend: str) -> None:
    """A query row with no attendable key gives a zero output row and zero (not NaN) gradients."""
    inputs = {"q": _f32(1, 1, 2, 4), "k": _f32(1, 1, 3, 4), "v": _f32(1, 1, 3, 4),
              "mask": np.array([[True, False, True], [False, False, False]])}
    dev = Autodiff(backend_device(backend).backend).device()
    ts = [Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in inputs.values()]
    q, k, v = (t.require_grad() for t in ts[:3])
    y = load_model(_model("Attention", inputs), dev)(q, k, v, ts[3])
    g = y.sum().backward()
    out = y.to_numpy()
    assert np.all(out[0, 0, 1] == 0) and np.all(np.isfinite(out))
    for t in (q, k, v):
        assert np.all(np.isfinite(t.grad(g).to_numpy()))
    assert np.all(q.grad(g).to_numpy()[0, 0, 1] == 0)


# ---------------------------------------------------------------------------------------------- attention variants
_VARIANTS: dict[str, tuple[dict[str, np.ndarray | None], int, str, dict[str, Any]]] = {
    # 3-D GQA with a KV cache, causal, softcap and the scores-plus-bias debug output
    "3d_gqa_past_causal_softcap_mode2": (
        {"q": _f32(2, 2, 8), "k": _f32(2, 2, 4), "v": _f32(2, 2, 4), "mask": None,
         "past_key": _f32(2, 2, 3, 2), "past_value": _f32(2, 2, 3, 2)}, 23, "1111",
        {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1, "softcap": 2.0, "qk_matmul_output_mode": 2}),
    # a short bool mask (padded with False to the key length) with the probabilities as debug output
    "short_bool_mask_mode3": (
        {"q": _f32(1, 2, 3, 4), "k": _f32(1, 2, 5, 4), "v": _f32(1, 2, 5, 4),
         "mask": RNG.random((2, 3, 3)) > 0.3}, 23, "1001", {"qk_matmul_output_mode": 3}),
    # opset 24's external cache: per-batch nonpad lengths, causal frontier per batch
    "nonpad_kv_seqlen_causal": (
        {"q": _f32(2, 2, 2, 4), "k": _f32(2, 2, 5, 4), "v": _f32(2, 2, 5, 4), "mask": None, "past_key": None,
         "past_value": None, "nonpad_kv_seqlen": np.array([3, 5], dtype=np.int64)}, 24, "1", {"is_causal": 1}),
    # opset 25's window on both sides with a float mask
    "window_float_mask": (
        {"q": _f32(1, 1, 4, 4), "k": _f32(1, 1, 6, 4), "v": _f32(1, 1, 6, 4), "mask": _f32(4, 6)}, 25, "1",
        {"left_window_size": 1, "right_window_size": 2}),
}


@pytest.mark.parametrize("name", sorted(_VARIANTS))
def test_attention_variants_match_reference(name: str, backend: str) -> None:
    """Attribute combinations the node suite does not hold, against ``onnx.reference`` (all outputs)."""
    inputs, opset, outs, attrs = _VARIANTS[name]
    model = _model("Attention", inputs, outs, opset=opset, **attrs)
    got, want = _run(model, inputs, backend), _reference(model, inputs)
    assert len(got) == len(want) == outs.count("1")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_attention_3d_needs_head_counts() -> None:
    inputs = {"q": _f32(1, 2, 8), "k": _f32(1, 2, 8), "v": _f32(1, 2, 8)}
    model = _model("Attention", inputs)
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1, 2, 8]))
    with pytest.raises(OnnxImportError, match="q_num_heads"):
        _run(model, inputs, "numpy")


def test_rotary_embedding_3d_partial_interleaved(backend: str) -> None:
    """``RotaryEmbedding`` on a packed 3-D input with a partial interleaved rotation and position ids."""
    inputs = {"x": _f32(2, 3, 16), "cos": _f32(8, 2), "sin": _f32(8, 2),
              "pos": np.array([[0, 1, 2], [5, 6, 7]], dtype=np.int64)}
    model = _model("RotaryEmbedding", inputs, num_heads=2, rotary_embedding_dim=4, interleaved=1)
    np.testing.assert_allclose(_run(model, inputs, backend)[0], _reference(model, inputs)[0], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- quantization
def _quantize(x: np.ndarray, scale: np.ndarray, zp: np.ndarray | int, lo: int, hi: int) -> np.ndarray:
    return np.clip(np.rint(x.astype(np.float64) / scale) + zp, lo, hi)


def test_quantize_linear_opset10_per_tensor(backend: str) -> None:
    x = np.array([[-3.0, -0.5, 0.5, 1.5], [2.5, 300.0, -300.0, 0.0]], dtype=np.float32)
    inputs = {"x": x, "s": np.array(0.5, np.float32), "zp": np.array(-3, np.int8)}
    got = _run(_model("QuantizeLinear", inputs, opset=10), inputs, backend)[0]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, _quantize(x, 0.5, -3, -128, 127))


def test_quantize_dequantize_per_axis_opset13(backend: str) -> None:
    x = _f32(2, 3, 4) * 10
    scale = np.array([0.1, 0.2, 0.3], np.float32)
    zp = np.array([0, 10, 250], np.uint8)
    inputs = {"x": x, "s": scale, "zp": zp}
    q = _run(_model("QuantizeLinear", inputs, opset=13, axis=-2), inputs, backend)[0]
    want = _quantize(x, scale.reshape(3, 1), zp.reshape(3, 1).astype(np.float64), 0, 255)
    np.testing.assert_array_equal(q, want)
    back = {"q": q, "s": scale, "zp": zp}
    y = _run(_model("DequantizeLinear", back, opset=13, axis=1), back, backend)[0]
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, (want - zp.reshape(3, 1)) * scale.reshape(3, 1), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int16, np.uint16])
def test_blocked_quantize_with_zero_point_and_remainder_block(dtype: Any, backend: str) -> None:
    """Blocks of 3 along axis 1 of a width-7 input (the last block is partial), a 16-bit zero point."""
    if dtype is np.uint16 and backend == "torch":
        pytest.skip("the torch backend has no uint16")
    x = _f32(2, 7) * 100
    scale = np.array([[0.5, 1.0, 2.0], [0.25, 4.0, 1.5]], np.float32)
    zp = np.array([[10, 20, 30], [40, 50, 60]], dtype)
    inputs = {"x": x, "s": scale, "zp": zp}
    got = _run(_model("QuantizeLinear", inputs, opset=21, axis=1, block_size=3), inputs, backend)[0]
    info = np.iinfo(dtype)
    full_s, full_z = np.repeat(scale, 3, axis=1)[:, :7], np.repeat(zp, 3, axis=1)[:, :7].astype(np.float64)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, _quantize(x, full_s, full_z, info.min, info.max))
    back = {"q": got, "s": scale, "zp": zp}
    y = _run(_model("DequantizeLinear", back, opset=23, axis=1, block_size=3, output_dtype=TensorProto.DOUBLE),
             back, backend)[0]
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, (got - full_z) * full_s, rtol=1e-6)


def test_quantize_refuses_float8_output() -> None:
    inputs = {"x": _f32(4), "s": np.array(1.0, np.float32)}
    with pytest.raises(OnnxImportError, match="FLOAT8E4M3FN"):
        _run(_model("QuantizeLinear", inputs, opset=21, output_dtype=TensorProto.FLOAT8E4M3FN), inputs, "numpy")


def test_dynamic_quantize_all_zero_and_positive(backend: str) -> None:
    for x in (np.zeros((2, 3), np.float32), np.array([0.5, 1.0, 2.0], np.float32)):
        inputs = {"x": x}
        got = _run(_model("DynamicQuantizeLinear", inputs, n_out=3, opset=11), inputs, backend)
        for g, w in zip(got, _reference(_model("DynamicQuantizeLinear", inputs, n_out=3, opset=11), inputs)):
            assert g.dtype == w.dtype and g.shape == np.shape(w)
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_matmul_integer_per_row_and_per_column_zero_points(backend: str) -> None:
    """``a_zero_point`` 1-D is per row of A, ``b_zero_point`` 1-D per column of B (the ONNX spec)."""
    a = RNG.integers(0, 255, (2, 3, 4)).astype(np.uint8)
    b = RNG.integers(-128, 127, (4, 5)).astype(np.int8)
    azp, bzp = np.array([3, 200, 7], np.uint8), RNG.integers(-5, 5, 5).astype(np.int8)
    inputs = {"a": a, "b": b, "azp": azp, "bzp": bzp}
    got = _run(_model("MatMulInteger", inputs, opset=10), inputs, backend)[0]
    want = (a.astype(np.int64) - azp.reshape(3, 1)) @ (b.astype(np.int64) - bzp)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_qlinear_matmul_per_column_scale(backend: str) -> None:
    a = RNG.integers(0, 255, (3, 4)).astype(np.uint8)
    b = RNG.integers(0, 255, (4, 2)).astype(np.uint8)
    inputs = {"a": a, "as": np.array(0.02, np.float32), "azp": np.array(120, np.uint8), "b": b,
              "bs": np.array([0.01, 0.03], np.float32), "bzp": np.array([100, 130], np.uint8),
              "ys": np.array(0.5, np.float32), "yzp": np.array(-5, np.int8)}
    got = _run(_model("QLinearMatMul", inputs, opset=21), inputs, backend)[0]
    acc = (a.astype(np.int64) - 120) @ (b.astype(np.int64) - inputs["bzp"])
    factor = (np.float32(0.02) * inputs["bs"] / np.float32(0.5)).astype(np.float64)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.clip(np.rint(acc * factor) - 5, -128, 127))


def _conv2d(x: np.ndarray, w: np.ndarray, pads: int, stride: int) -> np.ndarray:
    torch = pytest.importorskip("torch")
    return torch.nn.functional.conv2d(torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64),
                                      padding=pads, stride=stride).numpy()


def test_conv_integer_and_qlinear_conv_per_channel(backend: str) -> None:
    """Per-output-channel weight zero points and scales, an int32 bias, padding and stride."""
    x = RNG.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    w = RNG.integers(-128, 127, (3, 2, 3, 3)).astype(np.int8)
    wzp = np.array([0, 2, -3], np.int8)
    inputs = {"x": x, "w": w, "xzp": np.array(128, np.uint8), "wzp": wzp}
    acc = _conv2d(x.astype(np.float64) - 128, w.astype(np.float64) - wzp.reshape(3, 1, 1, 1), 1, 2)
    got = _run(_model("ConvInteger", inputs, opset=10, pads=[1, 1, 1, 1], strides=[2, 2]), inputs, backend)[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, acc)
    ws = np.array([0.01, 0.02, 0.005], np.float32)
    bias = np.array([100, -2000, 50], np.int32)
    qin = {"x": x, "xs": np.array(0.05, np.float32), "xzp": np.array(128, np.uint8), "w": w, "ws": ws,
           "wzp": wzp, "ys": np.array(0.25, np.float32), "yzp": np.array(10, np.uint8), "b": bias}
    got = _run(_model("QLinearConv", qin, opset=10, pads=[1, 1, 1, 1], strides=[2, 2]), qin, backend)[0]
    factor = (np.float32(0.05) * ws / np.float32(0.25)).astype(np.float64).reshape(1, 3, 1, 1)
    want = np.clip(np.rint((acc + bias.reshape(1, 3, 1, 1)) * factor) + 10, 0, 255)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------- compiled, recurrent
@pytest.mark.skipif("jax" not in BACKENDS, reason="ember-backend-jax is not installed")
def test_attention_traces_once_under_ember_jax_jit() -> None:
    """GQA with causal masking from per-batch ``nonpad_kv_seqlen`` (a data-dependent frontier) compiles
    into one trace and equals the reference."""
    import ember_jax

    inputs = {"q": _f32(2, 4, 3, 4), "k": _f32(2, 2, 5, 4), "v": _f32(2, 2, 5, 4), "mask": None, "past_key": None,
              "past_value": None, "nonpad_kv_seqlen": np.array([4, 5], dtype=np.int64)}
    model = _model("Attention", inputs, "1001", opset=24, is_causal=1, qk_matmul_output_mode=3)
    dev = backend_device("jax")
    m = load_model(model, dev)
    step = ember_jax.jit(lambda mod, *xs: mod(*xs))
    xs = [Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in _fed(inputs).values()]
    got = [t.to_numpy() for t in step(m, *xs)]
    step(m, *xs)
    assert step.trace_count == 1
    for g, w in zip(got, _reference(model, inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def _torch_gated_delta(q: Any, k: Any, v: Any, decay: Any, beta: Any, hq: int, hk: int) -> Any:
    """The ``gated_delta`` recurrence of the ONNX ``LinearAttention`` spec, token by token (float64)."""
    import torch

    def split(x: Any, h: int) -> Any:
        return x.reshape(x.shape[0], x.shape[1], h, -1).transpose(1, 2)

    q4, k4, v4 = split(q, hq), split(k, hk), split(v, hk)
    g4, b4 = decay.transpose(1, 2).unsqueeze(-1), beta.transpose(1, 2).unsqueeze(-1)  # [B, H_kv, T, 1]
    state = torch.zeros(q.shape[0], hk, k4.shape[3], v4.shape[3], dtype=q.dtype)
    outs = []
    for t in range(q.shape[1]):
        kt, vt = k4[:, :, t], v4[:, :, t]
        state = state * torch.exp(g4[:, :, t]).unsqueeze(-1)
        vt = b4[:, :, t] * (vt - torch.einsum("bhdm,bhd->bhm", state, kt))
        state = state + kt.unsqueeze(-1) * vt.unsqueeze(-2)
        read = state.repeat_interleave(hq // hk, dim=1)
        outs.append(torch.einsum("bhd,bhdm->bhm", q4[:, :, t], read) / k4.shape[3] ** 0.5)
    y = torch.stack(outs, 2)
    return y.transpose(1, 2).reshape(y.shape[0], y.shape[2], -1)


def test_linear_attention_gated_delta_gradients_match_torch(backend: str) -> None:
    """``LinearAttention`` (gated delta rule, GQA) and its gradients against the recurrence in torch."""
    torch = pytest.importorskip("torch")
    inputs = {"q": _f32(2, 3, 8), "k": _f32(2, 3, 4) * 0.5, "v": _f32(2, 3, 6), "past": None,
              "decay": -RNG.random((2, 3, 2)).astype(np.float32), "beta": RNG.random((2, 3, 2)).astype(np.float32)}
    model = _model("LinearAttention", inputs, 2, opset=27, q_num_heads=4, kv_num_heads=2,
                   update_rule="gated_delta")
    fed = _fed(inputs)
    dev = Autodiff(backend_device(backend).backend).device()
    ts = [Tensor.from_data(v, dev).require_grad() for v in fed.values()]
    y = load_model(model, dev)(*ts)
    y = y[0] if isinstance(y, tuple) else y
    weight = RNG.standard_normal(y.shape)
    g = y.mul(Tensor.from_data(weight.astype(np.float32), dev)).sum().backward()
    tt = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in fed.values()]
    want = _torch_gated_delta(*tt, hq=4, hk=2)
    np.testing.assert_allclose(y.to_numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    (want * torch.tensor(weight)).sum().backward()
    for key, t, w in zip(fed, ts, tt):
        np.testing.assert_allclose(t.grad(g).to_numpy(), w.grad.numpy(), rtol=1e-3, atol=1e-5, err_msg=key)


def test_attention_mode0_is_the_raw_scores_before_softcap(backend: str) -> None:
    """``qk_matmul_output_mode`` 0 is the raw ``Q K^T * scale`` even with ``softcap`` (the spec: "raw QK matmul
    result"; mode 1 is the one after the soft cap)."""
    inputs = {"q": _f32(1, 2, 3, 4) * 3, "k": _f32(1, 2, 5, 4) * 3, "v": _f32(1, 2, 5, 4)}
    raw = inputs["q"].astype(np.float64) @ inputs["k"].astype(np.float64).swapaxes(-1, -2) / 2.0
    for mode, want in ((0, raw), (1, np.tanh(raw / 1.5) * 1.5)):
        model = _model("Attention", inputs, "1001", softcap=1.5, qk_matmul_output_mode=mode)
        np.testing.assert_allclose(_run(model, inputs, backend)[1], want, rtol=1e-4, atol=1e-5)
