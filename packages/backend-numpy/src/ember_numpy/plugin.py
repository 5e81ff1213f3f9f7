"""Entry point module of the ``numpy`` backend (group ``ember``). Imports numpy lazily."""

from __future__ import annotations

from ember.backend import BackendSpec, hookimpl


def _load() -> type:
    from ._backend import NumpyBackend

    return NumpyBackend


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec("numpy", _load, "reference CPU backend on numpy (float32/64/16, int32/64)", libraries=("numpy",))
    ]
