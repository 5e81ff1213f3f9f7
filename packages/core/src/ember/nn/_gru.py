"""``Gru`` (Burn's ``nn::Gru``; Cho et al. 2014)."""

from __future__ import annotations

from typing import Any

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ..tensor import activation as A
from ._checks import check_dim, check_float, check_rank, config_error
from ._initializer import AnyInitializer, XavierNormal
from ._rnn_gate import GateController, fuse_gate_record, gate_copy, init_fused

__all__ = ["GruConfig", "Gru"]

_LAYOUT = "[batch, seq_length, d_input]"


@config
class GruConfig:
    """Configuration of :class:`Gru` (Burn's ``GruConfig``).

    Args:
        d_input: input features.
        d_hidden: hidden (and output) features.
        bias: learn biases (default ``True``).
        reset_after: apply the reset gate after the hidden product (``True``, Burn's default and
            PyTorch's / cuDNN's form) or before it (``False``, the original paper's form).
        initializer: default ``XavierNormal(gain=1)`` (Burn's default).
    """

    d_input: int
    d_hidden: int
    bias: bool = True
    reset_after: bool = True
    initializer: AnyInitializer = XavierNormal(gain=1.0)

    def init(self, device: Device) -> Gru:
        """A new :class:`Gru`. Raises ConfigError for a size below 1."""
        if self.d_input < 1 or self.d_hidden < 1:
            raise config_error("GruConfig", f"d_input ({self.d_input}) and d_hidden ({self.d_hidden}) must be >= 1.")

        wx, wh, bx, bh = init_fused(self.initializer, self.d_input, self.d_hidden, 3, self.bias, device)
        return Gru(weight_ih=wx, weight_hh=wh, bias_ih=bx, bias_hh=bh, d_hidden=self.d_hidden,
                   reset_after=self.reset_after)


#: the gates' order in the fused weights (PyTorch's): reset (r), update (z), new (n)
GATES = ("reset_gate", "update_gate", "new_gate")


class Gru(Module):
    """A unidirectional GRU over batch-first sequences (Burn's ``Gru``).

    Gate layout (fused, PyTorch's gate order ``r, z, n``): ``weight_ih [d_input, 3 d_hidden]``, ``weight_hh
    [d_hidden, 3 d_hidden]``, ``bias_ih`` / ``bias_hh [3 d_hidden]`` (``None`` without bias); column block ``k``
    belongs to gate ``k``. Per step, with ``W_i*`` / ``W_h*`` the blocks::

        r = sigmoid(x W_ir + b_ir + h W_hr + b_hr)
        z = sigmoid(x W_iz + b_iz + h W_hz + b_hz)
        n = tanh(x W_in + b_in + r * (h W_hn + b_hn))        (reset_after=True)
        n = tanh(x W_in + b_in + (r * h) W_hn + b_hn)        (reset_after=False)
        h' = (1 - z) * n + z * h

    PyTorch's ``nn.GRU`` stores the transposes (``weight_ih_l0 [3 d_hidden, d_input]``, same gate order; it uses
    ``reset_after``). Burn's ``Gru`` (and Ember's records before the fused layout) keep one ``GateController`` per
    gate (``update_gate``, ``reset_gate``, ``new_gate``): such records load (:meth:`load_record`), their blocks
    concatenated; ``gru.reset_gate`` and the others remain as deprecated read-only copies.
    """

    weight_ih: Param
    weight_hh: Param
    bias_ih: Param | None = None
    bias_hh: Param | None = None
    d_hidden: int
    reset_after: bool = True

    @staticmethod
    def __ember_record_upgrade__(node: dict[str, Any]) -> dict[str, Any]:
        """A per-gate (Burn / older Ember) record in the fused layout (see :func:`fuse_gate_record`)."""
        return fuse_gate_record(node, GATES)

    @property
    def reset_gate(self) -> GateController:
        """Deprecated: a copy of the reset gate's block (``r``) as a ``GateController``."""
        return gate_copy(self, 0, "Gru", "reset_gate")

    @property
    def update_gate(self) -> GateController:
        """Deprecated: a copy of the update gate's block (``z``) as a ``GateController``."""
        return gate_copy(self, 1, "Gru", "update_gate")

    @property
    def new_gate(self) -> GateController:
        """Deprecated: a copy of the new gate's block (``n``) as a ``GateController``."""
        return gate_copy(self, 2, "Gru", "new_gate")

    def forward(self, batched_input: Tensor, state: Tensor | None = None) -> Tensor:
        """Run the sequence.

        Args:
            batched_input: Float ``[batch, seq_length, d_input]``.
            state: the initial hidden state ``[batch, d_hidden]`` (zeros when ``None``).

        Returns:
            Every hidden state, ``[batch, seq_length, d_hidden]``.

        Raises:
            KindError / ShapeError: a non-Float input, a wrong rank, ``d_input`` or state shape.
        """
        layer = "Gru"
        x = batched_input
        check_float(layer, x)
        check_rank(layer, x, 3, _LAYOUT)
        d = self.d_hidden
        wx, wh = self.weight_ih.val(), self.weight_hh.val()
        bx = None if self.bias_ih is None else self.bias_ih.val()
        bh = None if self.bias_hh is None else self.bias_hh.val()
        d_in = wx.shape[0]
        check_dim(layer, x, 2, d_in, _LAYOUT, "d_input")
        batch, seq = x.shape[0], x.shape[1]
        if state is None:
            h = Tensor.zeros([batch, d], x.device)
        else:
            if state.shape != (batch, d):
                raise ShapeError(f"Gru: state must have shape [batch, d_hidden] = {[batch, d]}, "
                                 f"got {list(state.shape)}.")
            h = state
        proj = x.reshape([batch * seq, d_in]) @ wx
        if bx is not None:
            proj = proj + bx
        steps = proj.reshape([batch, seq, 3 * d]).split(1, 1)
        wh_rz, wh_n = wh.split(2 * d, 1)
        bh_rz, bh_n = bh.split(2 * d, 0) if bh is not None else (None, None)
        outputs = []
        for t in range(seq):
            xr, xz, xn = steps[t].reshape([batch, 3 * d]).split(d, 1)
            hrz = h @ wh_rz
            if bh_rz is not None:
                hrz = hrz + bh_rz
            hr, hz = hrz.split(d, 1)
            z = A.sigmoid(xz + hz)
            r = A.sigmoid(xr + hr)
            if self.reset_after:
                hn = h @ wh_n
                if bh_n is not None:
                    hn = hn + bh_n
                n = A.tanh(xn + r * hn)
            else:
                hn = (r * h) @ wh_n
                if bh_n is not None:
                    hn = hn + bh_n
                n = A.tanh(xn + hn)
            h = n + z * (h - n)
            outputs.append(h)
        return Tensor.stack(outputs, 1)
