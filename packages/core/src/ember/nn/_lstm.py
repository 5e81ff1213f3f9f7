"""``Lstm`` and ``BiLstm`` (Burn's ``nn::Lstm`` / ``nn::BiLstm``; Hochreiter & Schmidhuber 1997)."""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_dim, check_float, check_rank, config_error
from ._initializer import AnyInitializer, XavierNormal
from ._rnn_gate import GateController, fused_gates

__all__ = ["LstmConfig", "Lstm", "LstmState", "BiLstmConfig", "BiLstm"]

_LAYOUT = "[batch, seq_length, d_input]"


@dataclass(frozen=True)
class LstmState:
    """The state of an LSTM (Burn's ``LstmState``): ``cell`` and ``hidden``, each ``[batch, d_hidden]``
    (``[2, batch, d_hidden]`` for :class:`BiLstm`: forward direction first)."""

    cell: Tensor
    hidden: Tensor


@config
class LstmConfig:
    """Configuration of :class:`Lstm` (Burn's ``LstmConfig``).

    Args:
        d_input: input features.
        d_hidden: hidden (and output) features.
        bias: learn biases (Burn requires it; default ``True`` here).
        initializer: default ``XavierNormal(gain=1)`` (Burn's default).
    """

    d_input: int
    d_hidden: int
    bias: bool = True
    initializer: AnyInitializer = XavierNormal(gain=1.0)

    def init(self, device: Device) -> Lstm:
        """A new :class:`Lstm`. Raises ConfigError for a size below 1."""
        if self.d_input < 1 or self.d_hidden < 1:
            raise config_error("LstmConfig", f"d_input ({self.d_input}) and d_hidden ({self.d_hidden}) must be >= 1.")

        def gate() -> GateController:
            return GateController.new(self.d_input, self.d_hidden, self.bias, self.initializer, device)

        return Lstm(input_gate=gate(), forget_gate=gate(), output_gate=gate(), cell_gate=gate(),
                    d_hidden=self.d_hidden)


class Lstm(Module):
    """A unidirectional LSTM over batch-first sequences (Burn's ``Lstm``).

    Gate layout (Burn's): four :class:`GateController` s ``input_gate``, ``forget_gate``,
    ``output_gate``, ``cell_gate``, each with ``input_transform`` (``Linear [d_input, d_hidden]``)
    and ``hidden_transform`` (``Linear [d_hidden, d_hidden]``). Per step::

        i = sigmoid(x W_ii + b_ii + h W_hi + b_hi)      (input_gate)
        f = sigmoid(x W_if + b_if + h W_hf + b_hf)      (forget_gate)
        g = tanh   (x W_ig + b_ig + h W_hg + b_hg)      (cell_gate)
        o = sigmoid(x W_io + b_io + h W_ho + b_ho)      (output_gate)
        c' = f * c + i * g ;  h' = o * tanh(c')

    PyTorch's ``nn.LSTM`` stacks the same weights as ``weight_ih_l0 [4 d_hidden, d_input]`` in the
    order ``i, f, g, o``; importing means ``input_gate.input_transform.weight = W_ih[0:d].T``,
    ``forget_gate ... = W_ih[d:2d].T``, ``cell_gate ... = W_ih[2d:3d].T``, ``output_gate ... =
    W_ih[3d:4d].T`` (same for ``W_hh`` and the biases).

    The gates are fused (their weights concatenated in PyTorch's order, so gradients reach every gate's
    parameters) and the whole sequence is one :func:`ember.tensor.functional.lstm` call: one backend kernel (the
    backend's own where it has one: ``torch._VF.lstm``, numpy's, jax's ``lax.scan``) and one autodiff node.
    """

    input_gate: GateController
    forget_gate: GateController
    output_gate: GateController
    cell_gate: GateController
    d_hidden: int

    def forward(self, batched_input: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        """Run the sequence.

        Args:
            batched_input: Float ``[batch, seq_length, d_input]``.
            state: the initial state, ``cell`` and ``hidden`` ``[batch, d_hidden]`` (zeros when ``None``).

        Returns:
            ``(output [batch, seq_length, d_hidden], final LstmState)``; ``output`` holds every hidden state.

        Raises:
            KindError / ShapeError: a non-Float input, a wrong rank, ``d_input`` or state shape.
        """
        return _run("Lstm", self, batched_input, state, reverse=False)


def _run(layer: str, lstm: Lstm, x: Tensor, state: LstmState | None, reverse: bool) -> tuple[Tensor, LstmState]:
    check_float(layer, x)
    check_rank(layer, x, 3, _LAYOUT)
    d_in, d = lstm.input_gate.input_transform.weight.val().shape[0], lstm.d_hidden
    check_dim(layer, x, 2, d_in, _LAYOUT, "d_input")
    batch = x.shape[0]
    if state is None:
        h = Tensor.zeros([batch, d], x.device)
        c = h
    else:
        h, c = state.hidden, state.cell
        for name, st in (("state.hidden", h), ("state.cell", c)):
            if st.shape != (batch, d):
                raise ShapeError(f"{layer}: {name} must have shape [batch, d_hidden] = {[batch, d]}, "
                                 f"got {list(st.shape)}.")
    # one lstm primitive call (one Autodiff node) for the whole sequence; its weights take the gates in PyTorch's
    # order i, f, g, o; the reverse direction runs on the time-flipped sequence
    wx, bx, wh, bh = fused_gates((lstm.input_gate, lstm.forget_gate, lstm.cell_gate, lstm.output_gate))
    bias = bx if bh is None else (bh if bx is None else bx + bh)
    if reverse:
        x = x.flip([1])
    y, h, c = M.lstm(x, h, c, wx, wh, bias)
    if reverse:
        y = y.flip([1])
    return y, LstmState(cell=c, hidden=h)


@config
class BiLstmConfig:
    """Configuration of :class:`BiLstm` (Burn's ``BiLstmConfig``); fields as :class:`LstmConfig`."""

    d_input: int
    d_hidden: int
    bias: bool = True
    initializer: AnyInitializer = XavierNormal(gain=1.0)

    def init(self, device: Device) -> BiLstm:
        """A new :class:`BiLstm` (two independent :class:`Lstm`). Raises ConfigError for a size below 1."""
        cfg = LstmConfig(self.d_input, self.d_hidden, self.bias, self.initializer)
        return BiLstm(forward_lstm=cfg.init(device), reverse_lstm=cfg.init(device), d_hidden=self.d_hidden)


class BiLstm(Module):
    """A bidirectional LSTM (Burn's ``BiLstm``): ``forward_lstm`` reads the sequence left to right,
    ``reverse_lstm`` right to left; their outputs are concatenated on the feature dim (forward first),
    as PyTorch's ``nn.LSTM(bidirectional=True)`` (whose ``*_reverse`` weights map to ``reverse_lstm``).
    """

    forward_lstm: Lstm
    reverse_lstm: Lstm
    d_hidden: int

    def forward(self, batched_input: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        """Run both directions.

        Args:
            batched_input: Float ``[batch, seq_length, d_input]``.
            state: initial ``cell`` / ``hidden`` ``[2, batch, d_hidden]`` (index 0 forward, 1 reverse),
                zeros when ``None``.

        Returns:
            ``(output [batch, seq_length, 2 * d_hidden], LstmState)`` with ``cell`` / ``hidden``
            ``[2, batch, d_hidden]`` (the forward direction's state after the last step, the reverse
            one's after the first).
        """
        fs = rs = None
        if state is not None:
            d = self.d_hidden
            for name, t in (("state.hidden", state.hidden), ("state.cell", state.cell)):
                if t.rank != 3 or t.shape[0] != 2 or t.shape[2] != d:
                    raise ShapeError(f"BiLstm: {name} must have shape [2, batch, d_hidden={d}], got {list(t.shape)}.")
            hf, hr = state.hidden.split(1, 0)
            cf, cr = state.cell.split(1, 0)
            fs = LstmState(cell=cf.squeeze_dim(0), hidden=hf.squeeze_dim(0))
            rs = LstmState(cell=cr.squeeze_dim(0), hidden=hr.squeeze_dim(0))
        out_f, st_f = _run("BiLstm", self.forward_lstm, batched_input, fs, reverse=False)
        out_r, st_r = _run("BiLstm", self.reverse_lstm, batched_input, rs, reverse=True)
        return Tensor.cat([out_f, out_r], 2), LstmState(
            cell=Tensor.stack([st_f.cell, st_r.cell], 0), hidden=Tensor.stack([st_f.hidden, st_r.hidden], 0)
        )
