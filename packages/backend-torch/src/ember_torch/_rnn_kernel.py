"""``torch._VF.lstm`` (what ``nn.LSTM`` runs) on torch's weight layout, one layer or a stack of layers in one call:
the calls shared by the eager LSTM kernels (``_rnn.py``) and the captured step's custom ops (``_rnn_op.py``,
``_rnn_stack_op.py``)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["run_lstm", "run_lstm_stack"]

_VF: Any = torch._VF  # type: ignore[attr-defined]


def run_lstm(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, bias: Any | None) -> tuple[Any, Any, Any]:
    """``torch._VF.lstm`` of one layer, batch first, on torch's weight layout (``w_ih [4 d, d_input]``,
    ``w_hh [4 d, d]``, contiguous: cuDNN packs them with views, and the CPU kernels copy strided ones, in the
    forward and again in the backward) and one bias."""
    y, h, c = run_lstm_stack(x, h0.unsqueeze(0), c0.unsqueeze(0), [w_ih], [w_hh], None if bias is None else [bias])
    return y, h[0], c[0]


def run_lstm_stack(
    x: Any, h0: Any, c0: Any, w_ih: Sequence[Any], w_hh: Sequence[Any], bias: Sequence[Any] | None
) -> tuple[Any, Any, Any]:
    """One ``torch._VF.lstm`` call over ``len(w_ih)`` stacked layers (``nn.LSTM(num_layers=n)``'s call, no
    dropout), batch first: ``h0``, ``c0`` ``[num_layers, batch, d]``; per layer ``w_ih[k] [4 d, d_in_k]`` and
    ``w_hh[k] [4 d, d]`` in torch's layout (contiguous, as for :func:`run_lstm`) and one bias ``[4 d]`` (torch's
    second bias is zeros), or no biases at all. Returns ``(y, h_n, c_n)``, the states ``[num_layers, batch, d]``."""
    params: list[Any] = []
    for k in range(len(w_ih)):
        params += [w_ih[k], w_hh[k]]
        if bias is not None:
            params += [bias[k], torch.zeros_like(bias[k], requires_grad=False)]
    args = (x, (h0, c0), params, bias is not None, len(w_ih), 0.0, True, False, True)
    if not x.is_cuda:
        return tuple(_VF.lstm(*args))  # type: ignore[return-value]
    with warnings.catch_warnings():  # cuDNN warns that the weights are not one flat buffer (nn.LSTM's): they never are
        warnings.filterwarnings("ignore", "RNN module weights are not part of single contiguous chunk")
        return tuple(_VF.lstm(*args))  # type: ignore[return-value]
