"""Backward through a torch graph kept as a primitive's residual (the attention and lstm kernels).

``torch.autograd.grad`` runs the backward of a CUDA graph on torch's autograd device thread; the first time in a
process that thread has no current CUDA context, and torch warns ("Attempting to run cuBLAS, but there was no
current CUDA context! Attempting to set the primary context...") before setting the primary one, which is the
right context. The warning says nothing to an Ember user (and a test run with warnings as errors would fail on
it), so it is silenced here, and only it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["graph_grad"]


def graph_grad(outputs: Sequence[Any], inputs: Sequence[Any], grads: Sequence[Any],
               allow_unused: bool = False) -> tuple[Any, ...]:
    """``torch.autograd.grad(outputs, inputs, grads)`` without torch's first-use CUDA context warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Attempting to run cuBLAS, but there was no current CUDA context")
        return tuple(torch.autograd.grad(list(outputs), list(inputs), list(grads), allow_unused=allow_unused))
