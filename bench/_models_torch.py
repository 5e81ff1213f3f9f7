"""The models of ``bench/models.py`` in raw PyTorch (``nn.Module``), the sizes of ``_models_ember.SPECS``.

ResNet-18 is torchvision's architecture written out (torchvision is not a dependency); the Transformer uses
``nn.TransformerEncoderLayer(batch_first=True, activation="gelu", dropout=0)``; the LSTM language model
``nn.LSTM(num_layers=2, batch_first=True)``; the guide CNN is ``mnist_torch_reference.GuideModel``. Scripts in
``bench/`` import this module as ``_models_torch``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import torch
from torch import nn

from _models_ember import SPECS

HERE = Path(__file__).resolve().parent


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet18(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(_Block(cin, cout, stride), _Block(cout, cout, 1)))
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.maxpool(torch.relu(self.bn1(self.conv1(x)))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TransformerClassifier(nn.Module):
    def __init__(self, vocab: int, seq: int, d_model: int, heads: int, d_ff: int, layers: int, classes: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.positions = nn.Parameter(torch.randn(seq, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embedding(tokens) + self.positions).mean(1))


class LstmLm(nn.Module):
    def __init__(self, vocab: int, seq: int, d_model: int, hidden: int, layers: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.lstm = nn.LSTM(d_model, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x, _ = self.lstm(self.embedding(tokens))
        return self.head(x.reshape(-1, x.shape[-1]))


def _guide() -> nn.Module:
    spec = importlib.util.spec_from_file_location("mnist_torch_reference", HERE / "mnist_torch_reference.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.GuideModel()  # type: ignore[no-any-return]


def build(name: str, seed: int = 42) -> nn.Module:
    """Model ``name`` with PyTorch's default initialization (seeded)."""
    torch.manual_seed(seed)
    e = SPECS[name].extra
    if name == "resnet18":
        return ResNet18(e["classes"])
    if name == "transformer":
        return TransformerClassifier(**e)
    if name == "lstm":
        return LstmLm(**e)
    return _guide()


def phases(name: str, x: Any, y: Any, device: str = "cpu") -> tuple[Any, Any, Any]:
    """``(forward, backward, update)`` closures of one training step of model ``name`` on the numpy batch
    ``(x, y)``, on the torch ``device``: cross-entropy, ``loss.backward()``, ``torch.optim.Adam(foreach=True)``
    with Ember's defaults (betas 0.9/0.999, eps 1e-5, lr 1e-4) and ``zero_grad(set_to_none=True)``.
    ``forward()`` returns the loss."""
    model = build(name).to(device)
    model.train()
    optim = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-5, foreach=True)
    xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y.reshape(-1)).to(device)
    loss_fn = nn.CrossEntropyLoss()
    box: dict[str, Any] = {}

    def forward() -> Any:
        box["loss"] = loss_fn(model(xt), yt)
        return box["loss"]

    def backward() -> None:
        box.pop("loss").backward()

    def update() -> None:
        optim.step()
        optim.zero_grad(set_to_none=True)

    return forward, backward, update
