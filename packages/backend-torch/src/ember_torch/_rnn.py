"""The LSTM primitives on torch's own kernel (issue 22): ``torch._VF.lstm``, what ``nn.LSTM`` runs; ``lstm_stack``
(issue 32) is one such call over all layers, as ``nn.LSTM(num_layers=n)`` makes (cuDNN overlaps the layers).

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
on), so no forward runs twice. The stack's captured ops are ``ember::lstm_stack_train`` /
``ember::lstm_stack_saved_backward`` (``_rnn_stack_op.py``); a stack with a bias on some layers only (which one
``torch._VF.lstm`` call cannot take) runs the contract's default, layer by layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ember.backend.contract import RnnOps

from . import _capture_state, _rnn_op, _rnn_stack_op
from ._graph import graph_forward, input_grads
from ._rnn_kernel import run_lstm, run_lstm_stack

__all__ = ["TorchRnnOps"]

_NATIVE = (torch.float32, torch.float64)

#: the residual of a captured forward is ``(_OP_RESIDUAL, handle)``: ``ember::lstm_saved_backward`` takes the handle
#: of ``ember::lstm_train`` and the forward's arguments
_OP_RESIDUAL = "ember::lstm_train"
_STACK_OP_RESIDUAL = "ember::lstm_stack_train"


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
        # the weights' leaves (3, 4) are in torch's layout ([4 d, d_input]): their gradients come back in Ember's
        return tuple(input_grads(outs, leaves, (grad_y, grad_h, grad_c), (3, 4)))

    def lstm_stack(
        self, x: Any, h0: Any, c0: Any, weights: Sequence[tuple[Any, Any, Any | None]], residual: bool
    ) -> tuple[Any, Any, Any, Any]:
        biased = {b is not None for _, _, b in weights}
        if x.dtype not in _NATIVE or len(biased) > 1:
            return super().lstm_stack(x, h0, c0, weights, residual)
        w_x, w_h = [w[0] for w in weights], [w[1] for w in weights]
        bias = [w[2] for w in weights] if True in biased else None
        if _capture_state.ACTIVE[0] > 0 and _capture_state.RNN_OPS[0]:
            if not residual:
                return (*_rnn_stack_op.lstm_stack(x, h0, c0, w_x, w_h, bias or []), None)
            y, h, c, handle = _rnn_stack_op.lstm_stack_train(x, h0, c0, w_x, w_h, bias or [])
            return y, h, c, (_STACK_OP_RESIDUAL, handle)
        w_ih = [w.t().contiguous() for w in w_x]
        w_hh = [w.t().contiguous() for w in w_h]
        if not residual:
            with torch.no_grad():
                return (*run_lstm_stack(x, h0, c0, w_ih, w_hh, bias), None)
        layers = len(weights)

        def run(*leaves: Any) -> tuple[Any, Any, Any]:
            ws = leaves[3:]
            return run_lstm_stack(
                leaves[0],
                leaves[1],
                leaves[2],
                ws[:layers],
                ws[layers : 2 * layers],
                None if bias is None else ws[2 * layers :],
            )

        (y, h, c), res = graph_forward(run, x, h0, c0, *w_ih, *w_hh, *(bias or ()))
        return y, h, c, res

    def lstm_stack_backward(
        self,
        grad_y: Any | None,
        grad_h: Any | None,
        grad_c: Any | None,
        x: Any,
        h0: Any,
        c0: Any,
        weights: Sequence[tuple[Any, Any, Any | None]],
        y: Any,
        residual: Any,
    ) -> tuple[Any, Any, Any, list[tuple[Any, Any, Any | None]]]:
        if x.dtype not in _NATIVE or len({b is not None for _, _, b in weights}) > 1:
            return super().lstm_stack_backward(grad_y, grad_h, grad_c, x, h0, c0, weights, y, residual)
        layers = len(weights)
        if residual[0] is _STACK_OP_RESIDUAL:  # a forward recorded as ember::lstm_stack_train
            w_x, w_h = [w[0] for w in weights], [w[1] for w in weights]
            bias = [] if weights[0][2] is None else [w[2] for w in weights]
            gx, gh, gc, gwx, gwh, gb = _rnn_stack_op.lstm_stack_saved_backward(
                residual[1], grad_y, grad_h, grad_c, x, h0, c0, w_x, w_h, bias
            )
            return gx, gh, gc, [(gwx[k], gwh[k], gb[k] if gb else None) for k in range(layers)]
        leaves, outs = residual
        out = input_grads(outs, leaves, (grad_y, grad_h, grad_c), range(3, 3 + 2 * layers))
        gw, gb = out[3 : 3 + 2 * layers], out[3 + 2 * layers :]
        return out[0], out[1], out[2], [(gw[k], gw[layers + k], gb[k] if gb else None) for k in range(layers)]
