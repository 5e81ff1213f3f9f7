"""Real PyTorch models exported to ONNX for the import tests (and ``bench/onnx_import.py``).

Each model is small enough for CI yet has the structure of the real thing: the MNIST guide's CNN, ResNet-18
(torchvision's architecture, written out here so torchvision is not needed), an MLP with GELU and LayerNorm,
an LSTM language model, a 2-layer Transformer encoder and a small U-Net (ConvTranspose, Resize, Concat).
:func:`export` writes them with the legacy TorchScript exporter (``dynamo=False``, works offline), either with
PyTorch's graph optimizations (``optimize=True``: constant folding, BatchNorm folded into Conv, weights
renamed) or without (``optimize=False``: training-mode-preserving export, parameter names kept).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = ["MODELS", "ModelCase", "export", "ResNet18"]


class GuideCNN(nn.Module):
    """The MNIST guide's model (``examples/guide/model.py``), images ``[batch, 28, 28]``."""

    def __init__(self, hidden: int = 512) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.pool = nn.AdaptiveAvgPool2d((8, 8))
        self.dropout = nn.Dropout(0.5)
        self.linear1 = nn.Linear(16 * 8 * 8, hidden)
        self.linear2 = nn.Linear(hidden, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        b, h, w = images.shape
        x = images.reshape(b, 1, h, w)
        x = self.dropout(self.conv1(x))
        x = torch.relu(self.dropout(self.conv2(x)))
        x = self.pool(x).reshape(b, 16 * 8 * 8)
        x = torch.relu(self.dropout(self.linear1(x)))
        return self.linear2(x)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        skip = x if self.downsample is None else self.downsample(x)
        return torch.relu(out + skip)


class ResNet18(nn.Module):
    """torchvision's ``resnet18`` architecture (He et al. 2016; BasicBlock, layers 2-2-2-2)."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers = []
        cin = 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class GeluMlp(nn.Module):
    """Linear -> LayerNorm -> GELU -> Linear -> LayerNorm -> GELU -> Linear."""

    def __init__(self, d_in: int = 16, hidden: int = 32, d_out: int = 4) -> None:
        super().__init__()
        self.fc1, self.ln1 = nn.Linear(d_in, hidden), nn.LayerNorm(hidden)
        self.fc2, self.ln2 = nn.Linear(hidden, hidden), nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.gelu(self.ln1(self.fc1(x)))
        x = nn.functional.gelu(self.ln2(self.fc2(x)))
        return self.head(x)


class LstmLm(nn.Module):
    """Embedding -> 2-layer LSTM -> Linear over the vocabulary; tokens ``[batch, seq]`` (int64)."""

    def __init__(self, vocab: int = 50, dim: int = 16, hidden: int = 24) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


class Encoder(nn.Module):
    """A 2-layer Transformer encoder (d_model 32, 4 heads, GELU, pre-norm) over ``[batch, seq, 32]``."""

    def __init__(self, d_model: int = 32) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, 4, 64, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


class UNet(nn.Module):
    """A two-level U-Net: Conv/BN/ReLU, MaxPool, ConvTranspose and bilinear Resize up-paths, Concat skips."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()

        def block(cin: int, cout: int) -> nn.Module:
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

        self.enc1, self.enc2, self.mid = block(3, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.dec2 = block(4 * c, 2 * c)
        self.dec1 = block(2 * c + c, c)
        self.out = nn.Conv2d(c, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(nn.functional.max_pool2d(e1, 2))
        m = self.mid(nn.functional.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
        up = nn.functional.interpolate(d2, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.out(self.dec1(torch.cat([up, e1], 1)))


class ModelCase:
    """A model to export: its constructor, an example input maker and the loss-friendly output."""

    def __init__(self, name: str, build: Callable[[], nn.Module], inputs: Callable[[np.random.Generator], np.ndarray],
                 dynamic_batch: bool = True) -> None:
        self.name, self.build, self.inputs, self.dynamic_batch = name, build, inputs, dynamic_batch


def _floats(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


MODELS: dict[str, ModelCase] = {
    "guide_cnn": ModelCase("guide_cnn", GuideCNN, _floats(2, 28, 28)),
    "resnet18": ModelCase("resnet18", lambda: ResNet18(num_classes=10), _floats(2, 3, 32, 32)),
    "gelu_mlp": ModelCase("gelu_mlp", GeluMlp, _floats(3, 16)),
    "lstm_lm": ModelCase("lstm_lm", LstmLm, lambda rng: rng.integers(0, 50, (2, 7)).astype(np.int64)),
    "transformer": ModelCase("transformer", Encoder, _floats(2, 5, 32)),
    "unet": ModelCase("unet", UNet, _floats(1, 3, 16, 16)),
}


def build(name: str, seed: int = 0) -> nn.Module:
    """The model ``name`` with seeded random weights (and non-trivial BatchNorm statistics), in eval mode.

    Every parameter gets its own small random offset: the exporter merges initializers with equal values
    (every fresh LayerNorm's ones, the cloned layers of ``nn.TransformerEncoder``), which would tie them in
    the ONNX file and make its gradients differ from PyTorch's separate parameters."""
    torch.manual_seed(seed)
    model = MODELS[name].build()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
        for p in model.parameters():
            p.add_(torch.empty_like(p).uniform_(-0.05, 0.05))
    return model.eval()


def export(model: nn.Module, example: np.ndarray, path: Path, optimize: bool = True, opset: int = 17) -> Path:
    """Export ``model`` to ``path`` with the legacy exporter.

    ``optimize=True`` is PyTorch's default (constant folding; in eval mode BatchNorm is folded into the
    preceding Conv and the folded weights get new names); ``optimize=False`` turns constant folding off and
    preserves the modules, so initializers keep their parameter names (``conv1.weight``).
    """
    x = torch.from_numpy(example)
    kwargs: dict[str, Any] = {}
    if not optimize:
        kwargs["training"] = torch.onnx.TrainingMode.PRESERVE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (x,), str(path), dynamo=False, opset_version=opset, input_names=["input"], output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, do_constant_folding=optimize, **kwargs,
        )
    return path
