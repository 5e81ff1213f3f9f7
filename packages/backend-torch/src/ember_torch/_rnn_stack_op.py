"""The stacked LSTM as opaque graph nodes while a step is captured (issue 32): ``ember::lstm_stack_train`` and
``ember::lstm_stack_saved_backward`` (``ember::lstm_stack`` and ``ember::lstm_stack_backward``, the pure pair), the
counterparts of ``_rnn_op.py``'s single-layer ops for ``RnnOps.lstm_stack``: one node for all layers, whose real
implementation is one ``torch._VF.lstm`` call over the stack (:func:`~._rnn_kernel.run_lstm_stack`, what
``nn.LSTM(num_layers=n)`` runs; cuDNN overlaps the layers). The weights travel as lists in Ember's layout (``w_x[k]
[d_in_k, 4 d]``, ``w_h[k] [d, 4 d]``, ``bias[k] [4 d]``, or an empty ``bias``
for none: an op takes no optional list), the states ``[num_layers, batch, d]``.

A training step's forward keeps torch's autograd graph under a handle in ``_rnn_op``'s table (:func:`~._rnn_op.keep`,
:func:`~._rnn_op.take`: the same bound, the same fallback to running the forward again when it is gone), on copies of
the arguments, for the reasons given there.
"""

from __future__ import annotations

from typing import Any

import torch

from ._graph import input_grads
from ._rnn_kernel import run_lstm_stack
from ._rnn_op import keep, recorded, take

__all__ = ["lstm_stack", "lstm_stack_backward", "lstm_stack_saved_backward", "lstm_stack_train"]


def _torch_layout(ws: Any, clone: bool) -> list[Any]:
    """Weights ``[d_in, 4 d]`` as torch's contiguous ``[4 d, d_in]`` leaves (copies when ``clone``)."""
    if clone:
        return [w.detach().t().clone(memory_format=torch.contiguous_format).requires_grad_() for w in ws]
    return [w.detach().t().contiguous().requires_grad_() for w in ws]


def _leaves(x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any, clone: bool) -> list[Any]:
    """Torch's leaves of a recorded forward: ``[x, h0, c0, *w_ih, *w_hh, *bias]``."""
    plain = [a.detach().clone() if clone else a.detach() for a in (x, h0, c0, *bias)]
    xs = [a.requires_grad_() for a in plain]
    return [*xs[:3], *_torch_layout(w_x, clone), *_torch_layout(w_h, clone), *xs[3:]]


def _run(leaves: list[Any], layers: int, bias: bool) -> tuple[Any, Any, Any]:
    w_ih, w_hh = leaves[3 : 3 + layers], leaves[3 + layers : 3 + 2 * layers]
    return run_lstm_stack(leaves[0], leaves[1], leaves[2], w_ih, w_hh, leaves[3 + 2 * layers :] if bias else None)


@torch.library.custom_op("ember::lstm_stack", mutates_args=())
def lstm_stack(
    x: torch.Tensor,
    h0: torch.Tensor,
    c0: torch.Tensor,
    w_x: list[torch.Tensor],
    w_h: list[torch.Tensor],
    bias: list[torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(y [batch, seq, d], h_n [num_layers, batch, d], c_n [num_layers, batch, d])``, row-major, of the stacked
    LSTM (``RnnOps.lstm_stack``)."""
    with torch.no_grad():
        y, h, c = run_lstm_stack(
            x, h0, c0, [w.t().contiguous() for w in w_x], [w.t().contiguous() for w in w_h], bias or None
        )
    return y.contiguous(), h.contiguous(), c.contiguous()


@lstm_stack.register_fake
def _lstm_stack_fake(x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any) -> tuple[Any, Any, Any]:
    n, seq, _ = x.shape
    return x.new_empty((n, seq, w_h[0].shape[0])), h0.new_empty(h0.shape), c0.new_empty(c0.shape)


@torch.library.custom_op("ember::lstm_stack_backward", mutates_args=())
def lstm_stack_backward(
    grad_y: torch.Tensor | None,
    grad_h: torch.Tensor | None,
    grad_c: torch.Tensor | None,
    x: torch.Tensor,
    h0: torch.Tensor,
    c0: torch.Tensor,
    w_x: list[torch.Tensor],
    w_h: list[torch.Tensor],
    bias: list[torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """``(grad_x, grad_h0, grad_c0, grad_w_x, grad_w_h, grad_bias)`` of :func:`lstm_stack`, row-major and shaped
    like the arguments (the last three lists, ``grad_bias`` empty when ``bias`` is); a ``None`` output
    gradient is zero. Runs the forward again (the pure pair); a training step records
    :func:`lstm_stack_saved_backward` instead."""
    leaves = _leaves(x, h0, c0, w_x, w_h, bias, clone=False)
    outs = recorded(_run, leaves, len(w_x), bool(bias))
    return _grads(outs, leaves, (grad_y, grad_h, grad_c), len(w_x))


def _grads(outs: Any, inputs: list[Any], grads_out: tuple[Any, Any, Any], layers: int) -> tuple[Any, ...]:
    """The gradients of a recorded forward (``outs`` of the leaves ``inputs``, :func:`_leaves`' order), in the op's
    layout."""
    out = input_grads(outs, inputs, grads_out, range(3, 3 + 2 * layers))  # the weights back to Ember's layout
    return out[0], out[1], out[2], out[3 : 3 + layers], out[3 + layers : 3 + 2 * layers], out[3 + 2 * layers :]


@lstm_stack_backward.register_fake
def _lstm_stack_backward_fake(
    grad_y: Any, grad_h: Any, grad_c: Any, x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any
) -> tuple[Any, ...]:
    like = [[a.new_empty(a.shape) for a in ws] for ws in (w_x, w_h, bias)]
    return (x.new_empty(x.shape), h0.new_empty(h0.shape), c0.new_empty(c0.shape), *like)


@torch.library.custom_op("ember::lstm_stack_train", mutates_args=())
def lstm_stack_train(
    x: torch.Tensor,
    h0: torch.Tensor,
    c0: torch.Tensor,
    w_x: list[torch.Tensor],
    w_h: list[torch.Tensor],
    bias: list[torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`lstm_stack` whose forward keeps torch's autograd graph for :func:`lstm_stack_saved_backward`:
    ``(y, h_n, c_n, handle)``, ``handle`` an int64 scalar on the CPU naming the kept forward (``_rnn_op.keep``;
    the kept graph owns copies of the arguments, the outputs are copies)."""
    leaves = _leaves(x, h0, c0, w_x, w_h, bias, clone=True)
    return keep(leaves, recorded(_run, leaves, len(w_x), bool(bias)))


@lstm_stack_train.register_fake
def _lstm_stack_train_fake(x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any) -> tuple[Any, Any, Any, Any]:
    return (*_lstm_stack_fake(x, h0, c0, w_x, w_h, bias), torch.empty((), dtype=torch.int64, device="cpu"))


@torch.library.custom_op("ember::lstm_stack_saved_backward", mutates_args=())
def lstm_stack_saved_backward(
    handle: torch.Tensor,
    grad_y: torch.Tensor | None,
    grad_h: torch.Tensor | None,
    grad_c: torch.Tensor | None,
    x: torch.Tensor,
    h0: torch.Tensor,
    c0: torch.Tensor,
    w_x: list[torch.Tensor],
    w_h: list[torch.Tensor],
    bias: list[torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """:func:`lstm_stack_backward` of the forward :func:`lstm_stack_train` kept under ``handle`` (taken and dropped
    here); a forward no longer kept is run again from the arguments, passed again for that."""
    entry = take(handle)
    if entry is None:
        return lstm_stack_backward(grad_y, grad_h, grad_c, x, h0, c0, w_x, w_h, bias)  # type: ignore[no-any-return]
    inputs, outs = entry
    return _grads(outs, inputs, (grad_y, grad_h, grad_c), len(w_x))


@lstm_stack_saved_backward.register_fake
def _lstm_stack_saved_backward_fake(handle: Any, *args: Any) -> tuple[Any, ...]:
    return _lstm_stack_backward_fake(*args)
