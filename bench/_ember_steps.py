"""Ember training steps shared by the benchmarks (``jax_backend.py``, ``mnist_guide.py``).

Each step is a plain function ``step(model, optim, batch, lr) -> (model, loss)`` in the functional form the
compiled path needs (``ember_jax.jit(step)``, ``backend.compile(step)``): the model goes in and the updated
model comes out, the optimizer's state is carried by the optimizer object. Called as it is, the same function
is the eager (per-op) step on any backend. ``lr`` is a float, or a Float tensor of shape ``[1]`` under a
compiled step (a value that changes must not be a static argument).

Scripts in ``bench/`` import this module as ``_ember_steps`` (their folder is on ``sys.path``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import Tensor
from ember.module import Module, Param
from ember.nn import Linear
from ember.optim import GradientsParams
from ember.tensor import activation as A

__all__ = ["XorMlp", "xor_model", "xor_train_step", "guide_train_step"]


class XorMlp(Module):
    """``bench/autodiff.py``'s MLP 2-16-16-2 with ReLU: ``[batch, 2] -> [batch, 2]`` logits."""

    l0: Linear
    l1: Linear
    l2: Linear

    def forward(self, x: Tensor) -> Tensor:
        return self.l2.forward(A.relu(self.l1.forward(A.relu(self.l0.forward(x)))))


def xor_model(params: list[np.ndarray], device: Any) -> XorMlp:
    """An :class:`XorMlp` on ``device`` holding ``params = [W0, b0, W1, b1, W2, b2]`` (weights ``[in, out]``,
    e.g. ``bench/autodiff.py``'s ``data()``)."""
    def lin(w: np.ndarray, b: np.ndarray) -> Linear:
        return Linear(weight=Param(Tensor.from_data(w, device)), bias=Param(Tensor.from_data(b, device)))

    return XorMlp(l0=lin(*params[0:2]), l1=lin(*params[2:4]), l2=lin(*params[4:6]))


def xor_train_step(model: XorMlp, optim: Any, batch: tuple[Tensor, Tensor], lr: Any) -> tuple[XorMlp, Tensor]:
    """Forward, cross-entropy ``-mean(gather(log_softmax(logits), y))`` (``batch = (x [batch, 2] Float,
    y [batch] Int)``), ``loss.backward()``, ``GradientsParams.from_grads``, ``optim.step``: ``(model, loss [1])``."""
    x, y = batch
    loss = A.log_softmax(model.forward(x), 1).gather(1, y.unsqueeze_dim(1)).mean().neg()
    grads = GradientsParams.from_grads(loss.backward(), model)
    return optim.step(lr, model, grads), loss


def guide_train_step(model: Any, optim: Any, batch: Any, lr: Any) -> tuple[Any, Tensor]:
    """The MNIST guide's ``model.train_step(batch)`` (forward, cross-entropy, backward) and the optimizer
    update: ``(model, loss [1])``."""
    out = model.train_step(batch)
    return optim.step(lr, model, out.grads), out.item.loss
