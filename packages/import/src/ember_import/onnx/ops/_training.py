"""Optimizer steps of the ``ai.onnx.preview.training`` domain (version 1): ``Adagrad``, ``Adam`` and
``Momentum`` (standard and Nesterov).

Each node updates ``n`` tensors at once: inputs ``R`` (learning rate), ``T`` (step count), then the ``n``
tensors ``X``, their gradients ``G`` and the optimizer states (``H`` for Adagrad; ``V``, ``H`` for Adam;
``V`` for Momentum), each group of ``n`` in order; outputs the new ``X``s then the new states. ``R`` and
``T`` are host reads (scalars). Update rules are those of the ONNX specification
(onnx/docs/Operators.md, "ai.onnx.preview.training") and ``onnx.reference.ops.aionnx_preview_training``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ember import Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter

_DOMAIN = "ai.onnx.preview.training"

#: one tensor's update: (r, t, x, g, *states) -> (new x, *new states)
Rule = Callable[..., tuple[Tensor, ...]]


def _apply(ctx: Context, node: Node, inputs: tuple[Tensor, ...], n_states: int, rule: Rule) -> tuple[Tensor, ...]:
    """Split ``R, T, X..., G..., S1..., S2...`` into per-tensor groups, apply ``rule``, regroup outputs."""
    r, t, rest = ctx.float_scalar(inputs[0]), ctx.int_scalar(inputs[1]), inputs[2:]
    k = 2 + n_states
    if len(rest) % k:
        raise OnnxImportError(
            f"{node.where()}: expected R, T and {k} groups of equally many tensors (X, G and {n_states} state(s)), "
            f"got {len(inputs)} inputs."
        )
    n = len(rest) // k
    per = [rule(r, t, *(rest[j * n + i] for j in range(k))) for i in range(n)]
    return tuple(p[j] for j in range(1 + n_states) for p in per)


@converter("Adagrad", since=1, domain=_DOMAIN, static=(0, 1))
def adagrad(ctx: Context, node: Node, *inputs: Tensor) -> tuple[Tensor, ...]:
    """``Adagrad``: ``H += g^2``, ``X -= r / (1 + T*decay_factor) * g / (sqrt(H) + epsilon)``, with
    ``g = G + norm_coefficient * X``."""
    decay, eps = float(node.attr("decay_factor", 0.0)), float(node.attr("epsilon", 1e-6))
    norm = float(node.attr("norm_coefficient", 0.0))

    def rule(r: float, t: int, x: Tensor, g: Tensor, h: Tensor) -> tuple[Tensor, ...]:
        g = x * norm + g
        h = h + g * g
        return x - g / (h.sqrt() + eps) * (r / (1.0 + t * decay)), h

    return _apply(ctx, node, inputs, 1, rule)


@converter("Adam", since=1, domain=_DOMAIN, static=(0, 1))
def adam(ctx: Context, node: Node, *inputs: Tensor) -> tuple[Tensor, ...]:
    """``Adam``: momentums ``V``, ``H`` with ``alpha``, ``beta``; bias correction when ``T > 0``;
    ``norm_coefficient`` (L2 on the gradient) and ``norm_coefficient_post`` (decay after the step)."""
    alpha, beta = float(node.attr("alpha", 0.9)), float(node.attr("beta", 0.999))
    eps, norm = float(node.attr("epsilon", 1e-6)), float(node.attr("norm_coefficient", 0.0))
    post = float(node.attr("norm_coefficient_post", 0.0))

    def rule(r: float, t: int, x: Tensor, g: Tensor, v: Tensor, h: Tensor) -> tuple[Tensor, ...]:
        g = x * norm + g
        v = v * alpha + g * (1.0 - alpha)
        h = h * beta + g * g * (1.0 - beta)
        ra = r * math.sqrt(1.0 - beta**t) / (1.0 - alpha**t) if t > 0 else r
        return (x - v / (h.sqrt() + eps) * ra) * (1.0 - post), v, h

    return _apply(ctx, node, inputs, 2, rule)


@converter("Momentum", since=1, domain=_DOMAIN, static=(0, 1))
def momentum(ctx: Context, node: Node, *inputs: Tensor) -> tuple[Tensor, ...]:
    """``Momentum``: ``V = alpha V + beta' g`` (``beta' = 1`` at ``T = 0``); ``mode`` ``standard``:
    ``X -= r V``, ``nesterov``: ``X -= r (g + alpha V)``."""
    alpha, beta = float(node.attr("alpha")), float(node.attr("beta"))
    norm, mode = float(node.attr("norm_coefficient")), node.attr("mode")
    if mode not in ("standard", "nesterov"):
        raise OnnxImportError(f"{node.where()}: mode {mode!r}; expected 'standard' or 'nesterov'.")

    def rule(r: float, t: int, x: Tensor, g: Tensor, v: Tensor) -> tuple[Tensor, ...]:
        g = x * norm + g
        v = v * alpha + g * (beta if t > 0 else 1.0)
        return x - (v if mode == "standard" else g + v * alpha) * r, v

    return _apply(ctx, node, inputs, 1, rule)
