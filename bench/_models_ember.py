"""The models of ``bench/models.py`` written with Ember's layers, and their training step split in three phases.

- ResNet-18 (torchvision's architecture, ``bench/_resnet_ember.py``), 1000 classes (11.7M parameters);
- :class:`TransformerClassifier`: token embedding + learned positions, a post-norm
  :class:`~ember.nn.TransformerEncoder` (GELU feed-forward, no dropout), mean over the sequence, a linear head;
- :class:`LstmLm`: token embedding, a two-layer :class:`~ember.nn.StackedLstm` (one primitive call for both
  layers, as raw ``nn.LSTM(num_layers=2)``), a linear head over the vocabulary, next-token cross-entropy on every
  position;
- the MNIST guide's CNN (``examples/guide``), with its dropouts.

The same networks in raw PyTorch are in ``_models_torch.py`` and in raw ``jax.jit`` in ``_models_jax.py``; the
sizes live in :data:`SPECS` so the three files build the same shapes. Scripts in ``bench/`` import this module as
``_models_ember`` (their folder is on ``sys.path``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ember import Distribution, Int, Tensor
from ember.backend import Device
from ember.module import Module, Param
from ember.nn import (
    Embedding,
    EmbeddingConfig,
    Linear,
    LinearConfig,
    StackedLstm,
    StackedLstmConfig,
    TransformerEncoder,
    TransformerEncoderConfig,
    TransformerEncoderInput,
)
from ember.nn.loss import CrossEntropyLossConfig
from ember.optim import GradientsParams

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Spec:
    """The sizes of one benchmark model: ``batch``, the input shape after the batch dim, and the model's own
    sizes (``extra``)."""

    batch: int
    extra: dict[str, int]


SPECS: dict[str, Spec] = {
    "resnet18": Spec(8, {"classes": 1000, "size": 64}),
    "transformer": Spec(16, {"vocab": 1000, "seq": 128, "d_model": 256, "heads": 8, "d_ff": 1024, "layers": 2,
                             "classes": 10}),
    "lstm": Spec(32, {"vocab": 1000, "seq": 64, "d_model": 512, "hidden": 512, "layers": 2}),
    "guide": Spec(64, {"classes": 10, "hidden": 512}),
}


def batch_data(name: str, spec: Spec | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A fixed random batch for model ``name`` at the sizes ``spec`` (default ``SPECS[name]``): ``(inputs,
    targets)`` as numpy arrays (float32 images or int64 tokens; int64 targets)."""
    rng = np.random.default_rng(0)
    s = SPECS[name] if spec is None else spec
    e = s.extra
    if name == "resnet18":
        return rng.standard_normal((s.batch, 3, e["size"], e["size"]), np.float32), rng.integers(0, e["classes"],
                                                                                                 s.batch)
    if name == "transformer":
        return rng.integers(0, e["vocab"], (s.batch, e["seq"])), rng.integers(0, e["classes"], s.batch)
    if name == "lstm":
        tokens = rng.integers(0, e["vocab"], (s.batch, e["seq"] + 1))
        return tokens[:, :-1].copy(), tokens[:, 1:].copy()
    return rng.standard_normal((s.batch, 28, 28), np.float32), rng.integers(0, e["classes"], s.batch)


class TransformerClassifier(Module):
    """Tokens Int ``[batch, seq]`` -> class logits ``[batch, classes]``."""

    embedding: Embedding
    positions: Param
    encoder: TransformerEncoder
    head: Linear

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.embedding.forward(tokens) + self.positions.val()
        x = self.encoder.forward(TransformerEncoderInput(x))
        return self.head.forward(x.mean_dim(1).squeeze_dim(1))


class LstmLm(Module):
    """Tokens Int ``[batch, seq]`` -> next-token logits ``[batch * seq, vocab]``."""

    embedding: Embedding
    lstm: StackedLstm
    head: Linear

    def forward(self, tokens: Tensor) -> Tensor:
        x, _ = self.lstm.forward(self.embedding.forward(tokens))
        b, t, d = x.shape
        return self.head.forward(x.reshape([b * t, d]))


def build(name: str, device: Device, spec: Spec | None = None) -> Module:
    """Model ``name`` on ``device`` with Ember's default initialization, at the sizes ``spec`` (default
    ``SPECS[name]``; the guide's CNN takes only ``classes`` and ``hidden``, its images are 28x28)."""
    e = (SPECS[name] if spec is None else spec).extra
    if name == "resnet18":
        from _resnet_ember import resnet18

        return resnet18(device, e["classes"], e.get("width", 64))
    if name == "transformer":
        return TransformerClassifier(
            embedding=EmbeddingConfig(e["vocab"], e["d_model"]).init(device),
            positions=Param(Tensor.random([e["seq"], e["d_model"]], Distribution.normal(0.0, 0.02), device)),
            encoder=TransformerEncoderConfig(e["d_model"], e["d_ff"], e["heads"], e["layers"],
                                             dropout=0.0).init(device),
            head=LinearConfig(e["d_model"], e["classes"]).init(device),
        )
    if name == "lstm":
        return LstmLm(
            embedding=EmbeddingConfig(e["vocab"], e["d_model"]).init(device),
            lstm=StackedLstmConfig(e["d_model"], e["hidden"], e["layers"]).init(device),
            head=LinearConfig(e["hidden"], e["vocab"]).init(device),
        )
    sys.path.insert(0, str(HERE.parent / "examples"))
    from guide import ModelConfig  # type: ignore[import-not-found]

    return ModelConfig(e["classes"], e["hidden"]).init(device)  # type: ignore[no-any-return]


def inputs(name: str, device: Device, spec: Spec | None = None) -> tuple[Tensor, Tensor]:
    """:func:`batch_data` as Ember tensors on ``device``: inputs (Float images or Int tokens), Int targets."""
    x, y = batch_data(name, spec)
    xt = Tensor.from_data(x, device) if x.dtype == np.float32 else Tensor.from_data(x, device, Int)
    return xt, Tensor.from_data(y.reshape(-1), device, Int)


def loss_of(model: Any, x: Tensor, y: Tensor) -> Tensor:
    """Forward and the mean cross-entropy: ``[1]``."""
    logits = model.forward(x)
    return CrossEntropyLossConfig().init(logits.device).forward(logits, y)


def train_step(model: Any, optim: Any, batch: tuple[Tensor, Tensor], lr: Any) -> tuple[Any, Tensor]:
    """One training step in the functional form ``ember_jax.jit`` compiles: ``(new model, loss [1])``."""
    x, y = batch
    loss = loss_of(model, x, y)
    grads = GradientsParams.from_grads(loss.backward(), model)
    return optim.step(lr, model, grads), loss
