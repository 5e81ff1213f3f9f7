"""``ember_jax.jit``: whole training / validation steps compiled, compared with the same steps run eagerly and
with a numpy float64 reference; recompilation, state write-back, random numbers, errors, pytrees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import pytest

import ember
import ember_jax
from ember import BackendError, Float, Int, Tensor
from ember.autodiff import Autodiff
from ember.module import Module, Param
from ember.nn import BatchNormConfig, Dropout, Linear, LinearConfig, Relu
from ember.nn.loss import CrossEntropyLossConfig
from ember.optim import AdamConfig, GradientsParams, SgdConfig

B = ember.backend("jax")
AD = Autodiff(B)
DEV = AD.device()
INNER = DEV.inner

SHAPES = [(2, 16), (16,), (16, 16), (16,), (16, 2), (2,)]


class Mlp(Module):
    l1: Linear
    l2: Linear
    l3: Linear
    act: Relu
    dropout: Dropout | None = None

    def forward(self, x: Tensor) -> Tensor:
        h = self.act.forward(self.l1.forward(x))
        if self.dropout is not None:
            h = self.dropout.forward(h)
        return self.l3.forward(self.act.forward(self.l2.forward(h)))


@dataclass(frozen=True)
class Batch:
    x: Tensor
    y: Tensor


def weights(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) * 0.5 for s in SHAPES]


def mlp(ws: list[np.ndarray], dev: Any = DEV, dropout: float | None = None) -> Mlp:
    def lin(w: np.ndarray, b: np.ndarray) -> Linear:
        return Linear(weight=Param(Tensor.from_data(w, dev)), bias=Param(Tensor.from_data(b, dev)))

    return Mlp(l1=lin(ws[0], ws[1]), l2=lin(ws[2], ws[3]), l3=lin(ws[4], ws[5]), act=Relu(),
               dropout=Dropout(prob=dropout) if dropout is not None else None)


def xor_batch(n: int = 32, seed: int = 1, dev: Any = DEV) -> Batch:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 2))
    y = ((x[:, 0] > 0.5) != (x[:, 1] > 0.5)).astype(np.int64)
    return Batch(Tensor.from_data(x, dev), Tensor.from_data(y, dev, Int))


def lr_tensor(lr: float) -> Tensor:
    return Tensor.from_data(np.asarray([lr]), INNER)


def train_step(model: Mlp, optim: Any, batch: Batch, lr: Any) -> tuple[Mlp, Tensor]:
    loss = CrossEntropyLossConfig().init(batch.x.device).forward(model.forward(batch.x), batch.y)
    grads = GradientsParams.from_grads(loss.backward(), model)
    return optim.step(lr, model, grads), loss


def params_np(model: Module) -> list[np.ndarray]:
    return [p.val().to_numpy().astype(np.float64) for p in model.params()]


# ---------------------------------------------------------------------- numpy float64 reference
def reference_adam_steps(ws: list[np.ndarray], x: np.ndarray, y: np.ndarray, lr: float, steps: int,
                         b1: float = 0.9, b2: float = 0.999, eps: float = 1e-5) -> tuple[list[np.ndarray], list[float]]:
    """The MLP trained with cross-entropy and Adam (Burn's epsilon placement), by hand in float64."""
    ps = [w.copy() for w in ws]
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    losses = []
    n = x.shape[0]
    for t in range(1, steps + 1):
        w1, b1_, w2, b2_, w3, b3 = ps
        a1 = x @ w1 + b1_
        h1 = np.maximum(a1, 0)
        a2 = h1 @ w2 + b2_
        h2 = np.maximum(a2, 0)
        z = h2 @ w3 + b3
        z = z - z.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        losses.append(float(-logp[np.arange(n), y].mean()))
        dz = np.exp(logp)
        dz[np.arange(n), y] -= 1.0
        dz /= n
        g3, gb3 = h2.T @ dz, dz.sum(0)
        da2 = (dz @ w3.T) * (a2 > 0)
        g2, gb2 = h1.T @ da2, da2.sum(0)
        da1 = (da2 @ w2.T) * (a1 > 0)
        g1, gb1 = x.T @ da1, da1.sum(0)
        for i, g in enumerate([g1, gb1, g2, gb2, g3, gb3]):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            ps[i] = ps[i] - lr * (m[i] / (1 - b1**t)) / (np.sqrt(v[i] / (1 - b2**t)) + eps)
    return ps, losses


# ---------------------------------------------------------------------- training steps
def test_compiled_adam_steps_match_eager_and_float64_reference() -> None:
    ws, batch = weights(), xor_batch()
    step = ember_jax.jit(train_step)
    m_c, o_c = mlp(ws), AdamConfig().init()
    m_e, o_e = mlp(ws), AdamConfig().init()
    ids = [p.id for p in m_c.params()]
    lr = lr_tensor(0.05)
    losses_c, losses_e = [], []
    for _ in range(4):
        m_c, loss_c = step(m_c, o_c, batch, lr)
        m_e, loss_e = train_step(m_e, o_e, batch, 0.05)
        losses_c.append(loss_c.into_scalar())
        losses_e.append(loss_e.into_scalar())
    ref_ps, ref_losses = reference_adam_steps(ws, batch.x.to_numpy().astype(np.float64), batch.y.to_numpy(), 0.05, 4)
    np.testing.assert_allclose(losses_c, losses_e, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(losses_c, ref_losses, rtol=1e-5, atol=1e-6)
    for c, e, r in zip(params_np(m_c), params_np(m_e), ref_ps):
        np.testing.assert_allclose(c, e, atol=1e-5)
        np.testing.assert_allclose(c, r, atol=1e-5)
    # results are Ember objects on the autodiff device, parameters fresh tracked leaves with their ids
    assert isinstance(m_c, Mlp) and [p.id for p in m_c.params()] == ids
    assert all(p.val().device is DEV and p.val().is_require_grad() for p in m_c.params())
    assert step.trace_count == 2  # empty optimizer state, then the steady state
    # the parameters share one step counter (one [1] array incremented once per step, not one per parameter)
    times = [o_c._states[i]["time"] for i in ids]
    assert len({id(t.primitive) for t in times}) == 1 and times[0].to_numpy().tolist() == [4]


_COMPILES: list[str] | None = None  # XLA compilations while a test listens


def _on_event(name: str, _secs: float, **_kw: Any) -> None:
    if _COMPILES is not None and name == "/jax/core/compile/backend_compile_duration":
        _COMPILES.append(name)


jax.monitoring.register_event_duration_secs_listener(_on_event)


def test_fresh_weights_and_the_steps_outputs_share_one_executable() -> None:
    # weights made by jax ops outside any jit (a layer's random init) are uncommitted arrays, the step's outputs
    # committed ones: the program is compiled for the placement the next calls bring, once (not twice: seconds
    # for a real model); with the optimizer's initial state the step is also traced once
    global _COMPILES
    B.seed(0)
    model = Mlp(l1=LinearConfig(2, 16).init(DEV), l2=LinearConfig(16, 16).init(DEV), l3=LinearConfig(16, 2).init(DEV),
                act=Relu())
    assert not model.l1.weight.val().inner().primitive.committed  # the case this test is about
    optim = AdamConfig().init().init_states(model)
    step, batch, lr = ember_jax.jit(train_step), xor_batch(), lr_tensor(0.01)
    _COMPILES = []
    try:
        for _ in range(3):
            model, loss = step(model, optim, batch, lr)
        compiles = len(_COMPILES)
    finally:
        _COMPILES = None
    assert step.trace_count == 1 and compiles == 1
    assert np.isfinite(loss.into_scalar())


def test_python_int_time_becomes_an_int_tensor_and_matches_eager_after_eager_steps() -> None:
    ws, batch = weights(2), xor_batch()
    m_c, o_c = mlp(ws), AdamConfig().init()
    m_e, o_e = mlp(ws), AdamConfig().init()
    for _ in range(2):  # eager first: the state holds Python ints
        m_c, _ = train_step(m_c, o_c, batch, 0.01)
        m_e, _ = train_step(m_e, o_e, batch, 0.01)
    pid, pid_e = m_c.l1.weight.id, m_e.l1.weight.id
    assert o_c.state(pid)["time"] == 2
    step = ember_jax.jit(train_step)
    for _ in range(3):
        m_c, _ = step(m_c, o_c, batch, 0.01)
        m_e, _ = train_step(m_e, o_e, batch, 0.01)
    t = o_c.state(pid)["time"]
    assert isinstance(t, Tensor) and t.kind is Int and t.shape == (1,) and t.to_numpy().tolist() == [5]
    assert all(o_c._states[p.id]["time"] is o_c._states[pid]["time"] for p in m_c.params())  # the counters became one
    for name in ("moment_1", "moment_2"):
        np.testing.assert_allclose(o_c.state(pid)[name].to_numpy(), o_e.state(pid_e)[name].to_numpy(), atol=1e-6)
    for c, e in zip(params_np(m_c), params_np(m_e)):
        np.testing.assert_allclose(c, e, atol=1e-5)
    # the record saves and loads; a fresh optimizer resumes the compiled run exactly
    rec = o_c.to_record()
    assert rec["state"][pid.serialize()]["time"].to_numpy().tolist() == [5]
    o_r = AdamConfig().init().load_record(rec)
    m_r = m_c
    m_c, _ = step(m_c, o_c, batch, 0.01)
    m_r, _ = step(m_r, o_r, batch, 0.01)
    for c, r in zip(params_np(m_c), params_np(m_r)):
        np.testing.assert_array_equal(c, r)
    assert len({id(o_r._states[p.id]["time"].primitive) for p in m_r.params()}) == 1  # loaded counters shared too


def test_no_retrace_for_a_second_epoch_retrace_for_new_shapes_and_static_values() -> None:
    step = ember_jax.jit(train_step)
    model, optim = mlp(weights()), SgdConfig().init()
    batches = [xor_batch(seed=s) for s in range(3)]
    lr = lr_tensor(0.1)
    for _ in range(2):  # two epochs over the same shapes
        for b in batches:
            model, _ = step(model, optim, b, lr)
    assert step.trace_count == 1  # SGD has no state: one structure
    model, _ = step(model, optim, batches[0], lr_tensor(0.2))  # a new lr value: a tensor, no retrace
    assert step.trace_count == 1
    model, _ = step(model, optim, xor_batch(n=8), lr)  # a new batch shape: once
    model, _ = step(model, optim, xor_batch(n=8, seed=5), lr)
    assert step.trace_count == 2
    model, _ = step(model, optim, batches[0], 0.1)  # a Python float is static: a new value traces
    model, _ = step(model, optim, batches[1], 0.1)
    assert step.trace_count == 3
    model, _ = step(model, optim, batches[1], 0.3)
    assert step.trace_count == 4 and step.cache_size == 4


def test_running_state_is_written_back() -> None:
    class Net(Module):
        lin: Linear
        bn: Any

        def forward(self, x: Tensor) -> Tensor:
            return self.bn.forward(self.lin.forward(x))

    def make() -> Net:
        w = weights(3)
        # no bias before the batch norm (it cancels it: its gradient is rounding noise, see the loss below)
        lin = Linear(weight=Param(Tensor.from_data(w[0], DEV)))
        return Net(lin=lin, bn=BatchNormConfig(16).init(DEV))

    # a loss with real gradients: mean(bn(x)^2) is 1 - O(epsilon) whatever the weights, so its gradients are
    # float rounding noise that Adam scales up to steps of lr, and the compiled and eager runs would only agree
    # while XLA happened to round the batch-norm gradient as the per-op kernels do (they stopped with the fused
    # batch_norm_backward primitive of issue 22)
    target = Tensor.from_data(np.random.default_rng(7).standard_normal((32, 16)), DEV)

    def step(model: Net, optim: Any, x: Tensor, lr: Any) -> Net:
        loss = model.forward(x).sub(target).square().mean()
        return optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model))

    x = xor_batch().x
    assert x.shape == (32, 2)
    compiled = ember_jax.jit(step)
    m_c, o_c, m_e, o_e = make(), AdamConfig().init(), make(), AdamConfig().init()
    cell = m_c.bn.running_mean
    for _ in range(3):
        m_c = compiled(m_c, o_c, x, lr_tensor(0.01))
        m_e = step(m_e, o_e, x, 0.01)
    assert m_c.bn.running_mean is cell  # the caller's cell, updated in place as eagerly
    for name in ("running_mean", "running_var"):
        c = getattr(m_c.bn, name).value().to_numpy()
        np.testing.assert_allclose(c, getattr(m_e.bn, name).value().to_numpy(), atol=2e-5)  # float32 rounding
        assert not np.allclose(c, 0.0 if name == "running_mean" else 1.0)
    assert not m_c.bn.running_mean.value().is_require_grad()


def test_dropout_under_jit_draws_the_eager_numbers() -> None:
    ws, batch = weights(4), xor_batch()

    def forward(model: Mlp, x: Tensor) -> Tensor:
        return model.forward(x)

    compiled = ember_jax.jit(forward)
    model = mlp(ws, dropout=0.5)
    B.seed(42)
    c1, c2 = compiled(model, batch.x).to_numpy(), compiled(model, batch.x).to_numpy()
    B.seed(42)
    e1, e2 = forward(model, batch.x).to_numpy(), forward(model, batch.x).to_numpy()
    np.testing.assert_allclose(c1, e1, atol=1e-6)
    np.testing.assert_allclose(c2, e2, atol=1e-6)
    assert not np.allclose(c1, c2)  # the key advanced: another mask
    B.seed(42)
    np.testing.assert_array_equal(compiled(model, batch.x).to_numpy(), c1)
    assert compiled.trace_count == 1


def test_compiled_validation_step() -> None:
    model = mlp(weights(5), dropout=0.5)

    def valid_step(model: Mlp, batch: Batch) -> tuple[Tensor, Tensor]:
        logits = model.forward(batch.x)
        return CrossEntropyLossConfig().init(batch.x.device).forward(logits, batch.y), logits.argmax(1)

    valid = model.valid()
    batch = xor_batch(dev=INNER)
    compiled = ember_jax.jit(valid_step)
    loss, pred = compiled(valid, batch)
    loss_e, pred_e = valid_step(valid, batch)
    assert loss.device is INNER and pred.kind is Int and not ember.module.ad_enabled(loss)
    np.testing.assert_allclose(loss.to_numpy(), loss_e.to_numpy(), rtol=1e-6)
    np.testing.assert_array_equal(pred.to_numpy(), pred_e.to_numpy())
    compiled(model.valid(), xor_batch(seed=9, dev=INNER))
    assert compiled.trace_count == 1


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("read", "named"),
    [
        (lambda t: t.sum().into_scalar(), "into_scalar"),
        (lambda t: t.to_data(), "to_data"),
        (lambda t: bool(t.sum() > 0), "bool"),
        (lambda t: float(t.mean()), "float"),
    ],
)
def test_host_reads_inside_a_compiled_step_say_what_to_do(read: Any, named: str) -> None:
    def step(x: Tensor) -> Tensor:
        read(x)
        return x

    with pytest.raises(BackendError, match=rf"{named}.*compiled.*Return the tensor.*mask_where"):
        ember_jax.jit(step)(Tensor.from_data(np.ones(3), INNER))


def test_python_control_flow_on_raw_jax_values_is_explained() -> None:
    def step(x: Tensor) -> Tensor:
        if x.primitive.sum() > 0:  # jax's own TracerBoolConversionError
            return x
        return -x

    with pytest.raises(BackendError, match="traced tensor.*Return the tensor"):
        ember_jax.jit(step)(Tensor.from_data(np.ones(3), INNER))


def test_tensor_of_another_backend_is_refused_with_its_path() -> None:
    x = Tensor.from_data(np.ones(3), ember.backend("numpy").device())
    with pytest.raises(BackendError, match=r"args\[0\]\.x.*numpy.*to_device"):
        ember_jax.jit(lambda b: b.x)(Batch(x, x))


def test_gradients_cannot_leave_the_step() -> None:
    model = mlp(weights())

    def step(model: Mlp, x: Tensor) -> Any:
        return model.forward(x).sum().backward()

    with pytest.raises(TypeError, match="GradientsParams.from_grads"):
        ember_jax.jit(step)(model, xor_batch().x)

    class Holder:  # a plain object holding a traced tensor would leak it
        __slots__ = ("t",)

        def __init__(self, t: Tensor) -> None:
            self.t = t

    with pytest.raises(TypeError, match="Holder.*holding tensors.*dataclass"):
        ember_jax.jit(lambda x: Holder(x * 2.0))(xor_batch().x)


# ---------------------------------------------------------------------- structure
def test_a_shared_param_stays_one_leaf() -> None:
    from ember.backend.step_tree import Flat, flatten
    from ember_jax._tree import TREE

    ws = weights(6)
    shared = Linear(weight=Param(Tensor.from_data(ws[2], DEV)), bias=Param(Tensor.from_data(ws[3], DEV)))
    first = Linear(weight=Param(Tensor.from_data(ws[0], DEV)), bias=Param(Tensor.from_data(ws[1], DEV)))
    last = Linear(weight=Param(Tensor.from_data(ws[4], DEV)), bias=Param(Tensor.from_data(ws[5], DEV)))

    class Tied(Module):
        a: Linear
        b: Linear
        c: Linear
        d: Linear
        act: Relu

        def forward(self, x: Tensor) -> Tensor:
            h = self.act.forward(self.a.forward(x))
            h = self.act.forward(self.b.forward(h))
            h = self.act.forward(self.c.forward(h))  # the same layer twice
            return self.d.forward(h)

    def step(model: Tied, optim: Any, batch: Batch, lr: Any) -> tuple[Tied, Tensor]:
        loss = CrossEntropyLossConfig().init(DEV).forward(model.forward(batch.x), batch.y)
        return optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model)), loss

    fl = Flat(TREE)
    model = Tied(a=first, b=shared, c=shared, d=last, act=Relu())
    flatten(fl, model)
    assert len(fl.leaves) == 6  # not 8
    compiled = ember_jax.jit(step)
    m_c, o_c, m_e, o_e = model, AdamConfig().init(), model, AdamConfig().init()
    batch = xor_batch()
    for _ in range(2):
        m_c, _ = compiled(m_c, o_c, batch, lr_tensor(0.02))
        m_e, _ = step(m_e, o_e, batch, 0.02)
    # as eagerly, both places hold the one updated value (one id, one array: still one leaf)
    assert m_c.b.weight.id == m_c.c.weight.id == shared.weight.id
    assert m_c.b.weight.val().inner().primitive is m_c.c.weight.val().inner().primitive
    fl = Flat(TREE)
    flatten(fl, m_c)
    assert len(fl.leaves) == 6
    for c, e in zip(params_np(m_c), params_np(m_e)):
        np.testing.assert_allclose(c, e, atol=1e-5)


def test_modules_and_states_are_jax_pytrees() -> None:
    model, optim = mlp(weights()), AdamConfig().init()
    leaves = jax.tree_util.tree_leaves(model)
    assert len(leaves) == 6 and all(isinstance(a, jax.Array) for a in leaves)
    np.testing.assert_array_equal(np.asarray(leaves[0]), model.l1.weight.val().to_numpy())
    doubled = jax.tree_util.tree_map(lambda a: a * 2, model)
    assert isinstance(doubled, Mlp) and doubled.l1.weight.id == model.l1.weight.id
    assert doubled.l1.weight.val().is_require_grad()
    np.testing.assert_allclose(doubled.l2.bias.val().to_numpy(), 2 * model.l2.bias.val().to_numpy())

    class Later(Module):  # defined after the backend registered the others
        lin: Linear
        name: str = "later"

    later = Later(lin=model.l1)
    assert len(jax.tree_util.tree_leaves(later)) == 2
    model, _ = train_step(model, optim, xor_batch(), 0.01)
    state_leaves = jax.tree_util.tree_leaves(optim)
    assert len(state_leaves) == 6 * 3  # time, moment_1, moment_2 per parameter
    grads = GradientsParams({model.l1.weight.id: Tensor.ones([2, 16], INNER)})
    assert [a.shape for a in jax.tree_util.tree_leaves(grads)] == [(2, 16)]


def test_backend_compile_hooks() -> None:
    def f(x: Tensor) -> Tensor:
        return x

    numpy_b = ember.backend("numpy")
    assert numpy_b.compile(f) is f and Autodiff(numpy_b).compile(f) is f
    assert isinstance(AD.compile(f), ember_jax.CompiledStep) and isinstance(B.compile(f), ember_jax.CompiledStep)
    x = Tensor.from_data(np.ones(2), DEV)
    assert AD.is_concrete(x.primitive) and B.is_concrete(x.inner().primitive) and numpy_b.is_concrete(np.ones(1))
    seen = []

    def probe(t: Tensor) -> Tensor:
        seen.append((t.ops.is_concrete(t.primitive), t.inner().ops.is_concrete(t.inner().primitive)))
        return t

    ember_jax.jit(probe)(x)
    assert seen == [(False, False)]


def test_donation_keeps_caller_objects_valid_unless_asked() -> None:
    ws, batch = weights(7), xor_batch()
    step = ember_jax.jit(train_step)
    model, optim = mlp(ws), AdamConfig().init()
    before = model
    for _ in range(3):
        model, _ = step(model, optim, batch, lr_tensor(0.01))
    np.testing.assert_allclose(params_np(before)[0], ws[0], atol=1e-7)  # the old model is still readable
    batch.x.to_numpy()
    donating = ember_jax.jit(train_step, donate_argnums=(0,))
    old, w_old = model, params_np(model)[0]
    kept = old.l1.weight.val()
    model, _ = donating(model, optim, batch, lr_tensor(0.01))
    model, _ = donating(model, optim, batch, lr_tensor(0.01))
    # its buffers were given to the program, which wrote the new ones into the caller's objects: the same module
    # comes back, and a tensor taken from it before the call holds the new values
    assert model is old and model.l1.weight.val() is kept
    assert np.isfinite(params_np(model)[0]).all() and not np.array_equal(params_np(model)[0], w_old)
    np.testing.assert_array_equal(kept.to_numpy(), params_np(model)[0])


def test_kwargs_nested_containers_and_plain_results() -> None:
    def f(xs: list[Tensor], scale: float, *, extra: dict[str, Any]) -> dict[str, Any]:
        total = xs[0] * scale + xs[1]
        return {"total": total, "pair": (total.sum(), None), "name": extra["name"], "k": extra["k"] * 2}

    compiled = ember_jax.jit(f)
    a, b = Tensor.from_data(np.arange(3.0), INNER), Tensor.from_data(np.ones(3), INNER)
    out = compiled([a, b], 2.0, extra={"name": "x", "k": Tensor.from_data(np.asarray([1, 2]), INNER, Int)})
    np.testing.assert_allclose(out["total"].to_numpy(), [1.0, 3.0, 5.0])
    assert out["pair"][1] is None and out["name"] == "x" and out["k"].kind is Int
    np.testing.assert_allclose(out["pair"][0].to_numpy(), [9.0])
    assert out["k"].to_numpy().tolist() == [2, 4] and out["total"].kind is Float


def test_donated_model_with_running_states_and_a_frozen_param() -> None:
    class Net(Module):
        lin: Linear
        bn: Any
        head: Linear

        def forward(self, x: Tensor) -> Tensor:
            return self.head.forward(self.bn.forward(self.lin.forward(x)))

    w = weights(8)

    def make() -> Net:
        frozen = Param(Tensor.from_data(w[4], DEV), require_grad=False)
        head = Linear(weight=frozen, bias=Param(Tensor.from_data(w[5], DEV)))
        return Net(lin=Linear(weight=Param(Tensor.from_data(w[0], DEV)), bias=None),
                   bn=BatchNormConfig(16).init(DEV), head=head)

    net, batch = make(), xor_batch()
    frozen = net.head.weight

    def step(model: Net, optim: Any, batch: Batch, lr: Any) -> tuple[Net, Tensor]:
        loss = CrossEntropyLossConfig().init(DEV).forward(model.forward(batch.x), batch.y)
        return optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model)), loss

    compiled = ember_jax.jit(step, donate_argnums=(0,))
    m_c, o_c, m_e, o_e = net, AdamConfig().init(), make(), AdamConfig().init()  # separate arrays: net's are donated
    cell = net.bn.running_mean
    for _ in range(3):
        m_c, _ = compiled(m_c, o_c, batch, lr_tensor(0.01))
        m_e, _ = step(m_e, o_e, batch, 0.01)
    # the frozen parameter was donated too: it comes back as a new tensor with the same values and id
    np.testing.assert_array_equal(m_c.head.weight.val().to_numpy(), w[4].astype(np.float32))
    assert m_c.head.weight.id == frozen.id and not m_c.head.weight.require_grad
    assert m_c.bn.running_mean is cell and np.isfinite(cell.value().to_numpy()).all()
    np.testing.assert_allclose(cell.value().to_numpy(), m_e.bn.running_mean.value().to_numpy(), atol=2e-5)
    for c, e in zip(params_np(m_c), params_np(m_e)):
        np.testing.assert_allclose(c, e, atol=2e-5)


def test_a_failed_trace_leaves_nothing_behind() -> None:
    calls = []

    def step(x: Tensor, fail: bool) -> Tensor:
        calls.append(fail)
        if fail:
            raise ValueError("boom")
        return Tensor.random(x.shape, ember.Distribution.uniform(0.0, 1.0), x.device) + x

    compiled = ember_jax.jit(step)
    x = Tensor.from_data(np.zeros(4), INNER)
    B.seed(3)
    with pytest.raises(ValueError, match="boom"):
        compiled(x, True)
    assert compiled.cache_size == 0 and B._keys.key is not None and B.is_concrete(B._keys.key)
    out = compiled(x, False).to_numpy()
    B.seed(3)
    np.testing.assert_allclose(out, Tensor.random([4], ember.Distribution.uniform(0.0, 1.0), INNER).to_numpy())


# ---------------------------------------------------------------------- review fixes: keys, donation regions, statics
def test_a_weakly_typed_array_is_a_new_structure_not_a_retrace_with_stale_memos() -> None:
    # jax keys its cache on weak typing: a weakly typed array (jnp.asarray(1.0)) after strongly typed ones must
    # give a new entry (the structure records it), not a jax retrace of the cached entry with incomplete memos
    import jax.numpy as jnp

    @ember_jax.jit
    def step(model: Mlp, optim: Any, batch: Batch, lr: Any, extra: Any) -> tuple[Mlp, Tensor, Any]:
        model, loss = train_step(model, optim, batch, lr)
        return model, loss, extra + 1

    model, optim, batch, lr = mlp(weights()), SgdConfig().init(), xor_batch(), lr_tensor(0.1)
    for extra in [jnp.zeros((), jnp.float32)] * 3 + [jnp.asarray(1.0)]:
        model, loss, out = step(model, optim, batch, lr, extra)
    assert np.isfinite(loss.into_scalar()) and float(out) == 2.0
    assert step.trace_count == 2 and step.cache_size == 2


def test_donate_argnums_never_reaches_keyword_arguments() -> None:
    step = ember_jax.jit(lambda model, optim, batch=None, lr=None: train_step(model, optim, batch, lr),
                         donate_argnums=(2,))
    model, batch, lr = mlp(weights()), xor_batch(), lr_tensor(0.1)
    step(model, SgdConfig().init(), lr=lr, batch=batch)  # position 2 is empty: nothing is donated
    assert lr.to_numpy().tolist() == pytest.approx([0.1]) and batch.x.to_numpy().shape == (32, 2)


def test_an_optimizer_in_a_donated_argument_comes_back_as_the_callers() -> None:
    @ember_jax.jit(donate_argnums=(0, 1))
    def step(model: Mlp, optim: Any, batch: Batch, lr: Any) -> tuple[Mlp, Any, Tensor]:
        model, loss = train_step(model, optim, batch, lr)
        return model, optim, loss

    optim = AdamConfig().init()
    model, out, _ = step(mlp(weights()), optim, xor_batch(), lr_tensor(0.1))
    assert out is optim and optim.state(model.l1.weight.id)["time"].to_numpy().tolist() == [1]


def test_a_plain_object_holding_tensors_is_refused_not_frozen() -> None:
    class Holder:  # hashable by identity: a static value
        def __init__(self, w: Tensor) -> None:
            self.w = w

    step = ember_jax.jit(lambda holder, x: x.mul(holder.w))
    x = Tensor.from_data(np.asarray([1.0]), INNER)
    with pytest.raises(TypeError, match=r"type Holder holds tensors .* Make it a Module or a dataclass"):
        step(Holder(Tensor.from_data(np.asarray([2.0]), INNER)), x)
    assert step.cache_size == 0


def test_static_floats_are_keyed_by_their_bits() -> None:
    step = ember_jax.jit(lambda x, s: x.mul_scalar(s))
    x = Tensor.from_data(np.asarray([1.0]), INNER)
    assert np.signbit(step(x, 0.0).to_numpy()[0]) == np.False_
    assert np.signbit(step(x, -0.0).to_numpy()[0]) == np.True_  # not the trace made for 0.0
    for _ in range(3):
        assert np.isnan(step(x, float("nan")).to_numpy()[0])
    assert step.cache_size == 3  # 0.0, -0.0 and one NaN entry (a NaN equals itself by its bits)
