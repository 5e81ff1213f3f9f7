"""``Gru`` (Burn's ``nn::Gru``; Cho et al. 2014)."""

from __future__ import annotations

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import activation as A
from ._checks import check_dim, check_float, check_rank, config_error
from ._initializer import AnyInitializer, XavierNormal
from ._rnn_gate import GateController, fused_gates

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

        def gate() -> GateController:
            return GateController.new(self.d_input, self.d_hidden, self.bias, self.initializer, device)

        return Gru(update_gate=gate(), reset_gate=gate(), new_gate=gate(), d_hidden=self.d_hidden,
                   reset_after=self.reset_after)


class Gru(Module):
    """A unidirectional GRU over batch-first sequences (Burn's ``Gru``).

    Gate layout (Burn's): :class:`GateController` s ``update_gate`` (z), ``reset_gate`` (r) and
    ``new_gate`` (n), each ``input_transform [d_input, d_hidden]`` + ``hidden_transform
    [d_hidden, d_hidden]``. Per step::

        z = sigmoid(x W_iz + b_iz + h W_hz + b_hz)
        r = sigmoid(x W_ir + b_ir + h W_hr + b_hr)
        n = tanh(x W_in + b_in + r * (h W_hn + b_hn))        (reset_after=True)
        n = tanh(x W_in + b_in + (r * h) W_hn + b_hn)        (reset_after=False)
        h' = (1 - z) * n + z * h

    PyTorch's ``nn.GRU`` stacks ``weight_ih_l0 [3 d_hidden, d_input]`` in the order ``r, z, n``:
    ``reset_gate.input_transform.weight = W_ih[0:d].T``, ``update_gate ... = W_ih[d:2d].T``,
    ``new_gate ... = W_ih[2d:3d].T`` (same for ``W_hh`` and biases; PyTorch uses ``reset_after``).
    """

    update_gate: GateController
    reset_gate: GateController
    new_gate: GateController
    d_hidden: int
    reset_after: bool = True

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
        wx, bx, wh, bh = fused_gates((self.update_gate, self.reset_gate, self.new_gate))
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
        wh_zr, wh_n = wh.split(2 * d, 1)
        bh_zr, bh_n = bh.split(2 * d, 0) if bh is not None else (None, None)
        outputs = []
        for t in range(seq):
            xz, xr, xn = steps[t].reshape([batch, 3 * d]).split(d, 1)
            hzr = h @ wh_zr
            if bh_zr is not None:
                hzr = hzr + bh_zr
            hz, hr = hzr.split(d, 1)
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
