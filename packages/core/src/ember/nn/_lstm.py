"""``Lstm`` and ``BiLstm`` (Burn's ``nn::Lstm`` / ``nn::BiLstm``; Hochreiter & Schmidhuber 1997)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_dim, check_float, check_rank, config_error
from ._initializer import AnyInitializer, XavierNormal
from ._rnn_gate import GateController, fuse_gate_record, gate_copy, init_fused

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

        wx, wh, bx, bh = init_fused(self.initializer, self.d_input, self.d_hidden, 4, self.bias, device)
        return Lstm(weight_ih=wx, weight_hh=wh, bias_ih=bx, bias_hh=bh, d_hidden=self.d_hidden)


#: the gates' order in the fused weights (PyTorch's): input, forget, cell (g), output
GATES = ("input_gate", "forget_gate", "cell_gate", "output_gate")


class Lstm(Module):
    """A unidirectional LSTM over batch-first sequences (Burn's ``Lstm``).

    Gate layout (fused, PyTorch's gate order ``i, f, g, o``): ``weight_ih [d_input, 4 d_hidden]``,
    ``weight_hh [d_hidden, 4 d_hidden]``, ``bias_ih`` / ``bias_hh [4 d_hidden]`` (``None`` without bias); column
    block ``k`` (``[:, k d : (k+1) d]``) belongs to gate ``k``. Per step::

        [i f g o] = x @ weight_ih + bias_ih + h @ weight_hh + bias_hh     (one product for all four gates)
        i, f, o = sigmoid(.) ;  g = tanh(.)
        c' = f * c + i * g ;  h' = o * tanh(c')

    The whole sequence is one :func:`ember.tensor.functional.lstm` call: one backend kernel (``torch._VF.lstm``,
    numpy's, jax's ``lax.scan``) and one autodiff node.

    Other layouts: PyTorch's ``nn.LSTM`` stores the transposes (``weight_ih_l0 [4 d_hidden, d_input]``, same gate
    order); ``ember_import`` transposes them. Burn's ``Lstm`` (and Ember's records before the fused layout) keep
    one ``GateController`` per gate (``input_gate``, ``forget_gate``, ``output_gate``, ``cell_gate``, each
    ``input_transform`` / ``hidden_transform`` ``Linear``): :meth:`load_record` / :meth:`load_file` accept such
    records and concatenate the blocks (gate ``X``'s ``input_transform.weight`` is ``weight_ih``'s block of
    ``X``). The per-gate attributes (``lstm.input_gate`` ...) remain as deprecated read-only copies.
    """

    weight_ih: Param
    weight_hh: Param
    bias_ih: Param | None = None
    bias_hh: Param | None = None
    d_hidden: int

    @staticmethod
    def __ember_record_upgrade__(node: dict[str, Any]) -> dict[str, Any]:
        """A per-gate (Burn / older Ember) record in the fused layout (see :func:`fuse_gate_record`)."""
        return fuse_gate_record(node, GATES)

    @property
    def input_gate(self) -> GateController:
        """Deprecated: a copy of the input gate's block (``i``) as a ``GateController``."""
        return gate_copy(self, 0, "Lstm", "input_gate")

    @property
    def forget_gate(self) -> GateController:
        """Deprecated: a copy of the forget gate's block (``f``) as a ``GateController``."""
        return gate_copy(self, 1, "Lstm", "forget_gate")

    @property
    def cell_gate(self) -> GateController:
        """Deprecated: a copy of the cell gate's block (``g``) as a ``GateController``."""
        return gate_copy(self, 2, "Lstm", "cell_gate")

    @property
    def output_gate(self) -> GateController:
        """Deprecated: a copy of the output gate's block (``o``) as a ``GateController``."""
        return gate_copy(self, 3, "Lstm", "output_gate")

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


def fused_weights(lstm: Lstm) -> tuple[Tensor, Tensor, Tensor | None]:
    """``(w_x, w_h, bias)`` of ``lstm`` for :func:`ember.tensor.functional.lstm`: ``weight_ih``, ``weight_hh`` and
    ``bias_ih + bias_hh`` (the one that is there, or ``None``)."""
    biases = [b.val() for b in (lstm.bias_ih, lstm.bias_hh) if b is not None]
    bias = biases[0] + biases[1] if len(biases) == 2 else biases[0] if biases else None
    return lstm.weight_ih.val(), lstm.weight_hh.val(), bias


def _run(layer: str, lstm: Lstm, x: Tensor, state: LstmState | None, reverse: bool) -> tuple[Tensor, LstmState]:
    check_float(layer, x)
    check_rank(layer, x, 3, _LAYOUT)
    wx, wh = lstm.weight_ih.val(), lstm.weight_hh.val()
    d_in, d = wx.shape[0], lstm.d_hidden
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
    # one lstm primitive call (one Autodiff node) for the whole sequence; the reverse direction runs on the
    # time-flipped sequence
    _, _, bias = fused_weights(lstm)
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
