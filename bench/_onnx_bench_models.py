"""The three models of ``bench/onnx_import.py -k models`` (issue 32), written out in PyTorch (torchvision is not
a dependency) and exported to ONNX with the legacy exporter (``packages/import/tests/_onnx_models.py``).

- ``mobilenet_v3_small``: torchvision's MobileNetV3-small (Howard et al. 2019, Table 2): 11 inverted-residual
  blocks with depthwise convolutions, squeeze-and-excitation and hardswish; 1000 classes.
- ``resnet18``: torchvision's ResNet-18 (``_onnx_models.ResNet18``), 1000 classes.
- ``bert``: a BERT-tiny-style encoder (Turc et al. 2019: 2 layers, hidden 128, 2 heads, feed-forward 512,
  vocabulary 30522, post-norm, GELU): word + position + token-type embeddings, LayerNorm, encoder, tanh pooler.
Random weights (seeded); BatchNorm folded by the exporter's optimizations.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from _onnx_models import ResNet18

__all__ = ["BENCH_MODELS", "bench_model"]


def _div8(v: float) -> int:
    out = max(8, int(v + 4) // 8 * 8)
    return out + 8 if out < 0.9 * v else out


class _SE(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        s = _div8(c / 4)
        self.fc1, self.fc2 = nn.Conv2d(c, s, 1), nn.Conv2d(s, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(w))))


def _cba(cin: int, cout: int, k: int, s: int, groups: int, act: type[nn.Module] | None) -> list[nn.Module]:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, (k - 1) // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    return layers + ([act()] if act is not None else [])


class _Block(nn.Module):
    def __init__(self, cin: int, k: int, exp: int, cout: int, se: bool, hs: bool, s: int) -> None:
        super().__init__()
        act = nn.Hardswish if hs else nn.ReLU
        layers = _cba(cin, exp, 1, 1, 1, act) if exp != cin else []
        layers += _cba(exp, exp, k, s, exp, act) + ([_SE(exp)] if se else []) + _cba(exp, cout, 1, 1, 1, None)
        self.body = nn.Sequential(*layers)
        self.residual = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV3Small(nn.Module):
    """torchvision's ``mobilenet_v3_small`` (width 1.0), inference graph (dropout off in eval mode)."""

    CONFIG = ((3, 16, 16, True, False, 2), (3, 72, 24, False, False, 2), (3, 88, 24, False, False, 1),
              (5, 96, 40, True, True, 2), (5, 240, 40, True, True, 1), (5, 240, 40, True, True, 1),
              (5, 120, 48, True, True, 1), (5, 144, 48, True, True, 1), (5, 288, 96, True, True, 2),
              (5, 576, 96, True, True, 1), (5, 576, 96, True, True, 1))

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers, cin = _cba(3, 16, 3, 2, 1, nn.Hardswish), 16
        for k, exp, cout, se, hs, s in self.CONFIG:
            layers.append(_Block(cin, k, exp, cout, se, hs, s))
            cin = cout
        self.features = nn.Sequential(*layers, *_cba(cin, 576, 1, 1, 1, nn.Hardswish))
        self.classifier = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2),
                                        nn.Linear(1024, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class BertTiny(nn.Module):
    """BERT-tiny's encoder over token ids ``[batch, seq]`` (int64); returns the pooled ``[batch, 128]``."""

    def __init__(self, vocab: int = 30522, d: int = 128, layers: int = 2, heads: int = 2, ffn: int = 512,
                 max_len: int = 512) -> None:
        super().__init__()
        self.word, self.pos, self.token_type = nn.Embedding(vocab, d), nn.Embedding(max_len, d), nn.Embedding(2, d)
        self.norm = nn.LayerNorm(d, eps=1e-12)
        layer = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.1, activation="gelu", batch_first=True,
                                           layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(d, d)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(tokens.shape[1], device=tokens.device).unsqueeze(0)
        x = self.norm(self.word(tokens) + self.pos(pos) + self.token_type(torch.zeros_like(tokens)))
        return torch.tanh(self.pooler(self.encoder(x)[:, 0]))


#: name -> (constructor, example input for a batch size)
BENCH_MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[int], np.ndarray]]] = {
    "mobilenet_v3_small": (MobileNetV3Small,
                           lambda b: np.random.default_rng(0).standard_normal((b, 3, 224, 224)).astype(np.float32)),
    "resnet18": (ResNet18, lambda b: np.random.default_rng(0).standard_normal((b, 3, 224, 224)).astype(np.float32)),
    "bert": (BertTiny, lambda b: np.random.default_rng(0).integers(0, 30522, (b, 128)).astype(np.int64)),
}


def bench_model(name: str) -> nn.Module:
    """The model ``name`` with seeded random weights and BatchNorm statistics, in eval mode."""
    torch.manual_seed(0)
    model = BENCH_MODELS[name][0]()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    return model.eval()
