"""``GradientsParams``: gradients keyed by :class:`~ember.module.ParamId` (Burn's ``GradientsParams``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .._kind import Float
from ..backend._device import Device
from ..module import Module, Param, ParamId, ad_enabled
from ..tensor import Tensor
from ._errors import OptimizerError

__all__ = ["GradientsParams", "trainable_params"]


def trainable_params(module: Module) -> list[Param]:
    """The Float parameters of ``module`` with ``require_grad=True``, in field order (each id once)."""
    seen: set[ParamId] = set()
    out: list[Param] = []
    for p in module.params():
        if p.require_grad and p.kind is Float and p.id not in seen:
            seen.add(p.id)
            out.append(p)
    return out


def _collect(grads: Any, module: Module, ids: set[ParamId] | None, remove: bool, op: str) -> dict[ParamId, Tensor]:
    from ..autodiff import Gradients

    if not isinstance(grads, Gradients):
        raise TypeError(
            f"GradientsParams.{op}: expected the Gradients returned by loss.backward(), got {type(grads).__name__}."
        )
    if not isinstance(module, Module):
        raise TypeError(f"GradientsParams.{op}: expected a Module, got {type(module).__name__}.")
    params = [p for p in trainable_params(module) if ids is None or p.id in ids]
    if params and not ad_enabled(params[0].val()):
        raise OptimizerError(
            f"GradientsParams.{op}: the module's parameters live on {params[0].device} "
            f"({params[0].device.backend.name!r}), which is not an autodiff backend, so they have no gradients; "
            "build the model on an ember.autodiff.Autodiff device (e.g. Autodiff(ember.backend('numpy')).device())."
        )
    out = grads.to_map([(p.id, p.val()) for p in params], remove=remove)
    if params and not out and len(grads) > 0:
        raise OptimizerError(
            f"GradientsParams.{op}: none of the {len(grads)} gradients belongs to a parameter of this "
            f"{type(module).__name__} ({len(params)} trainable parameters). The loss was computed with another "
            "model (or with an older copy: map/fork/to_device/load_record make new parameter tensors); pass the "
            "same module instance that computed the loss."
        )
    return out


class GradientsParams:
    """Gradients of a module's parameters, keyed by :class:`~ember.module.ParamId` (Burn's ``GradientsParams``).

    Built from the :class:`~ember.autodiff.Gradients` of one ``loss.backward()``::

        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(lr, model, grads)

    Each gradient is a Float tensor on the *inner* (non-autodiff) device of its parameter, with the
    parameter's shape ``[...]`` and the backend's float dtype. Parameters with ``require_grad=False``, Int/Bool
    parameters and parameters the loss does not depend on have no entry.

    Args:
        grads: an optional initial ``{ParamId: Tensor}`` map.
    """

    __slots__ = ("_grads",)

    def __init__(self, grads: dict[ParamId, Tensor] | None = None) -> None:
        self._grads: dict[ParamId, Tensor] = {}
        for k, v in (grads or {}).items():
            self.register(k, v)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_grads(cls, grads: Any, module: Module) -> GradientsParams:
        """The gradients of every trainable parameter of ``module`` (Burn's ``from_grads``).

        ``grads`` is left unchanged (read, not consumed).

        Raises:
            OptimizerError: ``grads`` holds gradients but none belongs to ``module`` (the loss came from
                another model or an older copy of it), or ``module`` is not on an autodiff backend.
            TypeError: ``grads`` is not a :class:`~ember.autodiff.Gradients`.
        """
        return cls(_collect(grads, module, None, False, "from_grads"))

    @classmethod
    def from_module(cls, grads: Any, module: Module) -> GradientsParams:
        """The gradients of ``module``'s parameters, *removed* from ``grads`` (Burn's ``from_module``).

        Use it to split one backward pass between sub-modules optimized separately::

            enc_grads = GradientsParams.from_module(grads, model.encoder)
            dec_grads = GradientsParams.from_module(grads, model.decoder)

        Raises:
            OptimizerError: as :meth:`from_grads`.
        """
        return cls(_collect(grads, module, None, True, "from_module"))

    @classmethod
    def from_params(cls, grads: Any, module: Module, params: Iterable[ParamId]) -> GradientsParams:
        """The gradients of the listed parameters of ``module``, removed from ``grads`` (Burn's ``from_params``).

        Raises:
            OptimizerError: as :meth:`from_grads`.
        """
        ids = {p if isinstance(p, ParamId) else ParamId(p) for p in params}
        return cls(_collect(grads, module, ids, True, "from_params"))

    # ------------------------------------------------------------------ access
    def get(self, id: ParamId) -> Tensor | None:
        """The gradient of parameter ``id`` (``None`` if absent)."""
        return self._grads.get(id)

    def remove(self, id: ParamId) -> Tensor | None:
        """The gradient of parameter ``id``, removed from the container (``None`` if absent)."""
        return self._grads.pop(id, None)

    def register(self, id: ParamId, grad: Tensor) -> None:
        """Set the gradient of parameter ``id`` (a Float tensor; an autodiff tensor is stored as its ``inner()``).

        Raises:
            TypeError: ``id`` is not a ParamId or ``grad`` not a Tensor. KindError: ``grad`` is not Float.
        """
        if not isinstance(id, ParamId):
            raise TypeError(f"GradientsParams.register: expected a ParamId key, got {type(id).__name__}.")
        if not isinstance(grad, Tensor):
            raise TypeError(f"GradientsParams.register: expected a Tensor gradient, got {type(grad).__name__}.")
        if grad.kind is not Float:
            from .._errors import KindError

            raise KindError(f"GradientsParams.register: gradients are Float tensors, got a {grad.kind} tensor.")
        self._grads[id] = grad.inner()

    def to_device(self, device: Device) -> GradientsParams:
        """A copy with every gradient moved to ``device`` (Burn's ``to_device``)."""
        return GradientsParams({k: v.to_device(device) for k, v in self._grads.items()})

    def ids(self) -> list[ParamId]:
        """The parameter ids that have a gradient."""
        return list(self._grads)

    def items(self) -> list[tuple[ParamId, Tensor]]:
        """``(ParamId, gradient)`` pairs."""
        return list(self._grads.items())

    def is_empty(self) -> bool:
        return not self._grads

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, id: object) -> bool:
        return id in self._grads

    def __iter__(self) -> Iterator[ParamId]:
        return iter(list(self._grads))

    def __repr__(self) -> str:
        return f"GradientsParams({len(self._grads)} tensors)"
