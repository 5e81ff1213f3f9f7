"""The Ember backends the ONNX converter tests run on: those of numpy, torch and jax that are installed
(devices as the node-suite runner builds them: jax with int64, so x64 mode is on)."""

from __future__ import annotations

from ember_import.onnx.conformance._runner import backend_device

__all__ = ["installed", "BACKENDS"]


def installed(name: str) -> bool:
    """Whether the backend ``name`` can build a device here."""
    try:
        backend_device(name)
    except Exception:  # noqa: BLE001 - an uninstalled backend is left out
        return False
    return True


#: the installed backends among numpy, torch and jax, in that order
BACKENDS = [name for name in ("numpy", "torch", "jax") if installed(name)]
