"""A torch graph kept as a primitive's residual (the attention and lstm kernels): :func:`graph_forward` runs the
forward on detached leaf copies under ``torch.enable_grad`` (the results are detached, as Ember's primitives are),
:func:`graph_grad` the backward through it.

``torch.autograd.grad`` runs the backward of a CUDA graph on torch's autograd device thread; the first time in a
process that thread has no current CUDA context, and torch warns ("Attempting to run cuBLAS, but there was no
current CUDA context! Attempting to set the primary context...") before setting the primary one, which is the
right context. The warning says nothing to an Ember user (and a test run with warnings as errors would fail on
it), so it is silenced here, and only it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = ["graph_forward", "graph_grad", "input_grads"]


def graph_grad(outputs: Sequence[Any], inputs: Sequence[Any], grads: Sequence[Any],
               allow_unused: bool = False) -> tuple[Any, ...]:
    """``torch.autograd.grad(outputs, inputs, grads)`` without torch's first-use CUDA context warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Attempting to run cuBLAS, but there was no current CUDA context")
        return tuple(torch.autograd.grad(list(outputs), list(inputs), list(grads), allow_unused=allow_unused))


def graph_forward(fn: Callable[..., Sequence[Any]], *args: Any) -> tuple[tuple[Any, ...], Any]:
    """``(outputs, residual)``: ``fn(*leaves)`` run under ``torch.enable_grad`` on detached copies of ``args`` that
    require grad (``None`` stays ``None``); the outputs detached, the residual ``(leaves, outputs)`` for
    :func:`graph_grad`."""
    leaves = [None if a is None else a.detach().requires_grad_() for a in args]
    with torch.enable_grad():
        outs = tuple(fn(*leaves))
    return tuple(o.detach() for o in outs), (leaves, outs)


def input_grads(outs: Sequence[Any], inputs: Sequence[Any], grads_out: Sequence[Any],
                transposed: Sequence[int] = ()) -> list[Any]:
    """The gradients of a recorded forward's ``inputs`` (its outputs ``outs``), given the outputs' gradients
    ``grads_out`` (``None``: zero), each row-major: zeros for an input the outputs do not reach (or when every
    output's gradient is ``None``), ``None`` for a ``None`` input, and for the inputs at the positions
    ``transposed`` (2-D weights passed to torch in its layout, the transpose of Ember's) the transposed gradient,
    back in Ember's layout. Without the copy every later op on such a gradient (the optimizer's update above all)
    would run on strided memory."""
    pairs = [(o, g) for o, g in zip(outs, grads_out) if g is not None]
    real = [a for a in inputs if a is not None]
    found = iter(graph_grad([o for o, _ in pairs], real, [g for _, g in pairs], allow_unused=True)
                 if pairs else (None,) * len(real))
    out: list[Any] = []
    for i, a in enumerate(inputs):
        g = None if a is None else next(found)
        if a is None:
            out.append(None)
        elif g is None:
            out.append(torch.zeros_like(a))
        else:
            out.append(g.t().contiguous() if i in transposed else g.contiguous())
    return out
