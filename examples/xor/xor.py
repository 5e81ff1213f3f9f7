"""XOR: an MLP ``2 -> 16 -> 16 -> 2`` trained by hand (forward, ``backward()``, ``GradientsParams``, Adam)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import Int, Tensor
from ember.backend import Device
from ember.config import config
from ember.module import Module
from ember.nn import Linear, LinearConfig, Relu
from ember.nn.loss import CrossEntropyLossConfig
from ember.optim import AdamConfig, GradientsParams

__all__ = ["INPUTS", "TARGETS", "Mlp", "MlpConfig", "predict", "train"]

#: The four inputs ``[4, 2]`` and their XOR ``[4]``.
INPUTS = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], dtype=np.float32)
TARGETS = np.array([0, 1, 1, 0], dtype=np.int64)


class Mlp(Module):
    """``[batch, 2] -> [batch, 2]`` class logits: Linear, ReLU, Linear, ReLU, Linear."""

    linear1: Linear
    linear2: Linear
    linear3: Linear
    activation: Relu

    def forward(self, x: Tensor) -> Tensor:
        x = self.activation.forward(self.linear1.forward(x))
        x = self.activation.forward(self.linear2.forward(x))
        return self.linear3.forward(x)


@config
class MlpConfig:
    """Hidden width (16)."""

    hidden_size: int = 16

    def init(self, device: Device) -> Mlp:
        return Mlp(linear1=LinearConfig(2, self.hidden_size).init(device),
                   linear2=LinearConfig(self.hidden_size, self.hidden_size).init(device),
                   linear3=LinearConfig(self.hidden_size, 2).init(device), activation=Relu())


def predict(model: Mlp, device: Device) -> list[int]:
    """The predicted class of each of the four :data:`INPUTS`."""
    logits = model.forward(Tensor.from_data(INPUTS, device))
    return [int(v) for v in logits.argmax(1).reshape([4]).to_data().to_numpy().tolist()]


def train(device: Any, steps: int = 300, lr: float = 1e-2, batch_size: int = 32, seed: int = 0,
          log_every: int = 0) -> Mlp:
    """Train on ``batch_size`` copies of the four XOR points (``batch_size`` a multiple of 4).

    Args:
        device: an autodiff device (``Autodiff(ember.backend("numpy")).device()``).
        steps, lr: Adam steps and learning rate.
        seed: seeds the backend (the initial weights).
        log_every: print the loss every this many steps (0: never).

    Returns:
        The trained model on ``device``.
    """
    device.backend.seed(seed)
    model = MlpConfig().init(device)
    optim = AdamConfig().init()
    loss_fn = CrossEntropyLossConfig().init(device)
    reps = max(batch_size // 4, 1)
    x = Tensor.from_data(np.tile(INPUTS, (reps, 1)), device)
    y = Tensor.from_data(np.tile(TARGETS, reps), device, Int)
    for step in range(1, steps + 1):
        loss = loss_fn.forward(model.forward(x), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(lr, model, grads)
        if log_every and step % log_every == 0:
            print(f"step {step}: loss {loss.into_scalar():.4f}")
    return model
