"""Autodiff as a backend decorator (ARCHITECTURE.md, "Autodiff", Burn's ``burn-autodiff``).

>>> import ember
>>> from ember import Tensor
>>> from ember.autodiff import Autodiff
>>> AD = Autodiff(ember.backend("numpy", float_dtype="float64"))
>>> x = Tensor.from_floats([1.0, 2.0, 3.0], AD.device()).require_grad()
>>> grads = x.powf_scalar(2.0).sum().backward()      # a Gradients container
>>> x.grad(grads).to_data().to_numpy().tolist()       # on the inner backend
[2.0, 4.0, 6.0]

- :class:`Autodiff` wraps any backend; one instance per inner backend.
- :class:`Gradients` holds the gradients of the tracked leaves (``require_grad()``) reached by
  one ``backward()``; read them with ``t.grad(grads)`` / ``t.grad_remove(grads)``.
- :func:`grad_ready_hook` (or ``loss.backward(on_grad_ready=...)``) reports each leaf's gradient
  as soon as it is final, during the sweep (what overlapped data-parallel training hooks into).
- :data:`RULES` is the table of backward rules (inner-backend primitives only).
"""

from ._backend import COMPOSITE, CREATION, DELEGATED, HANDLED, Autodiff, AutodiffDevice
from ._errors import AutodiffError
from ._gradcheck import gradcheck
from ._gradients import Gradients, grad_id
from ._graph import AutodiffPrimitive
from ._hooks import grad_ready_hook
from ._table import RULES

__all__ = [
    "Autodiff",
    "AutodiffDevice",
    "AutodiffError",
    "AutodiffPrimitive",
    "COMPOSITE",
    "CREATION",
    "DELEGATED",
    "Gradients",
    "HANDLED",
    "RULES",
    "grad_id",
    "grad_ready_hook",
    "gradcheck",
]
