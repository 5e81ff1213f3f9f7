"""The host work of ``ember_jax.jit``'s later calls (issue 32): the results flattened ahead are taken by the next
call as its own lists (never twice, never after a failed call), static tuples of the results are constants of
the generated builder, and new graph leaves are made inline; each compared with a complete walk or an uncached
step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import ember
import ember_jax
from ember import Tensor
from ember.autodiff import Autodiff
from ember.module import Module, Param
from ember.nn import BatchNormConfig, Linear
from ember.optim import AdamConfig, GradientsParams, SgdConfig

B = ember.backend("jax")
DEV = Autodiff(B).device()


class Net(Module):
    lin: Linear
    bn: Any
    window: tuple[Any, ...] = ((2, 2), "same")
    sizes: list[int] | None = None

    def forward(self, x: Tensor) -> Tensor:
        return self.bn.forward(self.lin.forward(x))


def make(seed: int = 0) -> Net:
    w = np.random.default_rng(seed).standard_normal((3, 8))
    return Net(lin=Linear(weight=Param(Tensor.from_data(w, DEV))), bn=BatchNormConfig(8).init(DEV), sizes=[3, 8])


def batch() -> Tensor:
    return Tensor.from_data(np.random.default_rng(1).standard_normal((16, 3)), DEV)


def lr() -> Tensor:
    return Tensor.from_data(np.asarray([0.01]), DEV.inner)


def step(model: Net, optim: Any, x: Tensor, lr: Any) -> tuple[Net, Tensor]:
    loss = model.forward(x).square().mean()
    return optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model)), loss


def _values(model: Net, optim: Any) -> list[np.ndarray]:
    out = [p.val().to_numpy() for p in model.params()]
    out += [model.bn.running_mean.value().to_numpy(), model.bn.running_var.value().to_numpy()]
    return out + [np.asarray(t.to_numpy()) for st in optim._states.values() for t in st.values()]


def _assert_same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("donate", [False, True])
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])  # sgd: no state, so no back-reference tells the keys apart
def test_a_failed_call_leaves_nothing_ahead_and_the_next_call_walks_completely(donate: bool, optimizer: str) -> None:
    kw: dict[str, Any] = {"donate_argnums": (0,), "copy_donated": True} if donate else {}
    fn, ref = ember_jax.jit(step, **kw), ember_jax.jit(step, **kw)
    config = AdamConfig() if optimizer == "adam" else SgdConfig()
    (ma, oa), (mb, ob), x = (make(), config.init()), (make(), config.init()), batch()
    oa.init_states(ma)
    ob.init_states(mb)
    for _ in range(3):
        ma, _ = fn(ma, oa, x, lr())
        ref._fast = {}  # the reference walks completely at every call
        mb, _ = ref(mb, ob, x, lr())
    (entry,) = fn._cache.values()
    jitted = entry.jitted

    def fail(*leaves: Any) -> Any:
        raise RuntimeError("the program failed")

    entry.jitted = fail
    with pytest.raises(RuntimeError, match="the program failed"):
        fn(ma, oa, x, lr())  # walked ahead (its lists taken), then failed: nothing may be left for the next call
    assert not fn._fast
    entry.jitted = jitted
    for _ in range(2):
        ma, la = fn(ma, oa, x, lr())
        ref._fast = {}
        mb, lb = ref(mb, ob, x, lr())
        assert la.to_numpy().tobytes() == lb.to_numpy().tobytes()
    _assert_same(_values(ma, oa), _values(mb, ob))
    assert fn.trace_count == 1


def test_taken_ahead_or_walked_the_calls_agree_with_a_complete_walk_at_every_call() -> None:
    fn, ref = ember_jax.jit(step), ember_jax.jit(step)
    (ma, oa), (mb, ob), x = (make(), AdamConfig().init()), (make(), AdamConfig().init()), batch()
    oa.init_states(ma)
    ob.init_states(mb)
    olders: list[tuple[Net, Net]] = []
    for i in range(7):
        if i == 4:  # an older model, not the one returned: walked, not taken ahead
            ma, mb = olders[1]
        ahead = fn._fast
        ma, la = fn(ma, oa, x, lr())
        ref._fast = {}  # the reference walks completely at every call
        mb, lb = ref(mb, ob, x, lr())
        assert fn._fast is not ahead  # a new dict each call: the one taken is never offered again
        olders.append((ma, mb))
        assert la.to_numpy().tobytes() == lb.to_numpy().tobytes()
        _assert_same(_values(ma, oa), _values(mb, ob))
    assert fn.trace_count == 1


def _models(fn: Any, n: int) -> tuple[Net, list[Net]]:
    """The model passed first and the models ``n`` calls of ``fn`` returned, each passing the last one back."""
    model, optim, x = make(), AdamConfig().init(), batch()
    optim.init_states(model)
    out = [model]
    for _ in range(n):
        out.append(fn(out[-1], optim, x, lr())[0])
    return model, out[1:]


def test_static_tuples_of_the_result_are_shared_constants_lists_are_new() -> None:
    fn = ember_jax.jit(step)
    model, (_m1, m2, m3) = _models(fn, 3)
    assert m2.window == ((2, 2), "same") and m3.sizes == [3, 8]
    assert m2.window is m3.window  # immutable: one constant of the builder
    assert m2.sizes is not m3.sizes and m2.sizes is not model.sizes  # mutable: a new list per call
    m2.sizes.append(1)
    assert m3.sizes == [3, 8]
    (entry,) = fn._cache.values()
    assert "(2, 2, )" not in entry.source


@dataclass
class _Holder:
    pair: tuple[Any, ...]


def test_a_tuple_holding_a_tensor_is_rebuilt_around_the_new_array() -> None:
    @ember_jax.jit
    def f(h: _Holder) -> _Holder:
        return _Holder(pair=(h.pair[0].mul_scalar(2.0), 3))

    h = _Holder(pair=(Tensor.from_data(np.asarray([1.0, 2.0]), DEV.inner), 3))
    a = f(h)
    b = f(a)
    np.testing.assert_array_equal(b.pair[0].to_numpy(), [4.0, 8.0])
    assert b.pair is not a.pair and b.pair[1] == 3


def test_rebuilt_parameters_are_new_tracked_leaves_with_distinct_ids() -> None:
    _model, (m1, m2) = _models(ember_jax.jit(step), 2)
    x = batch()
    nodes = [p._tensor.primitive.node for m in (m1, m2) for p in m.params()]
    assert all(n is not None for n in nodes)
    assert len({n.id for n in nodes}) == len(nodes)
    assert nodes[-1].id > nodes[0].id
    # an eager backward through the returned model: its leaves are graph leaves of the current graph
    loss = m2.forward(x).square().mean()
    grads = GradientsParams.from_grads(loss.backward(), m2)
    assert grads.get(m2.lin.weight.id) is not None
