"""The stacked LSTM on torch (issue 32): eagerly one ``torch._VF.lstm`` call over all layers
(``nn.LSTM(num_layers=n)``'s call, which cuDNN overlaps across layers); while a step is captured one node per
forward and backward, the custom ops ``ember::lstm_stack_train`` / ``ember::lstm_stack_saved_backward``
(``ember_torch/_rnn_stack_op.py``), never one per layer. The captured step (replayed as it is, through
``torch.compile``'s ``aot_eager``, and through inductor with ``EMBER_SLOW_TESTS=1``) equals the eager one."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import ember
import ember_torch
from ember import Tensor
from ember.autodiff import Autodiff
from ember.nn import StackedLstmConfig
from ember.optim import AdamConfig, GradientsParams
from ember.tensor import functional as F

torch = pytest.importorskip("torch")

SLOW = pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"), reason="inductor compiles: EMBER_SLOW_TESTS=1")
RTOL = {"float32": 1e-5, "float64": 1e-10}  # as test_compile_lstm.py
RTOL_INDUCTOR = {"float32": 1e-5, "float64": 1e-7}

pytestmark = pytest.mark.usefixtures("inductor_cache")

LAYERS = 3


def _dev(dtype: str) -> Any:
    return Autodiff(ember.backend("torch", float_dtype=dtype)).device()


def _step(model: Any, optim: Any, x: Tensor, lr: Any) -> tuple[Any, Tensor]:
    y, state = model.forward(x)
    loss = (y * y).mean() + (state.cell * state.cell).mean()
    grads = GradientsParams.from_grads(loss.backward(), model)
    return optim.step(lr, model, grads), loss


def _inputs(dtype: str, seq: int = 4, bias: bool = True) -> tuple[Any, Tensor, Tensor]:
    dev = _dev(dtype)
    dev.inner.backend.seed(3)
    model = StackedLstmConfig(3, 5, LAYERS, bias=bias).init(dev)
    x = Tensor.from_data(np.random.default_rng(2).standard_normal((2, seq, 3)).astype(dtype), dev)
    lr = Tensor.from_data(np.asarray([0.05], dtype), dev.inner)
    return model, x, lr


def _targets(gm: Any) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


class _CountingVF:
    """``torch._VF`` whose ``lstm`` records each call's ``num_layers``."""

    def __init__(self) -> None:
        self.layers: list[int] = []

    def lstm(self, *args: Any) -> Any:
        self.layers.append(args[4])
        return torch._VF.lstm(*args)  # type: ignore[attr-defined]


@pytest.mark.parametrize("dtype,bias", [("float32", True), ("float64", False)])
def test_eager_stack_is_one_vf_lstm_call_over_all_layers(monkeypatch: Any, dtype: str, bias: bool) -> None:
    """Forward and backward of a StackedLstm: one ``torch._VF.lstm`` call with ``num_layers`` = the stack's depth
    (the backward runs torch's autograd through it); float16 takes the contract's composite (no ``_VF`` call)."""
    from ember_torch import _rnn_kernel

    vf = _CountingVF()
    monkeypatch.setattr(_rnn_kernel, "_VF", vf)
    model, x, _ = _inputs(dtype, bias=bias)
    y, state = model(x.require_grad())
    grads = ((y * y).sum() + state.hidden.sum()).backward()
    assert vf.layers == [LAYERS]
    assert all(p.val().grad(grads) is not None for p in model.params())
    half = Autodiff(ember.backend("torch", float_dtype="float16")).device()
    y16, _ = StackedLstmConfig(3, 5, 2).init(half)(Tensor.from_data(np.ones((1, 2, 3), "float16"), half))
    assert y16.shape == (1, 2, 5) and vf.layers == [LAYERS]


def test_eager_stack_with_a_bias_on_some_layers_only_runs_layer_by_layer(monkeypatch: Any) -> None:
    """One ``torch._VF.lstm`` call cannot take a bias for some layers only: the primitive (reached below the
    functional check) runs the contract's default, one single-layer call per layer, and equals the chained layers."""
    from ember_torch import _rnn_kernel

    vf = _CountingVF()
    monkeypatch.setattr(_rnn_kernel, "_VF", vf)
    B = ember.backend("torch", float_dtype="float64")
    rng = np.random.default_rng(0)
    t = [
        torch.tensor(rng.standard_normal(s))
        for s in [(2, 3, 4), (2, 2, 5), (2, 2, 5), (4, 20), (5, 20), (20,), (5, 20), (5, 20)]
    ]
    x, h0, c0, wx0, wh0, b0, wx1, wh1 = t
    y, h, c, _ = B.lstm_stack(x, h0, c0, [(wx0, wh0, b0), (wx1, wh1, None)], False)
    assert vf.layers == [1, 1]
    y0, h_0, c_0, _ = B.lstm(x, h0[0], c0[0], wx0, wh0, b0, False)
    y1, h_1, c_1, _ = B.lstm(y0, h0[1], c0[1], wx1, wh1, None, False)
    torch.testing.assert_close(y, y1, rtol=0, atol=0)
    torch.testing.assert_close(h, torch.stack([h_0, h_1]), rtol=0, atol=0)
    torch.testing.assert_close(c, torch.stack([c_0, c_1]), rtol=0, atol=0)


def test_captured_stack_step_holds_one_node_per_forward_and_backward() -> None:
    """For torch.compile, a training step of a 3-layer StackedLstm holds ``ember::lstm_stack_train`` and
    ``ember::lstm_stack_saved_backward`` once each: not one node per layer, no single-layer op, no cell."""
    model, x, lr = _inputs("float32", seq=8)
    step = ember_torch.compile(_step, mode="default", backend="aot_eager")
    targets = _targets(step.graph(model, AdamConfig().init(), x, lr))
    assert targets.count("ember.lstm_stack_train.default") == 1
    assert targets.count("ember.lstm_stack_saved_backward.default") == 1
    assert not [t for t in targets if t.startswith("ember.lstm_") and "stack" not in t]
    assert not [t for t in targets if any(f"aten.{op}." in t for op in ("sigmoid", "tanh", "mkldnn_rnn_layer"))]


def _train(fn: Any, model: Any, x: Tensor, lr: Any, steps: int = 4) -> tuple[list[np.ndarray], list[float]]:
    optim = AdamConfig().init()
    optim.init_states(model)
    losses = []
    for _ in range(steps):
        model, loss = fn(model, optim, x, lr)
        losses.append(loss.into_scalar())
    return [np.asarray(p.val().to_numpy(), np.float64) for p in model.params()], losses


def _check_equal_eager(mode: str, backend: str, dtype: str, seq: int = 4, bias: bool = True) -> None:
    model, x, lr = _inputs(dtype, seq, bias)
    step = ember_torch.compile(_step, mode=mode, backend=backend)
    p_c, l_c = _train(step, model, x, lr)
    p_e, l_e = _train(_step, model, x, lr.into_scalar())
    assert step.trace_count == 1
    assert l_c[-1] < l_c[0]
    rtol = (RTOL_INDUCTOR if backend == "inductor" and mode != "capture" else RTOL)[dtype]
    np.testing.assert_allclose(l_c, l_e, rtol=rtol)
    for a, b in zip(p_c, p_e, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,backend", [("capture", "inductor"), ("default", "aot_eager")])
def test_compiled_stack_steps_equal_eager_steps(mode: str, backend: str, dtype: str) -> None:
    """Four Adam steps of a StackedLstm, captured (replayed as is, or through AOTAutograd), equal four eager
    steps."""
    _check_equal_eager(mode, backend, dtype)


def test_compiled_stack_steps_sequence_of_one_and_no_bias() -> None:
    _check_equal_eager("default", "aot_eager", "float32", seq=1, bias=False)


@SLOW
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inductor_stack_steps_equal_eager_steps(dtype: str) -> None:
    _check_equal_eager("default", "inductor", dtype)


@pytest.mark.parametrize("loss_of", ["y", "h"])
def test_captured_stack_gradients_equal_numpy_composite(loss_of: str) -> None:
    """Gradients of x, the initial states and every weight from a captured step (the custom ops through
    ``aot_eager``; ``loss_of="y"``: no gradient reaches ``h_n`` / ``c_n``, ``"h"``: none reaches ``y``), equal the
    contract's composite on numpy in float64."""
    rng = np.random.default_rng(11)
    n, d_in, d = 2, 4, 3
    arrays = [
        rng.standard_normal((n, 5, d_in)),
        rng.standard_normal((2, n, d)) * 0.5,
        rng.standard_normal((2, n, d)) * 0.5,
    ]
    for k in range(2):
        arrays += [
            rng.standard_normal(((d_in if k == 0 else d), 4 * d)) * 0.4,
            rng.standard_normal((d, 4 * d)) * 0.4,
            rng.standard_normal(4 * d) * 0.3,
        ]

    def run(*ts: Tensor) -> list[Tensor]:
        leaves = [t.require_grad() for t in ts]
        y, h, c = F.lstm_stack(leaves[0], leaves[1], leaves[2], [tuple(leaves[3:6]), tuple(leaves[6:9])])
        loss = (y * y).sum() if loss_of == "y" else (h * h).sum() + c.sum()
        g = loss.backward()
        return [loss.detach()] + [t.grad(g) for t in leaves]

    dev = _dev("float64")
    step = ember_torch.compile(run, mode="default", backend="aot_eager")
    assert "ember.lstm_stack_saved_backward.default" in _targets(
        step.graph(*[Tensor.from_data(a, dev) for a in arrays])
    )
    got = step(*[Tensor.from_data(a, dev) for a in arrays])
    ref = Autodiff(ember.backend("numpy", float_dtype="float64")).device()
    want = run(*[Tensor.from_data(a, ref) for a in arrays])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.to_numpy(), w.to_numpy(), rtol=1e-10, atol=1e-10)


def _op_args(bias: bool) -> list[Any]:
    rng = np.random.default_rng(4)
    f = lambda *s: torch.tensor(rng.standard_normal(s))  # noqa: E731
    return [
        f(2, 3, 4),
        f(2, 2, 5),
        f(2, 2, 5),
        [f(4, 20), f(5, 20)],
        [f(5, 20), f(5, 20)],
        [f(20), f(20)] if bias else [],
    ]


@pytest.mark.parametrize("bias", [True, False])
def test_stack_ops_pass_torch_opcheck_and_equal_nn_lstm(bias: bool) -> None:
    """torch's checks of the pure pair, and both against ``nn.LSTM(num_layers=2)`` with the same weights (its
    outputs and autograd's gradients, float64)."""
    args = _op_args(bias)
    x, h0, c0, wx, wh, b = args
    torch.library.opcheck(torch.ops.ember.lstm_stack.default, tuple(args))
    y, h, c = torch.ops.ember.lstm_stack(*args)
    torch.library.opcheck(torch.ops.ember.lstm_stack_backward.default, (y * 0.5, None, c, *args))
    ref = torch.nn.LSTM(4, 5, num_layers=2, bias=bias, batch_first=True).double()
    with torch.no_grad():
        for k in range(2):
            getattr(ref, f"weight_ih_l{k}").copy_(wx[k].t())
            getattr(ref, f"weight_hh_l{k}").copy_(wh[k].t())
            if bias:
                getattr(ref, f"bias_ih_l{k}").copy_(b[k])
                getattr(ref, f"bias_hh_l{k}").zero_()
    xr = x.clone().requires_grad_()
    yr, (hr, cr) = ref(xr, (h0, c0))
    for g, w in zip((y, h, c), (yr, hr, cr)):
        torch.testing.assert_close(g, w.detach(), rtol=1e-12, atol=1e-12)
    params = [getattr(ref, f"{n}_l{k}") for n in ("weight_ih", "weight_hh") for k in range(2)]
    params += [getattr(ref, f"bias_ih_l{k}") for k in range(2)] if bias else []
    want = torch.autograd.grad([yr, cr], [xr, *params], [y * 0.5, c])
    gx, _, _, gwx, gwh, gb = torch.ops.ember.lstm_stack_backward(y * 0.5, None, c, *args)
    got = [gx, *(g.t() for g in gwx), *(g.t() for g in gwh), *gb]
    assert len(gb) == (2 if bias else 0)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)


def test_stack_saved_backward_equals_the_recomputing_backward() -> None:
    """``ember::lstm_stack_train`` keeps its forward (in ``_rnn_op``'s table) for
    ``ember::lstm_stack_saved_backward``: torch's checks of both, the same results as the pure pair, also when the
    kept forward is gone; nothing stays kept."""
    from ember_torch import _rnn_op

    args = _op_args(True)
    torch.library.opcheck(
        torch.ops.ember.lstm_stack_train.default,
        tuple(args),
        test_utils=("test_schema", "test_autograd_registration", "test_faketensor"),
    )
    y, h, c, handle = torch.ops.ember.lstm_stack_train(*args)
    torch.library.opcheck(torch.ops.ember.lstm_stack_saved_backward.default, (handle, y * 0.5, h, None, *args))
    _rnn_op._SAVED.clear()
    want_out = torch.ops.ember.lstm_stack(*args)
    want = torch.ops.ember.lstm_stack_backward(y * 0.5, h, None, *args)
    for kept in (True, False):
        y, h, c, handle = torch.ops.ember.lstm_stack_train(*args)
        for g, w in zip((y, h, c), want_out, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-14, atol=1e-14)
        if not kept:
            _rnn_op._SAVED.clear()
        got = torch.ops.ember.lstm_stack_saved_backward(handle, y * 0.5, h, None, *args)
        for g, w in zip([*got[:3], *got[3], *got[4], *got[5]], [*want[:3], *want[3], *want[4], *want[5]], strict=True):
            torch.testing.assert_close(g, w, rtol=1e-14, atol=1e-14)
        assert not _rnn_op._SAVED


def test_compiled_stack_step_runs_the_forward_once(monkeypatch: Any) -> None:
    """A captured training step runs the stack's kernel once per step (its backward takes the kept forward)."""
    from ember_torch import _rnn_op, _rnn_stack_op

    model, x, lr = _inputs("float32", seq=5)
    step = ember_torch.compile(_step, mode="default", backend="aot_eager")
    optim = AdamConfig().init()
    optim.init_states(model)
    model, _ = step(model, optim, x, lr)
    calls = []
    real = _rnn_stack_op.run_lstm_stack
    monkeypatch.setattr(_rnn_stack_op, "run_lstm_stack", lambda *a: calls.append(1) or real(*a))
    for n in range(1, 3):
        model, _ = step(model, optim, x, lr)
        assert len(calls) == n
    assert not _rnn_op._SAVED
