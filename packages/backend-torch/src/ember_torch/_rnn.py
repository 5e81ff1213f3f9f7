"""The LSTM primitive on torch's own kernel (issue 22): ``torch._VF.lstm``, what ``nn.LSTM`` runs.

With ``residual=True`` the forward runs under ``torch.enable_grad`` on detached leaf copies of the arguments
(Ember's outputs are detached), and the residual is torch's autograd graph of that call, so the backward is one
``torch.autograd.grad`` through the same kernels raw PyTorch's ``loss.backward()`` runs for ``nn.LSTM``. Without
it, the forward runs under ``torch.no_grad``. float16 and bfloat16 go to the contract's composites (as the
normalization kernels, ``_norm.py``).

While a step is captured (``ember_torch.compile``) for ``torch.compile`` or on CUDA, the forward and the backward
are each one node of the graph, the custom ops ``ember::lstm`` and ``ember::lstm_backward`` (``_rnn_op.py``; issue
32), which run the same kernel when the graph runs; the residual is then :data:`_OP_RESIDUAL`. A ``mode="capture"``
step on the CPU records ``torch._VF.lstm``'s own aten ops (``_capture_state.RNN_OPS`` off): oneDNN's
``mkldnn_rnn_layer`` and its backward in float32, whose workspace the replay keeps (the graph runs with autograd
on), so no forward runs twice."""

from __future__ import annotations

from typing import Any

import torch

from ember.backend.contract import RnnOps

from . import _capture_state, _rnn_op
from ._graph import graph_forward, graph_grad
from ._rnn_kernel import run_lstm

__all__ = ["TorchRnnOps"]

_NATIVE = (torch.float32, torch.float64)

#: the residual of a captured forward is ``(_OP_RESIDUAL, handle)``: ``ember::lstm_saved_backward`` takes the handle
#: of ``ember::lstm_train`` and the forward's arguments
_OP_RESIDUAL = "ember::lstm_train"


class TorchRnnOps(RnnOps):
    """``lstm`` and ``lstm_backward`` through ``torch._VF.lstm`` and torch's autograd."""

    def lstm(
        self, x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any | None, residual: bool
    ) -> tuple[Any, Any, Any, Any]:
        if x.dtype not in _NATIVE:
            return super().lstm(x, h0, c0, w_x, w_h, bias, residual)
        if _capture_state.ACTIVE[0] > 0 and _capture_state.RNN_OPS[0]:
            if not residual:
                return (*_rnn_op.lstm(x, h0, c0, w_x, w_h, bias), None)
            y, h, c, handle = _rnn_op.lstm_train(x, h0, c0, w_x, w_h, bias)
            return y, h, c, (_OP_RESIDUAL, handle)
        if not residual:
            with torch.no_grad():
                return (*run_lstm(x, h0, c0, w_x.t().contiguous(), w_h.t().contiguous(), bias), None)
        # the weights' leaves in torch's layout: the kernels' backward then reads them without another copy
        (y, h, c), res = graph_forward(run_lstm, x, h0, c0, w_x.t().contiguous(), w_h.t().contiguous(), bias)
        return y, h, c, res

    def lstm_backward(
        self,
        grad_y: Any | None,
        grad_h: Any | None,
        grad_c: Any | None,
        x: Any,
        h0: Any,
        c0: Any,
        w_x: Any,
        w_h: Any,
        bias: Any | None,
        y: Any,
        residual: Any,
    ) -> tuple[Any, ...]:
        if x.dtype not in _NATIVE:
            return super().lstm_backward(grad_y, grad_h, grad_c, x, h0, c0, w_x, w_h, bias, y, residual)
        if residual[0] is _OP_RESIDUAL:  # a forward recorded as ember::lstm_train
            grads = _rnn_op.lstm_saved_backward(residual[1], grad_y, grad_h, grad_c, x, h0, c0, w_x, w_h, bias)
            return (*grads[:5], None if bias is None else grads[5])
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
