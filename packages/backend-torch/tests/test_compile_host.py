"""``ember_torch.compile``'s host work per call: the generated result builder makes what the reference builder
(:func:`ember_torch._capture_tree.build_all`) makes, and the results flattened ahead for the next call give exactly
what a complete walk gives, or are not used: a replaced parameter, another model of the same structure, an
optimizer whose states changed, a running state updated by hand, eager steps in between."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

import ember_torch
from ember import Int, Tensor
from ember.backend.step_tree import Flat, flatten
from ember.module import Module, Param, RunningState
from ember.nn import Linear, Relu
from ember.optim import AdamConfig, GradientsParams, MomentumConfig, SgdConfig
from test_compile import DEV, Batch, Mlp, lr_tensor, mlp, params_np, train_step, weights, xor_batch

torch = pytest.importorskip("torch")

from ember_torch._capture_flatten import TREE  # noqa: E402
from ember_torch._capture_tree import build_all  # noqa: E402


class Tied(Module):
    """Two layers sharing one Param object (a tied weight; ``optim.step`` returns one Param per field, with one id),
    a frozen bias and an unused Int parameter."""

    l1: Linear
    l2: Linear
    act: Relu
    count: Param

    def forward(self, x: Tensor) -> Tensor:
        return self.l2.forward(self.act.forward(self.l1.forward(x)))


def tied(seed: int = 0) -> Tied:
    rng = np.random.default_rng(seed)
    w = Param(Tensor.from_data(rng.standard_normal((2, 2)) * 0.5, DEV))
    frozen = Param(Tensor.from_data(rng.standard_normal(2) * 0.1, DEV), require_grad=False)
    return Tied(l1=Linear(weight=w, bias=frozen), l2=Linear(weight=w, bias=Param(Tensor.from_data(np.zeros(2), DEV))),
                act=Relu(), count=Param(Tensor.from_data(np.array([3]), DEV, Int)))


def walk(*args: Any, fast: Any = None) -> tuple[Any, list[Any], list[Any], int]:
    """(structure, objects, leaves, fast-path hits) of the arguments, as a call's flatten gives them."""
    fl = Flat(TREE, fast)
    key = (flatten(fl, args), flatten(fl, {}))
    return key, list(fl.objs), list(fl.leaves), fl.hits


def same_objects(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def eager_run(model: Any, optim: Any, batch: Any, steps: int) -> tuple[Any, list[float]]:
    losses = []
    for _ in range(steps):
        model, loss = train_step(model, optim, batch, 0.1)
        losses.append(loss.into_scalar())
    return model, losses


# ---------------------------------------------------------------------- generated builder == reference builder
@pytest.mark.parametrize("make", [lambda: mlp(weights(), norm=True), tied], ids=["mlp-batchnorm", "tied"])
def test_generated_builder_makes_what_the_reference_builder_makes(make: Any) -> None:
    step = ember_torch.compile(train_step, mode="capture")
    model, optim, batch, lr = make(), AdamConfig().init(), xor_batch(), lr_tensor(0.1)
    optim.init_states(model)
    for _ in range(2):  # the tied model's results are another structure (optim.step makes one Param per field)
        model, _ = step(model, optim, batch, lr)
    fl = Flat(TREE)
    entry = step._cache[(flatten(fl, (model, optim, batch, lr)), flatten(fl, {}))]
    outs = entry.run(*fl.leaves)
    objs = fl.objs

    def written() -> tuple[Any, list[Any]]:
        """The state written back: the cells' tensors and the optimizer's states (structure, leaves)."""
        key, _objs, leaves, _ = walk([objs[n]._tensor for n, _node in entry.cells], optim)
        return key, leaves

    want = build_all(entry.result, entry.cells, entry.optims, entry.slots, outs, objs)
    want_key, want_objs, want_leaves, _ = walk(want)
    want_state = written()
    got, pool = entry.build(outs, objs)
    got_key, got_objs, got_leaves, _ = walk(got)
    # the same classes, ids, require_grad flags, tracking flags, kinds, shapes, dtypes and sharing (back-references),
    # around the same arrays; the caller's objects handed back (its running-state cells) and new ones (none of the
    # reference builder's)
    assert got_key == want_key
    assert same_objects(got_leaves, want_leaves)
    callers = {id(o) for o in objs}
    assert [id(o) in callers for o in got_objs] == [id(o) in callers for o in want_objs]
    assert not {id(o) for o in got_objs} & {id(o) for o in want_objs} - callers
    state = written()
    assert state[0] == want_state[0] and same_objects(state[1], want_state[1])
    tracked = [p.val().is_require_grad() for p in got[0].params()]
    assert tracked == [p.val().is_require_grad() for p in want[0].params()] and any(tracked)
    pool_ids = {id(o) for o in pool}
    assert all(id(o) in pool_ids or id(o) in callers for o in got_objs)  # every object made is listed


def test_tied_model_trains_like_eager() -> None:
    step = ember_torch.compile(train_step, mode="capture")
    batch, lr = xor_batch(), lr_tensor(0.1)
    m_c, o_c = tied(), AdamConfig().init()
    m_e, o_e = tied(), AdamConfig().init()
    o_c.init_states(m_c)
    o_e.init_states(m_e)
    for _ in range(4):
        m_c, _ = step(m_c, o_c, batch, lr)
    m_e, _ = eager_run(m_e, o_e, batch, 4)
    # as the eager step makes them: one Param per field after optim.step, one id
    assert m_c.l1.weight.id == m_c.l2.weight.id and (m_c.l1.weight is m_c.l2.weight) == (m_e.l1.weight is m_e.l2.weight)
    assert step.trace_count == 2
    assert not m_c.l1.bias.require_grad and not m_c.l1.bias.val().is_require_grad()
    assert m_c.l1.weight.val().is_require_grad()
    for a, b in zip(params_np(m_c), params_np(m_e), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(m_c.l1.bias.val().to_numpy(), tied().l1.bias.val().to_numpy())  # frozen
    assert m_c.count.val().to_numpy().tolist() == [3] and m_c.count.val().kind is Int


# ---------------------------------------------------------------------- results flattened ahead
@pytest.mark.parametrize("make", [lambda: mlp(weights(), norm=True), tied, lambda: mlp(weights(), dropout=0.3)],
                         ids=["mlp-batchnorm", "tied", "dropout"])
def test_results_flattened_ahead_equal_a_complete_walk(make: Any) -> None:
    step = ember_torch.compile(train_step, mode="capture")
    model, optim, batch, lr = make(), AdamConfig().init(), xor_batch(), lr_tensor(0.1)
    optim.init_states(model)
    for i in range(5):
        model, _ = step(model, optim, batch, lr)
        if i == 0:
            continue  # the tied model: the first results are another structure
        full = walk(model, optim, batch, lr)
        ahead = walk(model, optim, batch, lr, fast=step._fast)
        assert ahead[3] == 2  # the model and the optimizer's states were taken as they are
        assert ahead[0] == full[0], f"call {i}: the structure differs"
        assert same_objects(ahead[1], full[1]) and same_objects(ahead[2], full[2])
    assert step.trace_count <= 2


def test_a_replaced_parameter_is_seen() -> None:
    step = ember_torch.compile(train_step, mode="capture")
    batch, lr = xor_batch(), lr_tensor(0.1)
    model, optim = mlp(weights()), SgdConfig().init()
    model, _ = step(model, optim, batch, lr)
    # the same structure, another value: a new module object (modules are immutable) takes the complete walk
    new_w = Param(Tensor.from_data(np.full((2, 16), 0.25), DEV), model.l1.weight.id)
    swapped = model.replace(l1=model.l1.replace(weight=new_w))
    got, loss = step(swapped, optim, batch, lr)
    want, want_loss = train_step(mlp(weights()).replace(l1=swapped.l1, l2=swapped.l2), SgdConfig().init(), batch,
                                 0.1)
    np.testing.assert_allclose(loss.into_scalar(), want_loss.into_scalar(), rtol=1e-12)
    for a, b in zip(params_np(got), params_np(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert step.trace_count == 1
    # another parameter id: another structure, captured again
    other = model.replace(l1=model.l1.replace(weight=Param(Tensor.from_data(np.full((2, 16), 0.25), DEV))))
    got, _ = step(other, optim, batch, lr)
    assert step.trace_count == 2 and got.l1.weight.id == other.l1.weight.id


def twin(ws: list[np.ndarray]) -> Mlp:
    """A model of the structure of ``mlp(weights(0), norm=True)`` (the same classes, shapes and parameter ids:
    the ids are those of :data:`TWIN`), with its own values and its own running-state cells."""
    def p(old: Param, v: np.ndarray) -> Param:
        return Param(Tensor.from_data(v, DEV), old.id)

    m = TWIN
    assert m.norm is not None
    norm = m.norm.replace(gamma=p(m.norm.gamma, np.ones(16)), beta=p(m.norm.beta, np.zeros(16)),
                          running_mean=RunningState(Tensor.from_data(np.zeros(16), DEV), m.norm.running_mean.id),
                          running_var=RunningState(Tensor.from_data(np.ones(16), DEV), m.norm.running_var.id))
    return m.replace(l1=m.l1.replace(weight=p(m.l1.weight, ws[0]), bias=p(m.l1.bias, ws[1])),
                     l2=m.l2.replace(weight=p(m.l2.weight, ws[2]), bias=p(m.l2.bias, ws[3])), norm=norm)


TWIN = mlp(weights(0), norm=True)


def test_two_models_of_one_structure_in_turn_train_like_eager() -> None:
    step = ember_torch.compile(train_step, mode="capture")
    batch, lr = xor_batch(), lr_tensor(0.1)
    a, b = twin(weights(0)), twin(weights(1))
    oa, ob = AdamConfig().init().init_states(a), AdamConfig().init().init_states(b)
    for _ in range(3):
        a, _ = step(a, oa, batch, lr)
        b, _ = step(b, ob, batch, lr)
    assert step.trace_count == 1
    for seed, got in ((0, a), (1, b)):
        m = twin(weights(seed))
        m, _ = eager_run(m, AdamConfig().init().init_states(m), batch, 3)
        for x, y in zip(params_np(got), params_np(m), strict=True):  # Adam over BatchNorm: rounding differs
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
        assert got.norm is not None and m.norm is not None
        np.testing.assert_allclose(got.norm.running_mean.value().to_numpy(), m.norm.running_mean.value().to_numpy(),
                                   rtol=1e-9, atol=1e-12)


def test_optimizer_states_changing_layout_or_replaced_are_seen() -> None:
    step = ember_torch.compile(train_step, mode="capture")
    batch, lr = xor_batch(), lr_tensor(0.1)
    cfg = SgdConfig(momentum=MomentumConfig())
    m_c, o_c, m_e, o_e = mlp(weights()), cfg.init(), mlp(weights()), cfg.init()
    for _ in range(3):  # no state at first, then a momentum per parameter: two layouts
        m_c, _ = step(m_c, o_c, batch, lr)
    m_e, _ = eager_run(m_e, o_e, batch, 3)
    assert step.trace_count == 2
    # an eager step in between (its fused update writes the state buffers), then the states replaced from a
    # record (another dict of other objects), on both sides
    m_c, _ = train_step(m_c, o_c, batch, 0.1)
    m_e, _ = train_step(m_e, o_e, batch, 0.1)
    o_c.load_record(o_c.to_record())
    o_e.load_record(o_e.to_record())
    assert walk(m_c, o_c, batch, lr, fast=step._fast)[3] == 0  # nothing taken ahead: the model is new too
    for _ in range(2):
        m_c, _ = step(m_c, o_c, batch, lr)
    m_e, _ = eager_run(m_e, o_e, batch, 2)
    for x, y in zip(params_np(m_c), params_np(m_e), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)
    # the same dict changed in place: a state removed, a state replaced
    pid = next(iter(o_c._states))
    saved = o_c._states.pop(pid)
    assert walk(m_c, o_c, batch, lr, fast=step._fast)[3] == 1
    o_c._states[pid] = {k: v for k, v in saved.items()} if isinstance(saved, dict) else saved
    ahead, full = walk(m_c, o_c, batch, lr, fast=step._fast), walk(m_c, o_c, batch, lr)
    assert ahead[0] == full[0] and same_objects(ahead[2], full[2])


def test_a_running_state_updated_by_hand_is_seen() -> None:
    step = ember_torch.compile(train_step, mode="capture")
    batch, lr = xor_batch(), lr_tensor(0.1)
    m_c, m_e = mlp(weights(), norm=True), mlp(weights(), norm=True)
    o_c, o_e = SgdConfig().init(), SgdConfig().init()
    for _ in range(2):
        m_c, _ = step(m_c, o_c, batch, lr)
    m_e, _ = eager_run(m_e, o_e, batch, 2)
    assert m_c.norm is not None and m_e.norm is not None
    w1, b1 = params_np(m_c)[:2]  # the first layer before the step
    for m in (m_c, m_e):  # the same cell object, a new tensor: the fast path's guard sees it
        m.norm.running_mean.update(Tensor.from_data(np.full(16, 0.5), DEV))
    assert walk(m_c, o_c, batch, lr, fast=step._fast)[3] == 1  # the optimizer only
    m_c, _ = step(m_c, o_c, batch, lr)
    m_e, _ = eager_run(m_e, o_e, batch, 1)
    got = m_c.norm.running_mean.value().to_numpy()
    np.testing.assert_allclose(got, m_e.norm.running_mean.value().to_numpy(), rtol=1e-12)
    # BatchNorm's momentum 0.1 over the batch mean of the first layer's output, from 0.5 (numpy)
    np.testing.assert_allclose(got, 0.9 * 0.5 + 0.1 * (batch.x.to_numpy() @ w1 + b1).mean(0), rtol=1e-12)


class Pair(NamedTuple):
    a: Any
    b: Any


def test_generated_builder_handles_every_result_kind() -> None:
    """Dataclasses, GradientsParams, namedtuples, lists, dicts, constants and inputs returned as they are."""

    def step(model: Mlp, batch: Batch, lr: Tensor) -> Any:
        out = model.forward(batch.x)
        loss = out.sum()
        grads = GradientsParams.from_grads(loss.backward(), model)
        return Batch(out, batch.y), grads, Pair([loss, 3], {"lr": lr, "x2": lr * 2.0}), "tag", model

    f = ember_torch.compile(step, mode="capture")
    model, batch, lr = mlp(weights()), xor_batch(), lr_tensor(0.1)
    got = f(model, batch, lr)
    (entry,) = f._cache.values()
    fl = Flat(TREE)
    flatten(fl, (model, batch, lr))
    outs = entry.run(*fl.leaves)
    want = build_all(entry.result, entry.cells, entry.optims, entry.slots, outs, fl.objs)
    got, _pool = entry.build(outs, fl.objs)
    g, w = walk(got), walk(want)
    assert g[0] == w[0] and same_objects(g[2], w[2])
    assert isinstance(got[0], Batch) and got[0].y is batch.y and got[4] is model  # inputs handed back
    assert isinstance(got[2], Pair) and got[2].a[1] == 3 and got[2].b["lr"] is lr and got[3] == "tag"
    np.testing.assert_allclose(got[2].b["x2"].to_numpy(), [0.2])
    want_grads = GradientsParams.from_grads(model.forward(batch.x).sum().backward(), model)
    for p in model.params():
        np.testing.assert_allclose(got[1].get(p.id).to_numpy(), want_grads.get(p.id).to_numpy(), rtol=1e-12)


def test_results_are_taken_ahead_after_graph_captured_the_entry() -> None:
    step = ember_torch.compile(train_step, mode="capture")
    model, optim, batch, lr = mlp(weights()), AdamConfig().init(), xor_batch(), lr_tensor(0.1)
    optim.init_states(model)
    step.graph(model, optim, batch, lr)  # captured, never run
    for _ in range(2):
        model, _ = step(model, optim, batch, lr)
    assert walk(model, optim, batch, lr, fast=step._fast)[3] == 2 and step.trace_count == 1
