"""The node cases each backend is known to fail, ``{case name or fnmatch pattern: reason}``.

The entries live in one file per operator family (``_kf_<family>.py``, each defining ``NUMPY``, ``TORCH``
and ``JAX`` dicts, and optionally ``ALL`` for every backend) so that families are maintained separately; this
module merges them.

Strict: a listed case that passes, or an entry that names no case of the suite, fails the run. Keep the
reason specific (the missing element type, the unsupported attribute), so the list says what is left to do.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

__all__ = ["KNOWN_FAILURES"]

KNOWN_FAILURES: dict[str, dict[str, str]] = {"numpy": {}, "torch": {}, "jax": {}}

for _info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
    if _info.name.startswith("_kf_"):
        _mod = importlib.import_module(f"{__package__}.{_info.name}")
        for _backend, _table in KNOWN_FAILURES.items():
            _table.update(getattr(_mod, "ALL", {}))
            _table.update(getattr(_mod, _backend.upper(), {}))
