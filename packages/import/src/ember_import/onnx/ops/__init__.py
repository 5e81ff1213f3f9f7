"""The converters, one module per operator family; importing this package registers them all.

Each module registers its converters with :func:`ember_import.onnx._registry.converter`. A new family is a
new ``_family.py`` here plus one line below.
"""

from __future__ import annotations

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
