"""The LSTM as opaque graph nodes while a step is captured (issue 32): ``ember::lstm_train`` and
``ember::lstm_saved_backward`` (``ember::lstm`` and ``ember::lstm_backward``, the pure pair), custom ops
(``torch.library.custom_op``) on Ember's layout (``w_x [d_input, 4 d]``, ``w_h [d, 4 d]``, one bias ``[4 d]``),
float32 and float64 (float16 and bfloat16 take the contract's composite), the same code on every device.

A step captured for ``torch.compile``, or on CUDA (``_compile.py``, ``_kernels_for``), records each op as one
node, whose shapes come from its fake implementation; the real implementation runs when the graph runs (replayed
as it is, or called from AOTAutograd's or inductor's generated code), with torch's own kernels:
``torch._VF.lstm`` (oneDNN's on the CPU, cuDNN's on CUDA, chosen by torch at that call). So inductor never sees
the LSTM's unrolled cells (thousands of ops for the benchmark's LSTM), and the step keeps the eager step's kernels.

A node's outputs are plain tensors, so the residual cannot travel as torch's autograd graph (what the eager kernel
keeps, ``_rnn.py``). A training step's forward is :func:`lstm_train`: it runs the kernel under autograd, keeps that
graph (with the kernel's own residual, oneDNN's workspace or cuDNN's reserve) in :data:`_SAVED` under a new handle,
and returns the handle as an int64 scalar; :func:`lstm_saved_backward` takes the graph by its handle, so a step runs
the forward once, as eager ``loss.backward()`` does. What is kept is bounded (:data:`SAVED_MAX`) and never needed
for correctness: a backward whose forward is gone runs it again (:func:`lstm_backward`, the pure pair with
:func:`lstm`, which a step without a gradient records). The kept graph owns copies of the forward's arguments (a
compiled graph writes buffers without torch's version counters and may reuse an argument's buffer once the forward
has run), and the op's outputs are copies too (the kernel keeps its own ``y``). Inside CUDA graphs
(``mode="reduce-overhead"``) these ops are untested.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

from ._graph import input_grads
from ._rnn_kernel import run_lstm

__all__ = ["SAVED_MAX", "keep", "lstm", "lstm_backward", "lstm_saved_backward", "lstm_train", "recorded", "take"]


@torch.library.custom_op("ember::lstm", mutates_args=())
def lstm(
    x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, w_x: torch.Tensor, w_h: torch.Tensor, bias: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(y [batch, seq, d], h_n [batch, d], c_n [batch, d])``, row-major, of one LSTM layer (``RnnOps.lstm``)."""
    with torch.no_grad():
        y, h, c = run_lstm(x, h0, c0, w_x.t().contiguous(), w_h.t().contiguous(), bias)
    return y.contiguous(), h.contiguous(), c.contiguous()


@lstm.register_fake
def _lstm_fake(x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any) -> tuple[Any, Any, Any]:
    n, seq, _ = x.shape
    d = w_h.shape[0]
    return x.new_empty((n, seq, d)), x.new_empty((n, d)), x.new_empty((n, d))


@torch.library.custom_op("ember::lstm_backward", mutates_args=())
def lstm_backward(
    grad_y: torch.Tensor | None,
    grad_h: torch.Tensor | None,
    grad_c: torch.Tensor | None,
    x: torch.Tensor,
    h0: torch.Tensor,
    c0: torch.Tensor,
    w_x: torch.Tensor,
    w_h: torch.Tensor,
    bias: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(grad_x, grad_h0, grad_c0, grad_w_x, grad_w_h, grad_bias)`` of :func:`lstm`, row-major and shaped like the
    arguments (``grad_bias`` is empty, shape ``[0]``, when ``bias`` is ``None``: an op returns tensors only); a
    ``None`` output gradient is zero."""
    leaves = [a.detach().requires_grad_() for a in (x, h0, c0)]
    w_ih = w_x.detach().t().contiguous().requires_grad_()  # torch's layout: the kernels read it without a copy
    w_hh = w_h.detach().t().contiguous().requires_grad_()
    b = None if bias is None else bias.detach().requires_grad_()
    inputs = [*leaves, w_ih, w_hh] + ([] if b is None else [b])
    return _grads(_forward_with_grad(leaves, w_ih, w_hh, b), inputs, (grad_y, grad_h, grad_c), x, bias)


def _grads(outs: Any, inputs: list[Any], grads_out: tuple[Any, Any, Any], x: Any, bias: Any) -> tuple[Any, ...]:
    """The six gradients of :func:`lstm_backward` from a recorded forward (``outs`` of ``inputs``, the weights in
    torch's layout), shaped and laid out like the op's arguments."""
    out = input_grads(outs, inputs, grads_out, (3, 4))  # the weights back to Ember's layout ([d_input, 4 d])
    if bias is None:
        out.append(x.new_empty((0,)))
    return tuple(out)


#: the dispatch keys of autograd that ``_AutoDispatchBelowAutograd`` excludes
_AUTOGRAD_KEYS = ("AutogradFunctionality", "ADInplaceOrView", "AutogradOther", "AutogradNestedTensor")


def _forward_with_grad(leaves: list[Any], w_ih: Any, w_hh: Any, b: Any) -> tuple[Any, Any, Any]:
    """The forward, recorded by torch's autograd (:func:`recorded`)."""
    return recorded(run_lstm, leaves[0], leaves[1], leaves[2], w_ih, w_hh, b)


def recorded(kernel: Callable[..., tuple[Any, Any, Any]], *args: Any) -> tuple[Any, Any, Any]:
    """``kernel(*args)`` recorded by torch's autograd inside a custom op: its implementation runs below the
    dispatcher's autograd keys (``_AutoDispatchBelowAutograd``, torch's ``custom_op`` autograd kernel), where nothing
    records even under ``torch.enable_grad``; they are taken out of the excluded set for the call."""
    keys = torch._C._dispatch_tls_local_exclude_set()
    for name in _AUTOGRAD_KEYS:
        keys = keys.remove(getattr(torch._C.DispatchKey, name))
    with torch.enable_grad(), torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), keys):
        return kernel(*args)


@lstm_backward.register_fake
def _lstm_backward_fake(
    grad_y: Any, grad_h: Any, grad_c: Any, x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any
) -> tuple[Any, ...]:
    gb = x.new_empty((0,)) if bias is None else bias.new_empty(bias.shape)
    return tuple(a.new_empty(a.shape) for a in (x, h0, c0, w_x, w_h)) + (gb,)


#: the forwards of :func:`lstm_train` (and ``ember::lstm_stack_train``, ``_rnn_stack_op.py``) not yet taken by their
#: saved backward: handle -> (torch's inputs, outputs), their autograd graph holding the kernel's residual (cuDNN's
#: reserve, oneDNN's workspace)
_SAVED: OrderedDict[int, tuple[list[Any], tuple[Any, Any, Any]]] = OrderedDict()
#: at most this many forwards are kept (a forward whose backward never runs, e.g. an output that does not reach the
#: loss, is dropped after this many newer ones; a backward that finds its forward gone runs it again)
SAVED_MAX = 64
_HANDLES = itertools.count(1)


@torch.library.custom_op("ember::lstm_train", mutates_args=())
def lstm_train(
    x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, w_x: torch.Tensor, w_h: torch.Tensor, bias: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`lstm` whose forward keeps torch's autograd graph for :func:`lstm_saved_backward`: ``(y, h_n, c_n,
    handle)``, ``handle`` an int64 scalar on the CPU naming the kept forward.

    A training step's backward then runs the kernels' own backward (cuDNN's, oneDNN's) on their residual, as eager
    ``loss.backward()`` does, instead of the forward once more (:func:`lstm_backward`). The outputs are copies
    (the kernel keeps its own ``y`` for the backward; a graph may reuse an op's output buffer once it is dead)."""
    # copies, which the kept graph owns: a compiled graph writes its buffers without torch's version counters, and
    # may reuse an argument's buffer once this op has run (e.g. when it materializes the same value again for the
    # backward node), which would silently change the saved inputs
    leaves = [a.detach().clone().requires_grad_() for a in (x, h0, c0)]
    w_ih = w_x.detach().t().clone(memory_format=torch.contiguous_format).requires_grad_()
    w_hh = w_h.detach().t().clone(memory_format=torch.contiguous_format).requires_grad_()
    b = None if bias is None else bias.detach().clone().requires_grad_()
    outs = _forward_with_grad(leaves, w_ih, w_hh, b)
    return keep([*leaves, w_ih, w_hh] + ([] if b is None else [b]), outs)


def keep(inputs: list[Any], outs: tuple[Any, Any, Any]) -> tuple[Any, Any, Any, Any]:
    """A recorded forward (``outs``, recorded from the leaves ``inputs``) kept in :data:`_SAVED` under a new handle:
    ``(y, h_n, c_n, handle)``, the outputs copied (row-major) and the handle an int64 scalar on the CPU (what
    ``ember::lstm_train`` and ``ember::lstm_stack_train`` return)."""
    key = next(_HANDLES)
    _SAVED[key] = (inputs, outs)
    while len(_SAVED) > SAVED_MAX:
        _SAVED.popitem(last=False)
    y, h, c = (o.detach().clone(memory_format=torch.contiguous_format) for o in outs)
    return y, h, c, torch.tensor(key, dtype=torch.int64)


def take(handle: Any) -> tuple[list[Any], tuple[Any, Any, Any]] | None:
    """The forward kept under ``handle`` (``(inputs, outs)``), dropped from :data:`_SAVED`; ``None`` when it is no
    longer kept."""
    return _SAVED.pop(int(handle), None)


@lstm_train.register_fake
def _lstm_train_fake(x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any) -> tuple[Any, Any, Any, Any]:
    return (*_lstm_fake(x, h0, c0, w_x, w_h, bias), torch.empty((), dtype=torch.int64, device="cpu"))


@torch.library.custom_op("ember::lstm_saved_backward", mutates_args=())
def lstm_saved_backward(
    handle: torch.Tensor,
    grad_y: torch.Tensor | None,
    grad_h: torch.Tensor | None,
    grad_c: torch.Tensor | None,
    x: torch.Tensor,
    h0: torch.Tensor,
    c0: torch.Tensor,
    w_x: torch.Tensor,
    w_h: torch.Tensor,
    bias: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`lstm_backward` of the forward :func:`lstm_train` kept under ``handle`` (taken and dropped here); a
    forward no longer kept (dropped after :data:`SAVED_MAX` newer ones, or a graph run in another process) is run
    again, from the forward's arguments, which are passed again for that (the kept forward owns copies of them)."""
    entry = take(handle)
    if entry is None:
        return lstm_backward(grad_y, grad_h, grad_c, x, h0, c0, w_x, w_h, bias)  # type: ignore[no-any-return]
    inputs, outs = entry
    return _grads(outs, inputs, (grad_y, grad_h, grad_c), x, bias)


@lstm_saved_backward.register_fake
def _lstm_saved_backward_fake(handle: Any, *args: Any) -> tuple[Any, ...]:
    return _lstm_backward_fake(*args)
