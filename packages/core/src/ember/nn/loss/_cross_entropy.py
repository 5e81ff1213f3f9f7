"""``CrossEntropyLoss`` (Burn's ``nn::loss::CrossEntropyLoss``)."""

from __future__ import annotations

from ..._errors import ShapeError
from ..._kind import Float
from ...backend._device import Device
from ...config import config
from ...module import Module
from ...tensor import Tensor
from ...tensor import activation as A
from ...tensor._index_check import check_index_values
from .._checks import check_float, check_int, config_error

__all__ = ["CrossEntropyLossConfig", "CrossEntropyLoss"]


@config
class CrossEntropyLossConfig:
    """Configuration of :class:`CrossEntropyLoss` (Burn's ``CrossEntropyLossConfig``).

    Args:
        pad_tokens: target classes to ignore (PyTorch's ``ignore_index``, several allowed).
        weights: one positive weight per class (PyTorch's ``weight``).
        smoothing: label smoothing ``alpha`` in ``[0, 1]``: the target distribution becomes
            ``(1 - alpha) one_hot + alpha / num_classes`` (Szegedy et al. 2016; PyTorch's ``label_smoothing``).
        logits: inputs are logits (default ``True``) or probabilities (then ``log`` replaces ``log_softmax``).
    """

    pad_tokens: list[int] | None = None
    weights: list[float] | None = None
    smoothing: float | None = None
    logits: bool = True

    def init(self, device: Device) -> CrossEntropyLoss:
        """A new :class:`CrossEntropyLoss` (class weights become a constant tensor on ``device``).

        Raises:
            ConfigError: ``smoothing`` outside ``[0, 1]`` or a weight that is not positive.
        """
        if self.smoothing is not None and not 0.0 <= self.smoothing <= 1.0:
            raise config_error("CrossEntropyLossConfig", f"smoothing must be in [0, 1], got {self.smoothing}.")
        if self.weights is not None and not all(w > 0 for w in self.weights):
            raise config_error("CrossEntropyLossConfig", f"weights must all be positive, got {self.weights}.")
        w = Tensor.from_data([float(v) for v in self.weights], device, Float) if self.weights else None
        return CrossEntropyLoss(weights=w, pad_tokens=list(self.pad_tokens or []), smoothing=self.smoothing,
                                logits=self.logits)


class CrossEntropyLoss(Module):
    """Cross-entropy between predicted class scores and Int targets, averaged over the samples.

    ``loss_i = -sum_c w_c q_ic log p_ic`` with ``p = softmax(logits)`` (or the given probabilities),
    ``q_i`` the one-hot target (smoothed: ``(1 - alpha) one_hot + alpha / C``) and ``w_c`` the class
    weights (1 without). The mean is ``sum_i loss_i / sum_i w_{y_i}`` over the samples whose target is
    not a pad token, exactly PyTorch's ``F.cross_entropy(weight=..., ignore_index=...,
    label_smoothing=...)``. (Burn divides by the batch size including pad rows; we follow PyTorch.)
    All targets padded gives NaN, as PyTorch.

    ``forward(logits, targets)``: Float ``[batch, num_classes]``, Int ``[batch]`` -> ``[1]``.

    Raises (forward):
        ShapeError: wrong ranks, a batch mismatch, or weights not of length ``num_classes``.
        KindError: non-Float logits or non-Int targets.
        ember.IndexError: a target outside ``[0, num_classes)`` that is not a pad token, negative ones
            included (PyTorch raises too; numpy indexing would count ``-1`` from the end). Checked with one
            min/max reduction on concrete values (not inside ``ember_jax.jit``; :mod:`ember.tensor._index_check`).
    """

    weights: Tensor | None = None
    pad_tokens: list[int] | None = None
    smoothing: float | None = None
    logits: bool = True

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        name = "CrossEntropyLoss"
        check_float(name, logits, "logits")
        check_int(name, targets, "targets")
        if logits.rank != 2 or targets.rank != 1 or targets.shape[0] != logits.shape[0]:
            raise ShapeError(f"{name}: expected logits [batch, num_classes] and targets [batch], got "
                             f"{list(logits.shape)} and {list(targets.shape)}.")
        batch, n = logits.shape
        logp = A.log_softmax(logits, 1) if self.logits else logits.log()
        tgt = targets.reshape([batch, 1])
        keep = None
        if self.pad_tokens:
            pad = targets.equal_elem(self.pad_tokens[0])
            for p in self.pad_tokens[1:]:
                pad = pad.bool_or(targets.equal_elem(p))
            keep = pad.bool_not().float()
            tgt = tgt.mask_fill(pad.reshape([batch, 1]), 0)
        check_index_values(name, tgt, n, 1, "target", where=f"{n} classes (logits {list(logits.shape)})",
                           hint="list targets to ignore in pad_tokens (PyTorch's ignore_index)")
        if self.weights is not None:
            if self.weights.shape != (n,):
                raise ShapeError(f"{name}: {self.weights.shape[0]} class weights for {n} classes.")
            w_all = self.weights.to_device(logits.device) if self.weights.device is not logits.device else self.weights
            w_t = w_all.reshape([n, 1])._gather(name, 0, tgt).reshape([batch])
        else:
            w_all = None
            w_t = None
        nll = logp._gather(name, 1, tgt).reshape([batch]).neg()
        if w_t is not None:
            nll = nll * w_t
        a = self.smoothing or 0.0
        if a > 0.0:
            lw = logp if w_all is None else logp * w_all
            smooth = lw.sum_dim(1).reshape([batch]) * (-1.0 / n)
            per = nll * (1.0 - a) + smooth * a
        else:
            per = nll
        denom = w_t if w_t is not None else None
        if keep is not None:
            per = per * keep
            denom = keep if denom is None else denom * keep
        if denom is None:
            return per.mean()
        return per.sum() / denom.sum()
