"""Losses: ``NegativeLogLikelihoodLoss`` and ``SoftmaxCrossEntropyLoss``.

Semantics of the ONNX specification (onnx/docs/Operators.md) and ``onnx.reference``: for input
``[N, C, d1, ...]`` and Int target ``[N, d1, ...]``, ``loss[n, d] = -input[n, target[n, d], d] *
weight[target[n, d]]``; entries whose target equals ``ignore_index`` count 0 with weight 0. ``reduction``
``"none"`` keeps ``[N, d1, ...]``, ``"sum"`` sums, ``"mean"`` (default) divides the sum by the sum of the
weights that applied (the count of targets not ignored when there are no weights).
"""

from __future__ import annotations

from ember import Tensor
from ember.tensor import activation

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter

__all__ = ["nll_loss"]


def nll_loss(node: Node, logp: Tensor, target: Tensor, weight: Tensor | None) -> Tensor:
    """The negative log-likelihood of ``target`` under log-probabilities ``logp`` (``[N, C, d1, ...]``),
    with the node's ``reduction`` and ``ignore_index``.

    Raises:
        OnnxImportError: an unknown ``reduction`` or a target whose shape is not ``logp``'s without dim 1.
    """
    reduction = node.attr("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        raise OnnxImportError(f"{node.where()}: reduction must be 'none', 'sum' or 'mean', got {reduction!r}.")
    want = [logp.shape[0], *logp.shape[2:]] if logp.rank >= 2 else None
    if want is None or list(target.shape) != want:
        raise OnnxImportError(
            f"{node.where()}: expected input [N, C, d1, ...] and target [N, d1, ...], got "
            f"{list(logp.shape)} and {list(target.shape)}."
        )
    ignore = node.attr("ignore_index", None)
    ignored = target.equal(int(ignore)) if ignore is not None else None
    safe = target.mask_fill(ignored, 0) if ignored is not None else target
    loss = logp.gather(1, safe.unsqueeze_dim(1)).squeeze_dim(1).neg()
    w = weight.take(0, safe) if weight is not None else None
    if ignored is not None:
        w = (w if w is not None else loss.ones_like()).mask_fill(ignored, 0.0)
    if w is not None:
        loss = loss.mul(w)
    if reduction == "none":
        return loss
    if reduction == "mean" and w is None:
        return loss.mean().reshape([])
    total = loss.sum().reshape([])
    return total.div(w.sum().reshape([])) if reduction == "mean" and w is not None else total


@converter("NegativeLogLikelihoodLoss", since=12)
def negative_log_likelihood_loss(
    ctx: Context, node: Node, x: Tensor, target: Tensor, weight: Tensor | None = None
) -> Tensor:
    """``NegativeLogLikelihoodLoss`` (opsets 12, 13, 22): see the module docstring."""
    return nll_loss(node, x, target, weight)


@converter("SoftmaxCrossEntropyLoss", since=12)
def softmax_cross_entropy_loss(
    ctx: Context, node: Node, scores: Tensor, labels: Tensor, weights: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """``SoftmaxCrossEntropyLoss`` (opsets 12, 13): ``log_prob = log_softmax(scores, axis=1)`` and the
    negative log-likelihood of ``labels`` under it; returns ``(loss, log_prob)``."""
    if scores.rank < 2:
        raise OnnxImportError(f"{node.where()}: expected scores [N, C, d1, ...], got {list(scores.shape)}.")
    logp = activation.log_softmax(scores, 1)
    return nll_loss(node, logp, labels, weights), logp
