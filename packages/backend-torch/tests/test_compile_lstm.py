"""The LSTM in a compiled torch step (issue 32): while a step is captured, its forward and backward are each one
node, the custom ops ``ember::lstm`` and ``ember::lstm_backward`` (``ember_torch/_rnn_op.py``), never the unrolled
cells; the captured step (replayed as it is, through ``torch.compile``'s ``aot_eager``, and through inductor with
``EMBER_SLOW_TESTS=1``) equals the eager one, and its gradients equal numpy's float64 composite."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import ember
import ember_torch
from ember import Tensor
from ember.autodiff import Autodiff
from ember.nn import LstmConfig
from ember.optim import AdamConfig, GradientsParams
from ember.tensor import functional as F

torch = pytest.importorskip("torch")

SLOW = pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"), reason="inductor compiles: EMBER_SLOW_TESTS=1")
#: (relative tolerance) per float dtype: float32 runs oneDNN's kernel eagerly and at replay (the same kernel, but
#: inductor's code around it may round differently); float64 runs torch's cells in both, and inductor fuses Adam's
#: update (its m / (sqrt(v) + eps) turns a last-bit difference of a near-zero gradient into ~1e-8 of the step)
RTOL = {"float32": 1e-5, "float64": 1e-10}
RTOL_INDUCTOR = {"float32": 1e-5, "float64": 1e-7}

#: one inductor cache directory for the module (``conftest.py``)
pytestmark = pytest.mark.usefixtures("inductor_cache")


def _dev(dtype: str) -> Any:
    return Autodiff(ember.backend("torch", float_dtype=dtype)).device()


def _step(lstm: Any, optim: Any, x: Tensor, lr: Any) -> tuple[Any, Tensor]:
    y, state = lstm.forward(x)
    loss = (y * y).mean() + (state.cell * state.cell).mean()
    grads = GradientsParams.from_grads(loss.backward(), lstm)
    return optim.step(lr, lstm, grads), loss


#: what an unrolled or traced LSTM records: its cells' activations, oneDNN's RNN, torch's fused CUDA cell
_CELL_OPS = ("sigmoid", "tanh", "mkldnn_rnn_layer", "_thnn_fused_lstm_cell", "_cudnn_rnn")


def _targets(gm: Any) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def _inputs(dtype: str, seq: int = 4, bias: bool = True) -> tuple[Any, Any, Tensor, Tensor]:
    dev = _dev(dtype)
    dev.inner.backend.seed(3)
    lstm = LstmConfig(3, 5, bias=bias).init(dev)
    x = Tensor.from_data(np.random.default_rng(2).standard_normal((2, seq, 3)).astype(dtype), dev)
    lr = Tensor.from_data(np.asarray([0.05], dtype), dev.inner)
    return lstm, dev, x, lr


def test_captured_lstm_step_holds_one_node_per_forward_and_backward() -> None:
    """For torch.compile, the graph of a training step holds ``ember::lstm`` and ``ember::lstm_backward`` once
    each, and none of the cells' ops (sigmoid, tanh) or oneDNN's RNN kernel (whose backward workspace AOTAutograd
    cannot provide); replayed as is on the CPU (``"capture"``), the step records oneDNN's kernel and its backward,
    the eager step's, which keeps its workspace (no second forward)."""
    lstm, _, x, lr = _inputs("float32", seq=16)
    step = ember_torch.compile(_step, mode="default", backend="aot_eager")
    targets = _targets(step.graph(lstm, AdamConfig().init(), x, lr))
    assert targets.count("ember.lstm_train.default") == 1
    assert targets.count("ember.lstm_saved_backward.default") == 1
    assert [t for t in targets if any(f"aten.{op}." in t for op in _CELL_OPS)] == []
    assert len(targets) < 80  # Adam's update of three parameters and the loss; 16 unrolled cells are ~500
    captured = _targets(ember_torch.compile(_step, mode="capture").graph(lstm, AdamConfig().init(), x, lr))
    assert not any(t.startswith("ember.") for t in captured)
    if torch.backends.mkldnn.is_available():
        assert captured.count("aten.mkldnn_rnn_layer.default") == 1
        assert captured.count("aten.mkldnn_rnn_layer_backward.default") == 1


def _train(fn: Any, lstm: Any, x: Tensor, lr: Any, steps: int = 4) -> tuple[list[np.ndarray], list[float]]:
    optim = AdamConfig().init()
    optim.init_states(lstm)
    losses = []
    for _ in range(steps):
        lstm, loss = fn(lstm, optim, x, lr)
        losses.append(loss.into_scalar())
    return [np.asarray(p.val().to_numpy(), np.float64) for p in lstm.params()], losses


def _check_equal_eager(mode: str, backend: str, dtype: str, seq: int = 4, bias: bool = True) -> None:
    lstm, _, x, lr = _inputs(dtype, seq, bias)
    step = ember_torch.compile(_step, mode=mode, backend=backend)
    p_c, l_c = _train(step, lstm, x, lr)
    p_e, l_e = _train(_step, lstm, x, lr.into_scalar())
    assert step.trace_count == 1
    assert l_c[-1] < l_c[0]
    rtol = (RTOL_INDUCTOR if backend == "inductor" and mode != "capture" else RTOL)[dtype]
    np.testing.assert_allclose(l_c, l_e, rtol=rtol)
    for a, b in zip(p_c, p_e, strict=True):  # Adam's steps are 1e-3: a wrong or missing one is far above this
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,backend", [("capture", "inductor"), ("default", "aot_eager")])
def test_compiled_lstm_steps_equal_eager_steps(mode: str, backend: str, dtype: str) -> None:
    """Four Adam steps of an LSTM, captured (replayed as is, or through AOTAutograd), equal four eager steps."""
    _check_equal_eager(mode, backend, dtype)


@pytest.mark.parametrize("seq,bias", [(1, True), (3, False)])
def test_compiled_lstm_steps_sequence_of_one_and_no_bias(seq: int, bias: bool) -> None:
    _check_equal_eager("default", "aot_eager", "float32", seq, bias)


@SLOW
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inductor_lstm_steps_equal_eager_steps(dtype: str) -> None:
    """Inductor calls the custom ops from its generated code (the step's other ops fused around them)."""
    _check_equal_eager("default", "inductor", dtype)


def _value_and_grads(
    loss_of: str, x: Tensor, h0: Tensor, c0: Tensor, wx: Tensor, wh: Tensor, bias: Tensor | None
) -> list[Tensor]:
    leaves = [t.require_grad() for t in (x, h0, c0, wx, wh)] + ([] if bias is None else [bias.require_grad()])
    y, h, c = F.lstm(*leaves[:5], None if bias is None else leaves[5])
    w = (y * 0.0 + 1.0).cumsum(1) * 0.1  # unequal weights per step: a gradient of y in the wrong step shows
    loss = (y * y * w).sum()
    if loss_of == "all":
        loss = loss + (h * c).sum() + (c * c).sum() * 0.5
    g = loss.backward()
    return [loss.detach()] + [t.grad(g) for t in leaves]


def _arrays(bias: bool, seq: int) -> list[np.ndarray | None]:
    rng = np.random.default_rng(11)
    n, d_in, d = 3, 4, 5
    return [
        rng.standard_normal((n, seq, d_in)),
        rng.standard_normal((n, d)) * 0.5,
        rng.standard_normal((n, d)) * 0.5,
        rng.standard_normal((d_in, 4 * d)) * 0.4,
        rng.standard_normal((d, 4 * d)) * 0.4,
        rng.standard_normal(4 * d) * 0.3 if bias else None,
    ]


@pytest.mark.parametrize("mode", ["default", "capture"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("loss_of,bias,seq", [("all", True, 6), ("y", True, 6), ("all", False, 1), ("y", False, 1)])
def test_captured_lstm_gradients_equal_numpy_composite(
    loss_of: str, bias: bool, seq: int, dtype: str, mode: str
) -> None:
    """The gradients with respect to x, h0, c0, both weights and the bias, from a captured step (for
    ``torch.compile``: the custom ops, through ``aot_eager``; ``"capture"``: torch's traced kernels; ``loss_of="y"``:
    h_n and c_n get no gradient, a ``None`` into ``ember::lstm_backward``), equal those of the contract's composite
    on numpy in float64."""
    arrays = _arrays(bias, seq)
    dev = _dev(dtype)
    ref_dev = Autodiff(ember.backend("numpy", float_dtype="float64")).device()

    def on(d: Any, dt: str) -> list[Any]:
        return [None if a is None else Tensor.from_data(a.astype(dt), d) for a in arrays]

    def run(*args: Any) -> list[Tensor]:
        return _value_and_grads(loss_of, *args)

    step = ember_torch.compile(run, mode=mode, backend="aot_eager")
    targets = _targets(step.graph(*on(dev, dtype)))
    assert ("ember.lstm_saved_backward.default" in targets) == (mode == "default")
    got = step(*on(dev, dtype))
    want = run(*on(ref_dev, "float64"))
    tol = 1e-4 if dtype == "float32" else 1e-10
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g.to_numpy(), np.float64), w.to_numpy(), rtol=tol, atol=tol)


def _op_args(dtype: Any, bias: bool) -> list[Any]:
    return [None if a is None else torch.tensor(a, dtype=dtype) for a in _arrays(bias, 3)]


@pytest.mark.parametrize("bias", [True, False])
def test_custom_ops_pass_torch_opcheck(bias: bool) -> None:
    """torch's own checks of a custom op: schema (no mutation, no aliasing), fake implementation (shapes, strides,
    dtypes) against the real one, and AOTAutograd's dispatch."""
    x, h0, c0, wx, wh, b = _op_args(torch.float64, bias)
    torch.library.opcheck(torch.ops.ember.lstm.default, (x, h0, c0, wx, wh, b))
    y, _, c = torch.ops.ember.lstm(x, h0, c0, wx, wh, b)
    torch.library.opcheck(torch.ops.ember.lstm_backward.default, (y * 0.5, None, c, x, h0, c0, wx, wh, b))


def test_custom_ops_equal_torch_autograd_of_nn_lstm_formulas() -> None:
    """``ember::lstm`` and ``ember::lstm_backward`` against torch's autograd of the cell formulas written out
    (PyTorch's ``nn.LSTM`` documentation), float64, with grad_h absent."""
    x, h0, c0, wx, wh, b = (a.requires_grad_() for a in _op_args(torch.float64, True))
    h, c, hs = h0, c0, []
    for t in range(x.shape[1]):
        i, f, g, o = (x[:, t] @ wx + h @ wh + b).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        hs.append(h)
    y = torch.stack(hs, 1)
    gy, gc = torch.randn_like(y), torch.randn_like(c)
    want = torch.autograd.grad([y, c], [x, h0, c0, wx, wh, b], [gy, gc])
    args = [a.detach() for a in (x, h0, c0, wx, wh, b)]
    got_y, got_h, got_c = torch.ops.ember.lstm(*args)
    for g, w in zip((got_y, got_h, got_c), (y, h, c)):
        torch.testing.assert_close(g, w.detach(), rtol=1e-12, atol=1e-12)
    got = torch.ops.ember.lstm_backward(gy, None, gc, *args)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)
        assert g.is_contiguous()


def test_saved_backward_opcheck_and_equals_the_recomputing_backward() -> None:
    """``ember::lstm_train`` keeps its forward for ``ember::lstm_saved_backward``: torch's checks of both ops, the
    same outputs as ``ember::lstm`` and the same gradients as ``ember::lstm_backward`` (which runs the forward
    again), also when the kept forward is gone (the backward then runs it again); nothing stays kept."""
    from ember_torch import _rnn_op

    args = _op_args(torch.float64, True)
    # (not its AOTAutograd check, which compares two calls' outputs: each call's handle is new by design)
    torch.library.opcheck(
        torch.ops.ember.lstm_train.default,
        tuple(args),
        test_utils=("test_schema", "test_autograd_registration", "test_faketensor"),
    )
    y, h, c, handle = torch.ops.ember.lstm_train(*args)
    torch.library.opcheck(torch.ops.ember.lstm_saved_backward.default, (handle, y * 0.5, None, c, *args))
    _rnn_op._SAVED.clear()
    want_out = torch.ops.ember.lstm(*args)
    want = torch.ops.ember.lstm_backward(y * 0.5, None, c, *args)
    for kept in (True, False):
        y, h, c, handle = torch.ops.ember.lstm_train(*args)
        for g, w in zip((y, h, c), want_out, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-14, atol=1e-14)  # float64 cells, with and without autograd
        if not kept:
            _rnn_op._SAVED.clear()
        got = torch.ops.ember.lstm_saved_backward(handle, y * 0.5, None, c, *args)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-14, atol=1e-14)
        assert not _rnn_op._SAVED


def test_kept_forwards_are_bounded() -> None:
    """Forwards whose backward never runs are dropped after ``SAVED_MAX`` newer ones."""
    from ember_torch import _rnn_op

    args = _op_args(torch.float64, False)
    for _ in range(_rnn_op.SAVED_MAX + 5):
        torch.ops.ember.lstm_train(*args)
    assert len(_rnn_op._SAVED) == _rnn_op.SAVED_MAX
    _rnn_op._SAVED.clear()


def test_compiled_step_runs_the_lstm_forward_once(monkeypatch: Any) -> None:
    """A captured training step (for torch.compile) runs the LSTM kernel once per step, as eager does: its backward
    takes the forward's own residual (before, ``ember::lstm_backward`` ran the forward a second time)."""
    from ember_torch import _rnn_op

    lstm, _, x, lr = _inputs("float32", seq=5)
    step = ember_torch.compile(_step, mode="default", backend="aot_eager")
    optim = AdamConfig().init()
    optim.init_states(lstm)
    lstm, _ = step(lstm, optim, x, lr)  # captured and compiled
    calls = []
    real = _rnn_op.run_lstm
    monkeypatch.setattr(_rnn_op, "run_lstm", lambda *a: calls.append(1) or real(*a))
    for n in range(1, 4):
        lstm, _ = step(lstm, optim, x, lr)
        assert len(calls) == n
    assert not _rnn_op._SAVED


def test_kept_forward_owns_its_arguments() -> None:
    """The kept forward shares no memory with the op's arguments: a compiled graph may reuse an argument's buffer
    once the forward has run (it may materialize the same value twice, once per op), so overwriting the arguments
    between ``ember::lstm_train`` and ``ember::lstm_saved_backward`` must not change the gradients."""
    from ember_torch import _rnn_op  # noqa: F401  (registers the ops)

    args = [a.clone() for a in _op_args(torch.float64, True)]
    y, _, c, handle = torch.ops.ember.lstm_train(*args)
    want = torch.ops.ember.lstm_backward(y * 0.5, None, c, *args)
    scratch = [a.clone() for a in args]
    for a in args:
        a.uniform_(-3.0, 3.0)  # what a reused buffer would hold
    got = torch.ops.ember.lstm_saved_backward(handle, y * 0.5, None, c, *scratch)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-14, atol=1e-14)
