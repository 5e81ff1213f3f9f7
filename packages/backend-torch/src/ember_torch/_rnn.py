"""The LSTM primitive on torch's own kernel (issue 22): ``torch._VF.lstm``, what ``nn.LSTM`` runs.

With ``residual=True`` the forward runs under ``torch.enable_grad`` on detached leaf copies of the arguments
(Ember's outputs are detached), and the residual is torch's autograd graph of that call, so the backward is one
``torch.autograd.grad`` through the same kernels raw PyTorch's ``loss.backward()`` runs for ``nn.LSTM``. Without
it, the forward runs under ``torch.no_grad``. float16 and bfloat16 go to the contract's composites (as the
normalization kernels, ``_norm.py``)."""

from __future__ import annotations

import warnings
from typing import Any

import torch

from ember.backend.contract import RnnOps

from ._graph import graph_forward, graph_grad

__all__ = ["TorchRnnOps"]

_NATIVE = (torch.float32, torch.float64)
_VF: Any = torch._VF  # type: ignore[attr-defined]


def _run(x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any | None) -> tuple[Any, Any, Any]:
    """``torch._VF.lstm`` of one layer, batch first, on Ember's layout (weights transposed, one bias)."""
    return _run_torch_layout(x, h0, c0, w_x.t().contiguous(), w_h.t().contiguous(), bias)


def _run_torch_layout(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, bias: Any | None) -> tuple[Any, Any, Any]:
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


class TorchRnnOps(RnnOps):
    """``lstm`` and ``lstm_backward`` through ``torch._VF.lstm`` and torch's autograd."""

    def lstm(self, x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any | None,
             residual: bool) -> tuple[Any, Any, Any, Any]:
        if x.dtype not in _NATIVE:
            return super().lstm(x, h0, c0, w_x, w_h, bias, residual)
        if not residual:
            with torch.no_grad():
                return (*_run(x, h0, c0, w_x, w_h, bias), None)
        # the weights' leaves in torch's layout: the kernels' backward then reads them without another copy
        (y, h, c), res = graph_forward(_run_torch_layout, x, h0, c0, w_x.t().contiguous(), w_h.t().contiguous(),
                                       bias)
        return y, h, c, res

    def lstm_backward(self, grad_y: Any | None, grad_h: Any | None, grad_c: Any | None, x: Any, h0: Any, c0: Any,
                      w_x: Any, w_h: Any, bias: Any | None, y: Any, residual: Any) -> tuple[Any, ...]:
        if x.dtype not in _NATIVE:
            return super().lstm_backward(grad_y, grad_h, grad_c, x, h0, c0, w_x, w_h, bias, y, residual)
        leaves, outs = residual
        pairs = [(o, g) for o, g in zip(outs, (grad_y, grad_h, grad_c)) if g is not None]
        inputs = [a for a in leaves if a is not None]
        grads = iter(graph_grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True))
        out = []
        for i, a in enumerate(leaves):
            g = None if a is None else next(grads)
            if g is None:
                out.append(None if a is None else torch.zeros_like(a))
            elif i in (3, 4):
                # the weights' leaves are in torch's layout ([4 d, d_input]): their gradients are transposed back to
                # Ember's and made row-major, else every later op on them (the optimizer's update above all) runs
                # on strided memory
                out.append(g.t().contiguous())
            else:
                out.append(g.contiguous())
        return tuple(out)
