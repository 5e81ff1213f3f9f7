"""Entry point module of the ``jax`` backend (group ``ember``). Imports jax lazily."""

from __future__ import annotations

from ember.backend import BackendSpec, hookimpl


def _load() -> type:
    from ._backend import JaxBackend

    return JaxBackend


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            "jax", _load, "JAX backend: every jax device (float32/64/16, bfloat16, int32/64; 64-bit enables x64)",
            libraries=("jax", "jaxlib"),
        )
    ]
