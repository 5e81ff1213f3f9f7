"""More real PyTorch exports for the ModelGen tests: a bidirectional GRU, a BERT-style encoder with an attention
mask, a detector head with ``NonZero``/``TopK``/``GatherND`` and a dynamo export.

Each builder returns ``(model, example inputs)``; :func:`export_real` writes the ONNX file with the exporter the
case names (the legacy TorchScript one, or ``dynamo=True``), dynamic on the batch axis.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = ["REAL", "export_real"]


class BiGru(nn.Module):
    """Embedding -> bidirectional 2-layer GRU -> Linear; tokens ``[batch, seq]``."""

    def __init__(self, vocab: int = 30, dim: int = 12, hidden: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, 5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(self.embed(tokens))
        return self.head(out)


class BertLayer(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.inter = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        return x.view(b, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + mask
        ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(x.shape)
        x = self.ln1(x + self.attn_out(ctx))
        return self.ln2(x + self.out(nn.functional.gelu(self.inter(x))))


class Bert(nn.Module):
    """BERT (Devlin et al. 2019) in small: word, position and token-type embeddings, 2 post-norm layers with
    the additive attention mask ``(1 - mask) * -10000``, and the tanh pooler. Inputs ``ids``/``mask`` int64
    ``[batch, seq]``."""

    def __init__(self, vocab: int = 40, d: int = 32, heads: int = 4, max_len: int = 16) -> None:
        super().__init__()
        self.word, self.pos, self.token_type = nn.Embedding(vocab, d), nn.Embedding(max_len, d), nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(d, heads) for _ in range(2)])
        self.pooler = nn.Linear(d, d)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.ln(self.word(ids) + self.pos(pos) + self.token_type(torch.zeros_like(ids)))
        ext = (1.0 - mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, ext)
        return x, torch.tanh(self.pooler(x[:, 0]))


class Detector(nn.Module):
    """A detector-like head: Conv features, per-anchor scores, the top-k anchors (``TopK``), their boxes
    (``GatherND``) and the indices of the scores above a threshold (``NonZero``). Input ``[1, 3, 16, 16]``."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1))
        self.score = nn.Conv2d(8, 1, 1)
        self.box = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        f = torch.relu(self.body(x))
        scores = torch.sigmoid(self.score(f)).flatten(1)  # [1, 64]
        boxes = self.box(f).flatten(2).transpose(1, 2)  # [1, 64, 4]
        top, idx = scores.topk(5, dim=1)
        picked = boxes[torch.zeros_like(idx), idx]  # GatherND-style advanced indexing
        keep = torch.nonzero(scores[0] > 0.5)
        return top, picked, keep


def _bert_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    ids = rng.integers(0, 40, (2, 7)).astype(np.int64)
    mask = np.ones((2, 7), np.int64)
    mask[1, 4:] = 0
    return ids, mask


#: name -> (builder, example inputs, input names, dynamic axes, dynamo)
REAL: dict[str, tuple[Callable[[], nn.Module], Callable[[np.random.Generator], tuple[np.ndarray, ...]],
                      list[str], dict[str, dict[int, str]], bool]] = {
    "bigru": (BiGru, lambda rng: (rng.integers(0, 30, (2, 6)).astype(np.int64),), ["tokens"],
              {"tokens": {0: "batch"}}, False),
    "bert": (Bert, _bert_inputs, ["ids", "mask"], {"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}},
             False),
    "detector": (Detector, lambda rng: (rng.standard_normal((1, 3, 16, 16)).astype(np.float32),), ["image"], {},
                 False),
    "bert_dynamo": (Bert, _bert_inputs, ["ids", "mask"], {}, True),
}


def export_real(name: str, path: Path, seed: int = 0) -> tuple[Path, tuple[np.ndarray, ...], nn.Module]:
    """Export the model ``name`` of :data:`REAL` with seeded weights to ``path``; returns the path, the example
    inputs and the torch model."""
    build, inputs, names, axes, dynamo = REAL[name]
    torch.manual_seed(seed)
    model = build().eval()
    xs = inputs(np.random.default_rng(seed))
    args = tuple(torch.from_numpy(x) for x in xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kwargs: dict[str, Any] = {"dynamo": dynamo, "input_names": names}
        if dynamo:
            kwargs["external_data"] = False
        else:
            kwargs.update(opset_version=17, dynamic_axes=axes or None)
        torch.onnx.export(model, args, str(path), **kwargs)
    return path, xs, model
