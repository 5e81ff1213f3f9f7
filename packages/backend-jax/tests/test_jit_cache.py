"""``ember_jax.jit``'s per-structure caches: the results of a call flattened ahead for the next call (the fast path,
:func:`ember.backend.step_tree.fast_spec`) agree with a complete walk, are refused when the module changed (new
structure, static value, dtype, running-state cell updated outside the step), and give the same numbers as the
uncached path."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
import ember_jax
from ember import DType, Tensor
from ember.autodiff import Autodiff
from ember.backend.step_tree import Flat, flatten_seq
from ember.module import Module, Param
from ember.nn import BatchNormConfig, Dropout, Linear
from ember.optim import AdamConfig, GradientsParams
from ember_jax._tree import TREE

B = ember.backend("jax")
DEV = Autodiff(B).device()


class Net(Module):
    lin: Linear
    bn: Any
    drop: Any = None

    def forward(self, x: Tensor) -> Tensor:
        h = self.bn.forward(self.lin.forward(x))
        return self.drop.forward(h) if self.drop is not None else h


def make(seed: int = 0, dtype: DType = DType.FLOAT32) -> Net:
    w = np.random.default_rng(seed).standard_normal((3, 8))
    weight = Param(Tensor.from_data(w, DEV).cast(dtype))
    return Net(lin=Linear(weight=weight), bn=BatchNormConfig(8).init(DEV))


def batch(dtype: DType = DType.FLOAT32) -> Tensor:
    return Tensor.from_data(np.random.default_rng(1).standard_normal((16, 3)), DEV).cast(dtype)


def lr() -> Tensor:
    return Tensor.from_data(np.asarray([0.01]), DEV.inner)


def step(model: Net, optim: Any, x: Tensor, lr: Any) -> tuple[Net, Tensor, Tensor]:
    """A training step that also returns the running mean it was given (read before the forward updates it)."""
    seen = model.bn.running_mean.value().mul_scalar(1.0)
    loss = model.forward(x).square().mean()
    return optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model)), loss, seen


def _walks(fn: Any, args: tuple[Any, ...]) -> tuple[Flat, Any, Flat, Any]:
    fast = Flat(TREE, fn._fast)
    full = Flat(TREE)
    return fast, flatten_seq(fast, args), full, flatten_seq(full, args)


def test_a_module_with_running_states_is_taken_ahead_and_agrees_with_a_complete_walk() -> None:
    fn = ember_jax.jit(step)
    model, optim, x = make(), AdamConfig().init(), batch()
    optim.init_states(model)
    for _ in range(3):
        model, _loss, _seen = fn(model, optim, x, lr())
    args = (model, optim, x, lr())
    fast, node_fast, full, node_full = _walks(fn, args)
    assert fast.hits == 2  # the model (BatchNorm cells and all) and the optimizer's state
    assert node_fast == node_full
    assert len(fast.leaves) == len(full.leaves)
    assert all(a is b for a, b in zip(fast.leaves, full.leaves))
    assert all(a is b for a, b in zip(fast.objs, full.objs))
    assert fn.trace_count == 1


def test_a_cell_updated_outside_the_step_is_walked_again() -> None:
    fn = ember_jax.jit(step)
    model, optim, x = make(), AdamConfig().init(), batch()
    optim.init_states(model)
    for _ in range(2):
        model, _loss, _seen = fn(model, optim, x, lr())
    new = np.arange(8, dtype=np.float32)
    model.bn.running_mean.update(Tensor.from_data(new, DEV))  # the one mutable cell of the tree
    assert _walks(fn, (model, optim, x, lr()))[0].hits == 1  # the optimizer only: the model's guard fails
    model, _loss, seen = fn(model, optim, x, lr())
    np.testing.assert_array_equal(seen.to_numpy(), new)  # the step saw the new value, not the one it wrote
    assert fn.trace_count == 1


def test_changed_structure_static_value_or_dtype_is_traced_again_never_taken_ahead() -> None:
    fn = ember_jax.jit(step)
    optim, x = AdamConfig().init(), batch()
    model = make()
    optim.init_states(model)
    model, *_ = fn(model, optim, x, lr())
    model, *_ = fn(model, optim, x, lr())
    assert fn.trace_count == 1
    # a submodule added to the returned model: a new object, a new structure
    grown = model.replace(drop=Dropout(prob=0.5))
    fast, node_fast, _full, node_full = _walks(fn, (grown, optim, x, lr()))
    assert node_fast == node_full and fast.hits == 0  # not the returned model's entry (nor the optimizer's,
    # whose states now come after more objects)
    grown, *_ = fn(grown, optim, x, lr())
    assert fn.trace_count == 2
    # a static value changed (Dropout's probability): traced again
    other = grown.replace(drop=Dropout(prob=0.25))
    other, *_ = fn(other, optim, x, lr())
    assert fn.trace_count == 3
    # a different dtype of the input batch
    fn(other, optim, batch(DType.FLOAT16), lr())
    assert fn.trace_count == 4
    # back to a structure seen before: the cached program, no trace
    fn(grown.replace(drop=Dropout(prob=0.5)), optim, x, lr())
    assert fn.trace_count == 4


def test_a_different_parameter_dtype_is_a_new_structure() -> None:
    fn = ember_jax.jit(step)
    m32, m16 = make(dtype=DType.FLOAT32), make(dtype=DType.FLOAT16)
    o32, o16 = AdamConfig().init(), AdamConfig().init()
    o32.init_states(m32)  # the layout of the states stays (no second trace for the first state)
    o16.init_states(m16)
    m32, *_ = fn(m32, o32, batch(), lr())
    m16, *_ = fn(m16, o16, batch(), lr())
    assert fn.trace_count == 2
    m32, *_ = fn(m32, o32, batch(), lr())
    m16, *_ = fn(m16, o16, batch(), lr())
    assert fn.trace_count == 2
    assert m16.lin.weight.val().dtype == DType.FLOAT16 and m32.lin.weight.val().dtype == DType.FLOAT32


def test_results_and_state_equal_the_uncached_path() -> None:
    cached, uncached = ember_jax.jit(step), ember_jax.jit(step)
    ma, oa, mb, ob, x = make(), AdamConfig().init(), make(), AdamConfig().init(), batch()
    oa.init_states(ma)
    ob.init_states(mb)
    cells = (mb.bn.running_mean, mb.bn.running_var)
    for _ in range(5):
        ma, la, _ = cached(ma, oa, x, lr())
        uncached._fast = {}  # every call walks its arguments completely
        mb, lb, _ = uncached(mb, ob, x, lr())
        assert la.to_numpy().tobytes() == lb.to_numpy().tobytes()
    assert uncached.trace_count == cached.trace_count
    for pa, pb in zip(ma.params(), mb.params()):
        np.testing.assert_array_equal(pa.val().to_numpy(), pb.val().to_numpy())
    for name in ("running_mean", "running_var"):
        np.testing.assert_array_equal(getattr(ma.bn, name).value().to_numpy(), getattr(mb.bn, name).value().to_numpy())
    assert (mb.bn.running_mean, mb.bn.running_var) == cells  # the caller's cells, written in place
    sa, sb = list(oa._states.values()), list(ob._states.values())
    for a, b in zip(sa, sb):
        for k in a:
            np.testing.assert_array_equal(np.asarray(a[k].to_numpy()), np.asarray(b[k].to_numpy()))


def test_optimizer_state_is_written_into_its_own_tensors_and_equals_the_eager_step() -> None:
    fn = ember_jax.jit(step)
    model, optim, x = make(), AdamConfig().init(), batch()
    optim.init_states(model)
    eager_model, eager_optim = make(), AdamConfig().init()
    eager_optim.init_states(eager_model)
    model, *_ = fn(model, optim, x, lr())  # the first call makes the step counters tensors
    eager_model, *_ = step(eager_model, eager_optim, x, lr())
    states = optim._states
    tensors = [t for st in states.values() for t in st.values()]
    pid = model.lin.weight.id
    snapshot = optim.state(pid)["moment_1"]  # a copy: must keep the value it had
    before = snapshot.to_numpy().copy()
    for _ in range(3):
        model, *_ = fn(model, optim, x, lr())
        eager_model, *_ = step(eager_model, eager_optim, x, lr())
    assert optim._states is states  # the same dict holding the same tensor objects, with new arrays
    assert [t for st in optim._states.values() for t in st.values()] == tensors
    assert all(a is b for a, b in zip([t for st in optim._states.values() for t in st.values()], tensors))
    np.testing.assert_array_equal(snapshot.to_numpy(), before)
    for name in ("moment_1", "moment_2"):
        got = optim.state(pid)[name].to_numpy()
        want = eager_optim.state(eager_model.lin.weight.id)[name].to_numpy()
        assert not np.array_equal(got, before) or name == "moment_2"
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert int(optim.state(pid)["time"].to_numpy()[0]) == 4
    assert fn.trace_count == 1


def test_a_state_tensor_returned_by_the_step_comes_back_new_and_the_state_stays_right() -> None:
    def step_returning_state(model: Net, optim: Any, x: Tensor, lr: Any) -> tuple[Net, Tensor]:
        loss = model.forward(x).square().mean()
        model = optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model))
        return model, optim._states[model.lin.weight.id]["moment_1"]

    # not donated: a state buffer handed out as a result would be donated by the next call
    fn = ember_jax.jit(step_returning_state, donate_state=False)
    model, optim, x = make(), AdamConfig().init(), batch()
    optim.init_states(model)
    model, first = fn(model, optim, x, lr())
    first_value = first.to_numpy().copy()
    model, second = fn(model, optim, x, lr())
    np.testing.assert_array_equal(first.to_numpy(), first_value)  # the first result kept its value
    assert second is not first
    np.testing.assert_array_equal(second.to_numpy(), optim.state(model.lin.weight.id)["moment_1"].to_numpy())
    assert not np.array_equal(second.to_numpy(), first_value)
