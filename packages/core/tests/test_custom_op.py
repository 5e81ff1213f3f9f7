"""``ember.extension.custom_op`` (issue 34, Burn's Backend Extension): a fused ``matmul_add_relu`` with a default,
torch and jax kernels and a custom backward, on numpy, torch and jax, against numpy float64 references; the derived
backward against the custom one; ops with Int inputs and static arguments; kernels under ``ember_jax.jit``; the
errors."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

import ember
from ember import Float, Int, KindError, Tensor
from ember.autodiff import Autodiff
from ember.extension import BackwardContext, CustomOp, CustomOpError, custom_op, register_kernel
from ember.tensor.activation import relu

BACKENDS = [n for n in ("numpy", "torch", "jax") if importlib.util.find_spec(n) is not None]
#: float64 where the backend has it without a process-wide switch; jax stays float32
DTYPE = {"numpy": "float64", "torch": "float64", "jax": "float32"}
TOL = {"float64": 1e-10, "float32": 2e-4}
CALLS: dict[str, int] = {}


def _mar_default(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return relu(x.matmul(w).add(b))


def _torch_kernel(x: Any, w: Any, b: Any) -> Any:
    import torch

    CALLS["torch"] = CALLS.get("torch", 0) + 1
    return torch.relu(torch.addmm(b, x, w))


def _jax_kernel(x: Any, w: Any, b: Any) -> Any:
    import jax

    CALLS["jax"] = CALLS.get("jax", 0) + 1
    return jax.nn.relu(x @ w + b)


def _mar_backward(ctx: BackwardContext, grad: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    x, w, b = ctx.inputs
    g = grad.mul(ctx.output.greater_elem(0.0).float())
    return g.matmul(w.transpose()), x.transpose().matmul(g), g.sum_dim(0)


def _make(name: str, *, backward: bool = True, kernels: bool = True) -> CustomOp:
    op = custom_op(name, inputs=(Float, Float, Float))(_mar_default)
    if kernels:
        op.register_kernel("torch", _torch_kernel)
        op.register_kernel("jax", _jax_kernel)
    if backward:
        op.register_backward(_mar_backward)
    return op


MAR = _make("test_matmul_add_relu")
MAR_DERIVED = _make("test_matmul_add_relu_derived", backward=False)


def _inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((6, 4)), rng.standard_normal((4, 5)), rng.standard_normal((1, 5))]


def _reference(x: np.ndarray, w: np.ndarray, b: np.ndarray, gout: np.ndarray) -> tuple[np.ndarray, ...]:
    z = x @ w + b
    y = np.maximum(z, 0.0)
    g = gout * (z > 0)
    return y, g @ w.T, x.T @ g, g.sum(0, keepdims=True)


def _backend(name: str) -> Any:
    return ember.backend(name, float_dtype=DTYPE[name])


@pytest.mark.parametrize("name", BACKENDS)
def test_forward_matches_reference(name: str) -> None:
    dev = _backend(name).device()
    arrays = _inputs()
    before = CALLS.get(name, 0)
    y = MAR(*[Tensor.from_data(a, dev, Float) for a in arrays])
    ref = _reference(*arrays, np.ones((6, 5)))[0]
    np.testing.assert_allclose(y.to_numpy(), ref, atol=TOL[DTYPE[name]], rtol=TOL[DTYPE[name]])
    if name != "numpy":  # the kernel ran (numpy has none: the default)
        assert CALLS[name] == before + 1


@pytest.mark.parametrize("op", [MAR, MAR_DERIVED], ids=["custom", "derived"])
@pytest.mark.parametrize("name", BACKENDS)
def test_gradients_match_reference(name: str, op: CustomOp) -> None:
    dev = Autodiff(_backend(name)).device()
    arrays = _inputs(1)
    gout = np.random.default_rng(2).standard_normal((6, 5))
    xs = [Tensor.from_data(a, dev, Float).require_grad() for a in arrays]
    y = op(*xs)
    grads = y.mul(Tensor.from_data(gout, dev, Float)).sum().backward()
    ref = _reference(*arrays, gout)
    tol = TOL[DTYPE[name]]
    np.testing.assert_allclose(y.to_numpy(), ref[0], atol=tol, rtol=tol)
    for x, r in zip(xs, ref[1:]):
        np.testing.assert_allclose(x.grad(grads).to_numpy(), r, atol=tol, rtol=tol)


@pytest.mark.parametrize("name", BACKENDS)
def test_custom_backward_equals_derived(name: str) -> None:
    dev = Autodiff(_backend(name)).device()
    got = []
    for op in (MAR, MAR_DERIVED):
        xs = [Tensor.from_data(a, dev, Float).require_grad() for a in _inputs(3)]
        grads = op(*xs).sum().backward()
        got.append([x.grad(grads).to_numpy() for x in xs])
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, atol=TOL[DTYPE[name]], rtol=TOL[DTYPE[name]])


@pytest.mark.parametrize("name", BACKENDS)
def test_untracked_autodiff_runs_the_kernel(name: str) -> None:
    dev = Autodiff(_backend(name)).device()
    arrays = _inputs()
    before = CALLS.get(name, 0)
    y = MAR_DERIVED(*[Tensor.from_data(a, dev, Float) for a in arrays])
    np.testing.assert_allclose(y.to_numpy(), _reference(*arrays, np.ones((6, 5)))[0], atol=TOL[DTYPE[name]])
    assert y.device is dev
    if name != "numpy":
        assert CALLS[name] == before + 1


def test_partially_tracked_inputs_get_gradients_only_where_tracked() -> None:
    dev = Autodiff(_backend("numpy")).device()
    arrays = _inputs()
    x = Tensor.from_data(arrays[0], dev, Float)
    w = Tensor.from_data(arrays[1], dev, Float).require_grad()
    b = Tensor.from_data(arrays[2], dev, Float)
    grads = MAR(x, w, b).sum().backward()
    np.testing.assert_allclose(w.grad(grads).to_numpy(), _reference(*arrays, np.ones((6, 5)))[2], atol=1e-10)
    assert x.grad(grads) is None


# ---------------------------------------------------------------- Int inputs and static arguments
ROWS = custom_op("test_scaled_rows", inputs=(Float, Int), static=("scale",))(
    lambda x, idx, *, scale: x.select(0, idx).mul_scalar(scale)
)


@ROWS.register_backward
def _rows_backward(ctx: BackwardContext, grad: Tensor) -> tuple[Tensor, None]:
    x, idx = ctx.inputs
    return x.zeros_like().select_assign(0, idx, grad.mul_scalar(ctx.static["scale"])), None


@pytest.mark.parametrize("name", BACKENDS)
def test_int_input_and_static_argument(name: str) -> None:
    dev = Autodiff(_backend(name)).device()
    a = np.arange(12.0).reshape(4, 3)
    x = Tensor.from_data(a, dev, Float).require_grad()
    idx = Tensor.from_data(np.array([2, 0, 2]), dev, Int)
    y = ROWS(x, idx, scale=2.0)
    np.testing.assert_allclose(y.to_numpy(), a[[2, 0, 2]] * 2.0)
    g = x.grad(y.sum().backward()).to_numpy()
    np.testing.assert_allclose(g, np.array([[2.0] * 3, [0.0] * 3, [4.0] * 3, [0.0] * 3]))


# ---------------------------------------------------------------- third-party kernels
def test_kernel_registered_by_name_before_the_op_exists() -> None:
    register_kernel("test_plugin_double", "numpy", lambda x: x * 2.0)
    op = custom_op("test_plugin_double", inputs=(Float,))(None)
    assert op.kernels() == ["numpy"]
    y = op(Tensor.from_floats([1.0, 2.0], _backend("numpy").device()))
    assert y.to_numpy().tolist() == [2.0, 4.0]


# ---------------------------------------------------------------- errors
def test_no_kernel_and_no_default_is_a_clear_error() -> None:
    op = custom_op("test_kernel_only", inputs=(Float,))(None)
    op.register_kernel("torch", lambda x: x)
    with pytest.raises(CustomOpError, match=r"no kernel for the 'numpy' backend and no default.*kernels: \['torch'\]"):
        op(Tensor.from_floats([1.0], _backend("numpy").device()))


def test_tracked_without_backward_or_default_is_a_clear_error() -> None:
    op = custom_op("test_kernel_only_ad", inputs=(Float,))(None)
    op.register_kernel("numpy", lambda x: x)
    x = Tensor.from_floats([1.0], Autodiff(_backend("numpy")).device()).require_grad()
    with pytest.raises(CustomOpError, match="needs a backward rule"):
        op(x)
    op.register_backward(lambda ctx, g: (g,))
    assert x.grad(op(x).sum().backward()).to_numpy().tolist() == [1.0]


def test_argument_errors() -> None:
    dev = _backend("numpy").device()
    x = Tensor.from_floats([1.0], dev)
    with pytest.raises(CustomOpError, match="expected 3 tensor inputs"):
        MAR(x, x)
    with pytest.raises(KindError, match="input 1 must be a Float tensor, got Int"):
        MAR(x, Tensor.from_data(np.array([1]), dev, Int), x)
    with pytest.raises(CustomOpError, match="input 2 is a Tensor"):
        MAR(x, x, 1.0)
    with pytest.raises(CustomOpError, match=r"unexpected \['scale'\]"):
        MAR(x, x, x, scale=1.0)
    with pytest.raises(CustomOpError, match=r"missing \['scale'\]"):
        ROWS(x, Tensor.from_data(np.array([0]), dev, Int))
    with pytest.raises(CustomOpError, match="kind"):
        custom_op("test_bad_kind", inputs=("complex",))


def test_backward_returning_the_wrong_number_of_gradients() -> None:
    op = custom_op("test_bad_backward", inputs=(Float, Float))(lambda a, b: a.add(b))
    op.register_backward(lambda ctx, g: (g,))
    dev = Autodiff(_backend("numpy")).device()
    a = Tensor.from_floats([1.0], dev).require_grad()
    with pytest.raises(CustomOpError, match="returned 1 gradients for 2 tensor inputs"):
        op(a, a).sum().backward()


# ---------------------------------------------------------------- ember_jax.jit
@pytest.mark.skipif("jax" not in BACKENDS, reason="jax is not installed")
def test_jax_kernel_inside_jit_with_custom_and_derived_backward() -> None:
    import ember_jax

    dev = Autodiff(_backend("jax")).device()
    arrays = _inputs(4)
    ref = _reference(*arrays, np.ones((6, 5)))
    for op in (MAR, MAR_DERIVED):

        @ember_jax.jit
        def step(x: Tensor, w: Tensor, b: Tensor, op: CustomOp = op) -> Any:
            xs = [t.require_grad() for t in (x, w, b)]
            y = op(*xs)
            grads = y.sum().backward()
            return y, [t.grad(grads) for t in xs]

        y, gs = step(*[Tensor.from_data(a, dev, Float) for a in arrays])
        np.testing.assert_allclose(y.to_numpy(), ref[0], atol=2e-4, rtol=2e-4)
        for g, r in zip(gs, ref[1:]):
            np.testing.assert_allclose(g.to_numpy(), r, atol=2e-4, rtol=2e-4)


@pytest.mark.skipif("jax" not in BACKENDS, reason="jax is not installed")
def test_numpy_kernel_under_jit_is_a_clear_error() -> None:
    import ember_jax

    op = custom_op("test_numpy_in_jit", inputs=(Float,))(None)
    op.register_kernel("jax", lambda x: np.asarray(x) * 2.0)
    dev = _backend("jax").device()
    x = Tensor.from_floats([1.0, 2.0], dev)
    assert op(x).to_numpy().tolist() == [2.0, 4.0]  # eager: fine
    with pytest.raises(CustomOpError, match="not traceable"):
        ember_jax.jit(lambda t: op(t))(x)


# ---------------------------------------------------------------- ember.testing.check_custom_op
@pytest.mark.parametrize("name", BACKENDS)
def test_check_custom_op_passes_for_a_correct_kernel(name: str) -> None:
    from ember.testing import check_custom_op

    for op in (MAR, MAR_DERIVED):
        report = check_custom_op(op, (6, 4), (4, 5), (1, 5), backend=name)
        assert set(report) == {"forward", "grad 0", "grad 1", "grad 2"}
    check_custom_op(ROWS, (4, 3), np.array([1, 3]), backend=name, static={"scale": 0.5})


def test_check_custom_op_finds_a_wrong_kernel_and_a_wrong_backward() -> None:
    from ember.testing import check_custom_op

    op = custom_op("test_wrong", inputs=(Float, Float, Float))(_mar_default)
    op.register_kernel("numpy", lambda x, w, b: np.maximum(x @ w - b, 0.0))
    with pytest.raises(AssertionError, match="test_wrong forward on numpy"):
        check_custom_op(op, (3, 2), (2, 4), (1, 4))
    op2 = custom_op("test_wrong_backward", inputs=(Float, Float, Float))(_mar_default)
    op2.register_backward(lambda ctx, g: (*_mar_backward(ctx, g)[:2], None))
    with pytest.raises(AssertionError, match="gradient 2 on Autodiff"):
        check_custom_op(op2, (3, 2), (2, 4), (1, 4))
    with pytest.raises(ValueError, match="no default"):
        check_custom_op(custom_op("test_no_default", inputs=(Float,))(None), (2,))


# ---------------------------------------------------------------- backward kernels
def _np_backward(inputs: tuple[Any, ...], out: Any, grad: Any) -> tuple[Any, Any, Any]:
    CALLS["numpy backward"] = CALLS.get("numpy backward", 0) + 1
    x, w, _ = inputs
    g = grad * (out > 0)
    return g @ w.T, x.T @ g, g.sum(0, keepdims=True)


MAR_BK = _make("test_matmul_add_relu_bk", backward=False)
MAR_BK.register_kernel("numpy", lambda x, w, b: np.maximum(x @ w + b, 0.0))
MAR_BK.register_backward_kernel("numpy", _np_backward)


@pytest.mark.parametrize("name", BACKENDS)
def test_backward_kernel_where_registered_derived_elsewhere(name: str) -> None:
    dev = Autodiff(_backend(name)).device()
    arrays = _inputs(5)
    xs = [Tensor.from_data(a, dev, Float).require_grad() for a in arrays]
    before = CALLS.get("numpy backward", 0)
    grads = MAR_BK(*xs).sum().backward()
    assert CALLS.get("numpy backward", 0) == before + (name == "numpy")
    ref = _reference(*arrays, np.ones((6, 5)))
    for x, r in zip(xs, ref[1:]):
        np.testing.assert_allclose(x.grad(grads).to_numpy(), r, atol=TOL[DTYPE[name]], rtol=TOL[DTYPE[name]])


def test_backward_kernel_returning_the_wrong_number_of_gradients() -> None:
    op = custom_op("test_bad_backward_kernel", inputs=(Float,))(lambda a: a.exp())
    op.register_backward_kernel("numpy", lambda inputs, out, g: (g, g))
    a = Tensor.from_floats([1.0], Autodiff(_backend("numpy")).device()).require_grad()
    with pytest.raises(CustomOpError, match="backward kernel returned 2 gradients for 1 tensor inputs"):
        op(a).sum().backward()


@pytest.mark.skipif("jax" not in BACKENDS, reason="jax is not installed")
def test_jax_backward_kernel_inside_jit() -> None:
    import jax

    import ember_jax

    op = _make("test_mar_jax_bk", backward=False)
    op.register_backward_kernel("jax", lambda i, out, g: (
        (g * (out > 0)) @ i[1].T, i[0].T @ (g * (out > 0)), (g * (out > 0)).sum(0, keepdims=True)))
    dev = Autodiff(_backend("jax")).device()
    arrays = _inputs(6)

    @ember_jax.jit
    def step(x: Tensor, w: Tensor, b: Tensor) -> Any:
        xs = [t.require_grad() for t in (x, w, b)]
        grads = op(*xs).sum().backward()
        return [t.grad(grads) for t in xs]

    gs = step(*[Tensor.from_data(a, dev, Float) for a in arrays])
    assert isinstance(gs[0].primitive, jax.Array)
    for g, r in zip(gs, _reference(*arrays, np.ones((6, 5)))[1:]):
        np.testing.assert_allclose(g.to_numpy(), r, atol=2e-4, rtol=2e-4)


MASKED = custom_op("test_masked_square", inputs=(Float, "bool"))(lambda x, m: x.mul(x).mask_fill(m, 0.0))


@pytest.mark.parametrize("name", BACKENDS)
def test_bool_input_with_the_derived_backward(name: str) -> None:
    dev = Autodiff(_backend(name)).device()
    a = np.array([1.0, -2.0, 3.0])
    x = Tensor.from_data(a, dev, Float).require_grad()
    m = Tensor.from_data(np.array([False, True, False]), dev, ember.Bool)
    y = MASKED(x, m)
    assert y.to_numpy().tolist() == [1.0, 0.0, 9.0]
    assert x.grad(y.sum().backward()).to_numpy().tolist() == [2.0, 0.0, 6.0]
