"""The guide's model (Burn book, "Guide" / "Basic workflow": ``src/model.rs``).

Two 3x3 convolutions, dropout, ReLU, an adaptive average pool to 8x8 and two linear layers. The
forward pass follows Burn's guide op for op (including its placement of dropout before the ReLU).
"""

from __future__ import annotations

from ember import Tensor
from ember.backend import Device
from ember.config import config
from ember.module import Module
from ember.nn import (
    AdaptiveAvgPool2d,
    AdaptiveAvgPool2dConfig,
    Conv2d,
    Conv2dConfig,
    Dropout,
    DropoutConfig,
    Linear,
    LinearConfig,
    Relu,
)
from ember.nn.loss import CrossEntropyLossConfig
from ember_train import ClassificationOutput, TrainOutput

from .data import MnistBatch

__all__ = ["Model", "ModelConfig"]


class Model(Module):
    """The guide's convolutional classifier.

    Params: ``conv1`` (``[8, 1, 3, 3]``), ``conv2`` (``[16, 8, 3, 3]``), ``linear1`` (``[1024, hidden]``),
    ``linear2`` (``[hidden, num_classes]``), plus biases: 531,178 parameters with the defaults.
    """

    conv1: Conv2d
    conv2: Conv2d
    pool: AdaptiveAvgPool2d
    dropout: Dropout
    linear1: Linear
    linear2: Linear
    activation: Relu

    def forward(self, images: Tensor) -> Tensor:
        """Class logits.

        Shapes: images ``[batch, height, width]`` (Float) -> ``[batch, num_classes]``.
        Dropout is active only on an autodiff device (training), as in Burn.
        """
        batch_size, height, width = images.shape
        x = images.reshape([batch_size, 1, height, width])  # create a channel at the second dimension
        x = self.conv1.forward(x)  # [batch, 8, 26, 26]
        x = self.dropout.forward(x)
        x = self.conv2.forward(x)  # [batch, 16, 24, 24]
        x = self.dropout.forward(x)
        x = self.activation.forward(x)
        x = self.pool.forward(x)  # [batch, 16, 8, 8]
        x = x.reshape([batch_size, 16 * 8 * 8])
        x = self.linear1.forward(x)
        x = self.dropout.forward(x)
        x = self.activation.forward(x)
        return self.linear2.forward(x)  # [batch, num_classes]

    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        """Logits and the cross-entropy loss (no pad token) of ``images`` ``[batch, 28, 28]`` against
        ``targets`` ``[batch]`` (Int), as Burn's guide ``forward_classification``."""
        output = self.forward(images)
        loss = CrossEntropyLossConfig().init(output.device).forward(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, batch: MnistBatch) -> TrainOutput:
        """Burn's ``TrainStep::step``: forward, loss, ``backward()``."""
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: MnistBatch) -> ClassificationOutput:
        """Burn's ``ValidStep::step`` (run on ``model.valid()``: no graph, dropout off)."""
        return self.forward_classification(batch.images, batch.targets)


@config
class ModelConfig:
    """Configuration of :class:`Model` (Burn's guide ``ModelConfig``).

    Args:
        num_classes: output classes (10 for MNIST).
        hidden_size: width of the hidden linear layer (the guide uses 512).
        dropout: drop probability of the shared :class:`~ember.nn.Dropout` (default 0.5, the guide's).
    """

    num_classes: int
    hidden_size: int
    dropout: float = 0.5

    def init(self, device: Device) -> Model:
        """A freshly initialized :class:`Model` on ``device`` (Burn's and PyTorch's default initializers)."""
        return Model(
            conv1=Conv2dConfig((1, 8), (3, 3)).init(device),
            conv2=Conv2dConfig((8, 16), (3, 3)).init(device),
            pool=AdaptiveAvgPool2dConfig((8, 8)).init(),
            activation=Relu(),
            linear1=LinearConfig(16 * 8 * 8, self.hidden_size).init(device),
            linear2=LinearConfig(self.hidden_size, self.num_classes).init(device),
            dropout=DropoutConfig(self.dropout).init(),
        )
