"""``StackedLstm``: ``num_layers`` :class:`~ember.nn.Lstm` layers run as one stack (PyTorch's
``nn.LSTM(num_layers=n)``; Burn has no stacked LSTM layer, so the names are PyTorch's)."""

from __future__ import annotations

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_dim, check_float, check_rank, config_error
from ._initializer import AnyInitializer, XavierNormal
from ._lstm import Lstm, LstmConfig, LstmState, fused_weights

__all__ = ["StackedLstmConfig", "StackedLstm"]

_LAYOUT = "[batch, seq_length, d_input]"


@config
class StackedLstmConfig:
    """Configuration of :class:`StackedLstm` (PyTorch's ``nn.LSTM(d_input, d_hidden, num_layers, bias)``, batch
    first, one direction, no dropout between layers).

    Args:
        d_input: input features of the first layer.
        d_hidden: hidden (and output) features of every layer; layers above the first read ``d_hidden`` features.
        num_layers: how many layers are stacked (``>= 1``).
        bias: learn biases in every layer (default ``True``).
        initializer: of every layer's weights, as :class:`LstmConfig` (default ``XavierNormal(gain=1)``, Burn's
            default for ``Lstm``).
    """

    d_input: int
    d_hidden: int
    num_layers: int
    bias: bool = True
    initializer: AnyInitializer = XavierNormal(gain=1.0)

    def init(self, device: Device) -> StackedLstm:
        """A new :class:`StackedLstm` of ``num_layers`` independently initialized :class:`Lstm` layers.

        Raises:
            ConfigError: ``num_layers``, ``d_input`` or ``d_hidden`` below 1.
        """
        if self.num_layers < 1:
            raise config_error("StackedLstmConfig", f"num_layers must be >= 1, got {self.num_layers}; for no "
                                                    "recurrent layer leave the StackedLstm out.")
        if self.d_input < 1 or self.d_hidden < 1:
            raise config_error("StackedLstmConfig",
                               f"d_input ({self.d_input}) and d_hidden ({self.d_hidden}) must be >= 1.")
        return StackedLstm(layers=[
            LstmConfig(self.d_input if k == 0 else self.d_hidden, self.d_hidden, self.bias, self.initializer)
            .init(device)
            for k in range(self.num_layers)
        ])


class StackedLstm(Module):
    """``num_layers`` unidirectional LSTM layers over batch-first sequences, each reading the one below's output
    (PyTorch's ``nn.LSTM(num_layers=n, batch_first=True)``; Hochreiter & Schmidhuber 1997).

    ``layers[k]`` is an :class:`Lstm` (its record is an ``Lstm`` record: ``layers.0.weight_ih`` ...; layer 0 reads
    ``d_input`` features, the others ``d_hidden``), so the result equals running the layers one after the other;
    but the whole stack is one :func:`ember.tensor.functional.lstm_stack` call, one autodiff node, which torch runs
    as one ``torch._VF.lstm`` call over all layers (as ``nn.LSTM`` does; cuDNN overlaps the layers on a GPU) and the
    other backends as their single-layer kernel per layer.

    There is no dropout between layers (PyTorch's ``dropout`` argument is not offered); put the layers in a list
    with :class:`Dropout` between them for that. PyTorch's ``nn.LSTM(num_layers=n)`` state dicts load into it with
    ``ember_import`` (``weight_ih_l{k}`` -> ``layers.{k}.weight_ih``, transposed).
    """

    layers: list[Lstm]

    def forward(self, batched_input: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        """Run the sequence through every layer.

        Args:
            batched_input: Float ``[batch, seq_length, d_input]``.
            state: the initial state, ``cell`` and ``hidden`` ``[num_layers, batch, d_hidden]`` (PyTorch's ``h_0``
                / ``c_0`` layout; index ``k`` for layer ``k``), zeros when ``None``.

        Returns:
            ``(output [batch, seq_length, d_hidden], final LstmState)``: ``output`` holds the last layer's every
            hidden state; the state's ``cell`` / ``hidden`` are ``[num_layers, batch, d_hidden]`` (PyTorch's
            ``c_n`` / ``h_n``).

        Raises:
            KindError / ShapeError: a non-Float input, a wrong rank, ``d_input`` or state shape.
        """
        layer = "StackedLstm"
        x = check_float(layer, batched_input)
        check_rank(layer, x, 3, _LAYOUT)
        weights = [fused_weights(lstm) for lstm in self.layers]
        if not weights:
            raise ShapeError(f"{layer}: it holds no layer; build it with StackedLstmConfig(..., num_layers >= 1).")
        check_dim(layer, x, 2, weights[0][0].shape[0], _LAYOUT, "d_input")
        shape = [len(weights), x.shape[0], self.layers[0].d_hidden]
        if state is None:
            h = c = Tensor.zeros(shape, x.device)
        else:
            h, c = state.hidden, state.cell
            for name, st in (("state.hidden", h), ("state.cell", c)):
                if list(st.shape) != shape:
                    raise ShapeError(f"{layer}: {name} must have shape [num_layers, batch, d_hidden] = {shape}, got "
                                     f"{list(st.shape)}; stack the layers' states on a new first dim.")
        y, h, c = M.lstm_stack(x, h, c, weights)
        return y, LstmState(cell=c, hidden=h)
