"""``BinaryCrossEntropyLoss`` (Burn's ``nn::loss::BinaryCrossEntropyLoss``)."""

from __future__ import annotations

from ..._errors import ShapeError
from ..._kind import Float
from ...backend._device import Device
from ...config import config
from ...module import Module
from ...tensor import Tensor
from ...tensor import activation as A
from .._checks import check_float, config_error

__all__ = ["BinaryCrossEntropyLossConfig", "BinaryCrossEntropyLoss"]


@config
class BinaryCrossEntropyLossConfig:
    """Configuration of :class:`BinaryCrossEntropyLoss` (Burn's ``BinaryCrossEntropyLossConfig``).

    Args:
        weights: one weight per target column (``[num_targets]``, multi-label), as PyTorch's ``weight``
            broadcast over the batch.
        smoothing: label smoothing ``alpha`` in ``[0, 1]``: targets become ``t (1 - alpha) + alpha / 2`` (Burn).
        logits: inputs are logits (use ``log_sigmoid``, stable; PyTorch's ``BCEWithLogitsLoss``) or
            probabilities (default ``False``, Burn; PyTorch's ``BCELoss``, logs clamped at -100).
    """

    weights: list[float] | None = None
    smoothing: float | None = None
    logits: bool = False

    def init(self, device: Device) -> BinaryCrossEntropyLoss:
        """A new :class:`BinaryCrossEntropyLoss`. Raises ConfigError for ``smoothing`` outside ``[0, 1]``."""
        if self.smoothing is not None and not 0.0 <= self.smoothing <= 1.0:
            raise config_error("BinaryCrossEntropyLossConfig", f"smoothing must be in [0, 1], got {self.smoothing}.")
        w = Tensor.from_data([float(v) for v in self.weights], device, Float) if self.weights else None
        return BinaryCrossEntropyLoss(weights=w, smoothing=self.smoothing, logits=self.logits)


class BinaryCrossEntropyLoss(Module):
    """``-(t log p + (1 - t) log(1 - p))`` averaged over every element (optionally weighted per target
    column), ``p = sigmoid(logits)`` or the given probabilities.

    ``forward(logits, targets)``: Float ``[batch]`` or ``[batch, num_targets]``; targets of the same shape,
    Int (0 / 1) or Float (soft labels) -> ``[1]``.

    Raises (forward):
        ShapeError: shapes differ, or weights not of length ``num_targets``.
    """

    weights: Tensor | None = None
    smoothing: float | None = None
    logits: bool = False

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        name = "BinaryCrossEntropyLoss"
        check_float(name, logits, "logits")
        if logits.shape != targets.shape or logits.rank not in (1, 2):
            raise ShapeError(f"{name}: expected logits and targets of one shape [batch] or [batch, num_targets], "
                             f"got {list(logits.shape)} and {list(targets.shape)}.")
        t = targets if targets.kind is Float else targets.float()
        if self.smoothing:
            t = t * (1.0 - self.smoothing) + self.smoothing / 2.0
        if self.logits:
            loss = (t * -1.0 + 1.0) * logits - A.log_sigmoid(logits)
        else:
            log_p = logits.log().clamp_min(-100.0)
            log_q = (logits * -1.0 + 1.0).log().clamp_min(-100.0)
            loss = (t * log_p + (t * -1.0 + 1.0) * log_q).neg()
        if self.weights is not None:
            k = logits.shape[-1] if logits.rank == 2 else logits.shape[0]
            if self.weights.shape != (k,):
                raise ShapeError(f"{name}: {self.weights.shape[0]} weights for {k} targets "
                                 f"(logits {list(logits.shape)}).")
            loss = loss * self.weights
        return loss.mean()
