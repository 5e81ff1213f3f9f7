"""``GradientsAccumulator``: sums gradients over several backward passes (Burn's ``GradientsAccumulator``)."""

from __future__ import annotations

from ..module import Module, ParamId
from ..tensor import Tensor
from ._grads_params import GradientsParams, trainable_params

__all__ = ["GradientsAccumulator"]


class GradientsAccumulator:
    """Accumulates (sums) :class:`GradientsParams` of a module, for gradient accumulation::

        acc = GradientsAccumulator()
        for batch in micro_batches:                       # k micro-batches
            grads = GradientsParams.from_grads(model.loss(batch).backward(), model)
            acc.accumulate(model, grads)
        model = optim.step(lr, model, acc.grads())        # one step with the summed gradients

    The gradients are *summed*, as Burn does; divide the loss by ``k`` (or scale ``lr``) for a mean.
    """

    __slots__ = ("_grads",)

    def __init__(self) -> None:
        self._grads: dict[ParamId, Tensor] = {}

    def accumulate(self, module: Module, grads: GradientsParams) -> None:
        """Add the gradients of ``module``'s trainable parameters found in ``grads`` (they are removed from
        ``grads``, as Burn's ``accumulate`` consumes them). Other entries of ``grads`` are left in place."""
        if not isinstance(grads, GradientsParams):
            raise TypeError(f"GradientsAccumulator.accumulate: expected GradientsParams, got {type(grads).__name__}.")
        for p in trainable_params(module):
            g = grads.remove(p.id)
            if g is None:
                continue
            prev = self._grads.get(p.id)
            self._grads[p.id] = g if prev is None else prev.add(g)

    def grads(self) -> GradientsParams:
        """The accumulated gradients; the accumulator is reset (Burn's ``grads``)."""
        out = GradientsParams(self._grads)
        self._grads = {}
        return out

    def __len__(self) -> int:
        return len(self._grads)

    def __repr__(self) -> str:
        return f"GradientsAccumulator({len(self._grads)} tensors)"
