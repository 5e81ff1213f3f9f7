"""The gradient-ready hook of ``backward()``: be told when each tracked leaf's gradient is final.

The reverse sweep (:func:`ember.autodiff._graph.backward`) pops a leaf only after every node that
consumes it has sent its gradient, so the leaf's gradient is final at that moment, while the sweep
goes on with the rest of the graph. A data-parallel trainer uses that to start reducing a bucket of
gradients over the ranks while the backward pass still computes the others (PyTorch DDP's reducer
hooks; Burn's ``GradientsParams`` has no such hook).

Two opt-in forms, same callback ``callback(leaf_id, grad)``:

- ``loss.backward(on_grad_ready=callback)`` for one call;
- ``with ember.autodiff.grad_ready_hook(callback): ...`` for every ``backward()`` run in the block
  (in this thread / async context), e.g. inside a ``train_step`` that someone else wrote.

``leaf_id`` is the key of the leaf in :class:`~ember.autodiff.Gradients` (``grad_id(tensor)``);
``grad`` is the final gradient, a Float tensor on the inner device, the very primitive the returned
``Gradients`` holds. Callbacks run on the thread of ``backward()`` in the sweep's order: a leaf
consumed only by the last ops of the forward pass comes first (reverse topological order). A leaf
that gets no gradient is not reported. Without a hook ``backward()`` runs as before (one test more
per leaf).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["GradReadyHook", "grad_ready_hook", "current_hook"]

#: ``callback(leaf_id, grad)``: ``grad`` is a Float :class:`~ember.Tensor` on the inner device (typed ``Any``: this
#: module sits below ``ember.tensor``, whose ``backward`` reads the hook)
GradReadyHook = Callable[[int, Any], Any]

_HOOK: ContextVar[GradReadyHook | None] = ContextVar("ember_grad_ready_hook", default=None)


#: ``current_hook()``: the hook installed by the innermost :func:`grad_ready_hook` block, or ``None`` (the context
#: variable's own ``get``, called from C: ``backward()`` reads it on every step)
current_hook: Callable[[], GradReadyHook | None] = _HOOK.get


@contextmanager
def grad_ready_hook(callback: GradReadyHook) -> Iterator[None]:
    """Call ``callback(leaf_id, grad)`` for each tracked leaf whose gradient is final, during every
    ``backward()`` run inside the block (see the module docstring). Blocks nest: the innermost wins.
    A ``backward(on_grad_ready=...)`` argument takes precedence over the block's hook.

    Exceptions raised by ``callback`` propagate out of ``backward()`` (the graph is then partly
    consumed).

    Raises:
        TypeError: ``callback`` is not callable.
    """
    if not callable(callback):
        raise TypeError(f"grad_ready_hook: expected a callable(leaf_id, grad), got {type(callback).__name__}.")
    token = _HOOK.set(callback)
    try:
        yield
    finally:
        _HOOK.reset(token)
