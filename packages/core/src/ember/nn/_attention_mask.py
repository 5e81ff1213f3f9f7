"""Attention masks (Burn's ``nn::attention::generate_autoregressive_mask`` and
``generate_padding_mask``). ``True`` marks a position that must not be attended to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._kind import Int
from ..backend._device import Device
from ..tensor import Tensor

__all__ = ["generate_autoregressive_mask", "generate_padding_mask", "GeneratePaddingMask"]


def generate_autoregressive_mask(batch_size: int, seq_length: int, device: Device) -> Tensor:
    """The causal mask: Bool ``[batch_size, seq_length, seq_length]``, ``True`` where the key
    position is after the query position (``j > i``). Pass it as ``mask_attn``."""
    m = Tensor.tril_mask([seq_length, seq_length], 0, device)  # True outside the lower triangle: j > i
    return m.unsqueeze_dim(0).expand([batch_size, seq_length, seq_length])


@dataclass(frozen=True)
class GeneratePaddingMask:
    """Padded tokens ``tensor`` Int ``[batch, seq_length]`` and their ``mask`` Bool ``[batch,
    seq_length]`` (``True`` at padding)."""

    tensor: Tensor
    mask: Tensor


def generate_padding_mask(pad_token: int, tokens_list: Sequence[Sequence[int]], max_seq_length: int | None,
                          device: Device) -> GeneratePaddingMask:
    """Pad token lists to one length (the longest, capped at ``max_seq_length``; longer lists are
    truncated) with ``pad_token`` and mark the padding (Burn's ``generate_padding_mask``)."""
    longest = max((len(t) for t in tokens_list), default=0)
    n = longest if max_seq_length is None else min(longest, max_seq_length)
    rows = [list(t)[:n] + [pad_token] * (n - min(len(t), n)) for t in tokens_list]
    tensor = Tensor.from_data(rows, device, Int) if rows and n else Tensor.zeros([len(rows), n], device, Int)
    return GeneratePaddingMask(tensor=tensor, mask=tensor.equal_elem(pad_token))
