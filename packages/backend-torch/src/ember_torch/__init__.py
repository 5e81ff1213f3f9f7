"""ember-backend-torch: Ember's backend on PyTorch tensors (any torch device: cpu, cuda:N, mps).

Users select it with ``ember.backend("torch")``; this package only needs to be installed. ``ember_torch.compile``
(also ``device.backend.compile``) captures a whole step as one aten graph (see ``docs/torch.md``).
The plugin registry imports this package to discover the entry point, so torch is imported
lazily: only when the backend is first used (or ``ember_torch.TorchBackend`` is accessed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._backend import TorchBackend
    from ._compile import CompiledStep, compile

__all__ = ["TorchBackend", "compile", "CompiledStep"]


def __getattr__(name: str) -> Any:
    if name == "TorchBackend":
        from ._backend import TorchBackend

        return TorchBackend
    if name in ("compile", "CompiledStep"):
        from . import _compile

        return getattr(_compile, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
