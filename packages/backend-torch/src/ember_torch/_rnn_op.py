"""The LSTM as two opaque graph nodes while a step is captured (issue 32): ``ember::lstm`` and
``ember::lstm_backward``, custom ops (``torch.library.custom_op``) on Ember's layout (``w_x [d_input, 4 d]``,
``w_h [d, 4 d]``, one bias ``[4 d]``), float32 and float64 (float16 and bfloat16 take the contract's composite),
the same code on every device.

A step captured for ``torch.compile``, or on CUDA (``_compile.py``, ``_kernels_for``), records each op as one
node, whose shapes come from its fake implementation; the real implementation runs when the graph runs (replayed
as it is, or called from AOTAutograd's or inductor's generated code), with torch's own kernels:
``torch._VF.lstm`` (oneDNN's on the CPU, cuDNN's on CUDA, chosen by torch at that call). So inductor never sees
the LSTM's unrolled cells (thousands of ops for the benchmark's LSTM), and the step keeps the eager step's kernels.

A node's outputs are plain tensors, so the residual cannot be torch's autograd graph (what the eager kernel keeps,
``_rnn.py``): :func:`lstm_backward` runs the forward again under ``torch.enable_grad`` on detached copies of the
inputs and takes ``torch.autograd.grad`` through it (one more LSTM forward per backward). The kernels' own
residuals, oneDNN's workspace and cuDNN's reserve, are made by device-specific aten ops that ``torch._VF.lstm``
picks; calling those here would make two code paths, one of them untested without a GPU. Both ops are pure
functions of their inputs (no mutation, no aliasing, no state kept between them), so a graph may reorder or
deduplicate them freely. Not yet run on a GPU: on CUDA, and inside CUDA graphs (``mode="reduce-overhead"``, which
would record the backward's ``torch.autograd.grad``), they are untested.
"""

from __future__ import annotations

from typing import Any

import torch

from ._graph import graph_grad
from ._rnn_kernel import run_lstm

__all__ = ["lstm", "lstm_backward"]


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
    pairs = [
        (o, g) for o, g in zip(_forward_with_grad(leaves, w_ih, w_hh, b), (grad_y, grad_h, grad_c)) if g is not None
    ]
    grads = (
        graph_grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True)
        if pairs
        else (None,) * len(inputs)
    )
    out = [torch.zeros_like(a) if g is None else g.contiguous() for a, g in zip(inputs, grads)]
    out[3] = out[3].t().contiguous()  # back to Ember's layout ([d_input, 4 d]), row-major
    out[4] = out[4].t().contiguous()
    if b is None:
        out.append(x.new_empty((0,)))
    return tuple(out)  # type: ignore[return-value]


#: the dispatch keys of autograd that ``_AutoDispatchBelowAutograd`` excludes
_AUTOGRAD_KEYS = ("AutogradFunctionality", "ADInplaceOrView", "AutogradOther", "AutogradNestedTensor")


def _forward_with_grad(leaves: list[Any], w_ih: Any, w_hh: Any, b: Any) -> tuple[Any, Any, Any]:
    """The forward, recorded by torch's autograd: a custom op's implementation runs below the dispatcher's
    autograd keys (``_AutoDispatchBelowAutograd``, torch's ``custom_op`` autograd kernel), where nothing records
    even under ``torch.enable_grad``; they are taken out of the excluded set for the call."""
    keys = torch._C._dispatch_tls_local_exclude_set()
    for name in _AUTOGRAD_KEYS:
        keys = keys.remove(getattr(torch._C.DispatchKey, name))
    with torch.enable_grad(), torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), keys):
        return run_lstm(leaves[0], leaves[1], leaves[2], w_ih, w_hh, b)


@lstm_backward.register_fake
def _lstm_backward_fake(
    grad_y: Any, grad_h: Any, grad_c: Any, x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any
) -> tuple[Any, ...]:
    gb = x.new_empty((0,)) if bias is None else bias.new_empty(bias.shape)
    return tuple(a.new_empty(a.shape) for a in (x, h0, c0, w_x, w_h)) + (gb,)
