"""``Device``: a place where tensors live, bound to the backend that owns it."""

from __future__ import annotations

from typing import Any

__all__ = ["Device"]


class Device:
    """A device of one backend (``ember.backend("torch").device("cuda:0")``).

    Devices are created and cached by their backend, so two handles to the same device are the
    same object and compare with ``is``. Attributes:

    - ``backend``: the :class:`~ember.backend.Backend` owning the device;
    - ``handle``: the array library's own device object or name (``"cpu"`` for numpy,
      ``torch.device`` for torch, ``jax.Device`` for jax);
    - ``ops``: the op provider of each kind, indexed by ``Kind.index`` (for an autodiff backend
      the Float ops record the graph while Int and Bool ops are the inner backend's);
    - ``inner``: for a device of an autodiff backend, the inner backend's device; else itself.
    """

    __slots__ = ("backend", "handle", "ops", "name", "inner", "__weakref__")
    #: the :class:`~ember.backend.Backend` owning the device. Typed ``Any``: this module sits below the backend
    #: (``Backend`` makes devices), so it imports nothing from it (ARCHITECTURE.md, "Layers").
    backend: Any

    def __init__(self, backend: Any, handle: Any, name: str, ops: tuple[Any, Any, Any] | None = None,
                 inner: Device | None = None) -> None:
        self.backend = backend
        self.handle = handle
        self.name = name
        self.ops = ops if ops is not None else (backend, backend, backend)
        self.inner = inner if inner is not None else self

    def __repr__(self) -> str:
        return f"Device({self.backend.name}:{self.name})"

    def __str__(self) -> str:
        return f"{self.backend.name}:{self.name}"
