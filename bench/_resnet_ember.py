"""ResNet-18 written by hand with Ember's layers (torchvision's architecture), loading a PyTorch ``state_dict``.

Used by ``bench/onnx_import.py`` as the reference an imported ONNX ResNet-18 is measured against.
"""

from __future__ import annotations

from typing import Any

from ember import Tensor
from ember.backend import Device
from ember.module import Module
from ember.nn import (
    AdaptiveAvgPool2d,
    AdaptiveAvgPool2dConfig,
    BatchNorm,
    BatchNormConfig,
    Conv2d,
    Conv2dConfig,
    Linear,
    LinearConfig,
    MaxPool2d,
    MaxPool2dConfig,
    PaddingConfig2d,
)
from ember.tensor import activation as A


def _conv(cin: int, cout: int, k: int, stride: int, pad: int, dev: Device) -> Conv2d:
    padding = PaddingConfig2d.Explicit(pad, pad) if pad else PaddingConfig2d.Valid
    return Conv2dConfig((cin, cout), (k, k), stride=(stride, stride), padding=padding, bias=False).init(dev)


class Downsample(Module):
    conv: Conv2d
    bn: BatchNorm


class Block(Module):
    conv1: Conv2d
    bn1: BatchNorm
    conv2: Conv2d
    bn2: BatchNorm
    downsample: Downsample | None = None

    def forward(self, x: Tensor) -> Tensor:
        out = A.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        skip = x if self.downsample is None else self.downsample.bn(self.downsample.conv(x))
        return A.relu(out + skip)


def _block(cin: int, cout: int, stride: int, dev: Device) -> Block:
    down = None
    if stride != 1 or cin != cout:
        down = Downsample(conv=_conv(cin, cout, 1, stride, 0, dev), bn=BatchNormConfig(cout).init(dev))
    return Block(conv1=_conv(cin, cout, 3, stride, 1, dev), bn1=BatchNormConfig(cout).init(dev),
                 conv2=_conv(cout, cout, 3, 1, 1, dev), bn2=BatchNormConfig(cout).init(dev), downsample=down)


class ResNet18(Module):
    conv1: Conv2d
    bn1: BatchNorm
    maxpool: MaxPool2d
    layers: list[list[Block]]
    avgpool: AdaptiveAvgPool2d
    fc: Linear

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(A.relu(self.bn1(self.conv1(x))))
        for layer in self.layers:
            for block in layer:
                x = block.forward(x)
        x = self.avgpool(x)
        return self.fc(x.reshape([x.shape[0], -1]))


def resnet18(dev: Device, num_classes: int = 10, width: int = 64) -> ResNet18:
    """ResNet-18 on ``dev``: the stem and the four stages have ``width``, 2, 4 and 8 times ``width`` channels
    (torchvision's: 64; tests use a narrow one, the same layers and ops with fewer channels)."""
    layers, cin = [], width
    for cout, stride in ((width, 1), (2 * width, 2), (4 * width, 2), (8 * width, 2)):
        layers.append([_block(cin, cout, stride, dev), _block(cout, cout, 1, dev)])
        cin = cout
    return ResNet18(
        conv1=_conv(3, width, 7, 2, 3, dev), bn1=BatchNormConfig(width).init(dev),
        maxpool=MaxPool2dConfig((3, 3), strides=(2, 2), padding=PaddingConfig2d.Explicit(1, 1)).init(),
        layers=layers, avgpool=AdaptiveAvgPool2dConfig((1, 1)).init(),
        fc=LinearConfig(8 * width, num_classes).init(dev),
    )


def load_torch_state(model: ResNet18, state: dict[str, Any], dev: Device, tmp: Any) -> ResNet18:
    """``model`` with the weights of a torchvision-layout ``state_dict`` (saved to ``tmp`` and read back with
    ember_import's PyTorchFileRecorder, which converts the layer layouts)."""
    import torch

    from ember.record import FullPrecisionSettings
    from ember_import.pytorch import LoadArgs, PyTorchFileRecorder

    renamed = {}
    for key, value in state.items():
        parts = key.split(".")
        if parts[0].startswith("layer") and parts[0][5:].isdigit():
            layer = int(parts[0][5:]) - 1
            rest = parts[2:]
            if rest[0] == "downsample":
                rest = ["downsample", "conv" if rest[1] == "0" else "bn", *rest[2:]]
            key = ".".join(["layers", str(layer), parts[1], *rest])
        renamed[key] = value
    path = tmp / "resnet18.pt"
    torch.save(renamed, path)
    record = PyTorchFileRecorder(FullPrecisionSettings()).load(LoadArgs(path), dev)
    return model.load_record(record)
