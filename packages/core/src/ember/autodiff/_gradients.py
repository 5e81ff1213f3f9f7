"""``Gradients``: the result of ``backward()`` (Burn's ``Gradients``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

from .._errors import BackendError, DeviceError, KindError, ShapeError
from .._kind import Float
from ..tensor import _core
from ..tensor._base import TensorBase
from ._errors import AutodiffError
from ._graph import AutodiffPrimitive, Leaf

__all__ = ["Gradients", "grad_id"]

K = TypeVar("K")
#: a tensor type (``ember.Tensor``): a gradient is a tensor of its leaf's class
T = TypeVar("T", bound=TensorBase)


def grad_id(tensor: TensorBase, op: str = "grad") -> int | None:
    """The id under which :class:`Gradients` keeps ``tensor``'s gradient: the id of its leaf, or
    ``None`` if the tensor is not a tracked leaf (untracked, or computed by an op).

    Raises:
        BackendError: ``tensor`` is not on an autodiff backend (gradients belong to the tracked
            tensor, not to its ``inner()`` copy).
        KindError: ``tensor`` is not a Float tensor.
    """
    p = tensor.primitive
    if type(p) is AutodiffPrimitive:
        node = p.node
        return node.id if type(node) is Leaf else None
    if not tensor.device.backend.is_autodiff:
        raise BackendError(
            f"{op}: the tensor lives on {tensor.device} ({tensor.device.backend.name!r}), which is not an "
            "autodiff backend, so it has no gradient; call it on the tensor you called require_grad() on "
            "(on an ember.autodiff.Autodiff device)."
        )
    if tensor.kind is not Float:
        raise KindError(f"{op}: only Float tensors have gradients, got a {tensor.kind} tensor.")
    return None


class Gradients:
    """Gradients of the tracked leaves reached by one ``backward()``, keyed by leaf id.

    Holds inner-backend primitives only (no reference to the graph, which ``backward()`` frees),
    so it can be sent to another thread or kept across steps. Read it through the tensors (Burn's
    API): ``x.grad(grads)``, ``x.grad_remove(grads)``, ``x.grad_replace(grads, g)``, or here with
    :meth:`get`, :meth:`remove`, :meth:`replace`; :meth:`to_map` converts it to a map keyed by
    parameter (what ``GradientsParams.from_grads`` needs). Gradients are tensors on the *inner*
    device with the leaf's shape and float dtype.
    """

    __slots__ = ("_grads", "__weakref__")

    def __init__(self, grads: dict[int, Any] | None = None) -> None:
        self._grads: dict[int, Any] = {} if grads is None else grads

    # ------------------------------------------------------------------ by tensor
    def get(self, tensor: T) -> T | None:
        """The gradient of ``tensor`` (a tracked leaf) as a Tensor on ``tensor.device.inner``, or
        ``None`` if it has none (untracked, not a leaf, or not reached by the backward pass).

        Raises:
            BackendError: ``tensor`` is not on an autodiff backend. KindError: not Float.
        """
        p = tensor.primitive
        if p.__class__ is AutodiffPrimitive:  # fast path: grad_id inlined
            node = p.node
            if node.__class__ is not Leaf:
                return None
            g = self._grads.get(node.id)
            if g is None:
                return None
            inner = tensor.device.inner
            t = _new_obj(_core.Tensor)
            t.primitive = g
            t.device = inner
            t.kind = Float
            t.ops = inner.ops[0]
            return t
        i = grad_id(tensor, "grad")  # raises for tensors off an autodiff device
        g = None if i is None else self._grads.get(i)
        return None if g is None else _wrap(g, tensor)

    def remove(self, tensor: T) -> T | None:
        """Like :meth:`get`, and the gradient is removed from the container."""
        i = grad_id(tensor, "grad_remove")
        p = None if i is None else self._grads.pop(i, None)
        return None if p is None else _wrap(p, tensor)

    def replace(self, tensor: T, grad: T) -> None:
        """Set the gradient of the tracked leaf ``tensor`` to ``grad`` (a Float tensor on
        ``tensor.device.inner``, or on ``tensor.device``, then its ``inner()`` is taken).

        Raises:
            AutodiffError: ``tensor`` is not a tracked leaf. ShapeError: shapes differ.
            DeviceError: ``grad`` lives elsewhere.
        """
        i = grad_id(tensor, "grad_replace")
        if i is None:
            raise AutodiffError(
                "grad_replace: the tensor is not a tracked leaf (call require_grad() on it first); only "
                "leaves have gradients."
            )
        if grad.device is tensor.device:
            grad = grad.inner()
        if grad.device is not tensor.device.inner:
            raise DeviceError(
                f"grad_replace: the gradient lives on {grad.device}; expected {tensor.device.inner} (the "
                "tensor's inner device)."
            )
        if grad.kind is not Float:
            raise KindError(f"grad_replace: the gradient must be a Float tensor, got {grad.kind}.")
        if grad.shape != tensor.shape:
            raise ShapeError(
                f"grad_replace: the gradient has shape {list(grad.shape)}, the tensor {list(tensor.shape)}."
            )
        self._grads[i] = grad.primitive

    def to_map(self, params: Mapping[K, T] | Iterable[tuple[K, T]], remove: bool = False) -> dict[K, T]:
        """``{key: gradient}`` for the ``(key, tensor)`` pairs that have a gradient (per-parameter
        map; keys are typically ``ParamId``). With ``remove`` the gradients leave this container
        (Burn's ``GradientsParams::from_grads`` consumes them)."""
        items = params.items() if isinstance(params, Mapping) else params
        out: dict[K, T] = {}
        for key, t in items:
            g = self.remove(t) if remove else self.get(t)
            if g is not None:
                out[key] = g
        return out

    # ------------------------------------------------------------------ by id
    def primitive(self, leaf_id: int) -> Any:
        """The inner primitive of the gradient kept under ``leaf_id`` (``None`` if absent)."""
        return self._grads.get(leaf_id)

    def pop_primitive(self, leaf_id: int) -> Any:
        return self._grads.pop(leaf_id, None)

    def ids(self) -> list[int]:
        """The leaf ids that have a gradient."""
        return list(self._grads)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, int):
            return item in self._grads
        i = grad_id(item)  # type: ignore[arg-type]
        return i is not None and i in self._grads

    def __len__(self) -> int:
        return len(self._grads)

    def __iter__(self) -> Iterator[int]:
        return iter(list(self._grads))

    def __repr__(self) -> str:
        return f"Gradients({len(self._grads)} tensors)"


def _wrap(p: Any, like: T) -> T:
    inner = like.device.inner
    t = _new_obj(_core.Tensor)
    t.primitive = p
    t.device = inner
    t.kind = Float
    t.ops = inner.ops[0]
    return t


_new_obj = object.__new__
