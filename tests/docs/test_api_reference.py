"""Every public name of every package (its ``__all__``) is in the API reference, read from the site's object
inventory (``objects.inv``, the Sphinx inventory mkdocstrings writes)."""

from __future__ import annotations

import importlib
import zlib
from pathlib import Path

import pytest

#: the documented modules (the API pages of mkdocs.yml); a package's submodules with an ``__all__`` of their own
MODULES = [
    "ember", "ember.nn", "ember.nn.loss", "ember.optim", "ember.optim.lr_scheduler", "ember.data", "ember.data.vision",
    "ember.record", "ember.module", "ember.config", "ember.autodiff", "ember.distributed", "ember.backend",
    "ember.backend.contract", "ember.backend.step_tree",
    "ember.testing", "ember.tensor", "ember.tensor.activation", "ember.tensor.functional", "ember_numpy", "ember_torch",
    "ember_jax", "ember_train", "ember_train.metric", "ember_train.renderer", "ember_train.plots", "ember_import",
    "ember_import.pytorch", "ember_import.safetensors", "ember_import.onnx", "ember_import.onnx.codegen",
    "ember_import.onnx.rules",
    "ember_train.launch", "ember_train.strategies", "ember.extension", "ember.quantization",
]
#: the installed distributions' top-level packages, searched for public modules with an ``__all__``
PACKAGES = ["ember", "ember_numpy", "ember_torch", "ember_jax", "ember_train", "ember_import"]


def _inventory(site: Path) -> set[str]:
    raw = (site / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):  # four header lines, then the zlib-compressed body
        header_end = raw.index(b"\n", header_end) + 1
    body = zlib.decompress(raw[header_end:]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if line}


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_is_in_the_reference(site: Path, module: str) -> None:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        pytest.skip(f"{module} is not installed: {exc}")
    names = _inventory(site)
    assert module in names, f"{module} has no API page"
    missing = [n for n in mod.__all__ if not n.startswith("__") and f"{module}.{n}" not in names]
    assert not missing, f"{module}: not in the API reference: {missing}"


#: modules kept for one release under an old name (a DeprecationWarning on import), documented under the new one
DEPRECATED_ALIASES = {"ember.tensor.module": "ember.tensor.functional"}


def test_every_public_module_with_an_all_is_listed() -> None:
    """A new public module (no ``_`` in its path) that declares ``__all__`` must get an API page (and a row in
    ``MODULES``); the test packages and runners of the conformance suites are tools, not API."""
    import pkgutil

    found = set()
    for top in PACKAGES:
        try:
            pkg = importlib.import_module(top)
        except ImportError:
            continue
        found.add(top)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{top}."):
            parts = info.name.split(".")
            if any(p.startswith("_") for p in parts) or "conformance" in parts or parts[-1] in ("plugin",):
                continue
            if info.name in DEPRECATED_ALIASES:  # importing one warns; its names are its new module's
                continue
            try:
                mod = importlib.import_module(info.name)
            except ImportError:
                continue
            if hasattr(mod, "__all__"):
                found.add(info.name)
    assert not found - set(MODULES), f"public modules without an API page: {sorted(found - set(MODULES))}"
