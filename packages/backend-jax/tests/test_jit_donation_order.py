"""``ember_jax.jit`` hands each donated buffer to its own new value.

jax pairs donated input buffers with outputs of the same shape and dtype in output order; with the outputs in
another order, a parameter's buffer went to the new Adam moment of the same shape, and XLA copied every donated
array first (ResNet-18 donated: 325 copies per step instead of 61, ``bench/README.md``). The buffers' addresses
show the pairing: after a donated call every array of the model and of the optimizer state sits where its old
value was."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

import ember_jax
from ember.backend.step_tree import Flat, flatten_seq
from ember.optim import AdamConfig, AdamWConfig, MomentumConfig, SgdConfig
from ember_jax._tree import TREE
from test_jit import lr_tensor
from test_jit_donate import arrays, batch, make, state_arrays, step

CONFIGS = [SgdConfig(momentum=MomentumConfig()), AdamConfig(), AdamWConfig()]


def _leaves(*trees: Any) -> list[Any]:
    """Every jax array in ``trees`` (model and optimizer), in flatten order, computed."""
    fl = Flat(TREE)
    flatten_seq(fl, trees)
    jax.block_until_ready(fl.leaves)
    return list(fl.leaves)


def _buffers(*trees: Any) -> list[int]:
    """The device-buffer address of every array in ``trees``, in flatten order."""
    return [a.unsafe_buffer_pointer() for a in _leaves(*trees)]


@pytest.mark.parametrize("config", CONFIGS, ids=["sgd-momentum", "adam", "adamw"])
def test_a_donated_model_and_state_keep_their_buffers(config: Any) -> None:
    # BnNet mixes same-shaped arrays on purpose: bias, BatchNorm's gamma, beta and running statistics are all
    # [8], and Adam keeps two moments of each parameter's shape
    compiled = ember_jax.jit(step, donate_argnums=(0,), copy_donated=True)
    model, optim = make(), config.init()
    optim.init_states(model)
    for i in range(2):  # the first call copies the caller's model (copy_donated); SGD makes its momentum then
        model, _ = compiled(model, optim, batch(seed=i), lr_tensor(0.05))
    before = _buffers(model, optim)
    assert len(before) > 12
    model, _ = compiled(model, optim, batch(seed=2), lr_tensor(0.05))
    after = _buffers(model, optim)
    moved = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert moved == [], f"{len(moved)} of {len(before)} arrays moved to another buffer"


def test_donated_state_alone_keeps_its_buffers_and_the_model_gets_new_ones() -> None:
    compiled = ember_jax.jit(step)  # donate_state=True by default; the model is not donated
    model, optim = make(), AdamConfig().init()
    optim.init_states(model)
    model, _ = compiled(model, optim, batch(seed=0), lr_tensor(0.05))
    states = _buffers(optim)
    old = {a.unsafe_buffer_pointer(): a for a in _leaves(model)}
    kept = model
    model, _ = compiled(model, optim, batch(seed=1), lr_tensor(0.05))
    assert _buffers(optim) == states
    # the caller's model is not donated (it stays readable): a new model array never reuses one of its buffers;
    # the frozen bias comes back as the same array
    shared = [a for a in _leaves(model) if a.unsafe_buffer_pointer() in old]
    assert all(a is old[a.unsafe_buffer_pointer()] for a in shared) and len(shared) <= 1
    # the caller's model can still be read: its arrays were not donated (reading a deleted array raises)
    assert all(np.isfinite(a).all() for a in arrays(kept)) and len(state_arrays(optim._states)) > 0
