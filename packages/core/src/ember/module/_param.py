"""``Param`` (a trainable tensor with a stable id) and ``RunningState`` (a saved, never-optimized buffer)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._dtype import DType
from .._kind import Float, Kind
from .._param_id import ParamId
from .._quantization._qtensor import QuantizedTensor
from ..backend._device import Device
from ..tensor import Tensor

__all__ = ["Param", "RunningState", "ad_enabled"]


def ad_enabled(x: Tensor | Device | Any) -> bool:
    """Whether ``x`` (a tensor, a device or a backend) is on an autodiff backend (Burn's ``B::ad_enabled()``).

    Train-only behaviour keys on it, as in Burn: ``Dropout`` drops on an autodiff backend (training) and
    is the identity after ``module.valid()`` moved the model to the inner backend (validation)::

        def forward(self, x):
            if self.prob == 0.0 or not ad_enabled(x):
                return x
            ...
    """
    if isinstance(x, Tensor):
        x = x.device
    if isinstance(x, Device):
        x = x.backend
    return bool(getattr(x, "is_autodiff", False))


def _track(tensor: Tensor, require_grad: bool) -> Tensor:
    """``tensor`` marked as a gradient leaf on an autodiff backend (unchanged elsewhere, for Int/Bool, and for a
    quantized tensor, which has no gradient)."""
    if tensor.kind is not Float or not ad_enabled(tensor) or not isinstance(tensor, Tensor):
        return tensor
    setter = getattr(tensor, "set_require_grad", None)
    if setter is not None:
        out = setter(require_grad)
    elif require_grad:
        marker = getattr(tensor, "require_grad", None)
        out = marker() if callable(marker) else tensor
    else:
        out = tensor.detach()
    return out if isinstance(out, Tensor) else tensor


def _check_tensor(owner: str, tensor: Any) -> Tensor:
    if not isinstance(tensor, Tensor):
        if isinstance(tensor, QuantizedTensor):
            return tensor  # type: ignore[return-value]
        raise TypeError(
            f"{owner}: expected an ember Tensor (or an ember.quantization.QuantizedTensor), got "
            f"{type(tensor).__name__}."
        )
    return tensor


class _HoldsTensor:
    """What ``Param`` and ``RunningState`` share: read-only views of the held tensor's
    ``shape``, ``dtype`` (:class:`~ember.DType`), ``kind`` and ``device``."""

    __slots__ = ()
    _tensor: Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return self._tensor.shape

    @property
    def dtype(self) -> DType:
        return self._tensor.dtype

    @property
    def kind(self) -> Kind:
        return self._tensor.kind

    @property
    def device(self) -> Device:
        return self._tensor.device


class Param(_HoldsTensor):
    """A parameter: a tensor, a stable :class:`ParamId` and a ``require_grad`` flag (Burn's ``Param``).

    On an autodiff backend a Float parameter with ``require_grad=True`` holds a tracked leaf tensor, so
    ``loss.backward()`` yields its gradient (read it with ``param.val().grad(grads)``, or per
    ``ParamId`` through the optimizer). Int and Bool parameters never require gradients.

    Params are immutable: :meth:`with_val` / :meth:`map` return a new ``Param`` with the same id.

    Args:
        tensor: the value (any kind, any shape).
        id: the identity; a new random id when omitted (a ``ParamId``, or its int/str form).
        require_grad: track gradients on autodiff backends (default ``True``, as in Burn).
    """

    __slots__ = ("id", "_tensor", "require_grad")
    id: ParamId
    require_grad: bool
    _tensor: Tensor

    def __init__(self, tensor: Tensor, id: ParamId | int | str | None = None, require_grad: bool = True) -> None:
        _check_tensor("Param", tensor)
        pid = id if isinstance(id, ParamId) else ParamId(id)
        object.__setattr__(self, "id", pid)
        object.__setattr__(self, "require_grad", bool(require_grad))
        object.__setattr__(self, "_tensor", _track(tensor, bool(require_grad)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Param is immutable; use param.with_val(...) (tried to set {name!r}).")

    # ------------------------------------------------------------------ value
    def val(self) -> Tensor:
        """The tensor (Burn's ``val()``). The same object on every call, so gradients find it."""
        return self._tensor

    def num_params(self) -> int:
        """The number of elements."""
        return self._tensor.num_elements()

    def is_require_grad(self) -> bool:
        return self.require_grad

    # ------------------------------------------------------------------ new params, same id
    def with_val(self, tensor: Tensor) -> Param:
        """A Param with the same id and ``require_grad`` holding ``tensor`` (re-marked as a leaf)."""
        return Param(tensor, self.id, self.require_grad)

    def map(self, fn: Callable[[Tensor], Tensor]) -> Param:
        """``with_val(fn(val()))`` (Burn's ``Param::map``)."""
        return self.with_val(fn(self._tensor))

    def set_require_grad(self, require_grad: bool) -> Param:
        """The same parameter with another ``require_grad`` flag (Burn's ``set_require_grad``)."""
        return Param(self._tensor, self.id, require_grad)

    def to_device(self, device: Device) -> Param:
        """The parameter on ``device`` (same id); the autodiff graph follows the move, as in Burn."""
        return Param(self._tensor.to_device(device), self.id, self.require_grad)

    def fork(self, device: Device) -> Param:
        """The parameter on ``device`` as a fresh leaf: detached first, then moved and re-marked (Burn's fork)."""
        return Param(self._tensor.detach().to_device(device), self.id, self.require_grad)

    def __repr__(self) -> str:
        t = self._tensor
        grad = "" if self.require_grad else ", require_grad=False"
        kind = "" if t.kind is Float else f", kind={t.kind.name}"
        return f"Param(shape={list(t.shape)}, dtype={t.dtype.value}{kind}, device={t.device}, id={self.id}{grad})"

    def __reduce__(self) -> Any:
        return (Param, (self._tensor, self.id, self.require_grad))


class RunningState(_HoldsTensor):
    """A buffer saved with the module but never optimized (Burn's ``RunningState``), e.g. BatchNorm's
    running mean and variance.

    The tensor is always detached (no gradient). It is visited by :class:`ModuleVisitor`'s
    ``visit_running_state`` (not by plain-callable visitors or mappers, so optimizers skip it), saved in
    records like a parameter (``{"id", "param"}``) and excluded from ``num_params()``.

    Updating, as in Burn, happens during ``forward`` on the training (autodiff) backend. Two styles:

    - ``state.update(new)`` swaps the held tensor (the tensor itself is never written; this is the one
      mutable cell of a module tree, like Burn's ``Arc<Mutex<..>>``). Modules sharing the state via
      ``replace`` see the update; ``map``/``fork``/``to_device``/``valid`` copy the cell.
    - functional: ``layer.replace(running_mean=layer.running_mean.with_value(new))`` returns a new module
      (what a jit-traced step must do).

    Args:
        tensor: the initial value.
        id: the identity (new random id when omitted).
    """

    __slots__ = ("id", "_tensor")
    id: ParamId
    _tensor: Tensor

    def __init__(self, tensor: Tensor, id: ParamId | int | str | None = None) -> None:
        _check_tensor("RunningState", tensor)
        object.__setattr__(self, "id", id if isinstance(id, ParamId) else ParamId(id))
        object.__setattr__(self, "_tensor", tensor.detach())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"RunningState fields are read-only; use update() or with_value() (tried {name!r}).")

    def value(self) -> Tensor:
        """The current tensor (Burn's ``RunningState::value``)."""
        return self._tensor

    val = value

    def update(self, tensor: Tensor) -> None:
        """Replace the held tensor in place (detached). Shape changes are refused.

        Raises:
            ShapeError: ``tensor`` has another shape.
        """
        from .._errors import ShapeError

        _check_tensor("RunningState.update", tensor)
        if tensor.shape != self._tensor.shape:
            raise ShapeError(
                f"RunningState.update: expected shape {list(self._tensor.shape)}, got {list(tensor.shape)}."
            )
        object.__setattr__(self, "_tensor", tensor.detach())

    def with_value(self, tensor: Tensor) -> RunningState:
        """A new state with the same id holding ``tensor`` (functional update)."""
        return RunningState(tensor, self.id)

    def __repr__(self) -> str:
        t = self._tensor
        return f"RunningState(shape={list(t.shape)}, dtype={t.dtype.value}, device={t.device}, id={self.id})"

    def __reduce__(self) -> Any:
        return (RunningState, (self._tensor, self.id))
