"""Entry point module of the ``torch`` backend (group ``ember``). Imports torch lazily."""

from __future__ import annotations

from ember.backend import BackendSpec, hookimpl


def _load() -> type:
    from ._backend import TorchBackend

    return TorchBackend


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            "torch", _load, "PyTorch backend: cpu, cuda:N, mps (float32/64/16, bfloat16, int32/64)",
            libraries=("torch",),
        )
    ]
