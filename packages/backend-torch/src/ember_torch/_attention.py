"""The attention primitive on ``torch.nn.functional.scaled_dot_product_attention`` (issue 22), which picks torch's
fused kernels by itself: flash attention on CPU (``_scaled_dot_product_flash_attention_for_cpu``) and on CUDA
(flash or memory-efficient attention, by dtype and head size), the math composite where none applies.

The forward runs on detached copies of ``q``, ``k``, ``v`` that require grad, under ``torch.enable_grad()``: the
residual is torch's one-node graph, and the backward is ``torch.autograd.grad`` through it (the fused backward
kernel, with the statistics torch saved). On this repository's 2-core CPU that is as fast as calling the aten
flash kernels and their backward directly (13.9 ms for forward and backward at ``[16, 8, 128, 32]``, float32, one
thread, against 29.7 ms for the composite), and it needs no per-device kernel names.

Masked attention, dropout on the weights and ``quiet_softmax`` go to the contract's composite: torch's boolean mask
has the opposite sense and gives ``-inf``, an additive float mask would shift masked scores where the contract
replaces them by ``min_float`` (the two differ on a row masked entirely), and torch's dropout draws its own mask
from torch's generator where the contract takes the caller's (Ember's generator, ``backend.seed``).
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F

from ember.backend.contract import AttentionOps

from ._graph import graph_forward, graph_grad

__all__ = ["TorchAttentionOps"]


class TorchAttentionOps(AttentionOps):
    """Attention on ``F.scaled_dot_product_attention``, forward and backward."""

    def attention(self, q: Any, k: Any, v: Any, mask: Any | None, dropout: Any | None, scale: float,
                  min_float: float, quiet: bool) -> tuple[Any, Any]:
        if mask is not None or dropout is not None or quiet:
            return super().attention(q, k, v, mask, dropout, scale, min_float, quiet)
        (out,), residual = graph_forward(lambda q_, k_, v_: (F.scaled_dot_product_attention(q_, k_, v_, scale=scale),),
                                         q, k, v)
        return out, residual

    def attention_backward(self, grad: Any, q: Any, k: Any, v: Any, mask: Any | None, dropout: Any | None,
                           residual: Any, scale: float, min_float: float, quiet: bool) -> tuple[Any, Any, Any]:
        if mask is not None or dropout is not None or quiet:
            return super().attention_backward(grad, q, k, v, mask, dropout, residual, scale, min_float, quiet)
        leaves, (out,) = residual
        dq, dk, dv = graph_grad([out], leaves, [grad])
        return dq, dk, dv
