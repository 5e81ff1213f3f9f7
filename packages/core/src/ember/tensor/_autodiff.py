"""Autodiff tensor ops (Burn's ``AutodiffBackend`` API on tensors): ``require_grad``,
``backward``, ``grad`` and friends. They only work on a device of an
:class:`ember.autodiff.Autodiff` backend; ``inner``, ``from_inner`` and ``detach`` live in
:mod:`._tensor`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import BackendError, KindError
from .._kind import Float
from . import _core

#: ``ember.autodiff._hooks._HOOK.get``, bound on the first ``backward()`` (an import statement per call costs
#: ~1.5 µs; importing at module level would be circular)
_HOOK_GET: Callable[[], Any] | None = None


def _hook_get() -> Callable[[], Any]:
    global _HOOK_GET
    from ..autodiff._hooks import _HOOK

    _HOOK_GET = _HOOK.get
    return _HOOK_GET


if TYPE_CHECKING:
    from ..autodiff import Gradients


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


class AutodiffTensorOps:
    __slots__ = ()

    def require_grad(self) -> Any:
        """This tensor as a tracked leaf: ``backward()`` of anything computed from it gives its
        gradient (Burn's ``require_grad``). A tensor computed by ops becomes a new leaf (the
        graph behind it is cut).

        Raises:
            BackendError: the tensor is not on an autodiff device. KindError: not a Float tensor.
        """
        dev = self.device  # type: ignore[attr-defined]
        if self.kind is Float and dev.backend.is_autodiff:  # type: ignore[attr-defined]
            ops = self.ops  # type: ignore[attr-defined]
        else:
            ops = _autodiff_ops(self, "require_grad")  # raises
        p = ops.require_grad(self.primitive)  # type: ignore[attr-defined]
        if p is self.primitive:  # type: ignore[attr-defined]
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
        return self.detach()  # type: ignore[attr-defined]

    def is_require_grad(self) -> bool:
        """Whether the tensor is tracked (a ``require_grad`` leaf or computed from one)."""
        if self.kind is not Float or not self.device.backend.is_autodiff:  # type: ignore[attr-defined]
            return False
        return bool(self.ops.is_require_grad(self.primitive))  # type: ignore[attr-defined]

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
        ops = _autodiff_ops(self, "backward")
        if on_grad_ready is None:
            on_grad_ready = (_HOOK_GET or _hook_get())()
            if on_grad_ready is None:
                return ops.backward(self.primitive)  # type: ignore[attr-defined, no-any-return]
        return ops.backward(self.primitive, _tensor_hook(on_grad_ready, self.device.inner))  # type: ignore[attr-defined, no-any-return]

    def grad(self, grads: Gradients) -> Any:
        """The gradient of this tracked leaf in ``grads``: a Float tensor on the inner device
        (``self.device.inner``) with this tensor's shape, or ``None`` if it has none.

        Raises:
            BackendError: the tensor is on a plain (non-autodiff) backend.
        """
        return grads.get(self)  # type: ignore[arg-type]

    def grad_remove(self, grads: Gradients) -> Any:
        """Like :meth:`grad`, and the gradient is removed from ``grads``."""
        return grads.remove(self)  # type: ignore[arg-type]

    def grad_replace(self, grads: Gradients, grad: Any) -> None:
        """Replace this leaf's gradient in ``grads`` with ``grad`` (same shape, on the inner
        device)."""
        grads.replace(self, grad)  # type: ignore[arg-type]
