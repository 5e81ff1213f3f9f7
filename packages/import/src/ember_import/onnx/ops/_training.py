"""Optimizer steps of the ``ai.onnx.preview.training`` domain (version 1): ``Adagrad``, ``Adam`` and
``Momentum`` (standard and Nesterov).

Each node updates ``n`` tensors at once: inputs ``R`` (learning rate), ``T`` (step count), then the ``n``
tensors ``X``, their gradients ``G`` and the optimizer states (``H`` for Adagrad; ``V``, ``H`` for Adam;
``V`` for Momentum), each group of ``n`` in order; outputs the new ``X``s then the new states. ``R`` and
``T`` are scalars: host reads for Adagrad; tensors for Adam and Momentum, whose rules change at ``T = 0``
(``mask_where`` on ``T > 0`` picks the rule, so no host branch: generated code and ``ember_jax.jit`` keep
``T`` as data). Update rules are those of the ONNX specification
(onnx/docs/Operators.md, "ai.onnx.preview.training") and ``onnx.reference.ops.aionnx_preview_training``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter

_DOMAIN = "ai.onnx.preview.training"

#: one tensor's update: (r, t, x, g, *states) -> (new x, *new states)
Rule = Callable[..., tuple[Tensor, ...]]


def _apply(node: Node, r: Any, t: Any, inputs: tuple[Tensor, ...], n_states: int, rule: Rule) -> tuple[Tensor, ...]:
    """Split ``X..., G..., S1..., S2...`` into per-tensor groups, apply ``rule(r, t, ...)``, regroup outputs."""
    k = 2 + n_states
    if len(inputs) % k:
        raise OnnxImportError(
            f"{node.where()}: expected R, T and {k} groups of equally many tensors (X, G and {n_states} state(s)), "
            f"got {len(inputs) + 2} inputs."
        )
    n = len(inputs) // k
    per = [rule(r, t, *(inputs[j * n + i] for j in range(k))) for i in range(n)]
    return tuple(p[j] for j in range(1 + n_states) for p in per)


def _scalars(node: Node, r: Tensor, t: Tensor) -> tuple[Tensor, Tensor]:
    """``R`` and ``T`` as Float scalar tensors (``T`` as a float: it is a step count, exact below 2**24)."""
    if r.num_elements() != 1 or t.num_elements() != 1:
        raise OnnxImportError(f"{node.where()}: R and T must be scalars, got shapes {list(r.shape)} and "
                              f"{list(t.shape)}.")
    return r.reshape([]), t.reshape([]).float()


def _like(s: Tensor, x: Tensor) -> Tensor:
    """The scalar ``s`` in ``x``'s float type."""
    return s if s.dtype is x.dtype else s.cast(x.dtype)


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

    return _apply(node, ctx.float_scalar(inputs[0]), ctx.int_scalar(inputs[1]), inputs[2:], 1, rule)


@converter("Adam", since=1, domain=_DOMAIN)
def adam(ctx: Context, node: Node, r: Tensor, t: Tensor, *inputs: Tensor) -> tuple[Tensor, ...]:
    """``Adam``: momentums ``V``, ``H`` with ``alpha``, ``beta``; the learning rate bias-corrected,
    ``R sqrt(1 - beta^T) / (1 - alpha^T)``, when ``T > 0``; ``norm_coefficient`` (L2 on the gradient) and
    ``norm_coefficient_post`` (decay after the step)."""
    alpha, beta = float(node.attr("alpha", 0.9)), float(node.attr("beta", 0.999))
    eps, norm = float(node.attr("epsilon", 1e-6)), float(node.attr("norm_coefficient", 0.0))
    post = float(node.attr("norm_coefficient_post", 0.0))
    r, t = _scalars(node, r, t)
    steps = t.clamp_min(1.0)  # the corrected rate at T <= 0 is masked out; computed at 1, not 0 / 0
    corrected = r * (1.0 - beta**steps).sqrt() / (1.0 - alpha**steps)
    rate = r.mask_where(t.greater(0.0), corrected)

    def rule(r: Tensor, t: Tensor, x: Tensor, g: Tensor, v: Tensor, h: Tensor) -> tuple[Tensor, ...]:
        g = x * norm + g
        v = v * alpha + g * (1.0 - alpha)
        h = h * beta + g * g * (1.0 - beta)
        x = x - v / (h.sqrt() + eps) * _like(r, x)
        return (x * (1.0 - post) if post else x), v, h

    return _apply(node, rate, t, inputs, 2, rule)


@converter("Momentum", since=1, domain=_DOMAIN)
def momentum(ctx: Context, node: Node, r: Tensor, t: Tensor, *inputs: Tensor) -> tuple[Tensor, ...]:
    """``Momentum``: ``V = alpha V + beta' g`` (``beta' = beta`` when ``T > 0``, else 1); ``mode``
    ``standard``: ``X -= R V``, ``nesterov``: ``X -= R (g + alpha V)``."""
    alpha, beta = float(node.attr("alpha")), float(node.attr("beta"))
    norm, mode = float(node.attr("norm_coefficient")), node.attr("mode")
    if mode not in ("standard", "nesterov"):
        raise OnnxImportError(f"{node.where()}: mode {mode!r}; expected 'standard' or 'nesterov'.")
    r, t = _scalars(node, r, t)
    scale = t.ones_like().mask_fill(t.greater(0.0), beta)

    def rule(r: Tensor, scale: Tensor, x: Tensor, g: Tensor, v: Tensor) -> tuple[Tensor, ...]:
        g = x * norm + g
        v = v * alpha + g * _like(scale, x)
        return x - (v if mode == "standard" else g + v * alpha) * _like(r, x), v

    return _apply(node, r, scale, inputs, 1, rule)
