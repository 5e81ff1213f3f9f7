"""One layer of ``torch._VF.lstm`` (what ``nn.LSTM`` runs) on torch's weight layout: the call shared by the eager
LSTM kernel (``_rnn.py``) and the captured step's custom ops (``_rnn_op.py``)."""

from __future__ import annotations

import warnings
from typing import Any

import torch

__all__ = ["run_lstm"]

_VF: Any = torch._VF  # type: ignore[attr-defined]


def run_lstm(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, bias: Any | None) -> tuple[Any, Any, Any]:
    """``torch._VF.lstm`` of one layer, batch first, on torch's weight layout (``w_ih [4 d, d_input]``,
    ``w_hh [4 d, d]``, contiguous: cuDNN packs them with views, and the CPU kernels copy strided ones, in the
    forward and again in the backward) and one bias."""
    params = [w_ih, w_hh]
    if bias is not None:
        params += [bias, torch.zeros_like(bias, requires_grad=False)]
    hx = (h0.unsqueeze(0), c0.unsqueeze(0))
    if not x.is_cuda:
        y, h, c = _VF.lstm(x, hx, params, bias is not None, 1, 0.0, True, False, True)
        return y, h[0], c[0]
    with warnings.catch_warnings():  # cuDNN warns that the weights are not one flat buffer (nn.LSTM's): they never are
        warnings.filterwarnings("ignore", "RNN module weights are not part of single contiguous chunk")
        y, h, c = _VF.lstm(x, hx, params, bias is not None, 1, 0.0, True, False, True)
    return y, h[0], c[0]
