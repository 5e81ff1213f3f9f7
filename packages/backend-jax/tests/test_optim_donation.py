"""The eager fused optimizer updates on jax write each state into its own buffer.

Each update is one ``jax.jit`` program with the states donated (``ember_jax/_optim.py``). jax hands a donated
buffer to the first output of its shape and dtype; with the new parameters listed first, a parameter's new value
took its first moment's buffer, the moment's the next state's, and the last state a new allocation (0 of Adam's 4
state arrays kept their buffers). The buffers' addresses show the pairing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff
from ember.nn import LinearConfig
from ember.optim import AdamConfig, GradientsParams, LionConfig, MomentumConfig, RmsPropConfig, SgdConfig

DEV = Autodiff(ember.backend("jax")).device()

CONFIGS = {
    "adam": AdamConfig(),
    "amsgrad": AdamConfig(amsgrad=True),
    "sgd-momentum": SgdConfig(momentum=MomentumConfig()),
    "rmsprop-centered": RmsPropConfig(centered=True),
    "lion": LionConfig(),
}


def _state_arrays(x: Any) -> list[Any]:
    if isinstance(x, Tensor):
        return [x.primitive]
    if isinstance(x, dict):
        return [a for v in x.values() for a in _state_arrays(v)]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _state_arrays(v)]
    return []


@pytest.mark.parametrize("name", list(CONFIGS))
def test_eager_updates_keep_each_state_in_its_buffer(name: str) -> None:
    net = LinearConfig(16, 16).init(DEV)  # weight [16, 16] and bias [16]: states of two shapes, several each
    optim = CONFIGS[name].init()
    x = Tensor.from_data(np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16), DEV)

    def step(net: Any) -> Any:
        loss = net.forward(x).square().sum()
        return optim.step(1e-2, net, GradientsParams.from_grads(loss.backward(), net))

    for _ in range(2):  # the first step makes the states
        net = step(net)
    before = _state_arrays(optim._states)
    assert len(before) >= 2
    addresses = [a.unsafe_buffer_pointer() for a in before]
    net = step(net)
    after = [a.unsafe_buffer_pointer() for a in _state_arrays(optim._states)]
    assert after == addresses
    assert all(a.is_deleted() for a in before)  # donated: the old arrays are gone, their buffers reused
