"""``ember_torch.compile``: whole training steps captured as one aten graph (``mode="capture"``, and through
``torch.compile``), compared with the same steps run eagerly in float64 and with a numpy float64 reference;
re-capture, state write-back, random numbers, host-read errors. The inductor cases beyond one small step are slow
(20-60 s of compilation each on a small CPU): they run with ``EMBER_SLOW_TESTS=1`` (``nox -s slow``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import ember
import ember_torch
from ember import BackendError, Int, Tensor
from ember.autodiff import Autodiff
from ember.module import Module, Param
from ember.nn import BatchNorm, BatchNormConfig, Dropout, Linear, Relu
from ember.nn.loss import CrossEntropyLossConfig
from ember.optim import AdamConfig, GradientsParams, SgdConfig

torch = pytest.importorskip("torch")

B = ember.backend("torch", float_dtype="float64")
DEV = Autodiff(B).device()
SLOW = pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"), reason="inductor compiles: EMBER_SLOW_TESTS=1")


#: one inductor cache directory for the module (``conftest.py``)
pytestmark = pytest.mark.usefixtures("inductor_cache")


class Mlp(Module):
    l1: Linear
    l2: Linear
    act: Relu
    norm: BatchNorm | None = None
    dropout: Dropout | None = None

    def forward(self, x: Tensor) -> Tensor:
        h = self.l1.forward(x)
        if self.norm is not None:
            h = self.norm.forward(h)
        h = self.act.forward(h)
        if self.dropout is not None:
            h = self.dropout.forward(h)
        return self.l2.forward(h)


@dataclass(frozen=True)
class Batch:
    x: Tensor
    y: Tensor


def weights(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) * 0.5 for s in [(2, 16), (16,), (16, 2), (2,)]]


def mlp(ws: list[np.ndarray], norm: bool = False, dropout: float | None = None) -> Mlp:
    def lin(w: np.ndarray, b: np.ndarray) -> Linear:
        return Linear(weight=Param(Tensor.from_data(w, DEV)), bias=Param(Tensor.from_data(b, DEV)))

    return Mlp(l1=lin(ws[0], ws[1]), l2=lin(ws[2], ws[3]), act=Relu(),
               norm=BatchNormConfig(16).init(DEV) if norm else None,
               dropout=Dropout(prob=dropout) if dropout is not None else None)


def xor_batch(n: int = 32, seed: int = 1) -> Batch:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 2))
    y = ((x[:, 0] > 0.5) != (x[:, 1] > 0.5)).astype(np.int64)
    return Batch(Tensor.from_data(x, DEV), Tensor.from_data(y, DEV, Int))


def train_step(model: Mlp, optim: Any, batch: Batch, lr: Any) -> tuple[Mlp, Tensor]:
    loss = CrossEntropyLossConfig().init(batch.x.device).forward(model.forward(batch.x), batch.y)
    grads = GradientsParams.from_grads(loss.backward(), model)
    return optim.step(lr, model, grads), loss


def lr_tensor(lr: float) -> Tensor:
    return Tensor.from_data(np.asarray([lr]), DEV.inner)


def params_np(model: Module) -> list[np.ndarray]:
    return [np.asarray(p.val().to_numpy(), np.float64) for p in model.params()]


def reference_sgd(ws: list[np.ndarray], x: np.ndarray, y: np.ndarray, lr: float, steps: int) -> list[np.ndarray]:
    """The MLP trained with cross-entropy and plain SGD, by hand in float64."""
    w1, b1, w2, b2 = (w.copy() for w in ws)
    n = x.shape[0]
    for _ in range(steps):
        a1 = x @ w1 + b1
        h = np.maximum(a1, 0)
        z = h @ w2 + b2
        z = z - z.max(1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        p[np.arange(n), y] -= 1.0
        dz = p / n
        gw2, gb2 = h.T @ dz, dz.sum(0)
        da1 = (dz @ w2.T) * (a1 > 0)
        gw1, gb1 = x.T @ da1, da1.sum(0)
        w1, b1, w2, b2 = w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2
    return [w1, b1, w2, b2]


def run_both(step: Any, make: Any, optim_cfg: Any, steps: int, batch: Batch, seed: int | None = None
             ) -> tuple[Mlp, Mlp, list[float], list[float], Any, Any]:
    """``steps`` compiled and eager steps from the same start (and the same seed)."""
    m_c, m_e = make(), make()
    o_c, o_e = optim_cfg.init().init_states(m_c), optim_cfg.init().init_states(m_e)
    lr = lr_tensor(0.1)
    lc, le = [], []
    if seed is not None:
        B.seed(seed)
    for _ in range(steps):
        m_c, loss = step(m_c, o_c, batch, lr)
        lc.append(loss.into_scalar())
    if seed is not None:
        B.seed(seed)
    for _ in range(steps):
        m_e, loss = train_step(m_e, o_e, batch, 0.1)
        le.append(loss.into_scalar())
    return m_c, m_e, lc, le, o_c, o_e


# ---------------------------------------------------------------------- steps equal eager
@pytest.mark.parametrize("cfg", [SgdConfig(), AdamConfig()], ids=["sgd", "adam"])
def test_captured_steps_equal_eager(cfg: Any) -> None:
    step = ember_torch.compile(train_step, mode="capture")
    ws, batch = weights(), xor_batch()
    m_c, m_e, lc, le, o_c, o_e = run_both(step, lambda: mlp(ws), cfg, 8, batch)
    np.testing.assert_allclose(lc, le, rtol=1e-12)
    for a, b in zip(params_np(m_c), params_np(m_e), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert lc[-1] < lc[0]
    assert step.trace_count == 1 and step.cache_size == 1  # init_states: one layout from the first call
    # the optimizer state was written back: the caller's optimizer holds what the eager one holds
    for pid in [p.id for p in m_c.params()]:
        sc, se = o_c.state(pid), o_e.state(pid)
        if isinstance(se, dict):
            for k in se:
                np.testing.assert_allclose(np.asarray(sc[k].to_numpy() if isinstance(sc[k], Tensor) else sc[k]),
                                           np.asarray(se[k].to_numpy() if isinstance(se[k], Tensor) else se[k]),
                                           rtol=1e-12)


def test_captured_sgd_matches_float64_reference() -> None:
    ws, batch = weights(), xor_batch()
    step = ember_torch.compile(train_step, mode="capture")
    model, optim = mlp(ws), SgdConfig().init()
    for _ in range(5):
        model, _ = step(model, optim, batch, lr_tensor(0.1))
    want = reference_sgd(ws, batch.x.to_numpy(), batch.y.to_numpy(), 0.1, 5)
    for a, b in zip(params_np(model), want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_backend_compile_is_ember_torch_compile() -> None:
    step = DEV.backend.compile(train_step)
    assert isinstance(step, ember_torch.CompiledStep) and step.mode is None
    step2 = B.compile(train_step, mode="capture")
    assert step2.mode == "capture"
    ws, batch = weights(), xor_batch()
    m_c, m_e, lc, le, _, _ = run_both(step, lambda: mlp(ws), AdamConfig(), 3, batch)
    np.testing.assert_allclose(lc, le, rtol=1e-12)


def test_batch_norm_running_statistics_written_back() -> None:
    step = ember_torch.compile(train_step, mode="capture")
    ws, batch = weights(), xor_batch()
    m_c, m_e, lc, le, _, _ = run_both(step, lambda: mlp(ws, norm=True), SgdConfig(), 4, batch)
    np.testing.assert_allclose(lc, le, rtol=1e-12)
    assert m_c.norm is not None and m_e.norm is not None
    for got, want in [(m_c.norm.running_mean, m_e.norm.running_mean), (m_c.norm.running_var, m_e.norm.running_var)]:
        g, w = got.value().to_numpy(), want.value().to_numpy()
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert not np.allclose(m_c.norm.running_mean.value().to_numpy(), 0.0)  # it moved
    # after one step from zeros: running_mean = 0.1 * the batch mean of the first layer's output (numpy)
    m1, _, _, _, _, _ = run_both(step, lambda: mlp(ws, norm=True), SgdConfig(), 1, batch)
    assert m1.norm is not None
    h = batch.x.to_numpy() @ ws[0] + ws[1]
    np.testing.assert_allclose(m1.norm.running_mean.value().to_numpy(), 0.1 * h.mean(0), rtol=1e-12)


def test_dropout_masks_change_per_step_and_follow_the_seed() -> None:
    step = ember_torch.compile(train_step, mode="capture")
    ws, batch = weights(), xor_batch()
    m_c, m_e, lc, le, _, _ = run_both(step, lambda: mlp(ws, dropout=0.5), SgdConfig(), 5, batch, seed=7)
    np.testing.assert_allclose(lc, le, rtol=1e-12)  # the eager step's masks, drawn from the same generator

    def fwd(m: Mlp, x: Tensor) -> Tensor:
        return m.forward(x)

    f = ember_torch.compile(fwd, mode="capture")
    model = mlp(ws, dropout=0.5)
    B.seed(3)
    a, b = f(model, batch.x).to_numpy(), f(model, batch.x).to_numpy()
    assert not np.array_equal(a, b)  # a new mask per call
    B.seed(3)
    np.testing.assert_array_equal(f(model, batch.x).to_numpy(), a)  # reproducible from the seed
    B.set_rng_state(B.rng_state())  # restoring a state keeps the graph's generator
    assert f.trace_count == 1


def test_a_step_that_draws_holds_no_generator_and_leaves_torchs_own_alone() -> None:
    # torch < 2.13's make_fx refuses a torch.Generator argument (seen with torch 2.11 on an H200: the guide's
    # compiled step failed with "argument of type: <class 'torch._C.Generator'>"), and dynamo cannot hold one:
    # the graph draws from the default generator, which each call borrows (ember_torch._capture_rng)
    def fwd(m: Mlp, x: Tensor) -> Tensor:
        return m.forward(x)

    f = ember_torch.compile(fwd, mode="capture")
    model, x = mlp(weights(), dropout=0.5), xor_batch().x
    nodes = list(f.graph(model, x).graph.nodes)
    assert any(n.target in (torch.ops.aten.rand.default, torch.ops.aten.rand.generator) for n in nodes)
    assert not [n for n in nodes if isinstance(n.kwargs.get("generator"), torch.Generator) or n.op == "get_attr"]
    torch.manual_seed(11)
    want = torch.rand(4)
    torch.manual_seed(11)
    B.seed(5)
    masks = [f(model, x).to_numpy() for _ in range(2)]
    np.testing.assert_array_equal(torch.rand(4), want)  # torch's own stream did not move
    B.seed(5)
    eager = [model.forward(x).to_numpy() for _ in range(2)]
    np.testing.assert_array_equal(masks[0], eager[0])
    np.testing.assert_array_equal(masks[1], eager[1])


def test_recaptures_per_shape_and_static_value() -> None:
    calls = []

    def fwd(m: Mlp, x: Tensor, scale: float) -> Tensor:
        calls.append(1)  # Python runs at capture only
        return m.forward(x) * scale

    f = ember_torch.compile(fwd, mode="capture")
    model = mlp(weights())
    eager = lambda x, s: model.forward(x).to_numpy() * s  # noqa: E731
    for n in (8, 8, 5, 8, 5):
        x = xor_batch(n).x
        np.testing.assert_allclose(f(model, x, 2.0).to_numpy(), eager(x, 2.0), rtol=1e-12)
    assert f.trace_count == 2 and len(calls) == 2
    np.testing.assert_allclose(f(model, x, 3.0).to_numpy(), eager(x, 3.0), rtol=1e-12)
    assert f.trace_count == 3
    f.clear_cache()
    f(model, x, 3.0)
    assert f.trace_count == 4 and f.cache_size == 1


def test_host_read_inside_a_step_is_a_clear_error() -> None:
    def reads(m: Mlp, x: Tensor) -> Tensor:
        y = m.forward(x)
        if y.sum().into_scalar() > 0:
            return y
        return -y

    with pytest.raises(BackendError, match="Inside a compiled step the tensors hold no values"):
        ember_torch.compile(reads, mode="capture")(mlp(weights()), xor_batch().x)

    def to_data(m: Mlp, x: Tensor) -> Any:
        return m.forward(x).to_data()

    with pytest.raises(BackendError, match="Return the tensor from the step"):
        ember_torch.compile(to_data)(mlp(weights()), xor_batch().x)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        ember_torch.compile(train_step, mode="fast")
    with pytest.raises(TypeError, match="expected a function"):
        ember_torch.compile(3)  # type: ignore[arg-type]
    numpy_t = Tensor.from_data(np.ones(3), ember.backend("numpy").device())
    with pytest.raises(BackendError, match="takes tensors of the torch backend"):
        ember_torch.compile(lambda t: t * 2.0)(numpy_t)
    if not torch.cuda.is_available():
        with pytest.raises(BackendError, match="need the step's tensors on a CUDA device"):
            ember_torch.compile(lambda t: t * 2.0, mode="reduce-overhead")(xor_batch().x)


def test_returns_inputs_and_plain_values_as_they_are() -> None:
    x = xor_batch().x

    def f(t: Tensor, tag: str) -> tuple[Tensor, str, Tensor, dict[str, Any]]:
        return t, tag, t + 1.0, {"same": t, "n": 3}

    out = ember_torch.compile(f, mode="capture")(x, "a")
    assert out[0] is x and out[1] == "a" and out[3]["same"] is x and out[3]["n"] == 3
    np.testing.assert_allclose(out[2].to_numpy(), x.to_numpy() + 1.0)


def test_through_torch_compile_aot_eager() -> None:
    """The torch.compile path without code generation (fast): the compiled step equals the eager one."""
    step = ember_torch.compile(train_step, mode="default", backend="aot_eager")
    ws, batch = weights(), xor_batch()
    m_c, m_e, lc, le, _, _ = run_both(step, lambda: mlp(ws, dropout=0.3), AdamConfig(), 3, batch, seed=1)
    np.testing.assert_allclose(lc, le, rtol=1e-12)
    for a, b in zip(params_np(m_c), params_np(m_e), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_compiler_refusal_is_a_backend_error() -> None:
    """A refusal of torch's compiler at the first call is an Ember error naming torch's reason and the way out."""

    def refuse(gm: Any, example_inputs: Any) -> Any:
        raise RuntimeError("no kernel for this graph")

    ws, batch = weights(), xor_batch()
    model = mlp(ws)
    step = ember_torch.compile(train_step, mode="default", backend=refuse)
    with pytest.raises(BackendError, match=r"(?s)refused the captured step.*no kernel for this graph.*mode='capture'"):
        step(model, SgdConfig().init(), batch, lr_tensor(0.1))
    assert step.cache_size == 0  # nothing cached: the next call tries again


def test_refused_device_default_runs_the_captured_graph(monkeypatch: Any) -> None:
    """With no mode asked for, a step that torch's compiler refuses (seen on CUDA with the host-bound Transformer)
    runs its captured graph as it is, with a RuntimeWarning naming torch's reason: the same results as eager, a
    Dropout included, the warning once, the entry kept."""
    from ember_torch import _compile

    def refuse(gm: Any, example_inputs: Any) -> Any:
        raise RuntimeError("no kernel for this graph")

    monkeypatch.setattr(_compile, "default_mode", lambda leaves: "default")  # what a CUDA step gets
    step = ember_torch.compile(train_step, backend=refuse)
    ws, batch = weights(), xor_batch()
    with pytest.warns(RuntimeWarning, match=r"(?s)refused the captured step.*no kernel for this graph.*capture") as rec:
        m_c, m_e, lc, le, _, _ = run_both(step, lambda: mlp(ws, dropout=0.3), AdamConfig(), 3, batch, seed=1)
    assert len([w for w in rec if issubclass(w.category, RuntimeWarning)]) == 1
    assert step.trace_count == 1 and step.cache_size == 1
    np.testing.assert_allclose(lc, le, rtol=1e-12)
    for a, b in zip(params_np(m_c), params_np(m_e), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("given", [None, True])
def test_cpu_inductor_keeps_torch_layouts(monkeypatch: Any, given: Any) -> None:
    """On the CPU a step compiled by inductor runs without inductor's layout optimization (channels-last
    convolutions made the Adam update read ResNet-18's convolution-weight gradients transposed: 231 -> 121 ms a
    step without it), unless the caller's options set it."""
    from ember_torch import _capture_inductor

    seen: list[dict[str, Any]] = []

    def spy(gm: Any, example_inputs: Any, options: dict[str, Any]) -> Any:
        seen.append(dict(options))
        return gm  # the captured graph as it is

    monkeypatch.setattr(_capture_inductor, "compile_graph", spy)
    options = None if given is None else {"layout_optimization": given}
    step = ember_torch.compile(train_step, mode="default", options=options)
    ws, batch = weights(), xor_batch()
    m_c, m_e, lc, le, _, _ = run_both(step, lambda: mlp(ws), SgdConfig(), 2, batch)
    assert [o["layout_optimization"] for o in seen] == [False if given is None else given]
    np.testing.assert_allclose(lc, le, rtol=1e-12)


def test_inductor_small_step() -> None:
    """One inductor compile in the default run: a forward and SGD step of one Linear, C++ kernels."""

    def step(lin: Linear, x: Tensor, lr: Tensor) -> tuple[Linear, Tensor]:
        loss = (lin.forward(x) * lin.forward(x)).mean()
        grads = GradientsParams.from_grads(loss.backward(), lin)
        return SgdConfig().init().step(lr, lin, grads), loss

    ws = weights()
    lin = Linear(weight=Param(Tensor.from_data(ws[0], DEV)), bias=Param(Tensor.from_data(ws[0][0], DEV)))
    x = xor_batch().x
    c = ember_torch.compile(step, mode="default")
    got, lg = c(lin, x, lr_tensor(0.1))
    want, lw = step(lin, x, 0.1)  # type: ignore[arg-type]
    np.testing.assert_allclose(lg.into_scalar(), lw.into_scalar(), rtol=1e-12)
    for a, b in zip(params_np(got), params_np(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@SLOW
@pytest.mark.parametrize("cfg", [SgdConfig(), AdamConfig()], ids=["sgd", "adam"])
def test_inductor_steps_equal_eager(cfg: Any) -> None:
    step = ember_torch.compile(train_step, mode="default")
    ws, batch = weights(), xor_batch()
    m_c, m_e, lc, le, _, _ = run_both(step, lambda: mlp(ws, norm=True, dropout=0.2), cfg, 20, batch, seed=2)
    # inductor's fused kernels reorder float64 sums: about 1e-9 relative after 20 Adam steps
    np.testing.assert_allclose(lc, le, rtol=1e-7)
    for a, b in zip(params_np(m_c), params_np(m_e), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------------- a set of ops through capture
def _ops() -> dict[str, Any]:
    from ember.tensor import activation as A
    from ember.tensor import functional as M

    idx = Tensor.from_data(np.array([[2, 0, 1], [1, 1, 0]]), DEV, Int)
    return {
        "exp_log": lambda a, b: (a.exp() + 1.0).log(),
        "sin_tanh": lambda a, b: a.sin() * b.tanh(),
        "matmul": lambda a, b: a.matmul(b.transpose()),
        "div_sqrt": lambda a, b: a / (b * b + 1.0).sqrt(),
        "sum_mean": lambda a, b: a.sum_dim(1) + b.mean_dim(1),
        "max_min": lambda a, b: a.max_dim(0) - b.min_dim(1).sum(),
        "softmax": lambda a, b: A.softmax(a, 1) * A.log_softmax(b, 0),
        "gelu_sigmoid": lambda a, b: A.gelu(a) + A.sigmoid(b),
        "reshape_cat": lambda a, b: Tensor.cat([a.reshape([3, 2]), b.reshape([3, 2])], 0),
        "gather": lambda a, b: a.gather(1, idx) * 2.0,
        "where_clamp": lambda a, b: a.mask_where(a.greater(b), b).clamp(-0.5, 0.5),
        "powf_abs": lambda a, b: a.abs().powf_scalar(1.5) + b.neg(),
        "conv_pool": lambda a, b: M.max_pool2d(M.conv2d(a.reshape([1, 1, 2, 3]), b.reshape([1, 1, 2, 3])[:, :, :, 0:2]),
                                               [1, 1]),
    }


@pytest.mark.parametrize("name", list(_ops()))
def test_ops_through_capture_equal_eager_with_gradients(name: str) -> None:
    """Each op's value and the gradient of its sum, captured, equal the eager ones (float64)."""
    op = _ops()[name]
    rng = np.random.default_rng(5)
    a = Tensor.from_data(rng.standard_normal((2, 3)), DEV)
    b = Tensor.from_data(rng.standard_normal((2, 3)), DEV)

    def value_and_grads(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        a, b = a.require_grad(), b.require_grad()
        y = op(a, b)
        g = y.sum().backward()
        ga, gb = a.grad(g), b.grad(g)
        zero = a.detach() * 0.0
        return y.detach(), ga if ga is not None else zero, gb if gb is not None else zero

    got = ember_torch.compile(value_and_grads, mode="capture")(a, b)
    want = value_and_grads(a, b)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.to_numpy(), w.to_numpy(), rtol=1e-12, atol=1e-14)
