"""``CTCLoss``: Connectionist Temporal Classification (Graves et al. 2006; PyTorch's ``nn.CTCLoss``)."""

from __future__ import annotations

from ..._errors import ShapeError
from ..._kind import Bool, Int
from ...backend._device import Device
from ...config import config
from ...module import Module
from ...tensor import Tensor
from .._checks import check_float, check_int, config_error
from ._reduction import Reduction

__all__ = ["CTCLossConfig", "CTCLoss"]

#: log(0) stand-in: finite, so masked paths give exact zeros (no inf - inf = NaN in the recursion)
_NEG = -1.0e30


def _on(t: Tensor, device: Device) -> Tensor:
    """Int ``t`` on ``device`` (the lengths may come on another device than ``log_probs``)."""
    return t if t.device is device else t.to_device(device)


@config
class CTCLossConfig:
    """Configuration of :class:`CTCLoss` (PyTorch's ``nn.CTCLoss`` defaults).

    Args:
        blank: the blank class index (default 0).
        reduction: ``MEAN`` (each loss divided by its target length, then the batch mean; PyTorch's
            default), ``SUM``, or ``AUTO`` (= ``MEAN``).
        zero_infinity: impossible alignments (input too short) give 0 instead of ``inf``.
    """

    blank: int = 0
    reduction: Reduction = Reduction.MEAN
    zero_infinity: bool = False

    def init(self, device: Device | None = None) -> CTCLoss:
        """Raises ConfigError for a negative blank."""
        if self.blank < 0:
            raise config_error("CTCLossConfig", f"blank must be >= 0, got {self.blank}.")
        return CTCLoss(blank=self.blank, reduction=self.reduction, zero_infinity=self.zero_infinity)


class CTCLoss(Module):
    """The negative log-likelihood of the target sequences summed over every alignment (the forward
    algorithm in log space, vectorized over the batch and the extended label positions; one loop over
    time steps).

    ``forward(log_probs, targets, input_lengths, target_lengths)``:

    - ``log_probs`` Float ``[time, batch, num_classes]``: log-softmax outputs (PyTorch's layout);
    - ``targets`` Int ``[batch, max_target_length]``: padded label sequences (no blanks);
    - ``input_lengths``, ``target_lengths`` Int ``[batch]``.

    Returns ``[1]`` (``MEAN`` / ``SUM``). ``forward_no_reduction`` gives ``[batch]``.

    Raises:
        ShapeError: inconsistent shapes, lengths beyond the tensors, or the blank outside the classes. The
            length ranges are read on the host, so they are checked on concrete data only: inside a compiled
            step (``ember_jax.jit``) lengths out of range are not reported.
    """

    blank: int = 0
    reduction: Reduction = Reduction.MEAN
    zero_infinity: bool = False

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor) -> Tensor:
        loss = self.forward_no_reduction(log_probs, targets, input_lengths, target_lengths)
        r = Reduction(self.reduction)
        if r is Reduction.SUM:
            return loss.sum()
        return (loss / target_lengths.float().clamp_min(1.0)).mean()

    def forward_no_reduction(self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor,
                             target_lengths: Tensor) -> Tensor:
        name = "CTCLoss"
        check_float(name, log_probs, "log_probs")
        for arg, value in (("targets", targets), ("input_lengths", input_lengths),
                           ("target_lengths", target_lengths)):
            check_int(name, value, arg)
        if log_probs.rank != 3:
            raise ShapeError(f"{name}: log_probs must be [time, batch, num_classes], got {list(log_probs.shape)}.")
        steps, batch, classes = log_probs.shape
        if targets.rank != 2 or targets.shape[0] != batch or input_lengths.shape != (batch,) \
                or target_lengths.shape != (batch,):
            raise ShapeError(f"{name}: expected targets [batch={batch}, max_target_length], input_lengths and "
                             f"target_lengths [{batch}], got {list(targets.shape)}, {list(input_lengths.shape)}, "
                             f"{list(target_lengths.shape)}.")
        if not 0 <= self.blank < classes:
            raise ShapeError(f"{name}: blank {self.blank} is not a class of log_probs (num_classes = {classes}).")
        s_max = targets.shape[1]
        # the range check reads the lengths on the host: concrete data only (skipped inside a compiled step)
        if input_lengths.ops.is_concrete(input_lengths.primitive) and \
                target_lengths.ops.is_concrete(target_lengths.primitive):
            in_len = [int(v) for v in input_lengths.to_numpy().reshape(-1)]
            tg_len = [int(v) for v in target_lengths.to_numpy().reshape(-1)]
            if any(n_ < 1 or n_ > steps for n_ in in_len) or any(n_ < 0 or n_ > s_max for n_ in tg_len):
                raise ShapeError(f"{name}: input_lengths must be in [1, {steps}] and target_lengths in [0, {s_max}], "
                                 f"got {in_len} and {tg_len}.")
        dev = log_probs.device
        # extended labels [batch, 2 S + 1]: blank, l1, blank, l2, ..., blank
        lab = targets.clamp(0, classes - 1)
        blanks = Tensor.full([batch, s_max], self.blank, dev, Int)
        ext = Tensor.cat([Tensor.stack([blanks, lab], 2).reshape([batch, 2 * s_max]),
                          Tensor.full([batch, 1], self.blank, dev, Int)], 1)
        width = 2 * s_max + 1
        # skip transition s-2 -> s allowed where ext[s] is not blank and differs from ext[s-2]
        if width > 2:
            prev2 = Tensor.cat([Tensor.full([batch, 2], self.blank, dev, Int), ext.narrow(1, 0, width - 2)], 1)
            no_skip = ext.equal_elem(self.blank).bool_or(ext.equal(prev2))
        else:
            no_skip = Tensor.full([batch, width], True, dev, Bool)
        # emissions [time, batch, width]
        # ext holds the blank and clamped labels, in [0, classes) by construction: no index-value check (a
        # min/max over [time, batch, width])
        lp = log_probs._gather(name, 2, ext.unsqueeze_dim(0).expand([steps, batch, width]))
        emit = lp.split(1, 0)
        neg_col = Tensor.full([batch, 1], _NEG, dev)
        neg_two = Tensor.full([batch, 2], _NEG, dev)
        pos = Tensor.arange(0, width, dev).reshape([1, width])
        start = pos.lower_elem(2)
        alpha = emit[0].reshape([batch, width]).mask_fill(start.bool_not(), _NEG)
        lengths = _on(input_lengths, dev).reshape([batch, 1])
        for t in range(1, steps):
            a1 = Tensor.cat([neg_col, alpha.narrow(1, 0, width - 1)], 1)
            a2 = Tensor.cat([neg_two, alpha.narrow(1, 0, width - 2)], 1) if width > 2 else neg_col.expand(
                [batch, width])
            a2 = a2.mask_fill(no_skip, _NEG)
            m = alpha.max_pair(a1).max_pair(a2).detach()
            lse = ((alpha - m).exp() + (a1 - m).exp() + (a2 - m).exp()).log() + m
            new = lse + emit[t].reshape([batch, width])
            alpha = alpha.mask_where(lengths.greater_elem(t), new)
        # end: positions 2 L and 2 L - 1 (only 2 L when L = 0)
        tl = _on(target_lengths, dev).reshape([batch, 1])
        last = alpha.gather(1, tl * 2)
        before = alpha.gather(1, (tl * 2 - 1).clamp_min(0)).mask_fill(tl.equal_elem(0), _NEG)
        m = last.max_pair(before).detach()
        ll = (((last - m).exp() + (before - m).exp()).log() + m).reshape([batch])
        impossible = ll.lower_elem(_NEG / 2)
        loss = ll.neg()
        if self.zero_infinity:
            return loss.mask_fill(impossible, 0.0)
        return loss.mask_fill(impossible, float("inf"))
