"""``ember_jax.jit`` with a donated module (``donate_argnums``): the new arrays are written into the caller's
module objects and the same module comes back; the results are bit for bit those of the rebuilding path (the
same step compiled without donation), a non-donated call leaves its input alone, and a tree that does not pair
with the result is rebuilt as before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember_jax
from ember import Int, Tensor
from ember.module import Module, Param
from ember.nn import BatchNorm, BatchNormConfig, Linear, Relu
from ember.nn.loss import CrossEntropyLossConfig
from ember.optim import AdamConfig, GradientsParams, MomentumConfig, SgdConfig
from test_jit import DEV, Batch, lr_tensor

RNG_SHAPES = [(3, 8), (8,), (8, 4), (4,)]


class BnNet(Module):
    lin: Linear
    bn: BatchNorm
    act: Relu
    head: Linear

    def forward(self, x: Tensor) -> Tensor:
        return self.head.forward(self.act.forward(self.bn.forward(self.lin.forward(x))))


def make(seed: int = 0) -> BnNet:
    rng = np.random.default_rng(seed)
    w = [rng.standard_normal(s) * 0.5 for s in RNG_SHAPES]
    frozen = Param(Tensor.from_data(w[3], DEV), require_grad=False)  # a param the optimizer leaves alone

    def p(a: np.ndarray) -> Param:
        return Param(Tensor.from_data(a, DEV))

    return BnNet(lin=Linear(weight=p(w[0]), bias=p(w[1])), bn=BatchNormConfig(8).init(DEV), act=Relu(),
                 head=Linear(weight=p(w[2]), bias=frozen))


def batch(n: int = 16, seed: int = 1) -> Batch:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    return Batch(Tensor.from_data(x, DEV), Tensor.from_data((x[:, 0] > 0).astype(np.int64), DEV, Int))


def step(model: BnNet, optim: Any, b: Batch, lr: Any) -> tuple[BnNet, Tensor]:
    loss = CrossEntropyLossConfig().init(DEV).forward(model.forward(b.x), b.y)
    return optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model)), loss


def arrays(m: BnNet) -> list[np.ndarray]:
    """Every array of the model, running statistics included, in a fixed order."""
    return [m.lin.weight.val().to_numpy(), m.lin.bias.val().to_numpy(), m.head.weight.val().to_numpy(),
            m.head.bias.val().to_numpy(), m.bn.gamma.val().to_numpy(), m.bn.beta.val().to_numpy(),
            m.bn.running_mean.value().to_numpy(), m.bn.running_var.value().to_numpy()]


def state_arrays(x: Any) -> list[np.ndarray]:
    """The tensors of an optimizer's states, in order."""
    if isinstance(x, Tensor):
        return [x.to_numpy()]
    if isinstance(x, dict):
        return [a for v in x.values() for a in state_arrays(v)]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in state_arrays(v)]
    return []


@pytest.mark.parametrize("config", [SgdConfig(momentum=MomentumConfig()), AdamConfig()], ids=["sgd", "adam"])
def test_donated_steps_are_bit_identical_to_rebuilt_ones_and_hand_back_the_callers_objects(config: Any) -> None:
    plain, donating = ember_jax.jit(step), ember_jax.jit(step, donate_argnums=(0,))
    m_r, m_d = make(), make()
    o_r, o_d = config.init(), config.init()
    o_r.init_states(m_r)
    o_d.init_states(m_d)
    objects = [m_d.lin, m_d.lin.weight, m_d.lin.weight.val(), m_d.bn.running_mean, m_d.bn.running_var,
               m_d.head.bias, m_d.head.bias.val()]
    for i in range(5):
        b, lr = batch(seed=i), lr_tensor(0.05)
        prev = m_d
        m_r, loss_r = plain(m_r, o_r, b, lr)
        m_d, loss_d = donating(m_d, o_d, b, lr)
        assert m_d is prev  # the caller's module, holding the new arrays
        np.testing.assert_array_equal(loss_d.to_numpy(), loss_r.to_numpy())
        for a, e in zip(arrays(m_d), arrays(m_r)):
            np.testing.assert_array_equal(a, e)
        got, want = state_arrays(o_d._states), state_arrays(o_r._states)
        assert len(got) == len(want) > 0
        for a, e in zip(got, want):
            np.testing.assert_array_equal(a, e)
    now = [m_d.lin, m_d.lin.weight, m_d.lin.weight.val(), m_d.bn.running_mean, m_d.bn.running_var,
           m_d.head.bias, m_d.head.bias.val()]
    assert all(a is b for a, b in zip(now, objects))
    # trained parameters stay tracked leaves (the same wrapper and graph leaf: updated in place), the frozen one not
    assert m_d.lin.weight.val().is_require_grad() and not m_d.head.bias.val().is_require_grad()
    # as many traces (SGD's momentum state is made at the first step: a second layout, a second trace)
    assert plain.trace_count == donating.trace_count <= 2
    # the rebuilding path really rebuilds: the donated path's generated code builds no parameters
    src = list(donating._cache.values())[-1].source
    assert "_new(_Param)" in list(plain._cache.values())[-1].source and "_new(_Param)" not in src


def test_a_call_without_donation_leaves_its_input_untouched() -> None:
    compiled = ember_jax.jit(step)
    m = make()
    before, cell_value = arrays(m), m.bn.running_mean.value()
    w = m.lin.weight.val()
    out, _ = compiled(m, SgdConfig().init(), batch(), lr_tensor(0.1))
    assert out is not m and out.lin.weight is not m.lin.weight and m.lin.weight.val() is w
    for a, e in zip(arrays(m)[:6], before[:6]):
        np.testing.assert_array_equal(a, e)
    assert not np.array_equal(out.lin.weight.val().to_numpy(), before[0])
    # running states are written back into the caller's cells (documented), never into its tensors
    np.testing.assert_array_equal(cell_value.to_numpy(), before[6])


def test_a_new_structure_traces_again_and_still_writes_in_place() -> None:
    donating = ember_jax.jit(step, donate_argnums=(0,))
    m, o = make(), AdamConfig().init()
    o.init_states(m)
    ref_m, ref_o = make(), AdamConfig().init()
    ref_o.init_states(ref_m)
    plain = ember_jax.jit(step)
    for n in (16, 16, 8, 8, 16):  # a new batch size is a new structure
        b = batch(n=n, seed=n)
        out, _ = donating(m, o, b, lr_tensor(0.01))
        ref_m, _ = plain(ref_m, ref_o, b, lr_tensor(0.01))
        assert out is m
        for a, e in zip(arrays(m), arrays(ref_m)):
            np.testing.assert_array_equal(a, e)
    assert donating.trace_count == 2 and donating.cache_size == 2


def test_a_result_that_does_not_pair_with_the_donated_module_is_rebuilt() -> None:
    def swap_head(model: BnNet, x: Tensor) -> tuple[BnNet, Tensor]:
        # a new head bias param (a new id): the trees differ, the result is built as before
        head = Linear(weight=model.head.weight, bias=Param(model.head.bias.val() * 2.0))
        return BnNet(lin=model.lin, bn=model.bn, act=model.act, head=head), model.forward(x)

    compiled = ember_jax.jit(swap_head, donate_argnums=(0,))
    m = make()
    bias = m.head.bias.val().to_numpy()
    out, y = compiled(m, batch().x)
    assert out is not m and out.head.bias.id != m.head.bias.id
    np.testing.assert_allclose(out.head.bias.val().to_numpy(), bias * 2.0, rtol=1e-6)
    assert tuple(y.shape) == (16, 4) and np.isfinite(y.to_numpy()).all()
    # the fields that did pair are not written in place either: the whole tree is rebuilt
    assert out.lin is not m.lin and out.lin.weight.id == m.lin.weight.id


def _twin(m: BnNet, seed: int, scale: float = 1.0) -> BnNet:
    """A model of the same structure as ``m`` (its ids, through its record), with its own arrays (parameters times
    ``scale``) and its own running-state cells."""
    twin = make(seed).load_record(m.into_record())
    return twin.map(lambda p: p.map(lambda t: t.mul_scalar(scale))) if scale != 1.0 else twin


def test_the_fast_path_is_left_when_the_model_changes_and_results_stay_bit_identical() -> None:
    """The invalidation cases of the results flattened ahead, with a donated model written in place: another model
    of the same structure, the first one again, a parameter replaced, a running-state cell updated between calls;
    every call equals the same call on the rebuilding path bit for bit, and the donated path never traces again."""
    plain, donating = ember_jax.jit(step), ember_jax.jit(step, donate_argnums=(0,))
    m_d = make()
    m_r = _twin(m_d, 3)
    o_d, o_r = AdamConfig().init(), AdamConfig().init()
    o_d.init_states(m_d)
    o_r.init_states(m_r)
    calls = [0]

    def both(md: BnNet, mr: BnNet) -> tuple[BnNet, BnNet]:
        calls[0] += 1
        b, lr = batch(seed=calls[0]), lr_tensor(0.05)
        out_d, loss_d = donating(md, o_d, b, lr)
        out_r, loss_r = plain(mr, o_r, b, lr)
        assert out_d is md  # written in place, whichever path found it
        np.testing.assert_array_equal(loss_d.to_numpy(), loss_r.to_numpy())
        for a, e in zip(arrays(out_d), arrays(out_r)):
            np.testing.assert_array_equal(a, e)
        for a, e in zip(state_arrays(o_d._states), state_arrays(o_r._states)):
            np.testing.assert_array_equal(a, e)
        return out_d, out_r

    m_d, m_r = both(m_d, m_r)
    m_d, m_r = both(m_d, m_r)  # the fast path: the model the previous call returned
    assert donating._fast and id(m_d) in donating._fast
    # another model of the same structure: no new trace, the other model is the one written, the first untouched
    t_d, t_r = _twin(m_d, 5, 0.5), _twin(m_r, 6, 0.5)
    kept = arrays(m_d)
    t_d, t_r = both(t_d, t_r)
    for a, e in zip(arrays(m_d), kept):
        np.testing.assert_array_equal(a, e)
    m_d, m_r = both(m_d, m_r)  # the first model again (its walk, not the twin's results)
    # a parameter replaced (same id: the same structure): a new module object, walked
    bias = Tensor.from_data(np.full(4, 0.25), DEV)
    new_d = m_d.replace(head=m_d.head.replace(bias=Param(bias, m_d.head.bias.id, require_grad=False)))
    new_r = m_r.replace(head=m_r.head.replace(bias=Param(bias * 1.0, m_r.head.bias.id, require_grad=False)))
    m_d, m_r = both(new_d, new_r)
    np.testing.assert_array_equal(m_d.head.bias.val().to_numpy(), np.full(4, 0.25, np.float32))
    # a running-state cell updated between calls (the one mutable part of a module): the guard sends it to the walk
    value = np.linspace(-1.0, 1.0, 8)
    m_d.bn.running_mean.update(Tensor.from_data(value, DEV))
    m_r.bn.running_mean.update(Tensor.from_data(value, DEV))
    m_d, m_r = both(m_d, m_r)
    m_d, m_r = both(m_d, m_r)
    assert donating.trace_count == plain.trace_count == 1


def test_a_donated_model_keeps_its_wrappers_and_leaves_and_trains_eagerly_afterwards() -> None:
    """The tensors of a model written in place keep their ``AutodiffPrimitive`` and graph leaf (a parameter updated
    in place, as PyTorch's), so the model still trains eagerly after compiled steps: its gradients equal those of a
    fresh model holding the same values."""
    donating = ember_jax.jit(step, donate_argnums=(0,))
    m, o = make(), AdamConfig().init()
    o.init_states(m)
    w = m.lin.weight.val()
    wrapper, leaf = w.primitive, w.primitive.node
    for i in range(3):
        assert donating(m, o, batch(seed=i), lr_tensor(0.05))[0] is m
    assert m.lin.weight.val() is w and w.primitive is wrapper and wrapper.node is leaf and leaf is not None
    fresh = _twin(m, 8)
    assert fresh.lin.weight.val().primitive.node is not leaf
    b = batch(seed=9)
    grads = []
    for model in (m, fresh):
        loss = CrossEntropyLossConfig().init(DEV).forward(model.forward(b.x), b.y)
        grads.append(GradientsParams.from_grads(loss.backward(), model))
    for p in m.params():
        if p.require_grad:
            np.testing.assert_array_equal(grads[0].get(p.id).to_numpy(), grads[1].get(p.id).to_numpy())


def test_two_tensors_sharing_one_wrapper_are_rebuilt_not_written_in_place() -> None:
    """Writing a wrapper's array in place needs one caller tensor per ``AutodiffPrimitive``; two tensors sharing one
    (only internal code can make them: ``Param`` detaches or re-marks what it is given) make the tree rebuilt."""
    m = make()
    shared = Tensor(m.lin.bias.val().primitive, DEV, m.lin.bias.val().kind)
    other = Param(Tensor.from_data(np.zeros(4), DEV))
    Param.__dict__["_tensor"].__set__(other, shared)  # the slot, past Param's own re-marking
    net = _SharedNet(a=m.lin.bias, b=other)
    assert net.a.val().primitive is net.b.val().primitive

    def bump(model: _SharedNet) -> tuple[_SharedNet, Tensor]:
        new = _SharedNet(a=model.a.map(lambda t: t + 1.0), b=model.b.map(lambda t: t * 2.0))
        return new, new.a.val().sum()

    compiled = ember_jax.jit(bump, donate_argnums=(0,))
    before = net.a.val().to_numpy()
    out, _ = compiled(net)
    assert out is not net  # rebuilt: two new arrays could not both go into the one wrapper
    np.testing.assert_array_equal(out.a.val().to_numpy(), before + 1.0)
    np.testing.assert_array_equal(out.b.val().to_numpy(), before * 2.0)


class _SharedNet(Module):
    a: Param
    b: Param
