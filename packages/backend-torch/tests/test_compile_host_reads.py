"""A captured training step reads nothing on the host (issue 32): every optimizer's update keeps its tensor scalars
(learning rate, bias corrections, the epsilon term) on the device. A host read (``aten._local_scalar_dense``, what
``Tensor.item()`` runs) in the graph is a device-to-host synchronization at every step on CUDA, and a data-dependent
value that ``torch._inductor.compile`` cannot trace. Adam's ``eps * sqrt(1 - beta_2^t)`` took ``torch._foreach_add_``'s
``Scalar`` overload (a 0-dim tensor matches it first) and read the value on the host."""

from __future__ import annotations

import numpy as np
import pytest

import ember_torch
from ember.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    GradientClippingConfig,
    LionConfig,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)
from test_compile import lr_tensor, mlp, params_np, train_step, weights, xor_batch

torch = pytest.importorskip("torch")

OPTIMIZERS = {
    "adam": AdamConfig(),
    "adam-decay": AdamConfig(weight_decay=WeightDecayConfig(0.01)),
    "adam-amsgrad": AdamConfig(amsgrad=True),
    "adamw": AdamWConfig(),
    "adan": AdanConfig(),
    "lion": LionConfig(),
    "sgd": SgdConfig(),
    "sgd-momentum": SgdConfig(momentum=MomentumConfig(momentum=0.9, nesterov=True)),
    "rmsprop": RmsPropConfig(),
    "adagrad": AdaGradConfig(),
    "adam-clip-norm": AdamConfig().with_grad_clipping(GradientClippingConfig.norm(1.0)),
    "sgd-clip-value": SgdConfig().with_grad_clipping(GradientClippingConfig.value(0.5)),
}

_HOST_READS = {"_local_scalar_dense", "item"}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_captured_step_reads_nothing_on_the_host(name: str) -> None:
    model, batch, lr = mlp(weights()), xor_batch(), lr_tensor(0.05)
    optim = OPTIMIZERS[name].init()
    optim.init_states(model)
    step = ember_torch.compile(train_step, mode="capture")
    gm = step.graph(model, optim, batch, lr)
    reads = [n.format_node() for n in gm.graph.nodes
             if n.op == "call_function" and getattr(n.target, "__name__", "").split(".")[0] in _HOST_READS]
    assert not reads, f"{name}: host reads in the captured step: {reads}"


def test_adam_with_tensor_scalars_equals_adam_with_numbers() -> None:
    """The epsilon term through the ``Tensor`` overload: a compiled Adam step (tensor learning rate, tensor step
    counter) equals the eager step with Python numbers, over several steps (the term changes with the step)."""
    eager_model, comp_model, batch = mlp(weights()), mlp(weights()), xor_batch()
    eager_optim, comp_optim = AdamConfig(epsilon=1e-2).init(), AdamConfig(epsilon=1e-2).init()
    comp_optim.init_states(comp_model)
    step = ember_torch.compile(train_step, mode="capture")
    for _ in range(4):
        eager_model, _ = train_step(eager_model, eager_optim, batch, 0.05)
        comp_model, _ = step(comp_model, comp_optim, batch, lr_tensor(0.05))
    for a, b in zip(params_np(eager_model), params_np(comp_model)):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-9)
