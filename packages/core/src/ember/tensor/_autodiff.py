"""Autodiff tensor ops (Burn's ``AutodiffBackend`` API on tensors): ``require_grad``,
``backward``, ``grad`` and friends. They only work on a device of an
:class:`ember.autodiff.Autodiff` backend; ``inner``, ``from_inner`` and ``detach`` live in
:mod:`._tensor`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._errors import BackendError, KindError
from .._kind import Float
from ..autodiff._gradients import Gradients
from ..autodiff._hooks import current_hook
from . import _core
from ._base import TensorBase

_new_obj = object.__new__


def _tensor_hook(callback: Callable[[int, Any], Any], inner: Any) -> Callable[[int, Any], None]:
    """``callback(leaf_id, grad tensor)`` as the sweep's ``on_ready(leaf_id, inner primitive)``."""
    ops = inner.ops[0]

    def on_ready(leaf_id: int, g: Any) -> None:
        t = _new_obj(_core.Tensor)
        t.primitive = g
        t.device = inner
        t.kind = Float
        t.ops = ops
        callback(leaf_id, t)

    return on_ready


def _autodiff_ops(t: Any, op: str) -> Any:
    if not t.device.backend.is_autodiff:
        raise BackendError(
            f"{op}: the tensor lives on {t.device} ({t.device.backend.name!r}), which does not record "
            "gradients; create it on an autodiff device: ember.autodiff.Autodiff(backend).device(), or "
            "move it with Tensor.from_inner(t, autodiff_device)."
        )
    if t.kind is not Float:
        raise KindError(f"{op}: only Float tensors can be differentiated, got a {t.kind} tensor; use .float().")
    return t.ops


class AutodiffTensorOps(TensorBase):
    __slots__ = ()

    def require_grad(self) -> Any:
        """This tensor as a tracked leaf: ``backward()`` of anything computed from it gives its
        gradient (Burn's ``require_grad``). A tensor computed by ops becomes a new leaf (the
        graph behind it is cut).

        Raises:
            BackendError: the tensor is not on an autodiff device. KindError: not a Float tensor.
        """
        dev = self.device
        if self.kind is Float and dev.backend.is_autodiff:
            ops = self.ops
        else:
            ops = _autodiff_ops(self, "require_grad")  # raises
        p = ops.require_grad(self.primitive)
        if p is self.primitive:
            return self
        t = _new_obj(_core.Tensor)
        t.primitive = p
        t.device = dev
        t.kind = Float
        t.ops = ops
        return t

    def set_require_grad(self, require_grad: bool) -> Any:
        """``require_grad()`` when ``True``; when ``False`` the tensor is detached (Burn).

        Raises:
            BackendError, KindError: as :meth:`require_grad`, when ``require_grad`` is ``True``.
        """
        if require_grad:
            return self.require_grad()
        return self.detach()

    def is_require_grad(self) -> bool:
        """Whether the tensor is tracked (a ``require_grad`` leaf or computed from one)."""
        if self.kind is not Float or not self.device.backend.is_autodiff:
            return False
        return bool(self.ops.is_require_grad(self.primitive))

    def backward(self, on_grad_ready: Callable[[int, Any], Any] | None = None) -> Gradients:
        """Reverse-mode gradients of this tensor with respect to every tracked leaf it depends
        on. A non-scalar tensor is seeded with ones (the gradient of its sum), as in Burn. The
        graph and the tensors it saved are freed: a second ``backward()`` through it raises.

        Args:
            on_grad_ready: opt-in ``callback(leaf_id, grad)``, called during the sweep as soon as
                a tracked leaf's gradient is final (every op consuming the leaf processed), with
                the leaf's :class:`~ember.autodiff.Gradients` key and the gradient (a Float tensor
                on the inner device, the one returned). Default: the hook of an enclosing
                ``ember.autodiff.grad_ready_hook(...)`` block, if any (:mod:`ember.autodiff`).

        Returns:
            A :class:`~ember.autodiff.Gradients` (read with ``leaf.grad(grads)``).

        Raises:
            AutodiffError: the tensor is not tracked. BackendError / KindError: not a Float
            tensor on an autodiff device.
        """
        if self.kind is Float and self.device.backend.is_autodiff:  # _autodiff_ops's checks without its frame
            ops = self.ops
        else:
            ops = _autodiff_ops(self, "backward")  # raises
        if on_grad_ready is None:
            on_grad_ready = current_hook()
            if on_grad_ready is None:
                return ops.backward(self.primitive)
        return ops.backward(self.primitive, _tensor_hook(on_grad_ready, self.device.inner))

    def grad(self, grads: Gradients) -> Any:
        """The gradient of this tracked leaf in ``grads``: a Float tensor on the inner device
        (``self.device.inner``) with this tensor's shape, or ``None`` if it has none.

        Raises:
            BackendError: the tensor is on a plain (non-autodiff) backend.
        """
        return grads.get(self)

    def grad_remove(self, grads: Gradients) -> Any:
        """Like :meth:`grad`, and the gradient is removed from ``grads``."""
        return grads.remove(self)

    def grad_replace(self, grads: Gradients, grad: Any) -> None:
        """Replace this leaf's gradient in ``grads`` with ``grad`` (same shape, on the inner
        device)."""
        grads.replace(self, grad)
