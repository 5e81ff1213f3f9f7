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


class Gpt2Block(nn.Module):
    def __init__(self, d: int, heads: int, max_len: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))[None, None])

    def forward(self, x: torch.Tensor, rel: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        w = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + rel
        w = torch.where(self.bias[:, :, :s, :s], w, torch.finfo(w.dtype).min)
        a = (w.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.c_proj(a)
        return x + self.mlp_proj(nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    """GPT-2 (Radford et al. 2019) in small: token and position embeddings, 2 pre-norm blocks with the causal mask
    sliced from a ``[1, 1, max, max]`` buffer by the sequence length (``Slice`` bounds from ``Shape``), a learned
    relative-position bias read through a ``[1, 1, max, max]`` index buffer (``Gather`` with 4-D indices), the
    tied LM head, and each token's log-probability picked with ``torch.gather`` (``GatherElements``). Input
    ``ids`` int64 ``[batch, seq]``; outputs the logits and the log-probabilities of the next tokens."""

    def __init__(self, vocab: int = 50, d: int = 32, heads: int = 4, max_len: int = 16) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.rel_bias = nn.Parameter(torch.randn(2 * max_len - 1) * 0.1)
        pos = torch.arange(max_len)
        self.register_buffer("rel_index", (pos[None, :] - pos[:, None] + max_len - 1)[None, None])
        self.h = nn.ModuleList([Gpt2Block(d, heads, max_len) for _ in range(2)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(s, device=ids.device))
        rel = self.rel_bias[self.rel_index[:, :, :s, :s]]  # [1, 1, s, s]
        for block in self.h:
            x = block(x, rel)
        logits = self.ln_f(x) @ self.wte.weight.t()
        logp = logits.log_softmax(-1)[:, :-1].gather(2, ids[:, 1:, None]).squeeze(2)
        return logits, logp


class ShuffleUnit(nn.Module):
    """ShuffleNetV2's stride-1 unit (Ma et al. 2018, torchvision's ``InvertedResidual``): the channels are split
    in two (``chunk``), one half goes through 1x1 / depthwise 3x3 / 1x1 convolutions, and the halves are
    concatenated and shuffled (``view(batch, 2, c / 2, h, w).transpose(1, 2)``) with the batch read from ``size()``."""

    def __init__(self, c: int) -> None:
        super().__init__()
        h = c // 2
        self.branch2 = nn.Sequential(nn.Conv2d(h, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU(),
                                     nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False), nn.BatchNorm2d(h),
                                     nn.Conv2d(h, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=1)
        out = torch.cat((x1, self.branch2(x2)), dim=1)
        b, c, h, w = out.size()
        return out.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous().view(b, -1, h, w)


class ShuffleNet(nn.Module):
    """A ShuffleNetV2-style classifier: a stem, two shuffle units, global pooling and a linear head; images
    ``[batch, 3, 16, 16]``, exported with a dynamic batch."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.units = nn.Sequential(ShuffleUnit(16), ShuffleUnit(16))
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.units(self.stem(x)).mean([2, 3]))


class AudioConv1d(nn.Module):
    """A keyword-spotting-style audio model: Conv1d / BatchNorm1d / ReLU / MaxPool1d blocks over a waveform
    ``[batch, 1, 400]``, global average pooling and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(1, 8, 9, stride=4, padding=4), nn.BatchNorm1d(8), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(8, 16, 5, padding=2), nn.BatchNorm1d(16), nn.ReLU(), nn.MaxPool1d(2))
        self.head = nn.Linear(16, 6)

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(wave).mean(-1))


class SmallCnn(nn.Module):
    """A small classifier for the dynamo exports with a dynamic batch (``x.flatten(1)`` is ``Reshape`` with
    ``allowzero=1`` there); images ``[batch, 3, 12, 12]``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(6 * 6 * 6, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(torch.relu(self.conv(x))).flatten(1))


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
    "bert_dynamo": (Bert, _bert_inputs, ["ids", "mask"],
                    {"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}}, True),
    "gpt2": (Gpt2, lambda rng: (rng.integers(0, 50, (2, 7)).astype(np.int64),), ["ids"],
             {"ids": {0: "batch", 1: "seq"}}, False),
    "shufflenet": (ShuffleNet, lambda rng: (rng.standard_normal((2, 3, 16, 16)).astype(np.float32),), ["image"],
                   {"image": {0: "batch"}}, False),
    "audio": (AudioConv1d, lambda rng: (rng.standard_normal((2, 1, 400)).astype(np.float32),), ["wave"],
              {"wave": {0: "batch"}}, False),
    "cnn_dynamo": (SmallCnn, lambda rng: (rng.standard_normal((2, 3, 12, 12)).astype(np.float32),), ["image"],
                   {"image": {0: "batch"}}, True),
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
            if axes:  # dynamic dims as torch.export's dynamic_shapes, one dict per input
                kwargs["dynamic_shapes"] = tuple({d: torch.export.Dim(n, min=1) for d, n in axes[i].items()}
                                                 for i in names)
        else:
            kwargs.update(opset_version=17, dynamic_axes=axes or None)
        torch.onnx.export(model, args, str(path), **kwargs)
    return path, xs, model
