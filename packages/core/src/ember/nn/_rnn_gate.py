"""``GateController``: the two linear transforms of one recurrent gate (Burn's
``nn::rnn::GateController``), used by :class:`~ember.nn.Lstm` and :class:`~ember.nn.Gru`."""

from __future__ import annotations

from collections.abc import Sequence

from ..backend._device import Device
from ..module import Module
from ..tensor import Tensor
from ._initializer import Initializer
from ._linear import Linear, LinearConfig

__all__ = ["GateController", "fused_gates"]


class GateController(Module):
    """One gate: ``input_transform`` (``Linear [d_input, d_output]``) applied to the input and
    ``hidden_transform`` (``Linear [d_output, d_output]``) applied to the hidden state; the gate's
    pre-activation is their sum (Burn's layout: ``x @ W_x + b_x + h @ W_h + b_h``).
    """

    input_transform: Linear
    hidden_transform: Linear

    @staticmethod
    def new(d_input: int, d_output: int, bias: bool, initializer: Initializer, device: Device) -> GateController:
        """A gate with both transforms drawn from ``initializer`` (fans as for ``Linear``)."""
        return GateController(
            input_transform=LinearConfig(d_input, d_output, bias, initializer).init(device),  # type: ignore[arg-type]
            hidden_transform=LinearConfig(d_output, d_output, bias, initializer).init(device),  # type: ignore[arg-type]
        )

    def gate_product(self, x: Tensor, h: Tensor) -> Tensor:
        """``x @ W_x + b_x + h @ W_h + b_h`` for ``x`` ``[batch, d_input]``, ``h`` ``[batch, d_output]``."""
        return self.input_transform.forward(x) + self.hidden_transform.forward(h)


def fused_gates(gates: Sequence[GateController]) -> tuple[Tensor, Tensor | None, Tensor, Tensor | None]:
    """The gates' weights side by side: ``(W_x [d_input, n*d], b_x [n*d] | None, W_h [d, n*d],
    b_h [n*d] | None)``; one matrix product then serves every gate (differentiable: gradients reach
    each gate's parameters)."""
    wx = Tensor.cat([g.input_transform.weight.val() for g in gates], 1)
    wh = Tensor.cat([g.hidden_transform.weight.val() for g in gates], 1)
    bxs = [g.input_transform.bias for g in gates]
    bhs = [g.hidden_transform.bias for g in gates]
    bx = Tensor.cat([b.val() for b in bxs], 0) if all(b is not None for b in bxs) else None  # type: ignore[union-attr]
    bh = Tensor.cat([b.val() for b in bhs], 0) if all(b is not None for b in bhs) else None  # type: ignore[union-attr]
    return wx, bx, wh, bh
